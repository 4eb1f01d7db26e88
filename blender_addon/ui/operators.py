"""Operators (ids fixed by the add-on contract)."""

import threading

import bpy

from ..sim.bake_job import run
from ..sim.errors import CmscError
from . import bake as baking
from . import bridge


def _mesh_with_cmsc(context):
    obj = context.active_object
    return obj is not None and obj.type == "MESH"


#: Bakes running in the UI, by object name: the panel draws their progress.
RUNNING = {}


class CMSC_OT_bake(bpy.types.Operator):
    """Bake the active object's charged mass-spring simulation to its cache (Esc cancels)"""

    bl_idname = "cmsc.bake"
    bl_label = "Bake"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, context):
        obj = context.active_object
        return _mesh_with_cmsc(context) and obj.cmsc.enabled and obj.name not in RUNNING

    def invoke(self, context, event):
        """Modal: the simulation runs in a worker thread that sees only numpy arrays; this
        thread gathers the inputs first, then polls progress and handles Esc."""
        self._obj = context.active_object
        try:
            self._job = baking.collect(context, self._obj)
        except CmscError as e:
            self.report({"ERROR"}, f"cmsc: {e}")
            return {"CANCELLED"}
        self._thread = threading.Thread(target=self._work, name="cmsc bake", daemon=True)
        self._failure = None
        RUNNING[self._obj.name] = self._job
        self._thread.start()
        self._timer = context.window_manager.event_timer_add(0.1, window=context.window)
        context.window_manager.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def _work(self):
        try:
            run(self._job)
        except Exception as e:  # noqa: BLE001 - reported on the main thread
            self._failure = e

    def modal(self, context, event):
        if event.type == "ESC":
            self._job.cancel.set()
        if event.type == "TIMER" and context.area is not None:
            context.area.tag_redraw()
        if self._thread.is_alive():
            return {"RUNNING_MODAL"}
        context.window_manager.event_timer_remove(self._timer)
        RUNNING.pop(self._obj.name, None)
        baking.finish(self._obj, self._job)
        if self._failure is not None:
            self.report({"ERROR"}, f"cmsc: bake failed: {self._failure}")
            return {"CANCELLED"}
        if self._job.error:
            self.report({"WARNING"}, f"cmsc: {self._job.error}; kept {self._job.frames_done} baked frames")
            return {"CANCELLED"}
        self.report({"INFO"}, f"cmsc: baked {self._job.frames_done} frames")
        return {"FINISHED"}

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


CLASSES = (CMSC_OT_bake, CMSC_OT_free_bake, CMSC_OT_charge_group_add, CMSC_OT_charge_group_remove)
