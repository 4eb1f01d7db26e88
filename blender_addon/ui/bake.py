"""Baking, in three parts: `collect` (main thread: Blender data → a `BakeJob` of numpy
arrays), `sim.bake_job.run` (anywhere: the simulation, no bpy), `finish` (main thread: the Mesh
Cache modifier). `bake` chains them for `execute()`; the modal operator runs the middle part in
a worker thread."""

import os

import bpy
import numpy as np

from ..sim import SimParams, _native
from ..sim.bake_job import BakeJob, run
from ..sim.mesh import springs_from_triangles, vertex_masses
from ..sim.params import CoulombMethod
from . import bridge

MODIFIER_NAME = "cmsc cache"
MICRO = 1e-6


SHAPE_KEY_PREFIX = "cmsc "


def cache_path(obj):
    return bpy.path.abspath(obj.cmsc.cache_path)


def _bake_path(obj):
    """Where the bake streams its samples: the cache itself, or a scratch PC2 that shape keys
    are built from."""
    path = cache_path(obj)
    return path if obj.cmsc.cache_format == "PC2" else path + ".shapekeys-tmp.pc2"


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


def _params(scene, s):
    fps = scene.render.fps / scene.render.fps_base
    gravity = tuple(scene.gravity) if scene.cmsc.use_gravity else (0.0, 0.0, 0.0)
    return SimParams(
        time_step=1.0 / (fps * s.substeps),
        iterations=s.iterations,
        damping=s.damping,
        gravity=gravity,
        coulomb=CoulombMethod[s.coulomb_method],
        grid_points=s.grid_points,
    )


def collect(context, obj):
    """Gathers every input of the bake (frame_set through the range once) into a BakeJob."""
    scene, s = context.scene, obj.cmsc
    bridge.name_keyed_charge_paths(obj)
    free_bake(obj)
    externals = [o for o in scene.objects if o.cmsc_charge.enabled]
    groups = list(enumerate(s.charge_groups))
    frames, substeps = max(0, s.frame_end - s.frame_start), s.substeps
    scene.frame_set(s.frame_start)
    co, tris = bridge.mesh_arrays(obj)
    x0 = bridge.to_world(obj.matrix_world, co)
    structural, bending = springs_from_triangles(tris)
    pins = np.nonzero(bridge.group_weights(obj, s.pin_group) > 0)[0]

    def world_state():
        pin = bridge.to_world(obj.matrix_world, co[pins])
        ext = np.array([tuple(o.matrix_world.translation) for o in externals]).reshape(-1, 3)
        return pin, ext

    pin_world, ext_world = [np.empty((frames + 1, len(pins), 3)), np.empty((frames + 1, len(externals), 3))]
    pin_world[0], ext_world[0] = world_state()
    world_to_local = np.empty((frames, 4, 4))
    group_charge = np.empty((frames, substeps, len(groups)))
    ext_charge = np.empty((frames, substeps, len(externals)))
    field = np.empty((frames, substeps, 3))
    for f in range(frames):
        frame = s.frame_start + f + 1
        scene.frame_set(frame)
        pin_world[f + 1], ext_world[f + 1] = world_state()
        world_to_local[f] = np.linalg.inv(np.array(obj.matrix_world))
        for k in range(substeps):
            t = frame - 1 + (k + 1) / substeps
            group_charge[f, k] = [MICRO * bridge.animated(obj, bridge.group_charge_paths(i, g), 0, g.charge, t) for i, g in groups]
            ext_charge[f, k] = [
                MICRO * bridge.animated(o, ("cmsc_charge.charge",), 0, o.cmsc_charge.charge, t) for o in externals
            ]
            field[f, k] = [bridge.animated(scene, ("cmsc.field",), c, scene.cmsc.field[c], t) for c in range(3)]
    scene.frame_set(s.frame_start)
    path = _bake_path(obj)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    return BakeJob(
        library=_native.addon_library_path(),
        cache_path=path,
        start_frame=s.frame_start,
        rest_local=co,
        x0=x0,
        masses=vertex_masses(x0, tris, s.mass),
        springs=np.concatenate([structural, bending]).reshape(-1, 2),
        stiffness=np.concatenate([np.full(len(structural), s.stiffness), np.full(len(bending), s.bending_stiffness)]),
        params=_params(scene, s),
        pins=pins,
        group_weights=np.array([bridge.group_weights(obj, g.vertex_group) for _, g in groups]).reshape(len(groups), len(co)),
        world_to_local=world_to_local,
        pin_world=pin_world,
        ext_world=ext_world,
        group_charge=group_charge,
        ext_charge=ext_charge,
        field=field,
    )


def finish(obj, job):
    """Makes the frames baked so far play: a Mesh Cache modifier first in the stack (PC2), or
    one shape key per frame keyed 0/1/0 with linear interpolation (shape keys)."""
    if job.frames_done == 0:
        return
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
