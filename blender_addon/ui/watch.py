"""Marks a bake outdated when what it was baked from changes outside the add-on's own settings
(those mark it from their update callbacks, in `properties`): the mesh (coordinates, edges and
faces), its vertex groups (names, weights), the scene's frame rate and gravity, the object's
transform, and the position of any external charge of the scene.

At the end of a bake `record` stores digests of those inputs on the object (ID properties of
`Object.cmsc`, saved with the file). A depsgraph_update_post handler looks at what an edit
updated and, for each baked object not yet outdated, compares the digests again, so that updates
that change nothing (adding the cache modifier, selecting) leave the bake as it is. Frame changes
do not run depsgraph_update_post, so playing animation never marks a bake outdated."""

import json

import bpy
from bpy.app.handlers import persistent

from . import bridge, cache, simulated

_MESH = "baked_mesh_digest"
_GROUPS = "baked_group_names"
_SCENE = "baked_scene_digest"


def _scene_digest(scene):
    """The scene's inputs to a bake: frame rate and, when used, gravity."""
    gravity = tuple(round(g, 9) for g in scene.gravity) if scene.cmsc.use_gravity else None
    return repr((scene.render.fps, round(scene.render.fps_base, 9), gravity))


def record(scene, obj):
    """Remembers what `obj`'s bake was baked from (call when a bake finishes)."""
    obj.cmsc[_MESH] = bridge.mesh_digest(obj)
    obj.cmsc[_GROUPS] = _group_names(obj)
    obj.cmsc[_SCENE] = _scene_digest(scene)


def _group_names(obj):
    """The names of the object's vertex groups, in order (adding, removing or renaming one
    updates the object, not its mesh), as a JSON list: a string ID property keeps it whole
    (Blender cuts a re-assigned string ID property at its first NUL, so names joined by NULs
    lost every name after the first)."""
    return json.dumps([g.name for g in obj.vertex_groups])


def _groups_differ(obj):
    """Whether the vertex groups' names changed since the bake. A record from before the JSON
    form holds the names joined by NULs, of which Blender kept the first name only (or all of
    them, the first time it was stored): compared as far as it goes."""
    recorded = obj.cmsc.get(_GROUPS)
    if recorded is None:
        return False
    names = [g.name for g in obj.vertex_groups]
    if recorded.startswith("["):
        return recorded != json.dumps(names)
    old = recorded.split("\0")
    return old != names[: len(old)] or (len(old) > 1 and len(old) != len(names))


def _watched(scene):
    """Baked, simulated objects of `scene` whose bake is not outdated yet."""
    return [
        o for o in scene.objects
        if simulated.is_simulated(o) and not o.cmsc.cache_outdated and cache.has_bake(o)
    ]


def _mesh_digest(obj):
    if obj.mode == "EDIT":  # the mesh data lags behind the edit mesh until synced
        obj.update_from_editmode()
    return bridge.mesh_digest(obj)


def _differs(obj, key, digest):
    """Whether the input recorded under `key` changed; a bake from before the records (none
    stored) is taken as unchanged, since nothing says otherwise."""
    recorded = obj.cmsc.get(key)
    return recorded is not None and recorded != digest()


@persistent
def on_depsgraph_update(scene, depsgraph):
    """depsgraph_update_post: checks the baked objects that an edit may have changed."""
    try:
        watched = _watched(scene)
        if not watched:
            return
        scene_changed, meshes, objects, moved = False, [], [], []
        for update in depsgraph.updates:
            orig = update.id.original
            if isinstance(orig, bpy.types.Scene):
                scene_changed = True
            elif isinstance(orig, bpy.types.Mesh) and update.is_updated_geometry:
                meshes.append(orig)
            elif isinstance(orig, bpy.types.Object):
                objects.append(orig)
                if update.is_updated_transform:
                    moved.append(orig)
        charge_moved = any(o.cmsc_charge.enabled for o in moved)
        changed = charge_moved or any(
            obj in moved
            or (scene_changed and _differs(obj, _SCENE, lambda: _scene_digest(scene)))
            or (obj in objects and _groups_differ(obj))
            or (obj.data in meshes and _differs(obj, _MESH, lambda o=obj: _mesh_digest(o)))
            for obj in watched
        )
        if changed:  # the scene's objects bake together: a change to one is a change to all
            for obj in watched:
                obj.cmsc.cache_outdated = True
    except Exception as e:  # noqa: BLE001 - a handler must never raise into Blender
        print(f"cmsc: checking whether bakes are outdated failed: {type(e).__name__}: {e}", flush=True)


def register():
    bpy.app.handlers.depsgraph_update_post.append(on_depsgraph_update)


def unregister():
    handlers = bpy.app.handlers.depsgraph_update_post
    while on_depsgraph_update in handlers:
        handlers.remove(on_depsgraph_update)
