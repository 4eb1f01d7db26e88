"""Like Blender's own caches: settings are greyed out while a bake exists, and changing one
marks the bake outdated ("Cache is outdated", "Bake (outdated)") until it is baked again."""

import bpy
import pytest

from scenes import addon_module, charged_sphere, draw, key_charge


@pytest.fixture
def panels():
    return addon_module("ui.panels")


def test_settings_changed_after_a_bake_mark_it_outdated(scene, panels):
    sc, tmp = scene
    obj = charged_sphere(tmp, frames=4)
    obj.cmsc.stiffness = 25.0  # no bake yet: nothing to mark
    assert not obj.cmsc.cache_outdated
    layout = draw(panels.CMSC_PT_main)
    assert layout.find("prop", "stiffness")[0].is_active()
    assert layout.find("operator", "cmsc.bake")[1][2]["text"] == "Bake"

    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    assert not obj.cmsc.cache_outdated
    layout = draw(panels.CMSC_PT_main)
    assert not layout.find("prop", "stiffness")[0].is_active(), "settings greyed out while baked"
    assert not layout.find("template_list", "CMSC_UL_charge_groups")[0].is_active()
    assert not layout.find("prop", "frame_end")[0].is_active()
    assert layout.find("operator", "cmsc.free_bake")[0].is_active()
    assert "Cache is outdated: a setting changed since the bake" not in layout.labels()

    obj.cmsc.stiffness = 30.0
    assert obj.cmsc.cache_outdated
    layout = draw(panels.CMSC_PT_main)
    assert "Cache is outdated: a setting changed since the bake" in layout.labels()
    assert layout.find("operator", "cmsc.bake")[1][2]["text"] == "Bake (outdated)"

    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    assert not obj.cmsc.cache_outdated
    assert draw(panels.CMSC_PT_main).find("operator", "cmsc.bake")[1][2]["text"] == "Bake"
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    assert not obj.cmsc.cache_outdated
    assert draw(panels.CMSC_PT_main).find("prop", "stiffness")[0].is_active()


@pytest.mark.parametrize(
    "change",
    [
        lambda obj: setattr(obj.cmsc.charge_groups[0], "charge", 3.0),
        lambda obj: setattr(obj.cmsc, "substeps", 3),
        lambda obj: setattr(obj.cmsc, "coulomb_method", "DDEF"),
        lambda obj: setattr(obj.cmsc, "frame_end", 6),
        lambda obj: setattr(bpy.context.scene.cmsc, "field", (0.0, 0.0, 10.0)),
        lambda obj: setattr(bpy.context.scene.cmsc, "use_gravity", True),
    ],
    ids=["group charge", "substeps", "coulomb method", "frame end", "scene field", "gravity"],
)
def test_each_kind_of_setting_marks_the_bake_outdated(scene, change):
    sc, tmp = scene
    obj = charged_sphere(tmp, frames=3)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    change(obj)
    assert obj.cmsc.cache_outdated


def test_external_charge_changes_mark_baked_objects_outdated(scene):
    sc, tmp = scene
    obj = charged_sphere(tmp, frames=3)
    bpy.ops.object.empty_add(location=(2.0, 0.0, 0.0))
    empty = bpy.context.active_object
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    empty.cmsc_charge.enabled = True
    assert obj.cmsc.cache_outdated


def test_playing_keyframed_charges_does_not_mark_the_bake_outdated(scene):
    sc, tmp = scene
    obj = charged_sphere(tmp, frames=6)
    key_charge(obj.cmsc.charge_groups[0], [(1, 0.0), (6, 2.0)])
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    for f in range(1, 7):
        sc.frame_set(f)  # animation writes the charge without an update callback
    assert not obj.cmsc.cache_outdated
