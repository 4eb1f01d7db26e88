"""Baking, in three parts: `collect` (main thread: Blender data → a `BakeJob` of numpy
arrays), `sim.bake_job.run` (anywhere: the simulation, no bpy), `finish` (main thread: the Mesh
Cache modifier). `bake` chains them for `execute()`; the modal operator runs the middle part in
a worker thread.

`setup`, `world_state` and `substep_inputs` read what one frame needs; the live preview and
the charge fit use them too, so all three see the same simulation."""

import os
from dataclasses import dataclass

import bpy
import numpy as np

from ..sim import SimParams, _native, methods
from ..sim.bake_job import BakeJob, run
from ..sim.mesh import springs_from_triangles, vertex_masses
from ..sim.params import CoulombMethod
from . import bridge, preferences

MODIFIER_NAME = "cmsc cache"
MICRO = 1e-6  # C per µC: the UI shows charges in µC


SHAPE_KEY_PREFIX = "cmsc "

#: Bakes running in the UI (modal), by object name: the panel draws their progress, the
#: preview leaves these objects alone.
RUNNING = {}


def cache_path(obj):
    return bpy.path.abspath(obj.cmsc.cache_path)


def _bake_path(obj):
    """Where the bake streams its samples: the cache itself, or a scratch PC2 that shape keys
    are built from."""
    path = cache_path(obj)
    return path if obj.cmsc.cache_format == "PC2" else path + ".shapekeys-tmp.pc2"


def has_bake(obj):
    """Whether `obj` plays a bake: the cache modifier or baked shape keys."""
    if obj.modifiers.get(MODIFIER_NAME) is not None:
        return True
    keys = obj.data.shape_keys if obj.type == "MESH" else None
    return keys is not None and any(kb.name.startswith(SHAPE_KEY_PREFIX) for kb in keys.key_blocks)


def free_bake(obj):
    """Removes the cache modifier and file, and the baked shape keys with their keyframes."""
    mod = obj.modifiers.get(MODIFIER_NAME)
    if mod is not None:
        obj.modifiers.remove(mod)
    path = cache_path(obj)
    if os.path.isfile(path):
        os.remove(path)
    keys = obj.data.shape_keys
    if keys is not None:
        if keys.animation_data and keys.animation_data.action:
            action = keys.animation_data.action
            for fc in [fc for fc in bridge.fcurves(keys) if fc.data_path.startswith(f'key_blocks["{SHAPE_KEY_PREFIX}')]:
                try:
                    action.fcurves.remove(fc)
                except (AttributeError, RuntimeError):
                    pass
        for kb in [kb for kb in keys.key_blocks if kb.name.startswith(SHAPE_KEY_PREFIX)]:
            obj.shape_key_remove(kb)
        if len(obj.data.shape_keys.key_blocks) == 1:  # only the basis we added is left
            obj.shape_key_remove(obj.data.shape_keys.key_blocks[0])
    obj.cmsc.cache_outdated = False


def params(scene, s, library, substeps=None):
    """The SimParams of object settings `s` in `scene` (with `substeps` steps per frame instead
    of `s.substeps` if given), and a note on a GPU fallback ("" if none)."""
    fps = scene.render.fps / scene.render.fps_base
    gravity = tuple(scene.gravity) if scene.cmsc.use_gravity else (0.0, 0.0, 0.0)
    method, note = methods.choose(library, CoulombMethod[s.coulomb_method], preferences.use_gpu())
    p = SimParams(
        time_step=1.0 / (fps * (substeps or s.substeps)),
        iterations=s.iterations,
        damping=s.damping,
        gravity=gravity,
        coulomb=method,
        grid_points=s.grid_points,
    )
    return p, note


@dataclass
class Setup:
    """The simulation of one object at its start frame, as arrays (world space, SI units)."""

    library: str
    co: np.ndarray  # (n, 3) object-space rest coordinates
    x0: np.ndarray  # (n, 3) world-space start positions
    masses: np.ndarray
    springs: np.ndarray
    stiffness: np.ndarray
    params: SimParams
    note: str
    pins: np.ndarray
    group_weights: np.ndarray  # (g, n), groups in charge_groups order


def setup(scene, obj, substeps=None):
    """Reads the simulation of `obj` at the current frame (the caller sets frame_start), with
    `substeps` steps per frame instead of the object's Substeps if given."""
    s = obj.cmsc
    library = _native.addon_library_path()
    preferences.apply_threads()
    co, tris = bridge.mesh_arrays(obj)
    x0 = bridge.to_world(obj.matrix_world, co)
    structural, bending = springs_from_triangles(tris)
    p, note = params(scene, s, library, substeps)
    groups = s.charge_groups
    return Setup(
        library=library,
        co=co,
        x0=x0,
        masses=vertex_masses(x0, tris, s.mass),
        springs=np.concatenate([structural, bending]).reshape(-1, 2),
        stiffness=np.concatenate([np.full(len(structural), s.stiffness), np.full(len(bending), s.bending_stiffness)]),
        params=p,
        note=note,
        pins=np.nonzero(bridge.group_weights(obj, s.pin_group) > 0)[0],
        group_weights=np.array([bridge.group_weights(obj, g.vertex_group) for g in groups]).reshape(len(groups), len(co)),
    )


def external_charges(scene):
    """The scene's objects carrying an external charge."""
    return [o for o in scene.objects if o.cmsc_charge.enabled]


def world_state(obj, co, pins, externals):
    """Pin targets (p, 3) and external charge positions (k, 3) at the current frame (m)."""
    pin = bridge.to_world(obj.matrix_world, co[pins])
    ext = np.array([tuple(o.matrix_world.translation) for o in externals]).reshape(-1, 3)
    return pin, ext


def substep_inputs(scene, obj, externals, frame, substeps):
    """Group charges (S, g) C per unit weight, external charges (S, k) C and the field (S, 3)
    V/m at the end of each substep of the step from `frame - 1` to `frame`, read from the
    F-curves at the sub-frame (exact for keyframed values)."""
    groups = list(enumerate(obj.cmsc.charge_groups))
    group_charge = np.empty((substeps, len(groups)))
    ext_charge = np.empty((substeps, len(externals)))
    field = np.empty((substeps, 3))
    for k in range(substeps):
        t = frame - 1 + (k + 1) / substeps
        group_charge[k] = [MICRO * bridge.animated(obj, bridge.group_charge_paths(i, g), 0, g.charge, t) for i, g in groups]
        ext_charge[k] = [MICRO * bridge.animated(o, ("cmsc_charge.charge",), 0, o.cmsc_charge.charge, t) for o in externals]
        field[k] = [bridge.animated(scene, ("cmsc.field",), c, scene.cmsc.field[c], t) for c in range(3)]
    return group_charge, ext_charge, field


def collect(context, obj):
    """Gathers every input of the bake (frame_set through the range once) into a BakeJob."""
    from . import preview

    scene, s = context.scene, obj.cmsc
    bridge.name_keyed_charge_paths(obj)
    preview.clear(obj)
    free_bake(obj)
    externals = external_charges(scene)
    frames, substeps = max(0, s.frame_end - s.frame_start), s.substeps
    with preview.suspended():
        scene.frame_set(s.frame_start)
        st = setup(scene, obj)
        pin_world = np.empty((frames + 1, len(st.pins), 3))
        ext_world = np.empty((frames + 1, len(externals), 3))
        pin_world[0], ext_world[0] = world_state(obj, st.co, st.pins, externals)
        world_to_local = np.empty((frames, 4, 4))
        group_charge = np.empty((frames, substeps, len(st.group_weights)))
        ext_charge = np.empty((frames, substeps, len(externals)))
        field = np.empty((frames, substeps, 3))
        for f in range(frames):
            frame = s.frame_start + f + 1
            scene.frame_set(frame)
            pin_world[f + 1], ext_world[f + 1] = world_state(obj, st.co, st.pins, externals)
            world_to_local[f] = np.linalg.inv(np.array(obj.matrix_world))
            group_charge[f], ext_charge[f], field[f] = substep_inputs(scene, obj, externals, frame, substeps)
        scene.frame_set(s.frame_start)
    path = _bake_path(obj)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    return BakeJob(
        library=st.library,
        cache_path=path,
        start_frame=s.frame_start,
        rest_local=st.co,
        x0=st.x0,
        masses=st.masses,
        springs=st.springs,
        stiffness=st.stiffness,
        params=st.params,
        pins=st.pins,
        group_weights=st.group_weights,
        world_to_local=world_to_local,
        pin_world=pin_world,
        ext_world=ext_world,
        group_charge=group_charge,
        ext_charge=ext_charge,
        field=field,
        note=st.note,
    )


def finish(obj, job):
    """Makes the frames baked so far play: a Mesh Cache modifier first in the stack (PC2), or
    one shape key per frame keyed 0/1/0 with linear interpolation (shape keys). The bake then
    matches the settings: not outdated."""
    if job.frames_done == 0:
        return
    obj.cmsc.cache_outdated = False
    if obj.cmsc.cache_format == "SHAPE_KEYS":
        _shape_keys(obj, job)
        return
    mod = obj.modifiers.new(MODIFIER_NAME, "MESH_CACHE")
    mod.cache_format = "PC2"
    mod.filepath = job.cache_path
    mod.frame_start = job.start_frame
    obj.modifiers.move(len(obj.modifiers) - 1, 0)


def progress_line(job):
    print(f"cmsc: baked frame {job.start_frame + job.frames_done - 1} ({job.frames_done}/{job.frames + 1})", flush=True)


def bake(context, obj, report):
    """The whole bake on the calling thread, printing progress lines; returns the number of
    samples written."""
    job = collect(context, obj)
    if job.note:
        print(f"cmsc: {job.note}", flush=True)
        report({"WARNING"}, f"cmsc: {job.note}")
    try:
        run(job, on_frame=progress_line)
    finally:
        finish(obj, job)
    if job.error:
        report({"ERROR"}, f"cmsc: {job.error}; kept {job.frames_done} baked frames")
    return job.frames_done


def _shape_keys(obj, job):
    from ..sim.pc2 import read_pc2

    _, _, samples = read_pc2(job.cache_path)
    os.remove(job.cache_path)
    if obj.data.shape_keys is None:
        obj.shape_key_add(name="Basis", from_mix=False)
    for i, sample in enumerate(samples):
        frame = job.start_frame + i
        kb = obj.shape_key_add(name=f"{SHAPE_KEY_PREFIX}{frame}", from_mix=False)
        kb.data.foreach_set("co", sample.astype(float).ravel())
        for f, value in ((frame - 1, 0.0), (frame, 1.0), (frame + 1, 0.0)):
            kb.value = value
            kb.keyframe_insert("value", frame=f)
    for fc in bridge.fcurves(obj.data.shape_keys):
        for point in fc.keyframe_points:
            point.interpolation = "LINEAR"
