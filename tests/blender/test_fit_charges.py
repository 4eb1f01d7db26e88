"""`cmsc.fit_charges` recovers known charges from a target shape key made by a bake."""

import bpy
import numpy as np
import pytest

from scenes import addon_module, charged_sphere, read_pc2

TRUTH = {"top": 1.0, "bottom": 0.5}  # µC
FRAME = 6


def two_group_sphere(tmp, defaults=False):
    """A sphere whose top and bottom halves carry different charges; the target shape key is
    its baked shape at FRAME with the true charges. Returns the object with wrong charges.
    Baked with fixed substeps, the steps the fit's rollouts run, or with `defaults` as a new
    object bakes (adaptive substeps: the fit still runs Substeps fixed steps per frame)."""
    obj = charged_sphere(tmp, "ball", charge=1.0, frames=FRAME)
    obj.location = (0.3, -0.2, 1.0)  # world ≠ object space
    obj.rotation_euler = (0.3, 0.0, 0.5)
    s = obj.cmsc
    for name in TRUTH:
        vg = obj.vertex_groups.new(name=name)
        vg.add([v.index for v in obj.data.vertices if (v.co.z > 0) == (name == "top")], 1.0, "REPLACE")
    s.charge_groups.clear()
    for name, charge in TRUTH.items():
        obj.vertex_groups.active = obj.vertex_groups[name]
        assert bpy.ops.cmsc.charge_group_add() == {"FINISHED"}
        s.charge_groups[name].distribution = "PER_VERTEX"
        s.charge_groups[name].charge = charge
    if not defaults:
        # the fit's rollouts run the bake's steps (accelerated iterations to the tolerance)
        s.adaptive_substeps = False
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    sample = read_pc2(s.cache_path)[FRAME - 1]
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    obj.shape_key_add(name="Basis", from_mix=False)
    target = obj.shape_key_add(name="target", from_mix=False)
    target.data.foreach_set("co", sample.astype(float).ravel())
    assert np.abs(sample - read_pc2_rest(obj)).max() > 1e-3, "the charges moved the mesh"
    return obj


def read_pc2_rest(obj):
    co = np.empty(3 * len(obj.data.vertices))
    obj.data.vertices.foreach_get("co", co)
    return co.reshape(-1, 3)


def charges(obj):
    return {g.name: g.charge for g in obj.cmsc.charge_groups}


def test_fit_recovers_the_charges_of_all_groups(scene):
    sc, tmp = scene
    obj = two_group_sphere(tmp)
    obj.cmsc.charge_groups["top"].charge = 0.5
    obj.cmsc.charge_groups["bottom"].charge = 0.8
    assert bpy.ops.cmsc.fit_charges(shape_key="target", frame=FRAME) == {"FINISHED"}
    for name, truth in TRUTH.items():
        assert charges(obj)[name] == pytest.approx(truth, rel=1e-3), charges(obj)
    assert obj.animation_data is None, "no keyframes unless asked"


def test_a_fit_to_a_bake_at_the_defaults_recovers_its_charges_within_one_percent(scene):
    sc, tmp = scene
    obj = two_group_sphere(tmp, defaults=True)
    assert obj.cmsc.adaptive_substeps
    obj.cmsc.charge_groups["top"].charge = 0.5
    obj.cmsc.charge_groups["bottom"].charge = 0.8
    assert bpy.ops.cmsc.fit_charges(shape_key="target", frame=FRAME) == {"FINISHED"}
    print(f"fitted to a bake at the defaults: {charges(obj)}, truth {TRUTH}")
    for name, truth in TRUTH.items():
        assert charges(obj)[name] == pytest.approx(truth, rel=1e-2), charges(obj)


def test_fit_solves_only_the_ticked_group_and_keyframes_it(scene):
    sc, tmp = scene
    obj = two_group_sphere(tmp)
    groups = obj.cmsc.charge_groups
    groups["top"].charge = TRUTH["top"]
    groups["bottom"].charge = 0.2
    groups["bottom"].fit = True
    assert bpy.ops.cmsc.fit_charges(shape_key="target", frame=FRAME, keyframe=True) == {"FINISHED"}
    assert groups["top"].charge == pytest.approx(TRUTH["top"], abs=1e-6)
    assert groups["bottom"].charge == pytest.approx(TRUTH["bottom"], rel=1e-3)
    fcurves = addon_module("ui.bridge").fcurves(obj)  # Blender 5.0: no Action.fcurves
    assert [fc.data_path for fc in fcurves] == ['cmsc.charge_groups["bottom"].charge']
    key = fcurves[0].keyframe_points[0]
    assert key.co[0] == obj.cmsc.frame_start and key.co[1] == pytest.approx(groups["bottom"].charge)


def test_fit_reports_unusable_inputs(scene):
    sc, tmp = scene
    obj = two_group_sphere(tmp)
    with pytest.raises(RuntimeError, match="no shape key 'missing'"):
        bpy.ops.cmsc.fit_charges(shape_key="missing", frame=FRAME)
    with pytest.raises(RuntimeError, match="must come after the start frame"):
        bpy.ops.cmsc.fit_charges(shape_key="target", frame=1)
    for g in obj.cmsc.charge_groups:
        g.charge = 0.0
    with pytest.raises(RuntimeError, match="every charge is zero"):
        bpy.ops.cmsc.fit_charges(shape_key="target", frame=FRAME)
    assert all(g.charge == 0.0 for g in obj.cmsc.charge_groups)


@pytest.mark.parametrize("flaw", ["missing vertex group", "driven charge", "the preview's key", "a bake's key"])
def test_fit_refuses_what_it_cannot_fit(scene, flaw):
    """Each said "fitted ..., converged" and changed nothing that plays (a group on no vertex, a
    driven charge), or fitted to the add-on's own temporary key."""
    sc, tmp = scene
    obj = two_group_sphere(tmp)
    top = obj.cmsc.charge_groups["top"]
    target = "target"
    if flaw == "missing vertex group":
        top.vertex_group = "nowhere"
        said = "top's vertex group 'nowhere' gives it no vertex"
    elif flaw == "driven charge":
        top.driver_add("charge").driver.expression = "0.8"
        said = "top's charge is driven"
    else:
        target = "Preview (cmsc)" if flaw == "the preview's key" else "cmsc 3"
        obj.shape_key_add(name=target, from_mix=False)
        said = "is the add-on's own shape key"
    sc.frame_set(1)  # the driver sets the charge
    before = charges(obj)
    with pytest.raises(RuntimeError, match=said):
        bpy.ops.cmsc.fit_charges(shape_key=target, frame=FRAME)
    assert charges(obj) == before


def test_fit_in_edit_mode_fits_the_target_as_edited(scene):
    """The fit read the target key as it was before Edit Mode (a 0.2 m edit made no difference)."""
    sc, tmp = scene
    obj = two_group_sphere(tmp)
    bpy.context.view_layer.objects.active = obj
    obj.active_shape_key_index = obj.data.shape_keys.key_blocks.find("target")
    bpy.ops.object.mode_set(mode="EDIT")
    bpy.ops.mesh.select_all(action="SELECT")
    bpy.ops.transform.translate(value=(0.0, 0.0, 0.2))
    try:
        _, _, result, _ = addon_module("ui.fit").fit(bpy.context, obj, "target", FRAME, max_iterations=1)
    finally:
        bpy.ops.object.mode_set(mode="OBJECT")
    rms = np.sqrt(2 * result.initial_loss)
    assert 0.15 < rms < 0.25, f"the fit started {rms:.3g} m from the target (0.2 m edit; unedited: 0.01 m)"


def test_the_fit_dialog_proposes_the_artists_last_key(scene):
    sc, tmp = scene
    obj = two_group_sphere(tmp)
    obj.shape_key_add(name="Preview (cmsc)", from_mix=False)  # the live preview's, last
    op = type("Op", (), {"shape_key": "", "frame": FRAME})()
    wm = type("WM", (), {"invoke_props_dialog": staticmethod(lambda op: {"RUNNING_MODAL"})})()
    context = type("Ctx", (), {"active_object": obj, "scene": sc, "window_manager": wm})()
    addon_module("ui.operators").CMSC_OT_fit_charges.invoke(op, context, None)
    assert op.shape_key == "target"


@pytest.mark.parametrize("iterations,converged", [(1, False), (50, True)], ids=["stopped at its limit", "converged"])
def test_the_fit_says_whether_it_converged(scene, capfd, iterations, converged):
    sc, tmp = scene
    obj = two_group_sphere(tmp)
    obj.cmsc.charge_groups["top"].charge = 0.5
    obj.cmsc.charge_groups["bottom"].charge = 0.8
    capfd.readouterr()
    assert bpy.ops.cmsc.fit_charges(shape_key="target", frame=FRAME, max_iterations=iterations) == {"FINISHED"}
    printed = capfd.readouterr().out
    if converged:
        assert "Info: cmsc: fitted top" in printed and ", converged (RMS distance" in printed, printed
    else:
        assert "Warning: cmsc: fit stopped at its limit of 1 iterations before converging" in printed, printed
        assert "still falling" in printed and "raise Iterations" in printed, printed
