"""Every operator of the add-on (ids fixed by the add-on contract): bake and free, charge
groups, the physics toggle and the charge fit. The work is done in `bake`, `cache` and `fit`."""

import bpy
import numpy as np
from bpy.props import BoolProperty, IntProperty, StringProperty

from ..sim.bake_job import Outcome
from ..sim.cache_files import CacheFileError
from ..sim.errors import CmscError
from . import activity, bridge, cache, fit, preferences, simulated
from . import bake as baking


def _mesh_with_cmsc(context):
    obj = context.active_object
    return obj is not None and obj.type == "MESH"


def _library_ok():
    return preferences.library_problem() is None


def bake_target(context):
    """The object a bake starts from: the active object if it is simulated, else the scene's
    first simulated mesh object (a farm script need not select one); None if there is none."""
    obj = context.active_object
    if simulated.is_simulated(obj):
        return obj
    return next(iter(simulated.simulated_objects(context.scene)), None)


class CMSC_OT_bake(bpy.types.Operator):
    """Bake the charged mass-spring simulation of the scene's simulated objects (all together, each to its own
    cache; Esc cancels)"""

    bl_idname = "cmsc.bake"
    bl_label = "Bake Charged Mass-Spring"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, context):
        obj = bake_target(context)
        if obj is None:  # said in the tooltip, and on a farm in the error (not "context is incorrect")
            scene = context.scene.name if context.scene is not None else "none"
            linked = simulated.linked_simulated(context.scene)
            why = (
                f"its simulated objects ({', '.join(o.name for o in linked)}) are linked from libraries, "
                "which bake them"
                if linked
                else "no mesh object there has Charged Mass-Spring enabled"
            )
            cls.poll_message_set(f"Nothing to bake in scene {scene!r}: {why}")
            return False
        if activity.is_baking(obj):
            cls.poll_message_set(f"{obj.name} is baking")
            return False
        if not _library_ok():
            cls.poll_message_set(f"cmsc: {preferences.library_problem()}")
            return False
        return True

    def invoke(self, context, event):
        """Modal with a progress bar and Esc; in background mode (no event loop to drive a
        modal operator) or without a window the bake runs to the end as from a script."""
        if bpy.app.background or context.window is None:
            return self.execute(context)
        try:
            self._run = baking.ModalBake(context, bake_target(context))
        except (CmscError, CacheFileError, ValueError) as e:
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
        obj = bake_target(context)
        try:
            objects, job = baking.bake(context, obj, self.report)
        except (CmscError, CacheFileError, ValueError) as e:
            self.report({"ERROR"}, f"cmsc: {e}")
            return {"CANCELLED"}
        if job.outcome is not Outcome.DONE:  # reported by the bake, with the frames it kept: not also "baked"
            return {"CANCELLED"}
        if len(objects) > 1:
            where = "the caches of " + ", ".join(o.name for o in objects)
        else:
            where = cache.written_path(obj) if obj.cmsc.cache_format == "PC2" else "shape keys"
        self.report({"INFO"}, f"cmsc: baked {job.frames_done} frames to {where} ({baking.summary(job)})")
        return {"FINISHED"}


class CMSC_OT_free_bake(bpy.types.Operator):
    """Remove the charged mass-spring bake of the active object and of the objects baked with it (their cache
    modifiers or shape keys, and the files the bake wrote; a copy's bake is removed from it, its file kept)"""

    bl_idname = "cmsc.free_bake"
    bl_label = "Free Charged Mass-Spring Bake"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        if not _mesh_with_cmsc(context):
            return False
        obj = context.active_object
        if obj.library is not None:
            cls.poll_message_set(f"{obj.name} is linked from a library: free its bake in that file")
            return False
        return True

    def execute(self, context):
        for obj in cache.baked_together(context.active_object):
            note = cache.free_bake(obj)
            if note:
                self.report({"INFO"}, f"cmsc: {note}")
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
        item.name = (
            base if base not in names
            else next(f"{base}.{i:03d}" for i in range(1, 10_000) if f"{base}.{i:03d}" not in names)
        )
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
        obj = context.active_object
        s = obj.cmsc
        # keyframes follow their group by name, not by a position that is about to shift, and
        # go with it (a new group of its name would take them up)
        bridge.name_keyed_charge_paths(obj)
        bridge.remove_group_fcurves(obj, s.charge_groups[s.charge_group_index])
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


class CMSC_OT_fit_charges(bpy.types.Operator):
    """Solve for the charges of the ticked charge groups (all if none is ticked) that make the mesh reach a shape key
    at a frame (this object alone: other simulated objects and colliders are left out of the fit)"""

    bl_idname = "cmsc.fit_charges"
    bl_label = "Fit Charged Mass-Spring Charges"
    bl_options = {"REGISTER", "UNDO"}

    shape_key: StringProperty(name="Target Shape Key", description="The shape the mesh should reach")
    frame: IntProperty(name="Frame", description="The frame at which the mesh should have that shape", default=2)
    max_iterations: IntProperty(
        name="Iterations", description="Optimizer iterations (each runs the simulation forward and back)", default=50,
        min=1, max=10_000,
    )
    keyframe: BoolProperty(name="Keyframe", description="Keyframe the fitted charges at the start frame", default=False)

    @classmethod
    def poll(cls, context):
        obj = context.active_object
        return (
            _mesh_with_cmsc(context) and obj.cmsc.enabled and len(obj.cmsc.charge_groups) > 0
            and not activity.is_baking(obj) and _library_ok()
        )

    def invoke(self, context, event):
        obj = context.active_object
        keys = bridge.shape_keys(obj)
        if not self.shape_key and keys is not None:
            yours = [kb.name for kb in keys.key_blocks[1:] if fit.is_artists_key(kb.name)]
            self.shape_key = yours[-1] if yours else ""
        if self.frame <= obj.cmsc.frame_start:
            self.frame = max(context.scene.frame_current, obj.cmsc.frame_start + 1)
        return context.window_manager.invoke_props_dialog(self)

    def draw(self, context):
        obj = context.active_object
        layout = self.layout
        keys = bridge.shape_keys(obj)
        if keys is not None:
            layout.prop_search(self, "shape_key", keys, "key_blocks")
        else:
            layout.label(text="The mesh has no shape keys to fit to", icon="ERROR")
        layout.prop(self, "frame")
        layout.prop(self, "max_iterations")
        layout.prop(self, "keyframe")

    def execute(self, context):
        obj = context.active_object
        try:
            names, charges, result, keyed = fit.fit(
                context, obj, self.shape_key, self.frame, self.max_iterations, self.keyframe
            )
        except (ValueError, CmscError) as e:
            self.report({"ERROR"}, f"cmsc: fit failed: {e}")
            return {"CANCELLED"}
        fitted = ", ".join(f"{n} {c:.4g} µC" for n, c in zip(names, charges))
        rms = f"RMS distance {np.sqrt(2 * result.initial_loss):.3g} m → {np.sqrt(2 * result.loss):.3g} m"
        note = f"; keyframed at frame {obj.cmsc.frame_start}" if keyed else ""
        if result.converged:
            self.report({"INFO"}, f"cmsc: fitted {fitted}, converged ({rms}){note}")
        else:
            self.report(
                {"WARNING"},
                f"cmsc: fit stopped at its limit of {self.max_iterations} iterations before converging: "
                f"{fitted} ({rms}, still falling){note}; run it again or raise Iterations",
            )
        return {"FINISHED"}


CLASSES = (
    CMSC_OT_physics_toggle,
    CMSC_OT_bake,
    CMSC_OT_free_bake,
    CMSC_OT_charge_group_add,
    CMSC_OT_charge_group_remove,
    CMSC_OT_fit_charges,
)
