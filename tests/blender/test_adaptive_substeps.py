"""Adaptive substeps (issue 29): with `adaptive_substeps` on, each frame takes the steps its
charges and motion need, from Substeps up to Max Substeps (`cmsc_advance`), and the bake's
report and panel say how many it took; files from before keep their fixed steps."""

import re

import bpy
import numpy as np

from scenes import Reports, addon_module, charged_sphere, draw, key_charge, read_pc2, saved_scene

#: µC per vertex: strong enough that a frame at 24 fps needs several steps on the 0.5 m sphere
#: of 162 vertices and 0.05 kg (nearest charges ~0.14 m apart), and weak enough to need one.
STRONG, WEAK = 2.0, 0.001


def panel_text(panel="CMSC_PT_bake"):
    return draw(getattr(addon_module("ui.panels"), panel)).text()


def _adaptive(obj, least=1, most=32):
    s = obj.cmsc
    s.adaptive_substeps, s.substeps, s.max_substeps = True, least, most


def test_strong_charges_take_more_steps_only_while_they_last(scene):
    sc, tmp = scene
    obj = charged_sphere(tmp, frames=16)
    _adaptive(obj)
    key_charge(obj.cmsc.charge_groups[0], [(1, STRONG), (5, STRONG), (6, WEAK)], "CONSTANT")
    _, job = addon_module("ui.bake").bake(bpy.context, obj, Reports())
    assert job.frames_done == 16, job.error
    steps = job.steps
    print(f"steps per frame: {steps}")
    assert len(steps) == 15 and min(steps) >= 1 and max(steps) <= 32
    burst, calm = steps[:4], steps[-6:]
    assert min(burst) > 1, f"strong charges took {burst} steps per frame"
    assert max(calm) < min(burst), f"after the charge faded: {calm} steps per frame, during it {burst}"


def test_a_stronger_charge_takes_more_steps(scene):
    sc, tmp = scene
    bake = addon_module("ui.bake").bake
    obj = charged_sphere(tmp, frames=4)
    _adaptive(obj)
    means = []
    for q in (WEAK, STRONG / 4, STRONG):
        obj.cmsc.charge_groups[0].charge = q
        _, job = bake(bpy.context, obj, Reports())
        assert job.frames_done == 4, job.error
        means.append(np.mean(job.steps[:2]))
    print(f"mean steps per frame over the first two frames at {WEAK, STRONG / 4, STRONG} µC: {means}")
    assert means[0] <= means[1] <= means[2] and means[0] < means[2], means


def test_fixed_substeps_take_exactly_substeps(scene):
    sc, tmp = scene
    obj = charged_sphere(tmp, frames=4, charge=STRONG)
    obj.cmsc.adaptive_substeps = False
    obj.cmsc.substeps = 3
    _, job = addon_module("ui.bake").bake(bpy.context, obj, Reports())
    assert job.steps == [3, 3, 3]


def test_the_report_and_the_panel_say_how_many_steps_the_bake_took(scene):
    sc, tmp = scene
    obj = charged_sphere(tmp, frames=6)
    _adaptive(obj)
    key_charge(obj.cmsc.charge_groups[0], [(1, STRONG), (3, STRONG), (4, WEAK)], "CONSTANT")
    bake = addon_module("ui.bake")
    reports = Reports()
    run = bake.ModalBake(bpy.context, obj)
    run.thread.join()
    assert run.finish(reports) == {"FINISHED"}
    line = addon_module("sim.bake_job").steps_line(run.job.steps)
    mean, most = np.mean(run.job.steps), max(run.job.steps)
    assert line == f"{mean:.1f} steps per frame on average, at most {most}" or line.startswith(f"{mean:.0f} steps")
    assert line in reports.text("INFO"), reports.text()
    assert obj.cmsc.baked_steps == line
    assert f"Steps: {line}" in panel_text()
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    assert obj.cmsc.baked_steps == "" and "Steps: " not in panel_text()


def test_a_bake_capped_below_what_its_charges_ask_is_told_how_far_to_raise_max_substeps(tmp_path):
    """The sphere at twice the strong charge: its charges ask for more than 2 steps per frame.
    Capped by Max Substeps 2, the bake takes 2 a frame and the warning says from which frame the
    charges asked for how many, and to raise Max Substeps to them; the Bake panel keeps it.
    Raised so, the bake takes more than 2 a frame and says nothing. At fixed Substeps 2 it is
    told to turn on Adaptive Substeps or raise Substeps, which the panel still shows after the
    file is saved and opened again, until Free Bake. Before, a capped bake said "FINISHED" and
    nothing else."""
    _, blend = saved_scene(tmp_path, "capped.blend")
    obj = charged_sphere(tmp_path, frames=4, charge=2 * STRONG)
    bake = addon_module("ui.bake").bake
    _adaptive(obj, least=1, most=2)
    reports = Reports()
    _, job = bake(bpy.context, obj, reports)
    assert job.frames_done == 4 and job.steps == [2, 2, 2], (job.error, job.steps)
    warned = reports.text("WARNING")
    print(warned)
    asked = r"from frame (\d+) the charges of ball ask for up to (\d+) steps per frame "
    found = re.search(asked + r".*Max Substeps allows 2:", warned)
    assert found and int(found[1]) == 2 and int(found[2]) > 2, warned
    assert f"Raise Max Substeps to {found[2]}" in warned, warned
    kept = obj.cmsc.baked_warnings
    assert kept.startswith(found[0]) and kept.endswith(f"Raise Max Substeps to {found[2]}"), kept
    assert f"Bake warning: {obj.cmsc.baked_warnings}" in panel_text()
    obj.cmsc.max_substeps = int(found[2])
    reports = Reports()
    _, job = bake(bpy.context, obj, reports)
    print(f"Max Substeps {found[2]}: steps {job.steps}")
    assert job.frames_done == 4 and max(job.steps) > 2, job.steps
    assert "charges of ball ask" not in reports.text("WARNING"), reports.text("WARNING")
    assert obj.cmsc.baked_warnings == "" and "Bake warning" not in panel_text()
    obj.cmsc.adaptive_substeps, obj.cmsc.substeps = False, 2
    reports = Reports()
    _, job = bake(bpy.context, obj, reports)
    warned = reports.text("WARNING")
    assert job.steps == [2, 2, 2], job.steps
    fixed = re.search(asked + r".*Substeps takes 2:", warned)
    assert fixed and int(fixed[1]) == 2 and int(fixed[2]) > 2, warned
    assert f"Turn on Adaptive Substeps or raise Substeps to {fixed[2]}" in warned, warned
    assert bpy.ops.wm.save_mainfile() == {"FINISHED"}
    assert bpy.ops.wm.open_mainfile(filepath=str(blend)) == {"FINISHED"}
    obj = bpy.data.objects["ball"]
    bpy.context.view_layer.objects.active = obj
    assert obj.cmsc.baked_warnings.startswith(fixed[0]), obj.cmsc.baked_warnings
    assert f"Bake warning: {obj.cmsc.baked_warnings}" in panel_text()
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    assert obj.cmsc.baked_warnings == "" and "Bake warning" not in panel_text()


def test_a_file_from_before_keeps_its_fixed_substeps(tmp_path):
    versioning = addon_module("ui.versioning")
    bpy.ops.wm.read_homefile(use_empty=True)
    try:
        obj = charged_sphere(tmp_path, frames=4, charge=STRONG)
        obj.cmsc.property_unset("substeps")
        obj.cmsc.property_unset("adaptive_substeps")
        new = tmp_path / "new.blend"
        assert bpy.ops.wm.save_as_mainfile(filepath=str(new)) == {"FINISHED"}
        # a file of version 2: no adaptive substeps stored, Substeps never set (5 then)
        bpy.app.handlers.save_pre.remove(versioning.on_save_pre)
        try:
            obj.cmsc[versioning.STAMP] = 2
            v2 = tmp_path / "v2.blend"
            assert bpy.ops.wm.save_as_mainfile(filepath=str(v2)) == {"FINISHED"}
        finally:
            bpy.app.handlers.save_pre.append(versioning.on_save_pre)
        assert bpy.ops.wm.open_mainfile(filepath=str(v2)) == {"FINISHED"}
        old = bpy.data.objects["ball"]
        assert not old.cmsc.adaptive_substeps and old.cmsc.substeps == versioning.OLD_SUBSTEPS
        assert old.cmsc.self_collision_friction == 0.0, "its self-collision had frictionless layers"
        _, job = addon_module("ui.bake").bake(bpy.context, old, Reports())
        assert job.steps == [versioning.OLD_SUBSTEPS] * 3, "it bakes the fixed steps it was made with"
        fixed = read_pc2(old.cmsc.cache_path)
        assert old.cmsc.baked_steps == f"{versioning.OLD_SUBSTEPS} steps per frame"

        assert bpy.ops.wm.open_mainfile(filepath=str(new)) == {"FINISHED"}
        s = bpy.data.objects["ball"].cmsc
        assert s.adaptive_substeps, "a file of this version keeps its adaptive substeps"
        s.adaptive_substeps = False  # by hand: the same fixed bake, step for step
        s.substeps = versioning.OLD_SUBSTEPS
        s.cache_path = str(tmp_path / "again.pc2")
        addon_module("ui.bake").bake(bpy.context, bpy.data.objects["ball"], Reports())
        np.testing.assert_array_equal(read_pc2(s.cache_path), fixed)
    finally:
        bpy.ops.wm.read_homefile(use_empty=True)


def test_a_joint_bake_is_adaptive_only_when_every_object_is(scene):
    sc, tmp = scene
    inputs = addon_module("ui.inputs")
    a = charged_sphere(tmp, "a", frames=3)
    b = charged_sphere(tmp, "b", frames=3)
    b.location.x = 3.0
    _adaptive(a, 2, 16)
    _adaptive(b, 1, 8)
    t = inputs.joint_timing([a, b])
    assert (t.substeps, t.max_substeps) == (2, 16)
    assert "2–16 adaptive substeps" in panel_text()
    b.cmsc.adaptive_substeps = False
    t = inputs.joint_timing([a, b])
    assert (t.substeps, t.max_substeps) == (2, 0)
    assert "2 substeps" in panel_text()


def test_layer_friction_reaches_the_simulation(scene):
    sc, tmp = scene
    inputs = addon_module("ui.inputs")
    obj = charged_sphere(tmp, frames=3)
    s = obj.cmsc
    s.self_collision, s.self_collision_distance = True, 0.01
    assert s.self_collision_friction == addon_module("ui.properties").DEFAULT_LAYER_FRICTION
    s.self_collision_friction = 12.0
    run = inputs.run_start(sc, [obj])
    assert np.all(run.joint.self_friction == 12.0)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}  # the library takes it (1/s per vertex)
    s.self_collision = False
    assert np.all(inputs.run_start(sc, [obj]).joint.self_friction == 0.0)
