"""Collider friction (issue 30): a Collision object's Friction is Blender Cloth's Coulomb
coefficient (Friction / 100), so a cloth on a 20° slope slides ½ g (sin θ − μ cos θ) t² at
Friction 5, holds at Friction 80 (μ = 0.8 > tan 20°), and slides the same at 5 and at 20
Substeps; files from before keep the per-step law they were made with."""

import math

import bpy
import numpy as np

from scenes import DRAPE_OFFSET, Reports, addon_module, cloth_centroids, drape_scene, read_pc2

THETA = math.radians(20.0)
#: down the slope: the plane is turned by θ about y, so it descends along x
DOWN = np.array([math.cos(THETA), 0.0, -math.sin(THETA)])
NORMAL = np.array([math.sin(THETA), 0.0, math.cos(THETA)])
FRAMES = 25  # 24 frames at 24 fps: 1 s


def slope(friction):
    """A 12 m plane tilted by θ with Collision physics of `friction` (Blender's 0–80)."""
    bpy.ops.mesh.primitive_plane_add(size=12.0, location=(0.0, 0.0, 0.0), rotation=(0.0, THETA, 0.0))
    plane = bpy.context.active_object
    plane.name = "slope"
    bpy.ops.object.modifier_add(type="COLLISION")
    plane.collision.cloth_friction = friction
    return plane


def cloth_on(plane, tmp, substeps):
    """A 0.5 m cloth lying on `plane`, 1 mm above its Outer Thickness, with fixed `substeps`."""
    gap = plane.collision.thickness_outer + 0.001
    location = tuple(NORMAL * gap + DOWN * -2.0)  # up the slope: room to slide
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=5, y_subdivisions=5, size=0.5, location=location)
    obj = bpy.context.active_object
    obj.rotation_euler = (0.0, THETA, 0.0)
    obj.name = "cloth"
    s = obj.cmsc
    s.enabled = True
    s.frame_start, s.frame_end = 1, FRAMES
    s.adaptive_substeps = False
    s.substeps = substeps
    s.cache_path = str(tmp / f"cloth_{substeps}.pc2")
    bpy.context.view_layer.update()
    return obj


def slid(obj):
    """How far the baked cloth's centre moved down the slope (m) from the first frame to the last."""
    m = np.array(obj.matrix_world)
    x = read_pc2(obj.cmsc.cache_path) @ m[:3, :3].T + m[:3, 3]
    return float((x[-1].mean(axis=0) - x[0].mean(axis=0)) @ DOWN)


def bake_slide(obj):
    _, job = addon_module("ui.bake").bake(bpy.context, obj, Reports())
    assert job.frames_done == FRAMES, job.error
    return slid(obj)


def expected(friction):
    mu = friction / 100.0
    return 0.5 * 9.81 * (math.sin(THETA) - mu * math.cos(THETA))  # t = 1 s


def test_friction_5_slides_the_coulomb_distance_at_5_and_20_substeps_and_80_holds(scene):
    sc, tmp = scene
    sc.cmsc.use_gravity = True
    plane = slope(5.0)
    obj = cloth_on(plane, tmp, 5)
    assert obj.cmsc.coulomb_friction, "new objects read Friction as Blender's Cloth does"
    five = bake_slide(obj)
    obj.cmsc.substeps = 20
    twenty = bake_slide(obj)
    print(f"Friction 5 slid {five:.3f} m at 5 substeps, {twenty:.3f} m at 20; Coulomb: {expected(5.0):.3f} m")
    assert abs(five / expected(5.0) - 1) < 0.1, five
    assert abs(twenty / five - 1) < 0.1, f"{five} m at 5 substeps, {twenty} m at 20"
    plane.collision.cloth_friction = 80.0
    for substeps in (5, 20):
        obj.cmsc.substeps = substeps
        held = bake_slide(obj)
        assert abs(held) < 0.005, f"Friction 80 (μ = 0.8 > tan 20°) moved it {held} m at {substeps} substeps"


def test_a_file_from_before_keeps_the_per_step_friction(tmp_path):
    versioning = addon_module("ui.versioning")
    inputs = addon_module("ui.inputs")
    bpy.ops.wm.read_homefile(use_empty=True)
    try:
        sc = bpy.context.scene
        sc.render.fps = 24
        sc.cmsc.use_gravity = True
        obj = cloth_on(slope(5.0), tmp_path, 5)
        new = tmp_path / "new.blend"
        assert bpy.ops.wm.save_as_mainfile(filepath=str(new)) == {"FINISHED"}
        # a file of version 3: made before Coulomb friction
        bpy.app.handlers.save_pre.remove(versioning.on_save_pre)
        try:
            obj.cmsc[versioning.STAMP] = 3
            v3 = tmp_path / "v3.blend"
            assert bpy.ops.wm.save_as_mainfile(filepath=str(v3)) == {"FINISHED"}
        finally:
            bpy.app.handlers.save_pre.append(versioning.on_save_pre)
        assert bpy.ops.wm.open_mainfile(filepath=str(v3)) == {"FINISHED"}
        old = bpy.data.objects["cloth"]
        assert not old.cmsc.coulomb_friction
        _, joint = inputs.joint_setup(bpy.context.scene, [old], 5, inputs.joint_timing([old]))
        law = addon_module("sim.params").FrictionLaw
        assert joint.colliders.law == law.PER_STEP and joint.colliders.friction.tolist() == [5.0 / 80.0]
        per_step = bake_slide(old)
        before = read_pc2(old.cmsc.cache_path)
        print(f"the file from before slid {per_step:.3f} m (Coulomb: {expected(5.0):.3f} m)")
        assert per_step < 0.5 * expected(5.0), "the per-step law of its day slides less"

        assert bpy.ops.wm.open_mainfile(filepath=str(new)) == {"FINISHED"}
        s = bpy.data.objects["cloth"].cmsc
        assert s.coulomb_friction, "a file of this version keeps Coulomb friction"
        s.coulomb_friction = False  # by hand: the same per-step bake, step for step
        s.cache_path = str(tmp_path / "again.pc2")
        bake_slide(bpy.data.objects["cloth"])
        np.testing.assert_array_equal(read_pc2(s.cache_path), before)
    finally:
        bpy.ops.wm.read_homefile(use_empty=True)


def test_a_stiff_cloth_dropped_on_a_sphere_holds_at_friction_5_as_blenders_cloth_does(scene):
    """Side by side on one scene (tests/bench/drape_vs_cloth.py has the table): Blender's Cloth
    and a stiff cmsc cloth (3,000 N/m: 0.1 % strain hanging) dropped 5 cm off-centre onto a
    sphere both hold at Friction 5 for 3 s, and cmsc's slides off at Friction 0, so it is
    friction that holds it. The bake succeeds: the energy audit had called the contacts' gain at the impact
    (0.27 J at the end, after a 4.3 J drop) energy from nothing made by charges, which it has none of."""
    sc, tmp = scene
    sc.cmsc.use_gravity = True
    frames = 72
    sc.frame_start, sc.frame_end = 1, frames
    cloth = cloth_centroids(drape_scene(5.0), frames)
    assert abs(cloth[-1, 0] - DRAPE_OFFSET) < 0.05 and cloth[-1, 2] > 0.1, f"Blender's Cloth: {cloth[-1]}"
    for friction in (5.0, 0.0):
        obj = drape_scene(friction)
        s = obj.cmsc
        s.enabled = True
        s.frame_start, s.frame_end = 1, frames
        s.stiffness = 3000.0
        s.cache_path = str(tmp / f"drape_{friction:g}.pc2")
        _, job = addon_module("ui.bake").bake(bpy.context, obj, Reports())
        assert job.frames_done == frames and job.error == "", job.error
        c = read_pc2(s.cache_path).mean(axis=1) + np.array(obj.location)
        print(f"Friction {friction:g}: Cloth ends at x = {cloth[-1, 0]:.3f}, cmsc at {c[-1, 0]:.3f}, z {c[-1, 2]:.3f}")
        if friction:
            assert abs(c[-1, 0] - DRAPE_OFFSET) < 0.05 and c[-1, 2] > 0.1, f"cmsc slid: {c[-1]}"
        else:
            assert c[-1, 2] < -DRAPE_OFFSET, f"frictionless, it slides off: {c[-1]}"
