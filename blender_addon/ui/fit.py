"""`cmsc.fit_charges`: find the charges that make the mesh reach a target shape (paper §3.2,
through the library's gradients).

The simulation is built exactly as the bake builds it at the object's start frame
(`bake.setup`: world space, same masses, springs and parameters) and run for
`(frame − frame_start) × substeps` steps. During those steps the group charges are the unknowns
(constant), and the external charges, the field and the pins stay as they are at the start
frame. The target is the shape key's coordinates placed by the object's transform at `frame`,
as a bake sample at that frame would be.

Which groups are solved: those whose `fit` box is ticked, the others keeping their charges; if
none is ticked, all of them. The fitted charges are written back in µC; with `keyframe` (or when
a charge is already animated, since an animated value would be overwritten on the next frame
change) they are keyframed at the start frame.
"""

import bpy
import numpy as np
from bpy.props import BoolProperty, IntProperty, StringProperty

from ..sim.errors import CmscError
from ..sim.fitting import fit_group_charges
from ..sim.simulation import Simulation
from . import bake, bridge, preview


def fit(context, obj, shape_key, frame, max_iterations=50, keyframe=False):
    """Runs the fit; returns (names of the fitted groups, charges in µC, loss m², initial loss
    m², keyframed: bool). Raises ValueError for unusable inputs, CmscError from the library."""
    scene, s = context.scene, obj.cmsc
    keys = obj.data.shape_keys
    kb = keys.key_blocks.get(shape_key) if keys is not None and shape_key else None
    if kb is None:
        raise ValueError(f"{obj.name} has no shape key {shape_key!r} to fit to")
    if frame <= s.frame_start:
        raise ValueError(f"the target frame ({frame}) must come after the start frame ({s.frame_start})")
    groups = list(s.charge_groups)
    if not groups:
        raise ValueError("add a charge group first: its charge is what the fit solves for")
    bridge.name_keyed_charge_paths(obj)
    target_local = np.empty(3 * len(kb.data))
    kb.data.foreach_get("co", target_local)
    current = scene.frame_current
    with preview.suspended():
        scene.frame_set(frame)
        target = bridge.to_world(obj.matrix_world, target_local.reshape(-1, 3))
        scene.frame_set(s.frame_start)
        try:
            st = bake.setup(scene, obj)
            externals = bake.external_charges(scene)
            pin_world, ext_world = bake.world_state(obj, st.co, st.pins, externals)
            q0 = np.array([bake.MICRO * g.charge for g in groups])  # the values at frame_start
            ext_charge = np.array([bake.MICRO * o.cmsc_charge.charge for o in externals])
            field = np.array(scene.cmsc.field, dtype=float)
        finally:
            scene.frame_set(current)
    free = np.array([g.fit for g in groups])
    if not free.any():
        free[:] = True
    if not q0.any() and not ext_charge.any() and not field.any():
        # every Coulomb force is bilinear in the charges: all zero is a stationary point
        raise ValueError("every charge is zero: give the groups a first guess (any non-zero charge)")
    steps = (frame - s.frame_start) * s.substeps
    with Simulation(st.library, st.x0, st.masses, st.springs, st.stiffness, st.params) as sim:
        if len(st.pins):
            sim.set_pins(st.pins)
            sim.set_pin_targets(pin_world)
        if len(externals):
            sim.set_external_charges(ext_world, ext_charge)
        sim.set_uniform_field(field)
        q, loss, initial = fit_group_charges(sim, steps, st.group_weights, q0, target, free, max_iterations)
    animated = {i for i, g in enumerate(groups) if _is_animated(obj, i, g)}
    keyed = False
    for i, g in enumerate(groups):
        if not free[i]:
            continue
        g.charge = q[i] / bake.MICRO
        if keyframe or i in animated:
            g.keyframe_insert("charge", frame=s.frame_start)
            keyed = True
    if keyed:
        bridge.name_keyed_charge_paths(obj)
    names = [g.name for g, f in zip(groups, free) if f]
    return names, q[free] / bake.MICRO, loss, initial, keyed


def _is_animated(obj, i, group):
    paths = bridge.group_charge_paths(i, group)
    return any(fc.data_path in paths for fc in bridge.fcurves(obj))


class CMSC_OT_fit_charges(bpy.types.Operator):
    """Solve for the charges of the ticked charge groups (all if none is ticked) that make the mesh reach a shape key at a frame"""

    bl_idname = "cmsc.fit_charges"
    bl_label = "Fit Charges"
    bl_options = {"REGISTER", "UNDO"}

    shape_key: StringProperty(name="Target Shape Key", description="The shape the mesh should reach")
    frame: IntProperty(name="Frame", description="The frame at which the mesh should have that shape", default=2)
    max_iterations: IntProperty(name="Iterations", description="Optimizer iterations (each runs the simulation forward and back)", default=50, min=1, max=10_000)
    keyframe: BoolProperty(name="Keyframe", description="Keyframe the fitted charges at the start frame", default=False)

    @classmethod
    def poll(cls, context):
        from .preferences import library_problem

        obj = context.active_object
        return (
            obj is not None and obj.type == "MESH" and obj.cmsc.enabled and len(obj.cmsc.charge_groups) > 0
            and obj.name not in bake.RUNNING and library_problem() is None
        )

    def invoke(self, context, event):
        obj = context.active_object
        keys = obj.data.shape_keys
        if not self.shape_key and keys is not None and len(keys.key_blocks) > 1:
            self.shape_key = keys.key_blocks[-1].name
        if self.frame <= obj.cmsc.frame_start:
            self.frame = max(context.scene.frame_current, obj.cmsc.frame_start + 1)
        return context.window_manager.invoke_props_dialog(self)

    def draw(self, context):
        obj = context.active_object
        layout = self.layout
        if obj.data.shape_keys is not None:
            layout.prop_search(self, "shape_key", obj.data.shape_keys, "key_blocks")
        else:
            layout.label(text="The mesh has no shape keys to fit to", icon="ERROR")
        layout.prop(self, "frame")
        layout.prop(self, "max_iterations")
        layout.prop(self, "keyframe")

    def execute(self, context):
        obj = context.active_object
        try:
            names, charges, loss, initial, keyed = fit(
                context, obj, self.shape_key, self.frame, self.max_iterations, self.keyframe
            )
        except (ValueError, CmscError) as e:
            self.report({"ERROR"}, f"cmsc: fit failed: {e}")
            return {"CANCELLED"}
        fitted = ", ".join(f"{n} {c:.4g} µC" for n, c in zip(names, charges))
        rms = f"RMS distance {np.sqrt(2 * initial):.3g} m → {np.sqrt(2 * loss):.3g} m"
        note = f"; keyframed at frame {obj.cmsc.frame_start}" if keyed else ""
        self.report({"INFO"}, f"cmsc: fitted {fitted} ({rms}){note}")
        return {"FINISHED"}


CLASSES = (CMSC_OT_fit_charges,)
