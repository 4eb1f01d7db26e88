"""The only module that reads or writes mesh data (vertex coordinates, triangles, vertex groups,
shape keys and their keyframes) and F-curves: Blender data ↔ numpy arrays. The other ui modules
go through these functions; the Mesh Cache modifier (an object's modifier stack, not its mesh) is
`cache`'s."""

import contextlib
import hashlib
import re

import bpy
import numpy as np
from bpy_extras import anim_utils

from ..sim.checks import Weights
from ..sim.mesh import Faces


def deformed_coords(obj):
    """(n, 3) object-space coordinates of `obj`'s mesh as the depsgraph evaluates it now (shape
    keys and enabled modifiers: the caller limits them with `cache.simulated_stack`), or the
    mesh's own coordinates when the evaluated mesh has other vertices. In Edit Mode the edit
    mesh is synced first, so what is being edited is what is read."""
    if obj.mode == "EDIT":
        obj.update_from_editmode()
    n = len(obj.data.vertices)
    evaluated = obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).data
    source = evaluated.vertices if len(evaluated.vertices) == n else obj.data.vertices
    co = np.empty(3 * n)
    source.foreach_get("co", co)
    return co.reshape(n, 3)


def evaluated_surface(obj, depsgraph):
    """World-space vertices (v, 3) and triangles (t, 3) of `obj`'s mesh as evaluated (with its
    modifiers and animation), for a collider."""
    me = obj.evaluated_get(depsgraph).data
    n = len(me.vertices)
    co = np.empty(3 * n)
    me.vertices.foreach_get("co", co)
    me.calc_loop_triangles()
    return to_world(obj.matrix_world, co.reshape(n, 3)), _ints(me.loop_triangles, "vertices", 3)


def _ints(collection, attr, per_item=1):
    a = np.empty(per_item * len(collection), dtype=np.int64)
    collection.foreach_get(attr, a)
    return a.reshape(-1, per_item) if per_item > 1 else a


def mesh_faces(me):
    """The `Faces` of mesh `me`: its quads as they are, every other face as Blender triangulates
    it, and the edges that belong to no face."""
    me.calc_loop_triangles()
    tris = _ints(me.loop_triangles, "vertices", 3)
    tri_face = _ints(me.loop_triangles, "polygon_index")
    size, start = _ints(me.polygons, "loop_total"), _ints(me.polygons, "loop_start")
    loop_vertex, loop_edge = _ints(me.loops, "vertex_index"), _ints(me.loops, "edge_index")
    quad = size == 4
    quads = loop_vertex[start[quad][:, None] + np.arange(4)]
    in_face = np.zeros(len(me.edges), dtype=bool)
    in_face[loop_edge] = True
    loose = _ints(me.edges, "vertices", 2)[~in_face]
    return Faces.of(triangles=tris[~quad[tri_face]], quads=quads, loose_edges=loose)


def vertex_count(obj):
    return len(obj.data.vertices)


def to_world(matrix, local):
    m = np.array(matrix)
    return local @ m[:3, :3].T + m[:3, 3]


def to_local(matrix, world):
    m = np.linalg.inv(np.array(matrix))
    return world @ m[:3, :3].T + m[:3, 3]


def group_membership(obj, name):
    """Vertex group `name` of a mesh object as `Weights` (per-vertex weight, and membership), or
    None if the object has no such group."""
    group = obj.vertex_groups.get(name) if name else None
    if group is None:
        return None
    n = len(obj.data.vertices)
    w, member = np.zeros(n), np.zeros(n, dtype=bool)
    gi = group.index
    for v in obj.data.vertices:
        for g in v.groups:
            if g.group == gi:
                w[v.index] = g.weight
                member[v.index] = True
    return Weights(w, member)


def mesh_digest(obj):
    """A digest of everything of a mesh object's data that a bake reads: vertex coordinates,
    edges and faces, vertex group names and every weight. Equal digests: the same inputs."""
    me = obj.data
    h = hashlib.sha1()
    for collection, attr, dtype in (
        (me.vertices, "co", np.float32),
        (me.edges, "vertices", np.int32),
        (me.polygons, "loop_total", np.int32),
        (me.loops, "vertex_index", np.int32),
    ):
        a = np.empty(len(collection) * (3 if attr == "co" else 2 if attr == "vertices" else 1), dtype=dtype)
        collection.foreach_get(attr, a)
        h.update(a.tobytes())
    h.update("\0".join(g.name for g in obj.vertex_groups).encode())
    weights = [(v.index, g.group, g.weight) for v in me.vertices for g in v.groups]
    h.update(np.array(weights, dtype=np.float64).tobytes())
    return h.hexdigest()


def _fcurve_owner(id_data):
    """What holds the F-curves animating `id_data`: the channelbag of its action slot (Blender
    4.4+ slotted actions) or the action itself (before); None without an action."""
    ad = id_data.animation_data
    if ad is None or ad.action is None:
        return None
    slot = getattr(ad, "action_slot", None)
    if slot is not None:
        try:
            bag = anim_utils.action_get_channelbag_for_slot(ad.action, slot)
        except AttributeError:  # before Blender 4.4: no slots, the action's own F-curves
            bag = None
        if bag is not None:
            return bag
    return ad.action if hasattr(ad.action, "fcurves") else None


def fcurves(id_data):
    """The F-curves animating `id_data` (legacy and Blender 4.4+ slotted actions)."""
    owner = _fcurve_owner(id_data)
    return list(owner.fcurves) if owner is not None else []


def _action_is_empty(action):
    """Whether `action` animates nothing: no F-curve in any layer, strip or channelbag."""
    layers = getattr(action, "layers", None)
    if layers:
        return not any(len(bag.fcurves) for layer in layers for strip in layer.strips for bag in strip.channelbags)
    return not len(getattr(action, "fcurves", ()))


def remove_fcurves(id_data, paths):
    """Removes the F-curves of `id_data` whose data path is one of `paths`, then its action if
    nothing is left in it and nothing else uses it, and the animation data if it then holds
    nothing either (no driver: a corrective shape key's driver stays; no NLA track)."""
    owner = _fcurve_owner(id_data)
    if owner is None:
        return
    removed = [fc for fc in owner.fcurves if fc.data_path in paths]
    if not removed:
        return
    for fc in removed:
        owner.fcurves.remove(fc)
    ad = id_data.animation_data
    action = ad.action
    if _action_is_empty(action) and action.users <= 1 and not action.use_fake_user:
        ad.action = None
        bpy.data.actions.remove(action)
        if not len(ad.drivers) and not len(ad.nla_tracks):
            id_data.animation_data_clear()


def keyframe(owner, prop, frame):
    """Keyframes property `prop` of `owner` (e.g. a charge group's "charge") at `frame`."""
    owner.keyframe_insert(prop, frame=frame)


def animated(id_data, paths, index, default, frame):
    """The value of an animatable property at a (sub)frame, as Blender evaluates it: with a driver
    on any of `paths`, the property's current value `default` (the driver overrides keyframes,
    and Blender evaluates it once per frame); else the F-curve on any of `paths` evaluated at
    `frame` (a charge has one: `name_keyed_charge_paths` merges a second); else `default`. A
    muted driver or F-curve does not animate."""

    def on(fc):
        return fc.data_path in paths and fc.array_index == index and not fc.mute

    ad = id_data.animation_data
    if ad is not None and any(on(d) for d in ad.drivers):
        return default
    return next((fc.evaluate(frame) for fc in fcurves(id_data) if on(fc)), default)


#: A charge group's property path by its position: what Blender keys (`name_keyed_charge_paths`).
_INDEX_KEYED = re.compile(r"^cmsc\.charge_groups\[(\d+)\]\.(.+)$")


def group_charge_paths(i, item):
    """Both forms of a charge group's RNA path: name-keyed (stable under reordering, what the
    add-on creates) and index-keyed (what older files may hold)."""
    return (f'cmsc.charge_groups["{bpy.utils.escape_identifier(item.name)}"].charge', f"cmsc.charge_groups[{i}].charge")


def name_keyed_charge_paths(obj):
    """Rewrites index-keyed charge-group F-curve paths (`cmsc.charge_groups[2].charge`, what
    Blender creates when a charge is keyframed) to name-keyed ones
    (`cmsc.charge_groups["Tentacle"].charge`), so that keyframes stay with their group when
    groups are removed or reordered. A charge keyed again after its path was rewritten gets a
    second, index-keyed F-curve from Blender (which of the two it then plays is its own order,
    not the artist's choice: Blender 4.5 kept playing the old one): its keys are merged into the
    name-keyed one (replacing those on the same frames), so that one F-curve holds all the keys,
    as if the path had never changed. Returns the number of paths rewritten."""
    groups = obj.cmsc.charge_groups

    def named_path(fc):
        m = _INDEX_KEYED.match(fc.data_path)
        if not m or int(m.group(1)) >= len(groups):
            return None
        return f'cmsc.charge_groups["{bpy.utils.escape_identifier(groups[int(m.group(1))].name)}"].{m.group(2)}'

    changed = 0
    owner = _fcurve_owner(obj)
    for fc in list(owner.fcurves) if owner is not None else []:
        path = named_path(fc)
        if path is None:
            continue
        named = next((o for o in owner.fcurves if o.data_path == path and o.array_index == fc.array_index), None)
        if named is None:
            fc.data_path = path
        else:
            _merge_keys(fc, named)
            owner.fcurves.remove(fc)
        changed += 1
    # a driver follows its group by name too (one driver per property: a second stays as it is)
    drivers = obj.animation_data.drivers if obj.animation_data is not None else []
    for d in list(drivers):
        path = named_path(d)
        if path is not None and drivers.find(path, index=d.array_index) is None:
            d.data_path = path
            changed += 1
    return changed


def remove_group_fcurves(obj, group):
    """Removes the F-curves and drivers (name-keyed: `name_keyed_charge_paths` first) of charge
    `group`."""
    prefix = f'cmsc.charge_groups["{bpy.utils.escape_identifier(group.name)}"].'
    remove_fcurves(obj, {fc.data_path for fc in fcurves(obj) if fc.data_path.startswith(prefix)})
    ad = obj.animation_data
    for d in [d for d in ad.drivers if d.data_path.startswith(prefix)] if ad is not None else []:
        ad.drivers.remove(d)


def _merge_keys(source, into):
    """Inserts the keyframes of F-curve `source` into `into`, replacing those on the same frames
    (a plain insert does; its "REPLACE" option would only replace, and add nothing elsewhere)."""
    for p in source.keyframe_points:
        k = into.keyframe_points.insert(p.co[0], p.co[1])
        k.interpolation, k.easing = p.interpolation, p.easing
    into.update()


# -- shape keys -------------------------------------------------------------------------------
def shape_keys(obj):
    """The mesh's shape keys (a Key, for UI search fields), or None (none, or not a mesh)."""
    return obj.data.shape_keys if obj.type == "MESH" else None


def has_shape_key(obj, name):
    keys = shape_keys(obj)
    return keys is not None and name in keys.key_blocks


def has_shape_keys_where(obj, chosen):
    """Whether some shape key's name is `chosen(name)`."""
    keys = shape_keys(obj)
    return keys is not None and any(chosen(kb.name) for kb in keys.key_blocks)


def shape_key_coords(obj, name):
    """(n, 3) object-space coordinates of shape key `name`, or None if there is none."""
    keys = shape_keys(obj)
    kb = keys.key_blocks.get(name) if keys is not None and name else None
    if kb is None:
        return None
    co = np.empty(3 * len(kb.data))
    kb.data.foreach_get("co", co)
    return co.reshape(-1, 3)


@contextlib.contextmanager
def shape_key_muted(obj, name):
    """Shape key `name` left out of the evaluated mesh, whatever its value, for the duration (a
    target to reach is not part of the start shape; Blender 5.0+ adds new keys at value 1)."""
    keys = shape_keys(obj)
    kb = keys.key_blocks.get(name) if keys is not None and name else None
    if kb is None:
        yield
        return
    muted = kb.mute
    kb.mute = True
    try:
        yield
    finally:
        kb.mute = muted


#: On the mesh's shape keys (the Key datablock): the add-on added their basis, with its own key.
_OUR_BASIS = "cmsc_added_basis"


def _ensure_basis(obj):
    if obj.data.shape_keys is None:
        obj.shape_key_add(name="Basis", from_mix=False)
        obj.data.shape_keys[_OUR_BASIS] = True


def _remove_lone_basis(obj, after_frame_keys=False):
    """Removes the basis once it is the only key left, if the add-on added it: an artist's own
    lone key (a basis renamed "MyRest") stays. A shape-key bake made before that was recorded
    left its "Basis" unmarked: one left alone `after_frame_keys` of such a bake is taken as its."""
    keys = obj.data.shape_keys
    if keys is None or len(keys.key_blocks) != 1:
        return
    if keys.get(_OUR_BASIS) or (after_frame_keys and keys.key_blocks[0].name == "Basis"):
        obj.shape_key_remove(keys.key_blocks[0])


def write_shape_key(obj, name, local):
    """Sets shape key `name` (created, with a basis if needed, and at value 1) to the (n, 3)
    object-space coordinates `local`, so the mesh's own coordinates stay the rest shape."""
    _ensure_basis(obj)
    kb = obj.data.shape_keys.key_blocks.get(name)
    if kb is None:
        kb = obj.shape_key_add(name=name, from_mix=False)
    kb.value = 1.0
    kb.data.foreach_set("co", local.astype(np.float32).ravel())
    obj.data.update()


def remove_shape_key(obj, name):
    """Removes shape key `name` if present, and the basis if it is all that is left."""
    keys = shape_keys(obj)
    kb = keys.key_blocks.get(name) if keys is not None else None
    if kb is None:
        return
    obj.shape_key_remove(kb)
    _remove_lone_basis(obj)


def add_frame_shape_keys(obj, prefix, start_frame, samples):
    """One shape key per sample (s, n, 3), named `prefix` + frame from `start_frame` on, keyed
    0/1/0 around its frame with linear interpolation: only the current frame's is 1."""
    _ensure_basis(obj)
    for i, sample in enumerate(samples):
        frame = start_frame + i
        kb = obj.shape_key_add(name=f"{prefix}{frame}", from_mix=False)
        kb.data.foreach_set("co", sample.astype(float).ravel())
        for f, value in ((frame - 1, 0.0), (frame, 1.0), (frame + 1, 0.0)):
            kb.value = value
            kb.keyframe_insert("value", frame=f)
    ours = {f'key_blocks["{bpy.utils.escape_identifier(prefix)}{start_frame + i}"].value' for i in range(len(samples))}
    for fc in fcurves(obj.data.shape_keys):
        if fc.data_path in ours:  # the mesh's own keys keep their interpolation
            for point in fc.keyframe_points:
                point.interpolation = "LINEAR"


def remove_frame_shape_keys(obj, chosen):
    """Removes the shape keys whose name is `chosen(name)` with their F-curves (and the action,
    once empty), and the basis if it is all that is left."""
    keys = shape_keys(obj)
    if keys is None:
        return
    names = [kb.name for kb in keys.key_blocks if chosen(kb.name)]
    remove_fcurves(keys, {f'key_blocks["{bpy.utils.escape_identifier(name)}"].value' for name in names})
    for name in names:
        obj.shape_key_remove(keys.key_blocks[name])
    _remove_lone_basis(obj, after_frame_keys=bool(names))
