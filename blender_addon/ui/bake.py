"""Baking: steps a `Simulation` through the frame range and streams a PC2 cache. Runs in
`execute()`; the simulation itself sees only numpy arrays."""

import os

import bpy
import numpy as np

from ..sim import DivergedError, SimParams, Simulation, _native
from ..sim.mesh import springs_from_triangles, vertex_masses
from ..sim.params import CoulombMethod
from ..sim.pc2 import Pc2Writer
from . import bridge

MODIFIER_NAME = "cmsc cache"
MICRO = 1e-6


def cache_path(obj):
    return bpy.path.abspath(obj.cmsc.cache_path)


def free_bake(obj):
    """Removes the cache modifier and file."""
    mod = obj.modifiers.get(MODIFIER_NAME)
    if mod is not None:
        obj.modifiers.remove(mod)
    path = cache_path(obj)
    if os.path.isfile(path):
        os.remove(path)


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


def _externals(scene, frame):
    """External charges at `frame`: world positions (k, 3) and charges (k,) in C."""
    objs = [o for o in scene.objects if o.cmsc_charge.enabled]
    pos = np.array([tuple(o.matrix_world.translation) for o in objs]).reshape(-1, 3)
    q = np.array([bridge.animated(o, ("cmsc_charge.charge",), 0, o.cmsc_charge.charge, frame) for o in objs])
    return pos, q * MICRO


def bake(context, obj, report):
    """Bakes `obj`; returns the number of frames written. Raises nothing: problems go to
    `report` and leave a consistent object (cache of the frames done, modifier first)."""
    scene, s = context.scene, obj.cmsc
    bridge.name_keyed_charge_paths(obj)
    free_bake(obj)
    scene.frame_set(s.frame_start)
    co, tris = bridge.mesh_arrays(obj)
    x0 = bridge.to_world(obj.matrix_world, co)
    structural, bending = springs_from_triangles(tris)
    springs = np.concatenate([structural, bending]).reshape(-1, 2)
    stiffness = np.concatenate([np.full(len(structural), s.stiffness), np.full(len(bending), s.bending_stiffness)])
    masses = vertex_masses(x0, tris, s.mass)
    weights = [(i, g, bridge.group_weights(obj, g.vertex_group)) for i, g in enumerate(s.charge_groups)]
    pins = np.nonzero(bridge.group_weights(obj, s.pin_group) > 0)[0]
    path = cache_path(obj)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    frames = 0
    with Simulation(_native.addon_library_path(), x0, masses, springs, stiffness, _params(scene, s)) as sim, Pc2Writer(
        path, len(co), start_frame=s.frame_start
    ) as pc2:
        if len(pins):
            sim.set_pins(pins)
        pc2.write(co)
        frames = 1
        prev_pins = x0[pins]
        prev_ext = _externals(scene, s.frame_start)[0]
        for f in range(s.frame_start + 1, s.frame_end + 1):
            scene.frame_set(f)
            cur_pins = bridge.to_world(obj.matrix_world, co)[pins]
            cur_ext, _ = _externals(scene, f)
            try:
                for k in range(s.substeps):
                    a = (k + 1) / s.substeps
                    t = f - 1 + a
                    q = np.zeros(len(co))
                    for i, g, w in weights:
                        q += MICRO * bridge.animated(obj, bridge.group_charge_paths(i, g), 0, g.charge, t) * w
                    sim.set_charges(q)
                    ext_q = _externals(scene, t)[1]
                    if len(ext_q):
                        sim.set_external_charges((1 - a) * prev_ext + a * cur_ext, ext_q)
                    field = [bridge.animated(scene, ("cmsc.field",), c, scene.cmsc.field[c], t) for c in range(3)]
                    sim.set_uniform_field(field)
                    if len(pins):
                        sim.set_pin_targets((1 - a) * prev_pins + a * cur_pins)
                    sim.step(1)
            except DivergedError as e:
                report({"ERROR"}, f"cmsc: simulation diverged at frame {f}; kept {frames} baked frames. "
                       f"Try more substeps or stiffer damping. ({e})")
                break
            pc2.write(bridge.to_local(obj.matrix_world, sim.positions))
            frames += 1
            prev_pins, prev_ext = cur_pins, cur_ext
            print(f"cmsc: baked frame {f} ({frames}/{s.frame_end - s.frame_start + 1})")
    mod = obj.modifiers.new(MODIFIER_NAME, "MESH_CACHE")
    mod.cache_format = "PC2"
    mod.filepath = path
    mod.frame_start = s.frame_start
    obj.modifiers.move(len(obj.modifiers) - 1, 0)
    scene.frame_set(s.frame_start)
    return frames
