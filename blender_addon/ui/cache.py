"""The bake's cache on an object: the PC2 file with the Mesh Cache modifier that plays it, or
one shape key per frame; where it goes (`target`), whether one exists, making a finished bake
play (`finish`), freeing it. The shape keys themselves are written and removed by `bridge`.

Files: one per object (an empty Cache Path is `//cmsc_cache/<object>_<id>.pc2`, see
`sim.cache_files`). The bake records the file it wrote (`Object.cmsc.baked_cache_path`, read-only)
and the modifier it added (by `persistent_uid`, so a renamed one is still found). It replaces
only that file, and only while no other object plays it; Free Bake deletes only that file. The
modifier and the record hold the path relative to the saved .blend when the Cache Path is, so a
moved project folder still plays."""

import contextlib
import os
import re
import secrets
import shutil
import tempfile

import bpy
import numpy as np

from ..sim import cache_files, methods
from ..sim.bake_job import step_warnings, steps_line
from ..sim.cache_files import CacheFileError
from ..sim.pc2 import read_pc2
from . import activity, bridge, simulated

MODIFIER_NAME = "cmsc cache"
SHAPE_KEY_PREFIX = "cmsc "
_FRAME_KEY = re.compile(re.escape(SHAPE_KEY_PREFIX) + r"-?\d+")
#: ID properties on `Object.cmsc`, written only here: the path the bake wrote (as the modifier
#: holds it), the `persistent_uid` of the modifier it added, the .blend that baked it (its
#: absolute path then, "" when unsaved), the object's name then, a token shared by the
#: objects of one joint bake, and its mesh's name then. The last four tell a bake apart from
#: its copies: a Save As copy of the .blend and a duplicated object hold the same record, but
#: the bake is not theirs (Shift+D gives the copy a new mesh, so the mesh tells an original
#: renamed since its bake from its copy).
_WRITTEN = "baked_cache_path_value"
_MODIFIER_UID = "baked_modifier_uid"
_BLEND = "baked_blend"
_OBJECT = "baked_object"
_TOGETHER = "baked_together"
_MESH = "baked_mesh"
_RECORD = (_WRITTEN, _MODIFIER_UID, _BLEND, _OBJECT, _TOGETHER, _MESH)


#: Modifier types that move vertices but keep their number and order (deform and data
#: modifiers): those above the cache drive the simulation (`simulated_stack`), and the cache goes
#: right after them. The first modifier of another type (Subdivision, Solidify, Mirror,
#: Geometry Nodes, …) and all after it come after the cache.
KEEPS_VERTICES = frozenset({
    "ARMATURE", "CAST", "COLLISION", "CORRECTIVE_SMOOTH", "CURVE", "DATA_TRANSFER", "DISPLACE", "HOOK",
    "LAPLACIANDEFORM", "LAPLACIANSMOOTH", "LATTICE", "MESH_CACHE", "MESH_DEFORM", "NORMAL_EDIT", "SHRINKWRAP",
    "SIMPLE_DEFORM", "SMOOTH", "SURFACE_DEFORM", "UV_PROJECT", "UV_WARP", "VERTEX_WEIGHT_EDIT",
    "VERTEX_WEIGHT_MIX", "VERTEX_WEIGHT_PROXIMITY", "WARP", "WAVE", "WEIGHTED_NORMAL",
})


def is_frame_key(name):
    """Whether shape key `name` is one a shape-key bake adds: "cmsc 12", the prefix and its frame.
    An artist's own key named "cmsc target" is not."""
    return _FRAME_KEY.fullmatch(name) is not None


def cache_slot(obj, ignore=None):
    """The index in `obj`'s modifier stack where the cache goes: after the leading modifiers that
    keep the vertices (`KEEPS_VERTICES`), before the first that does not and before the bake's
    own cache modifier. `ignore`: a modifier not to count (the cache being placed)."""
    own = cache_modifier(obj)
    slot = 0
    for mod in obj.modifiers:
        if mod == ignore:
            continue
        if mod == own or mod.type not in KEEPS_VERTICES:
            break
        slot += 1
    return slot


#: Rig-like modifiers (of `KEEPS_VERTICES`): put to move a mesh, so meant to drive its
#: simulation. Smoothing or displacing after a Subdivision is left alone: that is usually meant.
RIGS = frozenset({"ARMATURE", "CURVE", "HOOK", "LATTICE", "MESH_DEFORM", "SURFACE_DEFORM"})


def deformers_below_cache(obj):
    """(rig, the modifier above it that changes the vertices) for each enabled rig-like modifier
    (`RIGS`: an Armature, a Hook, …) below the cache slot: it deforms the baked result but does
    not drive the simulation, which an artist who put it there rarely means."""
    mods = list(obj.modifiers)
    slot = cache_slot(obj)
    own = cache_modifier(obj)
    blocker = next((m for m in mods[slot:] if m != own and m.type not in KEEPS_VERTICES), None)
    if blocker is None:
        return []
    after = mods[mods.index(blocker):]
    return [(m.name, blocker.name) for m in after if m.show_viewport and m.type in RIGS]


def deforming_modifiers(obj):
    """The names of the enabled modifiers above the cache: what drives the simulated mesh."""
    return [m.name for m in list(obj.modifiers)[: cache_slot(obj)] if m.show_viewport]


@contextlib.contextmanager
def simulated_stack(obj):
    """While active, `obj` evaluates as the simulation sees it: its own shape keys and the
    modifiers above the cache slot only. Those from the slot on are switched off in the viewport,
    and an existing bake is left out (its cache modifier switched off, its frame keys muted), the
    slot placed as if it were freed; all are switched back after. So a new bake reads its inputs
    while the old one is still there to keep if they are refused."""
    own = cache_modifier(obj)
    kept = [m for m in obj.modifiers if m != own]
    later = [m for m in kept[cache_slot(obj, ignore=own) :] + ([own] if own is not None else []) if m.show_viewport]
    keys = bridge.shape_keys(obj)
    baked = [kb for kb in keys.key_blocks if is_frame_key(kb.name) and not kb.mute] if keys is not None else []
    for m in later:
        m.show_viewport = False
    for kb in baked:
        kb.mute = True
    try:
        yield
    finally:
        for m in later:
            m.show_viewport = True
        for kb in baked:
            kb.mute = False


def _abspath(path, owner=None):
    """An absolute path for a path as stored (`//` relative to the saved .blend, or for an
    `owner` linked from a library, to the library's file, as Blender reads its modifier), or
    None when it cannot be resolved (relative, file unsaved)."""
    blend = bpy.data.filepath
    if owner is not None and owner.library is not None:
        blend = bpy.path.abspath(owner.library.filepath)
    try:
        return cache_files.resolve(path, blend)
    except CacheFileError:
        return None


def _stored(path, relative):
    """`path` as the modifier and the record hold it: relative to the saved .blend (Blender's
    `//`) when `relative`, else absolute."""
    if relative and bpy.data.filepath:
        try:
            return bpy.path.relpath(path)
        except ValueError:  # another drive (Windows): no relative path exists
            pass
    return path


def target(obj):
    """The Cache Path as set, or the object's default (`//cmsc_cache/<object>_<id>.pc2`); None
    for a default whose id is not chosen yet (before the first bake)."""
    s = obj.cmsc
    if s.cache_path:
        return s.cache_path
    return cache_files.default_path(obj.name, s.cache_id) if s.cache_id else None


def cache_path(obj):
    """The absolute path of `obj`'s PC2 cache (choosing the default's id if needed); raises
    CacheFileError for a relative path in an unsaved file."""
    if not obj.cmsc.cache_path and not obj.cmsc.cache_id:
        obj.cmsc.cache_id = secrets.token_hex(4)
    return cache_files.resolve(target(obj), bpy.data.filepath)


def recorded_path(settings):
    """The path the bake wrote, as stored ("" without a PC2 bake): `Object.cmsc.baked_cache_path`."""
    return settings.get(_WRITTEN, "")


def cache_modifier(obj):
    """The Mesh Cache modifier the bake added (found by `persistent_uid`, so under any name), or
    in a file from before that was recorded, the one named "cmsc cache"; None without one."""
    uid = obj.cmsc.get(_MODIFIER_UID)
    if uid is not None:
        return next(
            (m for m in obj.modifiers if m.type == "MESH_CACHE" and getattr(m, "persistent_uid", None) == uid), None
        )
    mod = obj.modifiers.get(MODIFIER_NAME)
    return mod if mod is not None and mod.type == "MESH_CACHE" else None


def _record_key(o):
    return (recorded_path(o.cmsc), o.cmsc.get(_OBJECT), o.cmsc.get(_TOGETHER), o.cmsc.get(_BLEND))


def _foreign_blend(obj):
    """The .blend that made `obj`'s recorded bake when that is another file (a Save As copy
    holds the original's record), else None. A record from before the .blend was recorded is
    adopted by the file it is loaded from (`adopt_records`)."""
    recorded = obj.cmsc.get(_BLEND)
    if recorded is None:
        return None
    if cache_files.same_blend(recorded, bpy.data.filepath, recorded_path(obj.cmsc)):
        return None
    return recorded or "an unsaved file"


def _holders(obj):
    """The objects that hold the same record as `obj` (itself and its duplicates)."""
    key = _record_key(obj)
    return [o for o in bpy.data.objects if o.type == "MESH" and _record_key(o) == key]


def _copied_from(obj):
    """The name of the object whose bake `obj`'s record is when `obj` is a duplicate of it
    (Shift+D copies the record), else None. Of the objects holding the same record, the bake
    belongs to the one with the recorded name, or to the only holder (an object renamed after
    its bake); with several holders and none of that name, to the only one that still has the
    recorded mesh (an original renamed, then duplicated), else to none of them."""
    recorded = obj.cmsc.get(_OBJECT)
    if recorded is None or recorded == obj.name:
        return None
    holders = _holders(obj)
    if len(holders) == 1:
        return None
    if not any(o.name == recorded for o in holders):
        mesh = obj.cmsc.get(_MESH)
        original = [o for o in holders if mesh is not None and o.data.name == mesh]
        if len(original) == 1:
            return None if original[0] == obj else original[0].name
    return recorded


def has_record(obj):
    """Whether `obj` holds the record of a bake (its own or a copy's)."""
    return any(k in obj.cmsc for k in (_WRITTEN, _TOGETHER))


def foreign_owner(obj):
    """Why `obj`'s recorded bake is not its own ("" when it is, or without a record): made by
    another .blend (a Save As copy), or the bake of the object it was duplicated from."""
    if not has_record(obj):
        return ""
    blend = _foreign_blend(obj)
    if blend is not None:
        name = os.path.basename(blend)
        if blend == "an unsaved file" or name == os.path.basename(bpy.data.filepath):
            name = blend  # a file of the same name elsewhere: the folder tells them apart
        return f"it was baked by {name}"
    original = _copied_from(obj)
    return f"it is the bake of {original} ({obj.name} is a copy of it)" if original is not None else ""


def owns_bake(obj):
    """Whether `obj` holds the record of a bake that is its own (see `foreign_owner`)."""
    return has_record(obj) and not foreign_owner(obj)


def written_path(obj):
    """The absolute path of the file `obj`'s own bake wrote, or None: the record (None when the
    bake is another .blend's or the original's of a duplicate), or in a file from before the
    record, what its "cmsc cache" modifier plays."""
    recorded = recorded_path(obj.cmsc)
    if recorded:
        return _abspath(recorded, obj) if owns_bake(obj) else None
    if obj.cmsc.get(_MODIFIER_UID) is None:
        mod = cache_modifier(obj)
        if mod is not None and mod.filepath:
            return _abspath(mod.filepath, obj)
    return None


def other_users(obj, path, targets=False, joint=()):
    """Names of the other objects whose own bake wrote `path` or whose Mesh Cache modifier plays
    it; with `targets`, also those set to bake a PC2 there. The modifiers of the objects in
    `joint` (baking together with `obj`, so freed before it writes) do not count."""
    names = []
    for o in bpy.data.objects:
        if o == obj:
            continue
        paths = [written_path(o)] if o.type == "MESH" else []
        if o not in joint:
            plays = [m.filepath for m in getattr(o, "modifiers", ()) if m.type == "MESH_CACHE" and m.filepath]
            paths += [_abspath(p, o) for p in plays]
        if targets and simulated.is_simulated(o) and o.cmsc.cache_format == "PC2" and target(o):
            paths.append(_abspath(target(o), o))
        if any(p is not None and cache_files.same_file(p, path) for p in paths):
            names.append(o.name)
    return names


def _claimed(obj, path, joint):
    """Whether `path` is a file `obj` may not write: it exists and is not `obj`'s own cache, or
    another object plays it or is set to bake to it."""
    written = written_path(obj)
    own = written is not None and cache_files.same_file(written, path)
    return (os.path.lexists(path) and not own) or bool(other_users(obj, path, targets=True, joint=joint))


def check_target(obj, joint=()):
    """Where `obj`'s PC2 bake will write, checked before anything changes: the absolute path,
    its folder made if the Cache Path is relative (`cmsc_cache/` next to the .blend). With an
    empty Cache Path, a default file that is not the object's own (the cache of the .blend this
    one was saved from, of the object this one duplicates) makes it take a new default file,
    never replace the other's. Refused (CacheFileError): a relative path in an unsaved file, a
    folder, a missing folder on an absolute path, a path typed for another system
    (`cache_files.check_typed`), a file this object's bake did not write, a file another object
    plays or is set to bake (the objects of `joint` bake together)."""
    if obj.cmsc.cache_path:
        cache_files.check_typed(obj.cmsc.cache_path)
    path = cache_path(obj)
    if not obj.cmsc.cache_path and _claimed(obj, path, joint):
        blend = bpy.data.filepath

        def taken(p):
            return _claimed(obj, cache_files.resolve(p, blend), joint)

        _, obj.cmsc.cache_id = cache_files.free_default_path(obj.name, lambda: secrets.token_hex(4), taken)
        path = cache_path(obj)
    foreign = foreign_owner(obj)
    recorded = recorded_path(obj.cmsc)
    if foreign and recorded and os.path.lexists(path) and cache_files.same_file(_abspath(recorded) or "", path):
        raise CacheFileError(
            f"{path} is not this object's cache to replace: {foreign}. Give {obj.name} its own Cache Path "
            "(or leave it empty for a file of its own)"
        )
    others = other_users(obj, path, targets=True, joint=joint)
    if others:
        raise CacheFileError(
            f"{path} is also the cache of {', '.join(others)}: give one of them another Cache Path "
            "(or leave it empty for one file per object)"
        )
    written = written_path(obj)
    own = written is not None and cache_files.same_file(written, path)
    relative = cache_files.is_blend_relative(target(obj))
    cache_files.check_target(path, own=own, make_folders=relative)
    if relative:
        cache_files.make_folder(path)
    return path


def scratch_path():
    """A new file in a new temporary folder: what a shape-key bake streams its samples to."""
    return os.path.join(tempfile.mkdtemp(prefix="cmsc-shapekeys-"), "bake.pc2")


def missing_file(obj):
    """The absolute path of the file the bake's cache modifier plays when no file is there
    (deleted, or moved without its .blend), else None: the mesh then plays no motion."""
    mod = cache_modifier(obj)
    path = _abspath(mod.filepath, obj) if mod is not None and mod.filepath else None
    return path if path is not None and not os.path.exists(path) else None


def has_bake(obj):
    """Whether `obj` plays a bake: the cache modifier or baked shape keys."""
    return cache_modifier(obj) is not None or bridge.has_shape_keys_where(obj, is_frame_key)


def free_bake(obj):
    """Removes the cache modifier and the baked shape keys with their keyframes, and deletes
    the file the bake wrote, unless another object plays it, it is no longer a PC2 file, or the
    bake is not the object's own (`foreign_owner`: a Save As copy's, a duplicate's). Returns why
    a file was kept ("" if none was)."""
    path = written_path(obj)
    mod = cache_modifier(obj)
    played = _abspath(mod.filepath, obj) if mod is not None and mod.filepath else None
    foreign = foreign_owner(obj)
    if mod is not None:
        obj.modifiers.remove(mod)
    note = ""
    if foreign and played is not None and os.path.lexists(played):
        note = f"kept {played}: {foreign}"
    elif path is not None and os.path.lexists(path):
        others = other_users(obj, path)
        if others:
            note = f"kept {path}: {', '.join(others)} plays it too"
        elif not cache_files.is_pc2(path):
            note = f"kept {path}: it is no longer a PC2 cache"
        else:
            try:
                os.remove(path)
            except OSError as e:
                note = f"could not delete {path}: {e.strerror or e}"
    for key in _RECORD:
        if key in obj.cmsc:
            del obj.cmsc[key]
    bridge.remove_frame_shape_keys(obj, is_frame_key)
    obj.cmsc.cache_outdated = False
    obj.cmsc.baked_coulomb_method = ""
    obj.cmsc.baked_steps = ""
    obj.cmsc.baked_warnings = ""
    return note


def _record(obj, together):
    """Records whose bake `obj` now plays: this .blend, this object, this joint bake."""
    obj.cmsc[_BLEND] = bpy.data.filepath
    obj.cmsc[_OBJECT] = obj.name
    obj.cmsc[_TOGETHER] = together
    obj.cmsc[_MESH] = obj.data.name


def baked_together(obj):
    """The simulated objects whose own bake was made in the same joint bake as `obj`'s own
    (`obj` first); just `obj` when it is no longer simulated, its bake is not its own, or the
    bake was made before the record."""
    together = obj.cmsc.get(_TOGETHER)
    if together is None or not obj.cmsc.enabled or not owns_bake(obj):
        return [obj]
    return [obj] + [
        o for o in bpy.data.objects
        if o != obj and simulated.is_simulated(o) and o.cmsc.get(_TOGETHER) == together and owns_bake(o)
    ]


def adopt_records(blend):
    """After a file is loaded from, or saved to, `blend`: records from before the .blend was
    recorded, and those of bakes made while the file was unsaved, become this file's; objects
    renamed since their bake (the only holders of their record) have their name recorded, so a
    later duplicate is told apart. Decided on the records as they were, then written: a record
    changed first would no longer group with its duplicates'."""
    held = [
        o for o in bpy.data.objects if o.type == "MESH" and o.library is None and has_record(o)
    ]  # a linked object's record is its library's
    for o in held:
        if o.cmsc.get(_BLEND) in (None, ""):
            o.cmsc[_BLEND] = blend
    # renamed, and alone with its record: while duplicates share it, the recorded name (with the
    # mesh) is what tells them apart
    renamed = [o for o in held if o.cmsc.get(_OBJECT) is None or (o.cmsc[_OBJECT] != o.name and len(_holders(o)) == 1)]
    for o in renamed:
        o.cmsc[_OBJECT] = o.name


def own_shape_key_offsets(obj, start_frame, count):
    """What the mesh's own shape keys add to its reference shape at each of `count` frames from
    `start_frame` on ((count, n, 3), object space), or None without own relative keys. A frame's
    baked key holds the baked shape less this, so that playback (the reference plus every
    relative key at its value) is the baked shape, as the PC2 cache plays it: the simulation
    already started from the shape the own keys make."""
    keys = bridge.shape_keys(obj)
    if keys is None or not keys.use_relative:
        return None
    if not any(not is_frame_key(kb.name) for kb in keys.key_blocks[1:]):
        return None
    reference = bridge.shape_key_coords(obj, keys.reference_key.name)
    scene = bpy.context.scene
    now = scene.frame_current
    on = [m for m in obj.modifiers if m.show_viewport]
    out = np.empty((count, len(reference), 3))
    with activity.previews_suspended():
        for m in on:
            m.show_viewport = False
        try:
            for i in range(count):
                scene.frame_set(start_frame + i)
                out[i] = bridge.deformed_coords(obj) - reference
        finally:
            for m in on:
                m.show_viewport = True
            scene.frame_set(now)
    return out


def finish(obj, job, part=0, together=""):
    """Makes the frames `job` baked so far play on `obj`, its part `part`: a Mesh Cache modifier
    at the cache slot (after the modifiers that drove the simulation, before those that change
    the topology, which keep working on the baked mesh), recorded with the file it plays, or one
    shape key per frame keyed 0/1/0 with linear interpolation (shape keys; the scratch file is
    removed). The bake then matches the settings (not outdated) and remembers the Coulomb
    method that ran, the steps it took and what it warned of."""
    path = job.cache_paths[part]
    if obj.cmsc.cache_format == "SHAPE_KEYS":
        if job.frames_done:
            _, _, samples = read_pc2(path)
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)
        if not job.frames_done:
            return
        offsets = own_shape_key_offsets(obj, job.start_frame, len(samples))
        if offsets is not None:
            samples = samples - offsets
        bridge.add_frame_shape_keys(obj, SHAPE_KEY_PREFIX, job.start_frame, samples)
        _record(obj, together)
    elif job.frames_done:
        stored = _stored(path, cache_files.is_blend_relative(target(obj)))
        mod = obj.modifiers.new(MODIFIER_NAME, "MESH_CACHE")
        mod.cache_format = "PC2"
        mod.filepath = stored
        mod.frame_start = job.start_frame
        obj.modifiers.move(len(obj.modifiers) - 1, cache_slot(obj, ignore=mod))
        obj.cmsc[_WRITTEN] = stored
        if getattr(mod, "persistent_uid", None) is not None:  # Blender 4.2+ (before: found by name)
            obj.cmsc[_MODIFIER_UID] = mod.persistent_uid
        _record(obj, together)
    else:
        return
    obj.cmsc.cache_outdated = False
    obj.cmsc.baked_steps = steps_line(job.steps)
    obj.cmsc.baked_warnings = "\n".join(step_warnings(job))
    if job.coulomb_method is not None:
        obj.cmsc.baked_coulomb_method = methods.describe(job.params.coulomb, job.coulomb_method)
