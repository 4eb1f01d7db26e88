"""Panels in the Physics and Scene properties."""

import bpy

from ..sim import _native
from ..sim.errors import LibraryError


def library_problem():
    """None if the native library loads, else the reason (shown in the panels)."""
    try:
        _native.load(_native.addon_library_path())
    except LibraryError as e:
        return str(e)
    return None


class CMSC_UL_charge_groups(bpy.types.UIList):
    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index):
        row = layout.row(align=True)
        row.prop_search(item, "vertex_group", context.active_object, "vertex_groups", text="")
        row.prop(item, "charge", text="µC")


class CMSC_PT_main(bpy.types.Panel):
    bl_label = "Charged Mass-Spring"
    bl_idname = "CMSC_PT_main"
    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "physics"

    @classmethod
    def poll(cls, context):
        return context.object is not None and context.object.type == "MESH"

    def draw_header(self, context):
        self.layout.prop(context.object.cmsc, "enabled", text="")

    def draw(self, context):
        layout, s = self.layout, context.object.cmsc
        problem = library_problem()
        if problem:
            layout.label(text="cmsc library unavailable:", icon="ERROR")
            layout.label(text=problem)
            return
        layout.active = s.enabled
        col = layout.column()
        col.prop(s, "mass")
        col.prop(s, "stiffness")
        col.prop(s, "bending_stiffness")
        col.prop(s, "damping")
        col.prop(s, "substeps")
        col.prop(s, "iterations")
        col.prop(s, "coulomb_method")
        if s.coulomb_method.startswith("DDEF"):
            col.prop(s, "grid_points")
        col.prop_search(s, "pin_group", context.object, "vertex_groups")
        layout.label(text="Charge Groups")
        row = layout.row()
        row.template_list("CMSC_UL_charge_groups", "", s, "charge_groups", s, "charge_group_index", rows=3)
        ops = row.column(align=True)
        ops.operator("cmsc.charge_group_add", icon="ADD", text="")
        ops.operator("cmsc.charge_group_remove", icon="REMOVE", text="")
        box = layout.box()
        box.row(align=True).prop(s, "frame_start")
        box.row(align=True).prop(s, "frame_end")
        box.prop(s, "cache_format")
        box.prop(s, "cache_path")
        from .operators import RUNNING

        job = RUNNING.get(context.object.name)
        if job is not None:
            done = job.frames_done / max(1, job.frames + 1)
            box.progress(factor=done, type="BAR", text=f"Baking frame {job.start_frame + job.frames_done} (Esc to cancel)")
        row = box.row(align=True)
        row.operator("cmsc.bake")
        row.operator("cmsc.free_bake")


class CMSC_PT_external_charge(bpy.types.Panel):
    bl_label = "External Charge"
    bl_idname = "CMSC_PT_external_charge"
    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "physics"

    @classmethod
    def poll(cls, context):
        return context.object is not None

    def draw_header(self, context):
        self.layout.prop(context.object.cmsc_charge, "enabled", text="")

    def draw(self, context):
        self.layout.active = context.object.cmsc_charge.enabled
        self.layout.prop(context.object.cmsc_charge, "charge", text="Charge (µC)")


class CMSC_PT_scene(bpy.types.Panel):
    bl_label = "Charged Mass-Spring"
    bl_idname = "CMSC_PT_scene"
    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "scene"

    def draw(self, context):
        self.layout.prop(context.scene.cmsc, "field")
        self.layout.prop(context.scene.cmsc, "use_gravity")


CLASSES = (CMSC_UL_charge_groups, CMSC_PT_main, CMSC_PT_external_charge, CMSC_PT_scene)
