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

import contextlib
from dataclasses import dataclass
from typing import NamedTuple

import bpy
import numpy as np

from ..sim import SimParams, _native, checks, methods
from ..sim.bake_job import BakeJob, MeshColliders, Setup, combine
from ..sim.mesh import charge_shares, lumped_measure, mesh_springs, proper_triangles
from ..sim.params import ADAPTIVE_ITERATION_TOLERANCE, CoulombMethod, FrictionLaw, Integrator
from . import activity, bridge, cache, preferences, simulated

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
        integrator=Integrator[s.integrator],
        damping=s.damping,
        gravity=gravity,
        coulomb=method,
        grid_points=s.grid_points,
        far_field_interval=s.far_field_interval,
        iteration_tolerance=ADAPTIVE_ITERATION_TOLERANCE if s.adaptive_substeps else 0.0,
    )
    return p, note


def setup(scene, obj, substeps=None):
    """The `Setup` of `obj` at the current frame (the caller sets frame_start), with `substeps`
    steps per frame instead of the object's Substeps if given."""
    s = obj.cmsc
    if len(obj.data.vertices) == 0:
        raise ValueError(f"{obj.name} has no vertices to simulate: give it a mesh, or turn its simulation off")
    with cache.simulated_stack(obj):
        co = bridge.deformed_coords(obj)
    faces = bridge.mesh_faces(obj.data)
    n = len(co)
    x0 = bridge.to_world(obj.matrix_world, co)
    topology = mesh_springs(faces)
    springs, stiffness = topology.with_stiffness(s.stiffness, s.bending_stiffness)
    _check_no_coincident_ends(obj, x0, springs)
    measure = lumped_measure(x0, faces)
    p, note = params(scene, s, substeps)
    warnings = []
    if s.self_collision:
        structural = topology.structural.astype(np.int64)
        lengths = np.linalg.norm(x0[structural[:, 0]] - x0[structural[:, 1]], axis=1)
        refusal, warning = checks.self_distance_check(s.self_collision_distance, lengths)
        if refusal:
            raise ValueError(f"{obj.name}: {refusal}")
        warnings += [warning] if warning else []
    groups = [(g.name, g.vertex_group, bridge.group_membership(obj, g.vertex_group)) for g in s.charge_groups]
    pin = bridge.group_membership(obj, s.pin_group)
    rows = [_charge_row(g, w, measure) for g, (_, _, w) in zip(s.charge_groups, groups)]
    return Setup(
        library=_native.addon_library_path(),
        rest_local=co,
        x0=x0,
        masses=s.mass * measure / measure.sum(),
        springs=springs,
        stiffness=stiffness,
        params=p,
        note=note,
        warnings=checks.input_warnings(groups, s.pin_group, pin, n, springs) + warnings,
        part_damping=(s.relative_damping,),
        spring_damping=np.full(len(springs), s.spring_damping),
        # every object's surface repels the vertices that collide (faces without area have no side)
        self_triangles=_with_area(x0, faces.surface()),
        self_distance=np.full(n, s.self_collision_distance if s.self_collision else 0.0),
        self_friction=np.full(n, s.self_collision_friction if s.self_collision else 0.0),
        pins=np.nonzero(pin.weight > 0)[0] if pin is not None else np.zeros(0, dtype=np.int64),
        group_weights=np.array(rows).reshape(-1, n),
    )


def _check_no_coincident_ends(obj, x, springs):
    """Refuses (ValueError) a mesh two of whose vertices joined by a spring (an edge, across a
    face, or across a fold for bending) lie on one point: a spring of no length has no direction
    to pull in. Named in Blender's terms, with the remedy."""
    ends = np.asarray(springs, dtype=np.int64).reshape(-1, 2)
    same = np.flatnonzero(np.all(x[ends[:, 0]] == x[ends[:, 1]], axis=1))
    if same.size:
        a, b = ends[same[0]]
        more = f" (and {same.size - 1} more pairs)" if same.size > 1 else ""
        raise ValueError(
            f"{obj.name}: vertices {a} and {b} lie on one point{more}, joined by a spring (an edge, across a face "
            "or a fold): merge them (Edit Mode › Mesh › Clean Up › Merge by Distance)"
        )


def _with_area(x, triangles):
    return triangles[proper_triangles(x, triangles)]


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


def pin_targets(obj, local, pins):
    """Pin targets (p, 3) at the current frame (m): where the object-space coordinates `local`
    (n, 3) put the `pins`."""
    return bridge.to_world(obj.matrix_world, local[pins])


def external_positions(externals):
    """External charge positions (k, 3) at the current frame (m)."""
    return np.array([tuple(o.matrix_world.translation) for o in externals]).reshape(-1, 3)


def world_state(obj, local, pins, externals):
    """Pin targets (p, 3) and external charge positions (k, 3) at the current frame (m)."""
    return pin_targets(obj, local, pins), external_positions(externals)


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


def collision_objects(scene):
    """The scene's obstacles: mesh objects with Blender's Collision physics on that cmsc does not
    simulate. As for Blender's Cloth, Collision unticked (Physics › Collision) or its modifier
    switched off in the viewport makes no obstacle."""
    return [o for o in scene.objects if o.type == "MESH" and not o.cmsc.enabled and _collides(o)]


def _collides(o):
    on = any(m.type == "COLLISION" and m.show_viewport for m in o.modifiers)
    return on and o.collision is not None and o.collision.use


#: Blender's Collision Friction runs from 0 to 80 (its slider's range). Under the per-step law
#: (files made before Coulomb Friction) cmsc's friction runs from 0 (sliding freely) to 1
#: (sticking): friction = Blender's / 80.
BLENDER_FRICTION_MAX = 80.0
#: Blender's Cloth reads Collision Friction as the Coulomb coefficient mu = Friction × 0.01
#: (collision.c: `collmd->friction * 0.01f`); so does cmsc's Coulomb law.
BLENDER_FRICTION_PER_MU = 100.0


def colliders(scene, objects, warnings=None, coulomb=True):
    """The `MeshColliders` of collision `objects` at the current frame (None without any): their
    evaluated world-space surfaces, Blender's Outer Thickness as contact distance, and its
    Friction as Blender's Cloth reads it, the Coulomb coefficient Friction / 100 (`coulomb`), or
    under the per-step law of files made before, Friction / 80. Faces without area (nothing to
    collide against) are left out, each object's with a sentence naming it appended to
    `warnings`."""
    if not objects:
        return None
    dg = bpy.context.evaluated_depsgraph_get()
    surfaces = []
    for o in objects:
        vertices, triangles = bridge.evaluated_surface(o, dg)
        keep = proper_triangles(vertices, triangles)
        if not keep.all() and warnings is not None:
            bad = int((~keep).sum())
            warnings.append(
                f"Collider {o.name}: {bad} of its {len(keep)} triangles {'has' if bad == 1 else 'have'} no area "
                "and {} left out (Mesh › Clean Up › Merge by Distance or Degenerate Dissolve removes them)".format(
                    "is" if bad == 1 else "are"
                )
            )
        surfaces.append((vertices, triangles[keep]))
    sizes = np.cumsum([0] + [len(v) for v, _ in surfaces])
    return MeshColliders(
        vertices=np.concatenate([v for v, _ in surfaces]).reshape(-1, 3),
        triangles=np.concatenate([t + o for (_, t), o in zip(surfaces, sizes)]).reshape(-1, 3),
        first_triangle=np.cumsum([0] + [len(t) for _, t in surfaces]),
        thickness=np.array([o.collision.thickness_outer for o in objects]),
        friction=np.array([_friction(o.collision.cloth_friction, coulomb) for o in objects]),
        names=[o.name for o in objects],
        law=FrictionLaw.COULOMB if coulomb else FrictionLaw.PER_STEP,
    )


def _friction(blender, coulomb):
    """cmsc's friction for Blender's Collision Friction `blender` under the Coulomb law (`coulomb`)
    or the per-step law."""
    if coulomb:
        return blender / BLENDER_FRICTION_PER_MU
    return min(1.0, blender / BLENDER_FRICTION_MAX)


def collider_positions(objects, shape, frame):
    """(v, 3) world-space vertices of collision `objects` now, in `colliders`' order; ValueError
    naming them if that is not `shape`, the shape at the start (a topology change at `frame`)."""
    dg = bpy.context.evaluated_depsgraph_get()
    now = np.concatenate([bridge.evaluated_surface(o, dg)[0] for o in objects]).reshape(-1, 3)
    if now.shape != tuple(shape):
        raise ValueError(
            f"a collider's vertex count changed at frame {frame} ({', '.join(o.name for o in objects)}): "
            "colliders may move and deform during a bake, not change their topology"
        )
    return now


def simulated_objects(scene, first):
    """The objects that bake together: `first`, then every other simulated mesh object of
    `scene` (Coulomb forces act across all of them)."""
    return [first] + [o for o in simulated.simulated_objects(scene) if o != first]


def shared_meshes(objects):
    """Pairs (object, the first other of `objects` with the same mesh): linked duplicates
    (Alt+D), which cannot each keep their own motion in the mesh (shape keys, the preview)."""
    first = {}
    out = []
    for o in objects:
        other = first.setdefault(o.data.name_full, o)
        if other is not o:
            out.append((o, other))
    return out


def check_shared_meshes(objects):
    """Refuses (ValueError) a Shape Keys bake of an object whose mesh another simulated object
    shares: the keys would hold one motion for both."""
    for o, other in shared_meshes(objects):
        if "SHAPE_KEYS" in (o.cmsc.cache_format, other.cmsc.cache_format):
            raise ValueError(
                f"{o.name} and {other.name} share one mesh (a linked duplicate), and a Shape Keys bake keeps the "
                "motion in the mesh, so both would play one motion: use the PC2 cache, or give each its own mesh "
                "(Object › Relations › Make Single User › Object & Data)"
            )


def check_frame_ranges(objects):
    """Refuses (ValueError) a bake whose frames, from the earliest Start to the latest End of
    `objects` (`joint_timing`), hold no step: there is nothing to bake, and what the artist meant
    is unknown. One object's inverted range beside others' that span frames is theirs to bake."""
    start = min(o.cmsc.frame_start for o in objects)
    end = max(o.cmsc.frame_end for o in objects)
    if end > start:
        return
    where = "the same as" if end == start else "before"
    if len(objects) == 1:
        name = objects[0].name
        raise ValueError(f"{name}'s End frame ({end}) is {where} its Start frame ({start}): set End after Start")
    raise ValueError(
        f"the latest End frame of {', '.join(o.name for o in objects)}, baked together, ({end}) is {where} their "
        f"earliest Start frame ({start}): set End after Start"
    )


class Timing(NamedTuple):
    """The frames and steps of a joint bake (`joint_timing`)."""

    start: int
    end: int
    substeps: int  # steps per frame: with adaptive substeps the least
    iterations: int  # local/global iterations per step: with adaptive substeps the most
    max_substeps: int  # the most steps per frame with adaptive substeps; 0: fixed steps

    def describe(self):
        """"5 substeps, 6 iterations" or "5–32 adaptive substeps, up to 6 iterations"."""
        if self.max_substeps:
            return f"{self.substeps}–{self.max_substeps} adaptive substeps, up to {self.iterations} iterations"
        return f"{self.substeps} substeps, {self.iterations} iterations"


def joint_timing(objects):
    """The `Timing` of a joint bake: from the earliest Start to the latest End, at the finest
    time step (most Substeps) and the most Iterations of the objects, so that no object is
    simulated more coarsely than it asks; adaptive (up to the most Max Substeps) only when
    every object is, so that a file from before keeps its fixed steps."""
    s = [o.cmsc for o in objects]
    start, end = min(x.frame_start for x in s), max(x.frame_end for x in s)
    substeps, iterations = max(x.substeps for x in s), max(x.iterations for x in s)
    adaptive = all(x.adaptive_substeps for x in s)
    most = max(substeps, max(x.max_substeps for x in s)) if adaptive else 0
    return Timing(start, end, substeps, iterations, most)


def joint_setup(scene, objects, substeps, timing):
    """The `Setup`s of `objects` at the current frame (each with `substeps` steps per frame) and
    the joint `Setup` they simulate in, one part each, with the scene's colliders; the
    iterations and adaptive substeps of `timing` (`joint_timing`) and the first object's Coulomb
    settings. Each object's input warnings stay in its `Setup` (for its panel: the caller keeps
    them, `keep_warnings`); the joint setup's name their object."""
    setups = [setup(scene, o, substeps) for o in objects]
    p, _ = params(scene, objects[0].cmsc, substeps)
    p.iterations = timing.iterations
    p.iteration_tolerance = ADAPTIVE_ITERATION_TOLERANCE if timing.max_substeps else 0.0
    for obj, st in zip(objects, setups):
        for mod, below in cache.deformers_below_cache(obj):
            st.warnings.append(
                f"{mod} is below {below}, which changes the vertices, so {mod} does not drive the simulation: "
                f"move it above {below}"
            )
        deforming = cache.deforming_modifiers(obj)
        if deforming and obj.cmsc.cache_format == "SHAPE_KEYS":
            st.warnings.append(
                f"Shape-key bakes play before the modifier stack, so {', '.join(deforming)} deform the baked "
                "motion once more: use the PC2 cache for a rigged mesh"
            )
    joint = combine(setups, p)
    joint.warnings = [f"{o.name}: {w}" for o, st in zip(objects, setups) for w in st.warnings]
    # Coulomb friction only when every object has it, so that a file from before keeps its law
    coulomb = all(o.cmsc.coulomb_friction for o in objects)
    joint.colliders = colliders(scene, collision_objects(scene), joint.warnings, coulomb)
    joint.max_steps_per_frame = max(timing.max_substeps, substeps) if timing.max_substeps else 0
    return setups, joint


def joint_pins(objects, setups, deformed):
    """Pin targets (p, 3) of the joint simulation of `objects` at the current frame (m), in part
    order: where each object's rest coordinates put its pins, or with `deformed` where its
    deformed mesh (shape keys and the modifiers above the cache, `cache.simulated_stack`) does."""
    return np.concatenate(
        [
            pin_targets(o, bridge.deformed_coords(o) if deformed and len(st.pins) else st.rest_local, st.pins)
            for o, st in zip(objects, setups)
        ]
    ).reshape(-1, 3)


def joint_substep_inputs(scene, objects, externals, frame, substeps):
    """`substep_inputs` of the joint simulation of `objects`: group charges (S, g) of every
    part's groups in part order, external charges (S, k) and the field (S, 3)."""
    each = [substep_inputs(scene, o, externals, frame, substeps) for o in objects]
    return np.concatenate([e[0] for e in each], axis=1), each[0][1], each[0][2]


@dataclass(kw_only=True)
class RunStart:
    """What a run of `objects` together (a bake or the live preview) starts from, read at the
    start frame by `run_start`: their `Setup`s and the joint one (colliders included), the
    scene's external charges and collision objects, the frame range and steps per frame, and
    where the pins, external charges and collider vertices are (m, world)."""

    objects: list
    setups: list
    joint: object  # the joint Setup
    externals: list
    obstacles: list
    start: int
    end: int
    substeps: int
    pin_world: np.ndarray  # (p, 3)
    ext_world: np.ndarray  # (k, 3)
    collider_world: np.ndarray | None  # (v, 3), None without colliders


def run_start(scene, objects, substeps=None):
    """The `RunStart` of `objects` at the current frame (the caller sets the start frame), with
    `substeps` steps per frame instead of the joint bake's if given. Reads only."""
    timing = joint_timing(objects)
    start, end = timing.start, timing.end
    substeps = substeps or timing.substeps
    setups, joint = joint_setup(scene, objects, substeps, timing)
    externals = external_charges(scene)
    return RunStart(
        objects=list(objects),
        setups=setups,
        joint=joint,
        externals=externals,
        obstacles=collision_objects(scene) if joint.colliders is not None else [],
        start=start,
        end=end,
        substeps=substeps,
        pin_world=joint_pins(objects, setups, False),
        ext_world=external_positions(externals),
        collider_world=None if joint.colliders is None else joint.colliders.vertices,
    )


def bake_job(scene, objects, cache_paths):
    """Every input of the joint bake of `objects` (the first one's Coulomb settings; timing by
    `joint_timing`), each into its cache path (frame_set through the range once, back to the
    start frame after): (the BakeJob, each object's input warnings for its panel). Reads only:
    the caller keeps the warnings (`keep_warnings`)."""
    scene.frame_set(joint_timing(objects)[0])
    run = run_start(scene, objects)
    start, substeps, setups, joint, externals, obstacles = (
        run.start, run.substeps, run.setups, run.joint, run.externals, run.obstacles
    )
    frames = max(0, run.end - start)
    collider_world = np.empty((frames + 1, len(run.collider_world) if obstacles else 0, 3))
    if obstacles:
        collider_world[0] = run.collider_world
    pin_world = np.empty((frames + 1, len(joint.pins), 3))
    ext_world = np.empty((frames + 1, len(externals), 3))
    world_to_local = np.empty((frames, len(objects), 4, 4))
    group_charge = np.empty((frames, substeps, len(joint.group_weights)))
    ext_charge = np.empty((frames, substeps, len(externals)))
    field = np.empty((frames, substeps, 3))
    pin_world[0], ext_world[0] = run.pin_world, run.ext_world
    with contextlib.ExitStack() as stack:
        for obj in objects:  # pins follow the shape keys and modifiers above each cache
            stack.enter_context(cache.simulated_stack(obj))
        for f in range(frames):
            frame = start + f + 1
            scene.frame_set(frame)
            pin_world[f + 1] = joint_pins(objects, setups, True)
            if obstacles:
                collider_world[f + 1] = collider_positions(obstacles, collider_world[0].shape, frame)
            ext_world[f + 1] = external_positions(externals)
            for k, obj in enumerate(objects):
                world_to_local[f, k] = np.linalg.inv(np.array(obj.matrix_world))
            group_charge[f], ext_charge[f], field[f] = joint_substep_inputs(scene, objects, externals, frame, substeps)
    scene.frame_set(start)
    _warn_nothing_but_gravity(scene, objects, setups, joint, group_charge)
    joint.warnings.extend(
        f"{o.name} is linked from {bpy.path.basename(o.library.filepath)}: it plays that file's bake and takes no "
        "part in this one (make it a library override to simulate it here)"
        for o in simulated.linked_simulated(scene)
    )
    joint.warnings.extend(
        f"{o.name} has Collision physics but is simulated, and a simulated object is no obstacle: turn on Self "
        "Collision on it and on the objects that should land on it (their surfaces then collide)"
        for o in objects
        if _collides(o)
    )
    joint.warnings.extend(
        f"{o.name} is simulated and carries an External Charge: that charge stays at its origin, which the "
        "simulation does not move, besides its charge groups (untick External Charge, or charge a vertex group)"
        for o in externals
        if o in objects
    )
    job = BakeJob(
        **vars(joint),
        cache_paths=list(cache_paths),
        start_frame=start,
        world_to_local=world_to_local,
        pin_world=pin_world,
        ext_world=ext_world,
        group_charge=group_charge,
        ext_charge=ext_charge,
        field=field,
        collider_world=collider_world if obstacles else None,
        part_names=[o.name for o in objects],
    )
    return job, [st.warnings for st in setups]


def _warn_nothing_but_gravity(scene, objects, setups, joint, group_charge):
    """Adds a warning (to the object's `Setup` and, naming it, to the joint's) for each of
    `objects` that can only fall."""
    gravity = scene.cmsc.use_gravity and any(scene.gravity)
    column = 0
    for obj, st in zip(objects, setups):
        g = len(st.group_weights)
        # with Self Collision on, the other simulated objects' surfaces hold it too
        held = joint.colliders is not None or (obj.cmsc.self_collision and len(objects) > 1)
        w = checks.nothing_but_gravity_warning(
            st.group_weights, group_charge[..., column : column + g], len(st.pins), gravity, held
        )
        column += g
        if w:
            st.warnings.append(w)
            joint.warnings.append(f"{obj.name}: {w}")


def keep_warnings(obj, warnings):
    """Keeps the `warnings` of a run's inputs for the panel, less those it finds from the names
    alone (which it checks again at every draw, so that a fixed name stops warning at once)."""
    names = set(name_warnings(obj))
    activity.set_warnings(obj, [w for w in warnings if w not in names])
