"""The scene as simulation inputs: the one place that turns an object's settings, its mesh and
the scene (field, gravity, external charges, keyframes) into arrays. The mesh is read as its
shape keys and the modifiers above the cache deform it (`cache.simulated_stack`): its shape at
the start frame is the rest shape (rest lengths, masses, the first cache sample) and pinned
vertices follow it frame by frame (an Armature, a Hook, animated shape keys drive the pins). The bake, the live preview
and the charge fit all read through here, so all three see the same simulation.

- `params` and `coulomb`: the SimParams of an object, with the Coulomb method to ask for;
- `setup`: a `Setup` (sim.bake_job) at the current frame, whose `create_simulation()` is the
  only place a Simulation is made from the scene;
- `world_state`, `substep_inputs`: what one frame needs (pins, external charges, charges, field);
- `bake_job`: every frame of a bake at once, as a `BakeJob`.

Mesh data is read through `bridge`. `setup` and `bake_job` move the current frame; their callers
suspend the previews (`activity.previews_suspended`)."""

import numpy as np

from ..sim import SimParams, _native, checks, methods
from ..sim.bake_job import BakeJob, Setup
from ..sim.mesh import charge_shares, lumped_measure, mesh_springs
from ..sim.params import CoulombMethod
from . import activity, bridge, cache, preferences

MICRO = 1e-6  # C per µC: the UI shows charges in µC


def coulomb(s):
    """(method to ask the library for, note) of object settings `s`: the note tells of a GPU
    fallback ("" if none). AUTO is the library's to resolve."""
    return methods.choose(_native.addon_library_path(), CoulombMethod[s.coulomb_method], preferences.use_gpu())


def params(scene, s, substeps=None):
    """The SimParams of object settings `s` in `scene` (with `substeps` steps per frame instead
    of `s.substeps` if given), and a note on a GPU fallback ("" if none)."""
    fps = scene.render.fps / scene.render.fps_base
    gravity = tuple(scene.gravity) if scene.cmsc.use_gravity else (0.0, 0.0, 0.0)
    method, note = coulomb(s)
    p = SimParams(
        time_step=1.0 / (fps * (substeps or s.substeps)),
        iterations=s.iterations,
        damping=s.damping,
        gravity=gravity,
        coulomb=method,
        grid_points=s.grid_points,
    )
    return p, note


def setup(scene, obj, substeps=None):
    """The `Setup` of `obj` at the current frame (the caller sets frame_start), with `substeps`
    steps per frame instead of the object's Substeps if given."""
    s = obj.cmsc
    preferences.apply_threads()
    with cache.simulated_stack(obj):
        co = bridge.deformed_coords(obj)
    faces = bridge.mesh_faces(obj.data)
    n = len(co)
    x0 = bridge.to_world(obj.matrix_world, co)
    springs, stiffness = mesh_springs(faces).with_stiffness(s.stiffness, s.bending_stiffness)
    measure = lumped_measure(x0, faces)
    p, note = params(scene, s, substeps)
    groups = [(g.name, g.vertex_group, bridge.group_membership(obj, g.vertex_group)) for g in s.charge_groups]
    pin = bridge.group_membership(obj, s.pin_group)
    return Setup(
        library=_native.addon_library_path(),
        rest_local=co,
        x0=x0,
        masses=s.mass * measure / measure.sum(),
        springs=springs,
        stiffness=stiffness,
        params=p,
        note=note,
        warnings=checks.input_warnings(groups, s.pin_group, pin, n, springs),
        relative_damping=s.relative_damping,
        pins=np.nonzero(pin.weight > 0)[0] if pin is not None else np.zeros(0, dtype=np.int64),
        group_weights=np.array(
            [_charge_row(g, w, measure) for g, (_, _, w) in zip(s.charge_groups, groups)]
        ).reshape(-1, n),
    )


def _charge_row(group, weights, measure):
    """The charge each vertex carries per coulomb of `group`'s charge: its weight (PER_VERTEX),
    or its share of the total, by weight × lumped measure (TOTAL)."""
    if weights is None:
        return np.zeros(len(measure))
    if group.distribution == "TOTAL":
        return charge_shares(weights.weight, measure)
    return weights.weight


def name_warnings(obj):
    """The warnings the names of `obj`'s charge and pin groups give (blank, missing), for the
    panel (cheap: no weights are read)."""
    s = obj.cmsc
    groups = [(g.name, g.vertex_group) for g in s.charge_groups]
    return checks.name_warnings(groups, s.pin_group, lambda name: obj.vertex_groups.get(name) is not None)


def external_charges(scene):
    """The scene's objects carrying an external charge."""
    return [o for o in scene.objects if o.cmsc_charge.enabled]


def world_state(obj, local, pins, externals):
    """Pin targets (p, 3) and external charge positions (k, 3) at the current frame (m), the pins
    where the object-space coordinates `local` (n, 3) put them."""
    pin = bridge.to_world(obj.matrix_world, local[pins])
    ext = np.array([tuple(o.matrix_world.translation) for o in externals]).reshape(-1, 3)
    return pin, ext


def substep_inputs(scene, obj, externals, frame, substeps):
    """Group charges (S, g) C per unit weight, external charges (S, k) C and the field (S, 3)
    V/m at the end of each substep of the step from `frame - 1` to `frame`, read from the
    F-curves at the sub-frame (exact for keyframed values)."""
    groups = list(enumerate(obj.cmsc.charge_groups))
    group_charge = np.empty((substeps, len(groups)))
    ext_charge = np.empty((substeps, len(externals)))
    field = np.empty((substeps, 3))
    for k in range(substeps):
        t = frame - 1 + (k + 1) / substeps
        group_charge[k] = [
            MICRO * bridge.animated(obj, bridge.group_charge_paths(i, g), 0, g.charge, t) for i, g in groups
        ]
        ext_charge[k] = [
            MICRO * bridge.animated(o, ("cmsc_charge.charge",), 0, o.cmsc_charge.charge, t) for o in externals
        ]
        field[k] = [bridge.animated(scene, ("cmsc.field",), c, scene.cmsc.field[c], t) for c in range(3)]
    return group_charge, ext_charge, field


def bake_job(scene, obj, cache_path):
    """Every input of `obj`'s bake into `cache_path` (frame_set through the range once, back to
    the start frame after): a BakeJob."""
    s = obj.cmsc
    externals = external_charges(scene)
    frames, substeps = max(0, s.frame_end - s.frame_start), s.substeps
    scene.frame_set(s.frame_start)
    st = setup(scene, obj)
    pin_world = np.empty((frames + 1, len(st.pins), 3))
    ext_world = np.empty((frames + 1, len(externals), 3))
    pin_world[0], ext_world[0] = world_state(obj, st.rest_local, st.pins, externals)
    world_to_local = np.empty((frames, 4, 4))
    group_charge = np.empty((frames, substeps, len(st.group_weights)))
    ext_charge = np.empty((frames, substeps, len(externals)))
    field = np.empty((frames, substeps, 3))
    with cache.simulated_stack(obj):  # pins follow the shape keys and modifiers above the cache
        for f in range(frames):
            frame = s.frame_start + f + 1
            scene.frame_set(frame)
            local = bridge.deformed_coords(obj) if len(st.pins) else st.rest_local
            pin_world[f + 1], ext_world[f + 1] = world_state(obj, local, st.pins, externals)
            world_to_local[f] = np.linalg.inv(np.array(obj.matrix_world))
            group_charge[f], ext_charge[f], field[f] = substep_inputs(scene, obj, externals, frame, substeps)
    scene.frame_set(s.frame_start)
    deforming = cache.deforming_modifiers(obj)
    if deforming and s.cache_format == "SHAPE_KEYS":
        st.warnings.append(
            f"Shape-key bakes play before the modifier stack, so {', '.join(deforming)} deform the baked motion "
            "once more: use the PC2 cache for a rigged mesh"
        )
    return BakeJob(
        **vars(st),
        cache_path=cache_path,
        start_frame=s.frame_start,
        world_to_local=world_to_local,
        pin_world=pin_world,
        ext_world=ext_world,
        group_charge=group_charge,
        ext_charge=ext_charge,
        field=field,
    )


def keep_warnings(obj, warnings):
    """Keeps the `warnings` of a run's inputs for the panel, less those it finds from the names
    alone (which it checks again at every draw, so that a fixed name stops warning at once)."""
    names = set(name_warnings(obj))
    activity.set_warnings(obj, [w for w in warnings if w not in names])
