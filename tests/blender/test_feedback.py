"""Honest feedback (issue 16, "Say what went wrong"): a runaway bake stops as diverged while
honest fast motion bakes; mistakes in the inputs are warned about by name and the bake goes on;
edits outside the add-on's settings mark a bake outdated; the live preview never ends up in a
saved file; freeing a shape-key bake leaves nothing behind; the operators are in a menu, under
names that say cmsc."""

import bpy  # noqa: I001 - bpy first: it makes bmesh importable
import bmesh
import numpy as np
import pytest

from scenes import addon_module, charged_sphere, draw, evaluated_coords, external_charge, read_pc2


def bake_error():
    """Runs the bake operator, which must fail; returns its report (bpy.ops raises on ERROR)."""
    with pytest.raises(RuntimeError) as e:
        bpy.ops.cmsc.bake()
    return str(e.value)


def centroid(obj):
    return (evaluated_coords(obj) @ np.array(obj.matrix_world)[:3, :3].T).mean(axis=0) + np.array(
        obj.matrix_world.translation
    )


# -- runaway ----------------------------------------------------------------------------------
def test_a_runaway_bake_stops_as_diverged_and_keeps_sane_frames(scene, capfd):
    sc, tmp = scene
    obj = charged_sphere(tmp, charge=1e6, frames=10)  # 1 C per vertex: flung 10^10 m in a frame
    rest = evaluated_coords(obj)
    capfd.readouterr()
    error = bake_error()
    assert "diverged at frame 2" in error and "runaway" in error and "substeps" in error, error
    assert "Info: cmsc: baked" not in capfd.readouterr().out
    kept = read_pc2(obj.cmsc.cache_path)
    assert len(kept) >= 1 and np.abs(kept - rest).max() < 1.0, "the frames kept are sane"


def test_free_fall_for_ten_seconds_is_not_a_runaway(scene):
    sc, tmp = scene
    sc.cmsc.use_gravity = True
    sc.gravity = (0.0, 0.0, -9.81)
    obj = charged_sphere(tmp, charge=0.0, frames=241)  # 240 frames at 24 fps: 10 s
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    sc.frame_set(241)
    z = centroid(obj)[2]
    assert abs(z + 0.5 * 9.81 * 10.0**2) < 10.0, f"fell to {z} m"


def test_a_mesh_pushed_away_at_metres_per_second_is_not_a_runaway(scene):
    sc, tmp = scene
    obj = charged_sphere(tmp, charge=0.01, frames=48)  # 1.6 µC on 50 g, 40 µC 1 m away
    external_charge((1.0, 0.0, 0.0), 40.0)
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    sc.frame_set(47)
    before = centroid(obj)
    sc.frame_set(48)
    speed = np.linalg.norm(centroid(obj) - before) * sc.render.fps
    assert 1.0 < speed < 5.0, f"{speed} m/s"


# -- silent mistakes --------------------------------------------------------------------------
def missing_group(obj):
    obj.cmsc.charge_groups[0].vertex_group = "Tentacle"
    return 'Charge group "all" names vertex group "Tentacle", which this mesh does not have'


def empty_group(obj):
    obj.vertex_groups.new(name="empty")
    obj.cmsc.charge_groups[0].vertex_group = "empty"
    return 'Charge group "all" names vertex group "empty", which has no vertices'


def zero_group(obj):
    obj.vertex_groups.new(name="zero").add([0, 1, 2], 0.0, "REPLACE")
    obj.cmsc.charge_groups[0].vertex_group = "zero"
    return 'Charge group "all" names vertex group "zero", whose weights are all 0'


def blank_group(obj):
    obj.vertex_groups.clear()  # `+` on a mesh without groups makes a blank group
    obj.cmsc.charge_groups.clear()
    bpy.ops.cmsc.charge_group_add()
    return f'Charge group "{obj.cmsc.charge_groups[0].name}" names no vertex group'


def missing_pin_group(obj):
    obj.cmsc.pin_group = "Roots"
    return 'Pin Group names vertex group "Roots", which this mesh does not have'


def loose_vertices(obj):
    bm = bmesh.new()
    bm.from_mesh(obj.data)
    for i in range(4):
        bm.verts.new((2.0 + 0.1 * i, 0.0, 0.0))
    bm.to_mesh(obj.data)
    bm.free()
    return f"4 of the {len(obj.data.vertices)} vertices are held by no spring"


@pytest.mark.parametrize(
    "mistake",
    [missing_group, empty_group, zero_group, blank_group, missing_pin_group, loose_vertices],
    ids=lambda f: f.__name__,
)
def test_input_mistakes_are_warned_by_name_and_the_bake_proceeds(scene, capfd, mistake):
    sc, tmp = scene
    panels = addon_module("ui.panels")
    obj = charged_sphere(tmp, frames=3)
    warning = mistake(obj)
    capfd.readouterr()
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    printed = capfd.readouterr().out
    assert "Warning: cmsc: ball: " + warning in printed, printed
    assert len(read_pc2(obj.cmsc.cache_path)) == 3, "the bake went on"
    assert warning in draw(panels.CMSC_PT_main).text()


def test_a_fixed_group_name_stops_warning_in_the_panel_at_once(scene):
    sc, tmp = scene
    panels = addon_module("ui.panels")
    obj = charged_sphere(tmp, frames=3)
    warning = missing_group(obj)
    assert warning in draw(panels.CMSC_PT_main).text(), "names are checked before any bake"
    obj.cmsc.charge_groups[0].vertex_group = "all"
    assert "Charge group" not in draw(panels.CMSC_PT_main).text()


# -- outdated through the depsgraph -----------------------------------------------------------
def move_vertex(obj):
    obj.data.vertices[0].co.x += 0.01
    obj.data.update()


def subdivide(obj):
    bm = bmesh.new()
    bm.from_mesh(obj.data)
    bmesh.ops.subdivide_edges(bm, edges=bm.edges[:3], cuts=1)
    bm.to_mesh(obj.data)
    bm.free()
    obj.data.update()


def paint_weight(obj):
    obj.vertex_groups["all"].add([0], 0.25, "REPLACE")


def add_group(obj):
    obj.vertex_groups.new(name="extra")


def remove_group(obj):
    obj.vertex_groups.remove(obj.vertex_groups["all"])


def rename_group(obj):
    obj.vertex_groups["all"].name = "renamed"


def change_fps(obj):
    bpy.context.scene.render.fps = 30


def change_gravity(obj):
    bpy.context.scene.gravity = (0.0, 0.0, -5.0)


def move_object(obj):
    obj.location.x += 0.5


def move_external_charge(obj):
    bpy.data.objects["charge"].location.x += 0.5


def recharge_external_charge(obj):
    bpy.data.objects["charge"].cmsc_charge.charge = 3.0


def change_field(obj):
    bpy.context.scene.cmsc.field = (0.0, 0.0, 100.0)


def baked_with_an_external_charge(tmp):
    sc = bpy.context.scene
    sc.cmsc.use_gravity = True
    sc.gravity = (0.0, 0.0, -9.81)
    obj = charged_sphere(tmp, frames=3)
    external_charge((2.0, 0.0, 0.0), -1.0).name = "charge"
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    bpy.context.view_layer.update()
    return obj


@pytest.mark.parametrize(
    "edit",
    [
        move_vertex, subdivide, paint_weight, add_group, remove_group, rename_group, change_fps, change_gravity,
        move_object, move_external_charge, recharge_external_charge, change_field,
    ],
    ids=lambda f: f.__name__,
)
def test_edits_outside_the_settings_mark_the_bake_outdated(scene, edit):
    sc, tmp = scene
    obj = baked_with_an_external_charge(tmp)
    assert not obj.cmsc.cache_outdated
    edit(obj)
    bpy.context.view_layer.update()
    assert obj.cmsc.cache_outdated


def test_playing_selecting_and_rebaking_leave_the_bake_current(scene):
    sc, tmp = scene
    obj = baked_with_an_external_charge(tmp)
    for f in (1, 2, 3, 1):
        sc.frame_set(f)
    obj.select_set(not obj.select_get())
    bpy.context.view_layer.update()
    assert not obj.cmsc.cache_outdated
    move_vertex(obj)
    bpy.context.view_layer.update()
    assert obj.cmsc.cache_outdated
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    bpy.context.view_layer.update()
    assert not obj.cmsc.cache_outdated, "the new bake matches the edited mesh"


def test_a_shape_key_bake_stays_current_after_it_adds_its_keys(scene):
    sc, tmp = scene
    obj = charged_sphere(tmp, frames=3)
    obj.cmsc.cache_format = "SHAPE_KEYS"
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    bpy.context.view_layer.update()
    assert not obj.cmsc.cache_outdated
    paint_weight(obj)
    bpy.context.view_layer.update()
    assert obj.cmsc.cache_outdated


# -- the preview stays out of saved files ----------------------------------------------------
def test_saving_during_the_preview_keeps_its_shape_key_out_of_the_file(tmp_path):
    bpy.ops.wm.read_homefile(use_empty=True)
    try:
        sc = bpy.context.scene
        sc.cmsc.use_gravity = True
        sc.frame_set(1)
        obj = charged_sphere(tmp_path, frames=6)
        rest = evaluated_coords(obj)
        preview = addon_module("ui.preview")
        for f in (1, 2, 3):
            sc.frame_set(f)
        assert preview.is_running(obj)
        moving = evaluated_coords(obj)
        assert np.abs(moving - rest).max() > 1e-4
        blend = tmp_path / "saved.blend"
        assert bpy.ops.wm.save_as_mainfile(filepath=str(blend)) == {"FINISHED"}
        assert np.allclose(evaluated_coords(obj), moving, atol=1e-6), "the preview shows on after the save"

        assert bpy.ops.wm.open_mainfile(filepath=str(blend)) == {"FINISHED"}
        obj = bpy.data.objects["ball"]
        assert obj.data.shape_keys is None, [k.name for k in obj.data.shape_keys.key_blocks]
        assert np.allclose(evaluated_coords(obj), rest, atol=1e-6), "the file opens undeformed"
    finally:
        bpy.ops.wm.read_homefile(use_empty=True)


# -- freeing a shape-key bake -----------------------------------------------------------------
def test_freeing_a_shape_key_bake_is_silent_and_complete(scene, capfd):
    sc, tmp = scene
    obj = charged_sphere(tmp, frames=5)
    obj.cmsc.cache_format = "SHAPE_KEYS"
    actions = set(bpy.data.actions)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    assert obj.data.shape_keys.animation_data.action is not None
    capfd.readouterr()
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    out = capfd.readouterr()
    assert "not found" not in out.out + out.err, out
    assert obj.data.shape_keys is None
    assert set(bpy.data.actions) == actions, "the bake's action went with its keys"


def test_freeing_keeps_the_users_own_shape_key_animation(scene):
    sc, tmp = scene
    obj = charged_sphere(tmp, frames=3)
    obj.shape_key_add(name="Basis")
    smile = obj.shape_key_add(name="Smile")
    smile.keyframe_insert("value", frame=1)
    obj.cmsc.cache_format = "SHAPE_KEYS"
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    keys = obj.data.shape_keys
    assert [k.name for k in keys.key_blocks] == ["Basis", "Smile"]
    bridge = addon_module("ui.bridge")
    assert [fc.data_path for fc in bridge.fcurves(keys)] == ['key_blocks["Smile"].value']


# -- findable operators -----------------------------------------------------------------------
def test_the_operators_are_in_the_object_menu_under_names_that_say_cmsc(scene):
    panels = addon_module("ui.panels")
    for op in (bpy.ops.cmsc.bake, bpy.ops.cmsc.free_bake, bpy.ops.cmsc.fit_charges):
        assert "Charged Mass-Spring" in op.get_rna_type().name, op.get_rna_type().name
    assert panels.draw_object_menu in bpy.types.VIEW3D_MT_object._dyn_ui_initialize()
    items = draw(panels.CMSC_MT_object)
    ops = {item[1] for _, item in items.walk() if item[0] == "operator"}
    assert {"cmsc.bake", "cmsc.free_bake", "cmsc.physics_toggle", "cmsc.fit_charges"} <= ops
