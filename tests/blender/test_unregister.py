"""Disabling the add-on removes everything it added to Blender (runs last: file name order)."""

import addon_utils
import bpy

from scenes import addon_module, charged_sphere


def test_disable_removes_handlers_buttons_types_and_preview_keys(scene, addon):
    sc, tmp = scene
    preview, panels, watch = addon_module("ui.preview"), addon_module("ui.panels"), addon_module("ui.watch")
    obj = charged_sphere(tmp)
    sc.frame_set(1)
    sc.frame_set(2)
    assert preview.is_running(obj) and preview.KEY_NAME in obj.data.shape_keys.key_blocks
    name = addon.__name__
    addon_utils.disable(name, default_set=True)
    try:
        assert preview.on_frame_change not in bpy.app.handlers.frame_change_post
        assert preview.on_load not in bpy.app.handlers.load_post
        assert preview.on_save_pre not in bpy.app.handlers.save_pre
        assert preview.on_save_post not in bpy.app.handlers.save_post
        assert watch.on_depsgraph_update not in bpy.app.handlers.depsgraph_update_post
        assert panels.draw_object_menu not in bpy.types.VIEW3D_MT_object._dyn_ui_initialize()
        assert panels.draw_physics_add not in bpy.types.PHYSICS_PT_add._dyn_ui_initialize()
        assert not hasattr(bpy.types.Object, "cmsc") and not hasattr(bpy.types.Scene, "cmsc")
        assert not hasattr(bpy.types, "CMSC_PT_main") and not hasattr(bpy.types, "CMSC_AddonPreferences")
        assert "bake" not in dir(bpy.ops.cmsc)
        assert obj.data.shape_keys is None, "the preview key does not outlive the add-on"
        assert not preview.is_running(obj)
        sc.frame_set(3)  # no handler left to run
    finally:
        assert addon_utils.enable(name, default_set=True, handle_error=None) is not None
    assert hasattr(bpy.types.Object, "cmsc")
