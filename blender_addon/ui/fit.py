"""The charge fit behind `cmsc.fit_charges` (the operator is in `operators`): find the charges
that make the mesh reach a target shape (paper §3.2, through the library's gradients).

The simulation is of this object alone (the library's gradient does not take contacts, so the
scene's other simulated objects and its colliders are not part of the fit; the operator's tooltip
says so). It is built exactly as the bake builds that object at its start frame
(`inputs.setup`: world space, same masses, springs and parameters) and run for
`(frame − frame_start) × substeps` steps. During those steps the group charges are the unknowns
(constant), and the external charges, the field and the pins stay as they are at the start
frame. The target is the shape key's coordinates placed by the object's transform at `frame`,
as a bake sample at that frame would be. That shape key is muted meanwhile: a target is no part of
the start shape, whatever its value (Blender 5.0+ adds new shape keys at value 1).

Which groups are solved: those whose `fit` box is ticked, the others keeping their charges; if
none is ticked, all of them. The fitted charges are written back in µC; with `keyframe` (or when
a charge is already animated, since an animated value would be overwritten on the next frame
change) they are keyframed at the start frame.
"""

import numpy as np

from ..sim.fitting import fit_group_charges
from . import activity, bridge, cache, inputs, preferences, preview


def fit(context, obj, shape_key, frame, max_iterations=50, keyframe=False):
    """Runs the fit; returns (names of the fitted groups, charges in µC, the `FitResult`,
    keyframed: bool). Raises ValueError for unusable inputs, CmscError from the library."""
    scene, s = context.scene, obj.cmsc
    if obj.mode == "EDIT":
        obj.update_from_editmode()  # the target as being edited, as the bake reads the mesh
    else:  # the preview pauses in Edit Mode; otherwise its key is no part of the fit's start shape
        preview.clear(obj)
    if not is_artists_key(shape_key):
        raise ValueError(f"{shape_key!r} is the add-on's own shape key (the live preview's or a bake's): choose yours")
    target_local = bridge.shape_key_coords(obj, shape_key)
    if target_local is None:
        raise ValueError(f"{obj.name} has no shape key {shape_key!r} to fit to")
    if frame <= s.frame_start:
        raise ValueError(f"the target frame ({frame}) must come after the start frame ({s.frame_start})")
    groups = list(s.charge_groups)
    if not groups:
        raise ValueError("add a charge group first: its charge is what the fit solves for")
    bridge.name_keyed_charge_paths(obj)
    preferences.apply_threads()
    current = scene.frame_current
    with activity.previews_suspended(), bridge.shape_key_muted(obj, shape_key):
        scene.frame_set(frame)
        target = bridge.to_world(obj.matrix_world, target_local)
        scene.frame_set(s.frame_start)
        try:
            st = inputs.setup(scene, obj)
            externals = inputs.external_charges(scene)
            pin_world, ext_world = inputs.world_state(obj, st.rest_local, st.pins, externals)
            q0 = np.array([inputs.MICRO * g.charge for g in groups])  # the values at frame_start
            ext_charge = np.array([inputs.MICRO * o.cmsc_charge.charge for o in externals])
            field = np.array(scene.cmsc.field, dtype=float)
        finally:
            scene.frame_set(current)
    free = np.array([g.fit for g in groups])
    if not free.any():
        free[:] = True
    _check_fittable([g for g, f in zip(groups, free) if f], st.group_weights[free], obj)
    if not q0.any() and not ext_charge.any() and not field.any():
        # every Coulomb force is bilinear in the charges: all zero is a stationary point
        raise ValueError("every charge is zero: give the groups a first guess (any non-zero charge)")
    steps = (frame - s.frame_start) * s.substeps
    with st.create_simulation() as sim:
        if len(st.pins):
            sim.set_pin_targets(pin_world)
        if len(externals):
            sim.set_external_charges(ext_world, ext_charge)
        sim.set_uniform_field(field)
        result = fit_group_charges(sim, steps, st.group_weights, q0, target, free, max_iterations)
    q = result.charges
    animated = {i for i, g in enumerate(groups) if _is_animated(obj, i, g)}
    keyed = False
    for i, g in enumerate(groups):
        if not free[i]:
            continue
        g.charge = q[i] / inputs.MICRO
        if keyframe or i in animated:
            bridge.keyframe(g, "charge", s.frame_start)
            keyed = True
    if keyed:
        bridge.name_keyed_charge_paths(obj)
    names = [g.name for g, f in zip(groups, free) if f]
    return names, q[free] / inputs.MICRO, result, keyed


def is_artists_key(name):
    """Whether shape key `name` is the artist's: neither the live preview's nor a bake's frame key
    (a target to fit to, and what the Fit dialog proposes)."""
    return name != preview.KEY_NAME and not cache.is_frame_key(name)


def _check_fittable(groups, weights, obj):
    """Refuses (ValueError) to fit a group the fit cannot change: one on no vertex (its vertex
    group missing, empty or all zero), whose charge acts nowhere, and one whose charge a driver
    sets, which would override the result at once."""
    for g, row in zip(groups, weights):
        if not np.any(row):
            raise ValueError(
                f"{g.name}'s vertex group {g.vertex_group!r} gives it no vertex (missing, empty or all zero), so no "
                "charge of it moves the mesh: fix the group, or untick its Fit"
            )
    drivers = obj.animation_data.drivers if obj.animation_data is not None else ()
    for g in groups:
        paths = bridge.group_charge_paths(list(obj.cmsc.charge_groups).index(g), g)
        if any(d.data_path in paths and not d.mute for d in drivers):
            raise ValueError(f"{g.name}'s charge is driven: the driver would set it back; remove the driver to fit it")


def _is_animated(obj, i, group):
    paths = bridge.group_charge_paths(i, group)
    return any(fc.data_path in paths for fc in bridge.fcurves(obj))
