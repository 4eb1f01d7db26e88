"""Simulating what the artist made (issue 17): strands hang from their roots, a group's charge
means the same at any resolution, a symmetric grid hangs symmetric, and files of the first
version keep their per-vertex charges."""

import bpy
import numpy as np
import pytest

from scenes import addon_module, evaluated_coords, read_pc2


def mesh_object(name, verts, edges=(), faces=()):
    me = bpy.data.meshes.new(name)
    me.from_pydata([tuple(v) for v in verts], list(edges), list(faces))
    me.update()
    obj = bpy.data.objects.new(name, me)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    return obj


def simulated(obj, tmp, frames, pin=None):
    s = obj.cmsc
    s.enabled = True
    s.frame_start, s.frame_end = 1, frames
    s.cache_path = str(tmp / f"{obj.name}.pc2")
    if pin is not None:
        group = obj.vertex_groups.new(name="pin")
        group.add([int(i) for i in pin], 1.0, "REPLACE")
        s.pin_group = "pin"
    return obj


def test_strands_hang_from_their_roots_with_their_segments_intact(scene):
    sc, tmp = scene
    sc.cmsc.use_gravity = True
    per, spacing = 10, 0.1
    verts = [(k * spacing, 0.2 * s, 0.0) for s in range(5) for k in range(per)]  # horizontal: they swing down
    edges = [(s * per + k, s * per + k + 1) for s in range(5) for k in range(per - 1)]
    obj = simulated(mesh_object("hair", verts, edges), tmp, 48, pin=[s * per for s in range(5)])
    obj.cmsc.mass = 0.05  # 10 g a strand
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    samples = read_pc2(obj.cmsc.cache_path)
    a, b = np.array(edges).T
    length = np.linalg.norm(samples[:, a] - samples[:, b], axis=2)
    print(f"strands: largest segment stretch {np.abs(length / spacing - 1).max():.1%}")
    assert np.abs(length / spacing - 1).max() < 0.25, np.abs(length / spacing - 1).max()
    assert samples[-1][:, 2].min() < -0.5, "the strands swung down"


def sphere(tmp, subdivisions):
    bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=subdivisions, radius=1.0)  # 2 m across
    obj = bpy.context.active_object
    obj.name = f"ico{subdivisions}"
    obj.vertex_groups.new(name="all").add(list(range(len(obj.data.vertices))), 1.0, "REPLACE")
    simulated(obj, tmp, 24)
    assert bpy.ops.cmsc.charge_group_add() == {"FINISHED"}
    assert obj.cmsc.charge_groups[0].distribution == "TOTAL"
    return obj


def test_the_same_group_charge_inflates_any_resolution_alike(scene):
    sc, tmp = scene
    swell = {}
    for subdivisions in (2, 4):
        obj = sphere(tmp, subdivisions)
        assert bpy.ops.cmsc.bake() == {"FINISHED"}
        radius = np.linalg.norm(read_pc2(obj.cmsc.cache_path), axis=2).mean(axis=1)
        swell[subdivisions] = radius.max() / radius[0] - 1
        bpy.data.objects.remove(obj)
    print(f"swelling at 150 µC: {swell[2]:.2%} (42 vertices), {swell[4]:.2%} (642 vertices)")
    assert 0.01 < swell[2] < 0.5, f"the default charge moves the default mesh visibly and boundedly: {swell}"
    assert abs(swell[4] / swell[2] - 1) < 0.15, swell


def test_an_uncharged_grid_hangs_symmetric(scene):
    sc, tmp = scene
    sc.cmsc.use_gravity = True
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=30, y_subdivisions=30, size=2.0)
    obj = bpy.context.active_object
    co = evaluated_coords(obj)
    assert len(co) == 31 * 31
    simulated(obj, tmp, 48, pin=np.nonzero(co[:, 1] > 0.999)[0])
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    samples = read_pc2(obj.cmsc.cache_path)
    centre = samples[:, :, 0].mean(axis=1)
    print(f"grid: centroid at most {np.abs(centre).max() * 1e3:.4f} mm off the centre line")
    assert np.abs(centre).max() < 1e-3, f"centroid {np.abs(centre).max() * 1e3:.2f} mm off the centre line"
    assert samples[-1][:, 2].min() < -1.0, "the cloth swung down"


def test_files_of_earlier_versions_keep_their_charges_settling_and_iterations(tmp_path):
    versioning = addon_module("ui.versioning")
    bpy.ops.wm.read_homefile(use_empty=True)
    try:
        bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=1)
        obj = bpy.context.active_object
        obj.vertex_groups.new(name="all")
        obj.cmsc.enabled = True
        bpy.ops.cmsc.charge_group_add()
        new = tmp_path / "new.blend"
        assert bpy.ops.wm.save_as_mainfile(filepath=str(new)) == {"FINISHED"}
        # a file of the first version: no distribution or settling stored, no stamp
        bpy.app.handlers.save_pre.remove(versioning.on_save_pre)
        try:
            obj.cmsc.charge_groups[0].property_unset("distribution")
            obj.cmsc.property_unset("relative_damping")
            del obj.cmsc[versioning.STAMP]
            obj.cmsc.cache_path = str(tmp_path / "old.pc2")  # and baked, as an old file may be
            obj.cmsc.frame_start, obj.cmsc.frame_end = 1, 3
            assert bpy.ops.cmsc.bake() == {"FINISHED"}
            old = tmp_path / "old.blend"
            assert bpy.ops.wm.save_as_mainfile(filepath=str(old)) == {"FINISHED"}
            # a file of version 1: distribution and settling as set, Iterations never set (10 then)
            obj.cmsc.charge_groups[0].distribution = "TOTAL"
            obj.cmsc.relative_damping = 2.0
            obj.cmsc[versioning.STAMP] = 1
            obj.cmsc.property_unset("iterations")
            v1 = tmp_path / "v1.blend"
            assert bpy.ops.wm.save_as_mainfile(filepath=str(v1)) == {"FINISHED"}
            # ... and one that did set them (Blender 5.0+ keeps them out of the dict-style access)
            obj.cmsc.iterations = 8
            v1_set = tmp_path / "v1_set.blend"
            assert bpy.ops.wm.save_as_mainfile(filepath=str(v1_set)) == {"FINISHED"}
        finally:
            bpy.app.handlers.save_pre.append(versioning.on_save_pre)
        assert bpy.ops.wm.open_mainfile(filepath=str(old)) == {"FINISHED"}
        s = bpy.data.objects["Icosphere"].cmsc
        assert s.charge_groups[0].distribution == "PER_VERTEX" and s.relative_damping == 0.0
        assert s.iterations == 10, "it ran 10 iterations, the default of its day"
        assert not s.cache_outdated, "its bake was made with these meanings: it stays current"
        assert bpy.ops.wm.open_mainfile(filepath=str(v1)) == {"FINISHED"}
        s = bpy.data.objects["Icosphere"].cmsc
        assert s.charge_groups[0].distribution == "TOTAL" and s.relative_damping == 2.0 and s.iterations == 10
        assert bpy.ops.wm.open_mainfile(filepath=str(v1_set)) == {"FINISHED"}
        assert bpy.data.objects["Icosphere"].cmsc.iterations == 8, "Iterations it set are kept"
        assert bpy.ops.wm.open_mainfile(filepath=str(new)) == {"FINISHED"}
        s = bpy.data.objects["Icosphere"].cmsc
        assert s.charge_groups[0].distribution == "TOTAL" and s.relative_damping == 2.0 and s.iterations == 6
    finally:
        bpy.ops.wm.read_homefile(use_empty=True)


@pytest.mark.parametrize("distribution", ["TOTAL", "PER_VERTEX"])
def test_a_groups_charge_is_what_the_distribution_says(scene, distribution):
    sc, tmp = scene
    inputs = addon_module("ui.inputs")
    obj = sphere(tmp, 2)
    group = obj.cmsc.charge_groups[0]
    group.distribution = distribution
    obj.vertex_groups["all"].add([0, 1, 2], 0.5, "REPLACE")
    st = inputs.setup(sc, obj)
    per_coulomb = st.group_weights[0]
    if distribution == "TOTAL":
        assert per_coulomb.sum() == pytest.approx(1.0)
    else:
        assert per_coulomb[:3].tolist() == [0.5] * 3 and (per_coulomb[3:] == 1.0).all()


def released_cloth(tmp, frames):
    """A 2 m, 1 kg cloth (21 × 21) released from the horizontal, hanging from its top row, with
    the add-on's defaults."""
    sc = bpy.context.scene
    sc.cmsc.use_gravity = True
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=20, y_subdivisions=20, size=2.0)
    obj = bpy.context.active_object
    return simulated(obj, tmp, frames, pin=np.nonzero(evaluated_coords(obj)[:, 1] > 0.999)[0])


def test_with_the_defaults_a_released_cloth_comes_to_rest(scene):
    sc, tmp = scene
    obj = released_cloth(tmp, 1 + 11 * 24)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    samples = read_pc2(obj.cmsc.cache_path)
    per_frame = np.linalg.norm(np.diff(samples, axis=0), axis=2).max(axis=1)
    after = per_frame[10 * 24 :].max()
    print(f"released cloth: motion per frame after 10 s = {after / per_frame.max():.2e} of its peak")
    assert after < 0.005 * per_frame.max(), f"{after / per_frame.max():.2%} of its peak after 10 s"


def test_with_the_defaults_a_falling_object_is_not_slowed(scene):
    sc, tmp = scene
    sc.cmsc.use_gravity = True
    bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=2, radius=1.0)
    obj = simulated(bpy.context.active_object, tmp, 25)
    assert obj.cmsc.relative_damping > 0
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    fallen = -read_pc2(obj.cmsc.cache_path)[-1][:, 2].mean()
    print(f"free fall with Settling {obj.cmsc.relative_damping}/s: {fallen:.4f} m in 1 s (½gt² = {0.5 * 9.81:.4f} m)")
    assert fallen == pytest.approx(0.5 * 9.81 * 1.0**2, rel=0.02), f"fell {fallen} m in 1 s"


def test_the_low_dissipation_integrator_keeps_a_charged_sphere_breathing(scene):
    """A charged sphere, released from rest, swells and breathes. The paper's IMEX step damps the
    breathing numerically at the add-on's step; the low-dissipation integrator keeps it (both
    without Settling, so that only the integrators differ), and the bake says which ran."""
    sc, tmp = scene
    amplitude = {}
    for integrator in ("IMEX", "IMEX_LOW_DISSIPATION"):
        obj = sphere(tmp, 2)
        obj.cmsc.frame_end = 48
        obj.cmsc.relative_damping = 0.0
        obj.cmsc.substeps = 1
        obj.cmsc.integrator = integrator
        obj.cmsc.cache_path = str(tmp / f"{integrator}.pc2")
        assert bpy.ops.cmsc.bake() == {"FINISHED"}
        radius = np.linalg.norm(read_pc2(obj.cmsc.cache_path), axis=2).mean(axis=1)
        late = radius[24:]
        amplitude[integrator] = late.max() - late.min()
        bpy.data.objects.remove(obj)
    print(f"breathing over frames 25-48: {amplitude}")
    assert amplitude["IMEX_LOW_DISSIPATION"] > 3 * amplitude["IMEX"], amplitude


def test_spring_damping_stills_a_bouncing_strip_and_leaves_the_one_beside_it_bouncing(scene):
    """Two strips hang side by side from their top rows and are baked together: they start at
    rest length and bounce on their springs under gravity. Spring Damping on one (the springs'
    strain-rate damping, low-dissipation integrator and no Settling, so nothing else damps)
    stills its bounce; the other, undamped, bounces on; both end at the same stretch."""
    sc, tmp = scene
    sc.cmsc.use_gravity = True
    strips = []
    for name, x in (("damped", 0.0), ("undamped", 1.0)):
        bpy.ops.mesh.primitive_grid_add(x_subdivisions=4, y_subdivisions=20, size=1.0, location=(x, 0.0, 0.0))
        obj = bpy.context.active_object
        obj.name = name
        obj.scale = (0.2, 1.0, 1.0)
        obj.rotation_euler = (np.pi / 2, 0.0, 0.0)  # hanging in the xz plane, its top at z = 0.5
        co = evaluated_coords(obj)
        simulated(obj, tmp, 48, pin=np.nonzero(co[:, 1] > 0.499)[0])
        s = obj.cmsc
        s.integrator, s.relative_damping, s.adaptive_substeps, s.substeps = "IMEX_LOW_DISSIPATION", 0.0, False, 4
        strips.append(obj)
    strips[0].cmsc.spring_damping = 0.1  # its bounce (≈ 10 rad/s) damped at about half critical
    strips[0].select_set(True)
    strips[1].select_set(True)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}

    def bottom(obj):  # the bottom row's mean height (m) per frame, in world space
        samples = read_pc2(obj.cmsc.cache_path)
        world = samples @ np.array(obj.matrix_world)[:3, :3].T
        low = world[0][:, 2] < world[0][:, 2].min() + 1e-6
        return world[:, low, 2].mean(axis=1)

    damped, undamped = bottom(strips[0]), bottom(strips[1])
    late = slice(24, 48)
    swing_d, swing_u = np.ptp(damped[late]), np.ptp(undamped[late])
    print(f"bottom row's bounce over frames 25-48: {swing_d * 1e3:.3f} mm damped, {swing_u * 1e3:.3f} mm undamped")
    centre = 0.5 * (undamped[late].max() + undamped[late].min())
    print(f"where it rests: {damped[-1]:.4f} m damped, {centre:.4f} m the undamped bounce's centre")
    assert swing_u > 5e-3, "the undamped strip should bounce visibly"
    assert swing_d < 0.01 * swing_u, f"{swing_d} m vs {swing_u} m"
    assert abs(damped[-1] - centre) < 0.05 * swing_u, "damping changed where it rests"
