"""Panels in the Physics and Scene properties, the entry in the Physics tab's "Enable physics
for" buttons, and the Object menu's "Charged Mass-Spring" submenu (so that F3 search finds the
operators by name)."""

import bpy

from ..sim import methods
from ..sim.bake_job import steps_line
from . import activity, cache, inputs, preferences, preview, simulated
from .text import wrapped_label


class CMSC_UL_charge_groups(bpy.types.UIList):
    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index):
        row = layout.row(align=True)
        row.prop_search(item, "vertex_group", context.active_object, "vertex_groups", text="")
        row.prop(item, "charge", text="µC")
        row.prop(item, "fit", text="", icon="CHECKBOX_HLT" if item.fit else "CHECKBOX_DEHLT", emboss=False)


def _coulomb_note(s):
    """Why the Coulomb method that runs differs from the one asked for (GPU fallback), or ""."""
    wants_gpu = s.coulomb_method == "DDEF_GPU" or preferences.use_gpu()
    if not wants_gpu:
        return ""
    _, note = inputs.coulomb(s)
    return note


def coulomb_line(obj):
    """What the panel says of the Coulomb method: the one that ran, as the library reported it
    (a running bake, the bake there is, a running preview), or, with AUTO before anything ran,
    that the library chooses when the simulation starts. "" for an explicit method not run yet."""
    job = activity.bake_job(obj)
    if job is not None and job.coulomb_method is not None:
        return f"Coulomb: {methods.describe(job.params.coulomb, job.coulomb_method)}"
    if cache.has_bake(obj) and obj.cmsc.baked_coulomb_method:
        return f"Coulomb: {obj.cmsc.baked_coulomb_method}"
    ran = preview.coulomb_method(obj)
    if ran is not None:
        return f"Coulomb: {ran}"
    if obj.cmsc.coulomb_method == "AUTO":
        return "AUTO chooses the Coulomb method from the vertex count when the bake or preview starts"
    return ""


def input_warnings(obj):
    """The panel's warnings about the inputs: blank or missing groups (checked now, from the
    names), then what the last bake or preview found in the weights and springs."""
    return inputs.name_warnings(obj) + activity.warnings(obj)


def _cache_file_lines(layout, obj):
    """Where the PC2 bake goes when the Cache Path is empty, and the file the bake wrote (the
    read-only record, shown as text)."""
    s = obj.cmsc
    if not s.cache_path:
        where = cache.target(obj) or f"//cmsc_cache/{obj.name}_<id>.pc2"
        wrapped_label(layout, f"Empty: {where}, next to the saved .blend", icon="FILE_FOLDER")
    written = s.baked_cache_path
    if written:
        wrapped_label(layout, f"Baked to {written}", icon="FILE_CACHE")


def _settings_column(layout, obj):
    """A column for settings, greyed out (like Cloth's) while a bake exists or runs: a change
    marks the bake outdated."""
    col = layout.column()
    col.active = not cache.has_bake(obj) and activity.bake_job(obj) is None
    return col


class _Sub:
    """A sub-panel of `CMSC_PT_main`, shown when its parent draws settings (library loaded)."""

    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "physics"
    bl_parent_id = "CMSC_PT_main"

    @classmethod
    def poll(cls, context):
        return CMSC_PT_main.poll(context) and preferences.library_problem() is None


class CMSC_PT_main(bpy.types.Panel):
    """The object's simulation: its physics here, charges and bake in the sub-panels."""

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
        layout, obj = self.layout, context.object
        s = obj.cmsc
        problem = preferences.library_problem()
        if problem:
            layout.label(text="cmsc library unavailable:", icon="ERROR")
            wrapped_label(layout, problem)
            return
        layout.active = s.enabled
        col = _settings_column(layout, obj)
        col.prop(s, "mass")
        col.prop(s, "stiffness")
        col.prop(s, "bending_stiffness")
        col.prop(s, "relative_damping")
        col.prop(s, "spring_damping")
        col.prop(s, "damping")
        col.prop(s, "adaptive_substeps")
        col.prop(s, "substeps", text="Min Substeps" if s.adaptive_substeps else "Substeps")
        sub = col.column()
        sub.active = s.adaptive_substeps
        sub.prop(s, "max_substeps")
        col.prop(s, "iterations", text="Max Iterations" if s.adaptive_substeps else "Iterations")
        col.prop(s, "integrator")
        col.prop(s, "coulomb_method")
        line = coulomb_line(obj)
        if line:
            wrapped_label(col, line, icon="INFO")
        note = _coulomb_note(s)
        if note:
            wrapped_label(col, note, icon="ERROR")
        if s.coulomb_method.startswith("DDEF"):
            col.prop(s, "grid_points")
        if s.coulomb_method in ("AUTO", "DDEF", "DDEF_GPU"):  # AUTO's P3M runs DDEF on a scene too sparse for it
            col.prop(s, "far_field_interval")
        col.prop_search(s, "pin_group", obj, "vertex_groups")
        row = col.row()
        row.prop(s, "self_collision")
        sub = row.row()
        sub.active = s.self_collision
        sub.prop(s, "self_collision_distance")
        sub = col.row()
        sub.active = s.self_collision
        sub.prop(s, "self_collision_friction")
        col.prop(s, "coulomb_friction")


class CMSC_PT_charges(_Sub, bpy.types.Panel):
    """Charge groups, the input warnings, and the charge fit."""

    bl_label = "Charge Groups"
    bl_idname = "CMSC_PT_charges"

    def draw(self, context):
        layout, obj = self.layout, context.object
        s = obj.cmsc
        layout.active = s.enabled
        col = _settings_column(layout, obj)
        row = col.row()
        row.template_list("CMSC_UL_charge_groups", "", s, "charge_groups", s, "charge_group_index", rows=3)
        ops = row.column(align=True)
        ops.operator("cmsc.charge_group_add", icon="ADD", text="")
        ops.operator("cmsc.charge_group_remove", icon="REMOVE", text="")
        if 0 <= s.charge_group_index < len(s.charge_groups):
            col.prop(s.charge_groups[s.charge_group_index], "distribution")
        for text in input_warnings(obj):
            wrapped_label(col, text, icon="ERROR")
        fit = col.box()
        fit.label(text="Fit charges to a shape key (marked groups, or all)")
        fit.operator("cmsc.fit_charges", text="Fit Charges", icon="DRIVER_DISTANCE")


class CMSC_PT_bake(_Sub, bpy.types.Panel):
    """Frames, the cache, the bake and its state, and the live preview."""

    bl_label = "Bake"
    bl_idname = "CMSC_PT_bake"

    def draw(self, context):
        layout, obj = self.layout, context.object
        s = obj.cmsc
        layout.active = s.enabled
        baked = cache.has_bake(obj)
        job = activity.bake_job(obj)
        frames = _settings_column(layout, obj).column(align=True)
        frames.prop(s, "frame_start")
        frames.prop(s, "frame_end")
        box = layout.column()
        box.prop(s, "cache_format")
        if s.cache_format == "PC2":
            box.prop(s, "cache_path")
            _cache_file_lines(box, obj)
        if job is not None:
            done = job.frames_done / max(1, job.frames + 1)
            text = f"Baking frame {job.start_frame + job.frames_done} (Esc to cancel)"
            box.progress(factor=done, type="BAR", text=text)
        elif baked and (missing := cache.missing_file(obj)):
            wrapped_label(
                box,
                f"The cache file {missing} is missing (deleted or moved): the mesh plays no motion. "
                "Bake again, or put the file back",
                icon="ERROR",
            )
        elif baked and s.cache_outdated:
            box.label(text="Cache is outdated: a setting changed since the bake", icon="ERROR")
        elif baked:
            box.label(text="Baked: changing a setting marks the cache outdated", icon="INFO")
        if job is not None and job.steps:
            box.label(text=f"Steps: {steps_line(list(job.steps))}", icon="TIME")
        elif baked and s.baked_steps:
            box.label(text=f"Steps: {s.baked_steps}", icon="TIME")
        if job is None and baked:
            for warning in filter(None, s.baked_warnings.split("\n")):
                wrapped_label(box, f"Bake warning: {warning}", icon="ERROR")
        together = inputs.simulated_objects(context.scene, obj)[1:] if simulated.is_simulated(obj) else []
        if together:
            timing = inputs.joint_timing([obj] + together)
            wrapped_label(
                box,
                f"Bakes together with {', '.join(o.name for o in together)}: frames {timing.start}–{timing.end}, "
                f"{timing.describe()} (the widest range and finest steps of them)",
                icon="LINKED",
            )
        row = box.row(align=True)
        row.operator("cmsc.bake", text="Bake (outdated)" if baked and s.cache_outdated else "Bake")
        row.operator("cmsc.free_bake", text="Free Bake")
        prow = box.row()
        prow.active = not baked
        prow.prop(s, "preview")
        sub = prow.row()
        sub.active = s.preview
        sub.prop(s, "preview_substeps", text="Substeps")
        if s.preview and not baked and preview.substeps(s) != s.substeps:
            box.label(text=f"Preview: {preview.substeps(s)} substeps per frame, the bake {s.substeps}", icon="INFO")
        st = preview.status(obj)
        if st is not None:
            wrapped_label(box, st.text, icon=st.severity.value)


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


def draw_physics_add(self, context):
    """Appended to PHYSICS_PT_add ("Enable physics for"): a button like Cloth's that turns the
    simulation on (its icon) or off (an X)."""
    obj = context.object
    if obj is None or obj.type != "MESH":
        return
    row = self.layout.row(align=True)
    row.operator("cmsc.physics_toggle", text="Charged Mass-Spring", icon="X" if obj.cmsc.enabled else "PHYSICS")


class CMSC_MT_object(bpy.types.Menu):
    """Object ▸ Charged Mass-Spring: the add-on's operators for the active object."""

    bl_idname = "CMSC_MT_object"
    bl_label = "Charged Mass-Spring"

    def draw(self, context):
        layout = self.layout
        obj = context.object
        enabled = simulated.is_simulated(obj)
        layout.operator(
            "cmsc.physics_toggle", text="Disable Simulation" if enabled else "Enable Simulation", icon="PHYSICS"
        )
        layout.separator()
        layout.operator("cmsc.bake", icon="FILE_CACHE")
        layout.operator("cmsc.free_bake", icon="TRASH")
        layout.separator()
        layout.operator("cmsc.fit_charges", icon="DRIVER_DISTANCE")


def draw_object_menu(self, context):
    """Appended to the 3D Viewport's Object menu."""
    self.layout.separator()
    self.layout.menu(CMSC_MT_object.bl_idname, icon="PHYSICS")


CLASSES = (
    CMSC_UL_charge_groups, CMSC_PT_main, CMSC_PT_charges, CMSC_PT_bake, CMSC_PT_external_charge, CMSC_PT_scene,
    CMSC_MT_object,
)


def register():
    bpy.types.PHYSICS_PT_add.append(draw_physics_add)
    bpy.types.VIEW3D_MT_object.append(draw_object_menu)


def unregister():
    bpy.types.VIEW3D_MT_object.remove(draw_object_menu)
    bpy.types.PHYSICS_PT_add.remove(draw_physics_add)
