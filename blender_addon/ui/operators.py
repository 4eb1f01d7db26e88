"""Operators (ids fixed by the add-on contract)."""

import threading

import bpy

from ..sim.bake_job import run
from ..sim.errors import CmscError
from . import bake as baking
from . import bridge, preferences


def _mesh_with_cmsc(context):
    obj = context.active_object
    return obj is not None and obj.type == "MESH"


def _library_ok():
    return preferences.library_problem() is None


#: Bakes running in the UI, by object name: the panel draws their progress.
RUNNING = baking.RUNNING


class ModalBake:
    """The modal bake apart from Blender's event loop: constructing it gathers the inputs on
    the main thread and starts a worker thread that sees only numpy arrays; `update(event_type)` is what
    each event does (Esc asks the worker to stop after its current frame) and says whether the
    worker is done; `finish(report)` writes the result back to Blender on the main thread."""

    def __init__(self, context, obj):
        self.obj = obj
        self.job = baking.collect(context, obj)
        self.failure = None
        self.thread = threading.Thread(target=self._work, name="cmsc bake", daemon=True)
        RUNNING[obj.name] = self.job
        self.thread.start()

    def _work(self):
        try:
            run(self.job)
        except Exception as e:  # noqa: BLE001 - reported on the main thread
            self.failure = e

    def update(self, event_type):
        """Handles one event; True once the worker has finished."""
        if event_type == "ESC":
            self.job.cancel.set()
        return not self.thread.is_alive()

    def finish(self, report):
        """Adds the cache to the object and reports; returns the operator's result."""
        self.thread.join()
        RUNNING.pop(self.obj.name, None)
        baking.finish(self.obj, self.job)
        if self.job.note:
            report({"WARNING"}, f"cmsc: {self.job.note}")
        if self.failure is not None:
            report({"ERROR"}, f"cmsc: bake failed: {self.failure}")
            return {"CANCELLED"}
        if self.job.error:
            level = "WARNING" if self.job.error.startswith("cancelled") else "ERROR"
            report({level}, f"cmsc: {self.job.error}; kept {self.job.frames_done} baked frames")
            return {"CANCELLED"}
        report({"INFO"}, f"cmsc: baked {self.job.frames_done} frames")
        return {"FINISHED"}


class CMSC_OT_bake(bpy.types.Operator):
    """Bake the active object's charged mass-spring simulation to its cache (Esc cancels)"""

    bl_idname = "cmsc.bake"
    bl_label = "Bake"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, context):
        obj = context.active_object
        return _mesh_with_cmsc(context) and obj.cmsc.enabled and obj.name not in RUNNING and _library_ok()

    def invoke(self, context, event):
        """Modal with a progress bar and Esc; in background mode (no event loop to drive a
        modal operator) or without a window the bake runs to the end as from a script."""
        if bpy.app.background or context.window is None:
            return self.execute(context)
        try:
            self._run = ModalBake(context, context.active_object)
        except CmscError as e:
            self.report({"ERROR"}, f"cmsc: {e}")
            return {"CANCELLED"}
        self._timer = context.window_manager.event_timer_add(0.1, window=context.window)
        context.window_manager.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        if event.type == "TIMER" and context.area is not None:
            context.area.tag_redraw()
        if not self._run.update(event.type):
            return {"RUNNING_MODAL"}
        context.window_manager.event_timer_remove(self._timer)
        return self._run.finish(self.report)

    def execute(self, context):
        obj = context.active_object
        try:
            frames = baking.bake(context, obj, self.report)
        except CmscError as e:
            self.report({"ERROR"}, f"cmsc: {e}")
            return {"CANCELLED"}
        self.report({"INFO"}, f"cmsc: baked {frames} frames to {baking.cache_path(obj)}")
        return {"FINISHED"}


class CMSC_OT_free_bake(bpy.types.Operator):
    """Remove the baked cache of the active object"""

    bl_idname = "cmsc.free_bake"
    bl_label = "Free Bake"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return _mesh_with_cmsc(context)

    def execute(self, context):
        baking.free_bake(context.active_object)
        return {"FINISHED"}


class CMSC_OT_charge_group_add(bpy.types.Operator):
    """Add a charge group (named, so its keyframes survive reordering)"""

    bl_idname = "cmsc.charge_group_add"
    bl_label = "Add Charge Group"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return _mesh_with_cmsc(context)

    def execute(self, context):
        s = context.active_object.cmsc
        item = s.charge_groups.add()
        vg = context.active_object.vertex_groups.active
        base = vg.name if vg else "Charge"
        names = {g.name for g in s.charge_groups}
        item.name = base if base not in names else next(f"{base}.{i:03d}" for i in range(1, 10_000) if f"{base}.{i:03d}" not in names)
        item.vertex_group = vg.name if vg else ""
        s.charge_group_index = len(s.charge_groups) - 1
        return {"FINISHED"}


class CMSC_OT_charge_group_remove(bpy.types.Operator):
    """Remove the active charge group"""

    bl_idname = "cmsc.charge_group_remove"
    bl_label = "Remove Charge Group"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return _mesh_with_cmsc(context) and len(context.active_object.cmsc.charge_groups) > 0

    def execute(self, context):
        s = context.active_object.cmsc
        # keyframes follow their group by name, not by a position that is about to shift
        bridge.name_keyed_charge_paths(context.active_object)
        s.charge_groups.remove(s.charge_group_index)
        s.charge_group_index = max(0, min(s.charge_group_index, len(s.charge_groups) - 1))
        return {"FINISHED"}


class CMSC_OT_physics_toggle(bpy.types.Operator):
    """Enable or disable the charged mass-spring simulation of the active object"""

    bl_idname = "cmsc.physics_toggle"
    bl_label = "Charged Mass-Spring"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return _mesh_with_cmsc(context)

    def execute(self, context):
        s = context.active_object.cmsc
        s.enabled = not s.enabled
        return {"FINISHED"}


CLASSES = (CMSC_OT_physics_toggle, CMSC_OT_bake, CMSC_OT_free_bake, CMSC_OT_charge_group_add, CMSC_OT_charge_group_remove)
