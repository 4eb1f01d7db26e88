"""The entry among the Physics tab's "Enable physics for" buttons (like Cloth's)."""

import bpy

from scenes import Layout, addon_module, charged_sphere


def physics_add_draw_funcs():
    return bpy.types.PHYSICS_PT_add._dyn_ui_initialize()


def draw_physics_add():
    """Draws PHYSICS_PT_add (Blender's buttons, then the appended ones) with the context of a
    Properties editor showing the active object, which has no physics modifiers."""
    layout = Layout()
    panel = type("Panel", (), {"layout": layout})()
    modifiers = dict.fromkeys(("collision", "cloth", "dynamic_paint", "soft_body", "fluid"))
    context = type("Context", (), {"object": bpy.context.object, **modifiers})()
    for fn in physics_add_draw_funcs():
        fn(panel, context)
    return layout


def test_the_physics_tab_offers_and_removes_the_simulation(scene):
    sc, tmp = scene
    panels = addon_module("ui.panels")
    assert panels.draw_physics_add in physics_add_draw_funcs()
    obj = charged_sphere(tmp)
    obj.cmsc.enabled = False
    _, button = draw_physics_add().find("operator", "cmsc.physics_toggle")
    assert button[2] == {"text": "Charged Mass-Spring", "icon": "PHYSICS"}
    # Blender's own buttons are drawn too (the panel's draw was extended, not replaced)
    assert draw_physics_add().find("operator", "object.modifier_add") is not None

    assert bpy.ops.cmsc.physics_toggle() == {"FINISHED"}
    assert obj.cmsc.enabled
    _, button = draw_physics_add().find("operator", "cmsc.physics_toggle")
    assert button[2]["icon"] == "X"
    assert bpy.ops.cmsc.physics_toggle() == {"FINISHED"}
    assert not obj.cmsc.enabled


def test_no_entry_for_objects_that_are_not_meshes(scene):
    bpy.ops.object.empty_add()
    assert draw_physics_add().find("operator", "cmsc.physics_toggle") is None
    assert not bpy.ops.cmsc.physics_toggle.poll()
