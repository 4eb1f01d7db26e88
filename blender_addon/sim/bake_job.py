"""A bake as plain data: every input the simulation needs, per frame and per substep, gathered
on Blender's main thread into numpy arrays, then run anywhere (a worker thread in the modal
bake) without touching bpy. Writes the PC2 cache as frames complete.

`Setup` is a simulation at its start frame; the bake (`BakeJob` extends it), the live preview and
the charge fit all create their simulation with `Setup.create_simulation()`. A scene's objects
simulate together: `combine` joins their setups into one, each object a part (its own vertex
range, springs, masses, pins, charge groups, Settling and cache). `step_frame`
advances one frame from per-frame inputs; the bake and the live preview both use it, so a preview
played frame by frame equals the bake."""

import contextlib
import enum
import itertools
import os
import threading
import time
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from .errors import CmscError, DivergedError
from .params import MAX_SUBSTEPS, CoulombMethod, FrictionLaw, SimParams
from .pc2 import Pc2Writer
from .simulation import Simulation

#: What a diverged frame's message suggests.
DIVERGED_HINT = "Try more substeps (or a higher Max Substeps), a lower stiffness or charge, or some damping"


class Outcome(enum.Enum):
    """How a bake ended (`BakeJob.outcome`); `BakeJob.error` says it in words, except DONE."""

    DONE = "done"
    CANCELLED = "cancelled"  # Esc: the frames before are kept
    DIVERGED = "diverged"  # the simulation blew up: the frames before are kept
    FAILED = "failed"  # the library refused a step (or the bake raised)
    WRITE_FAILED = "write failed"  # a cache file could not be written
    GAINED_ENERGY = "gained energy"  # every frame is baked, but the motion gained energy from nothing
#: A part whose bounding box has grown to more than this many times its rest size has blown up,
#: even where no single step was a runaway (the library's guard): no charge, rig or collider of
#: an animation scene swells a mesh a hundredfold, while a contact or charge runaway does (a
#: 2 mm cloth reached 2 m). The bake stops there as diverged, keeping the frames before. Loose
#: pieces that their own charge flings apart can grow that far too: the message says so.
GROWTH_LIMIT = 100.0


#: A bake that nothing drives (`drives`) and whose total energy (kinetic, spring, Coulomb and
#: gravity: `Simulation.energies`) ends higher than it started by more than this share of the
#: energy of its motion (`energy_gain`) has made energy from nothing: steps too long for how
#: close its charges came (the explicit Coulomb kick of a pair passing within its charge radius
#: in one step). Springs, Settling, Damping, contacts and friction only take energy away, and
#: the field methods' errors (P3M's 10⁻², DDEF's) change the total by far less.
ENERGY_GAIN_LIMIT = 0.5

#: The energy audit sums the Coulomb energy over every pair of vertices, at the start and the
#: end (O(n²): about a second at this many): larger bakes are not audited.
ENERGY_AUDIT_MAX_VERTICES = 50_000


def drives(job):
    """What does work on `job`'s scene from outside, in words ("" if nothing does): pins that
    move, colliders that move, external charges, a uniform field or charges that change. Those
    add or remove energy the audit cannot count."""
    if len(job.pins) and np.ptp(job.pin_world, axis=0).max(initial=0.0) > 0:
        return "pins that move"
    if job.collider_world is not None and np.ptp(job.collider_world, axis=0).max(initial=0.0) > 0:
        return "colliders that move"
    if job.ext_charge.size and np.any(job.ext_charge != 0):
        return "external charges"
    if np.any(job.field != 0):
        return "a uniform field"
    groups = job.group_charge.shape[-1]
    if groups and job.group_charge.size and np.ptp(job.group_charge.reshape(-1, groups), axis=0).max() > 0:
        return "charges that change"
    return ""


def energy_gain(start, end, floor):
    """The energy (J) a bake made from nothing, from the library's energies at its start and end
    (`Simulation.energies`: kinetic, spring, Coulomb and external, which includes gravity), if it
    is more than `ENERGY_GAIN_LIMIT` times the energy of its motion (the largest of the kinetic
    energy at the end, the kinetic, spring and Coulomb energy at the start, and the potential
    energy gravity released) and more than `floor` (J, what counts as no motion at all); else
    None. What gravity released counts: a cloth dropped onto a collider turns it into motion,
    and the contacts, which put vertices back on the surface after the implicit spring step
    (their neighbours do not feel it until the next step), stretch a stiff cloth's springs at
    the impact: a 3,000 N/m cloth dropped 5 cm onto a sphere ended 0.27 J above its start after
    releasing 4.3 J, held on the sphere by friction. Those gains are the contacts', not the
    charges' the audit is for."""
    gain = end["total"] - start["total"]
    released = start["external"] - end["external"]
    motion = max(end["kinetic"], start["kinetic"] + start["spring"] + abs(start["coulomb"]), released)
    # nor is the rounding of the gravity potential (measured from the origin) a gain
    floor = max(floor, 1e-9 * (abs(start["external"]) + motion))
    return gain if gain > ENERGY_GAIN_LIMIT * motion and gain > floor else None


def gained_text(gain, frame, start, end, adaptive):
    """What an artist reads when a bake's motion gained `gain` J from nothing by `frame`, from
    the library's energies at its `start` and `end`: the cause is the charges' kick where the
    scene has Coulomb energy, else the contacts, which put vertices back on a surface after the
    spring step and can stretch a stiff mesh pressed onto a curved collider or onto itself. The
    remedy: shorter steps, through Substeps (with `adaptive` substeps on, the least per frame)."""
    if start["coulomb"] or end["coulomb"]:
        cause = "for how close the charges come, and the frames show motion the charges could not supply"
    else:
        cause = (
            "for the contacts (the scene carries no charge): a stiff mesh pressed onto a curved collider or onto "
            "itself is stretched where the contacts put it back, and the frames show motion nothing supplied"
        )
    return (
        f"the motion gained {gain:.3g} J from nothing by frame {frame}, where nothing drives the scene (its kinetic "
        f"energy at the end: {end['kinetic']:.3g} J): the steps are too long {cause}. "
        + ("Raise Substeps (the least steps per frame)" if adaptive else "Turn on Adaptive Substeps or raise Substeps")
    )


def _size(points):
    """The diagonal of the bounding box of (n, 3) `points` (m)."""
    return float(np.linalg.norm(points.max(axis=0) - points.min(axis=0))) if len(points) else 0.0


def blown_up(positions, parts, rest_sizes):
    """(part, growth) of the first of `parts` ((a, b) ranges of `positions`, (n, 3) m) whose
    bounding box is more than `GROWTH_LIMIT` times its rest size `rest_sizes[part]` (m), or
    None. Parts of a single point (no size) are never blown up."""
    for k, ((a, b), rest) in enumerate(zip(parts, rest_sizes)):
        if rest > 0 and _size(positions[a:b]) > GROWTH_LIMIT * rest:
            return k, _size(positions[a:b]) / rest
    return None


@dataclass(kw_only=True)
class MeshColliders:
    """Obstacles as triangle meshes (world space, SI): k meshes sharing one vertex array."""

    vertices: np.ndarray  # (v, 3) m, at the start frame
    triangles: np.ndarray  # (t, 3) indices into vertices
    first_triangle: np.ndarray  # (k + 1,) mesh j owns triangles first[j]..first[j+1]-1
    thickness: np.ndarray  # (k,) m contact distance
    friction: np.ndarray  # (k,) under `law`: 0..1 per step, or Coulomb coefficients mu >= 0
    names: list  # (k,) the objects, for messages
    #: how `friction` is read (`Simulation.set_collider_friction_law`)
    law: FrictionLaw = FrictionLaw.PER_STEP


@dataclass(kw_only=True)
class Setup:
    """A simulation at its start frame, as arrays (world space, SI units): what the bake, the live
    preview and the charge fit all start from. Shapes: n vertices, s springs, p pins, g charge
    groups."""

    library: str
    rest_local: np.ndarray  # (n, 3) object-space rest coordinates: the first cache sample
    x0: np.ndarray  # (n, 3) world-space start positions (m)
    masses: np.ndarray  # (n,) kg
    springs: np.ndarray  # (s, 2)
    stiffness: np.ndarray  # (s,) N/m
    params: SimParams
    pins: np.ndarray  # (p,) vertex indices
    group_weights: np.ndarray  # (g, n)
    note: str = ""  # a fallback the user should know about (e.g. GPU unavailable → CPU)
    #: mistakes in the inputs that do not stop the simulation (`checks.input_warnings`)
    warnings: list = field(default_factory=list)
    #: vertices of each part (object), in order (empty: one part of all vertices)
    part_sizes: tuple = ()
    #: Settling of each part (1/s: Simulation.set_relative_damping / set_parts)
    part_damping: tuple = (0.0,)
    #: Spring Damping of each spring (s,) in seconds (Simulation.set_spring_damping; None or all
    #: 0: none)
    spring_damping: np.ndarray | None = None
    #: the surfaces (t, 3), with area: those that repel in self-collision, and whose edges are
    #: kept off the colliders' sharp edges; with how far (n,) m each vertex keeps from them in
    #: self-collision (None or all 0: off)
    self_triangles: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), dtype=np.int64))
    self_distance: np.ndarray | None = None
    #: friction between layers (n,) 1/s per vertex (None or all 0: frictionless)
    self_friction: np.ndarray | None = None
    #: obstacles (None: none)
    colliders: MeshColliders | None = None
    #: adaptive substeps: each of a frame's substeps (`params.time_step`) is taken in as many
    #: steps as the charges and the motion need (`Simulation.advance`), the frame in at most this
    #: many; 0: fixed, exactly one step per substep
    max_steps_per_frame: int = 0

    @property
    def parts(self):
        """(start, stop) vertex range of each part."""
        sizes = self.part_sizes or (len(self.x0),)
        ends = list(itertools.accumulate(sizes))
        return list(zip([0] + ends[:-1], ends))

    def create_simulation(self):
        """The simulation at the start frame (pins and damping set); the caller closes it."""
        sim = Simulation(self.library, self.x0, self.masses, self.springs, self.stiffness, self.params)
        try:
            if len(self.pins):
                sim.set_pins(self.pins)
            if len(self.parts) > 1:
                part = np.repeat(np.arange(len(self.parts), dtype=np.uint32), [b - a for a, b in self.parts])
                sim.set_parts(part, np.asarray(self.part_damping, dtype=float))
            elif self.part_damping[0]:
                sim.set_relative_damping(self.part_damping[0])
            if self.spring_damping is not None and (self.spring_damping > 0).any():
                sim.set_spring_damping(self.spring_damping)
            if self.self_distance is not None and (self.self_distance > 0).any() and len(self.self_triangles):
                sim.set_self_collision(self.self_triangles, self.self_distance)
                if self.self_friction is not None and (self.self_friction > 0).any():
                    sim.set_self_collision_friction(self.self_friction)
            c = self.colliders
            if c is not None and len(c.thickness):
                if c.law != FrictionLaw.PER_STEP:
                    sim.set_collider_friction_law(c.law)
                sim.set_mesh_colliders(c.vertices, c.triangles, c.first_triangle, c.thickness, c.friction)
                if len(self.self_triangles):
                    sim.set_surface(self.self_triangles)  # kept off the colliders' sharp edges
        except CmscError:
            sim.close()
            raise
        return sim


def combine(setups, params):
    """One simulation of several objects' `Setup`s (each a part, in order) under `params`: their
    arrays joined, springs and pins shifted to the joint vertex numbering, charge groups kept
    apart (group rows of one part are zero on the others), warnings and notes joined."""
    if len(setups) == 1:
        return Setup(**{**vars(setups[0]), "params": params})
    sizes = [len(s.x0) for s in setups]
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    n, g = sum(sizes), sum(len(s.group_weights) for s in setups)
    weights = np.zeros((g, n))
    row = 0
    for s, o in zip(setups, offsets):
        weights[row : row + len(s.group_weights), o : o + len(s.x0)] = s.group_weights
        row += len(s.group_weights)
    return Setup(
        library=setups[0].library,
        rest_local=np.concatenate([s.rest_local for s in setups]),
        x0=np.concatenate([s.x0 for s in setups]),
        masses=np.concatenate([s.masses for s in setups]),
        springs=np.concatenate([s.springs.astype(np.int64) + o for s, o in zip(setups, offsets)]).reshape(-1, 2),
        stiffness=np.concatenate([s.stiffness for s in setups]),
        params=params,
        pins=np.concatenate([np.asarray(s.pins, dtype=np.int64) + o for s, o in zip(setups, offsets)]),
        group_weights=weights,
        note="; ".join(dict.fromkeys(s.note for s in setups if s.note)),
        warnings=[w for s in setups for w in s.warnings],
        part_sizes=tuple(sizes),
        part_damping=tuple(s.part_damping[0] for s in setups),
        spring_damping=np.concatenate(
            [s.spring_damping if s.spring_damping is not None else np.zeros(len(s.springs)) for s in setups]
        ),
        self_triangles=np.concatenate(
            [np.asarray(s.self_triangles, dtype=np.int64).reshape(-1, 3) + o for s, o in zip(setups, offsets)]
        ),
        self_distance=np.concatenate(
            [s.self_distance if s.self_distance is not None else np.zeros(len(s.x0)) for s in setups]
        ),
        self_friction=np.concatenate(
            [s.self_friction if s.self_friction is not None else np.zeros(len(s.x0)) for s in setups]
        ),
    )


@dataclass(kw_only=True)
class BakeJob(Setup):
    """Inputs of a bake over `frames` frames after the start frame, `substeps` steps each: the
    `Setup` plus what changes per frame and substep, and one cache per part.

    Shapes as in Setup; k external charges, F frames, S substeps, P parts.
    """

    cache_paths: list  # (P,) the PC2 file of each part
    start_frame: int
    world_to_local: np.ndarray  # (F, P, 4, 4) per frame and part, to write object-space samples
    pin_world: np.ndarray  # (F + 1, p, 3) pin targets at the start and each frame
    ext_world: np.ndarray  # (F + 1, k, 3) external charge positions
    group_charge: np.ndarray  # (F, S, g) C per unit weight, at each substep
    ext_charge: np.ndarray  # (F, S, k) C
    field: np.ndarray  # (F, S, 3) V/m
    collider_world: np.ndarray | None = None  # (F + 1, v, 3) mesh collider vertices per frame (m)
    cancel: threading.Event = field(default_factory=threading.Event)
    frames_done: int = 0  # samples written so far (read by the UI thread for progress)
    error: str = ""  # why the bake stopped early, if it did
    #: the Coulomb method that runs, read back from the library once the simulation exists
    #: (None before): what AUTO chose, shown in the panel and the report
    coulomb_method: CoulombMethod | None = None
    #: wall-clock seconds spent in the simulation ("simulate") and writing the cache ("write")
    timings: dict = field(default_factory=lambda: {"simulate": 0.0, "write": 0.0})
    #: the objects' names, one per part, for messages ("part 2" without them)
    part_names: list = field(default_factory=list)
    #: how it ended (None while it runs): `Outcome`
    outcome: Outcome | None = None
    #: the time steps each baked frame took (adaptive substeps choose them)
    steps: list = field(default_factory=list)
    #: the most steps per frame the contacts asked for, the first frame that asked for more than
    #: the bake may take (`Simulation.contact_steps_per_vertex`, `most_steps`) and the parts
    #: whose contacts asked, in the order they first did; None: none did
    contact_shortfall: tuple | None = None
    #: the most steps per frame the charges asked for, the first frame that asked for more than
    #: the bake may take (`FrameSteps`, `most_steps`) and the parts whose charges asked, in the
    #: order they first did; None: none did
    charge_shortfall: tuple | None = None

    def stop(self, outcome, text):
        """Ends the bake early as `outcome`, saying why in `error`."""
        self.outcome, self.error = outcome, text

    @property
    def frames(self):
        return self.group_charge.shape[0]

    def frame_inputs(self, f):
        """The `FrameInputs` of the step from frame `start_frame + f` to the next."""
        return FrameInputs(
            pin_world=self.pin_world[f : f + 2],
            ext_world=self.ext_world[f : f + 2],
            group_charge=self.group_charge[f],
            ext_charge=self.ext_charge[f],
            field=self.field[f],
            colliders=None if self.collider_world is None else self.collider_world[f : f + 2],
        )

    @property
    def substeps(self):
        return self.group_charge.shape[1]

    @property
    def adaptive(self):
        """Whether the library chooses the steps of each substep (`step_frame`)."""
        return self.max_steps_per_frame // self.substeps > 1

    @property
    def most_steps(self):
        """The most steps a frame may take: the substeps, or with adaptive substeps as many
        whole multiples of them as Max Substeps allows (`step_frame`)."""
        return self.substeps * (self.max_steps_per_frame // self.substeps) if self.adaptive else self.substeps


@dataclass(frozen=True, kw_only=True)
class FrameInputs:
    """What one frame of S substeps needs, for p pins, k external charges, g charge groups and
    v mesh collider vertices: positions at the frame's start and end (m), linearly interpolated
    per substep, and the charges and field at each substep's end."""

    pin_world: np.ndarray  # (2, p, 3)
    ext_world: np.ndarray  # (2, k, 3)
    group_charge: np.ndarray  # (S, g) C per unit weight
    ext_charge: np.ndarray  # (S, k) C
    field: np.ndarray  # (S, 3) V/m
    colliders: np.ndarray | None = None  # (2, v, 3)


class FrameSteps(NamedTuple):
    """What `step_frame` took and what the charges asked for."""

    taken: int  # steps over the frame
    #: the most steps per frame the charge bound asked for: the most any substep asked for,
    #: times the substeps; 0 where it was not asked
    charge: int
    #: the parts (indices, in order) whose charges asked for more steps than a substep takes
    over: tuple = ()


def _charge_asks(sim, setup, seconds, cap):
    """What the charges ask for over the next `seconds` (`Simulation.charge_steps_per_vertex`):
    the most steps any vertex asks for, and the parts where one asks for more than `cap`."""
    each = sim.charge_steps_per_vertex(seconds)
    over = {k for k, (a, b) in enumerate(setup.parts) if each[a:b].max(initial=1) > cap}
    return int(each.max(initial=1)), over


def step_frame(sim, setup, frame, ask=True):
    """Advances `sim` (made from `setup`: its charge groups and pins) by one frame of
    `FrameInputs` `frame`: one step per substep, or with adaptive substeps
    (`Setup.max_steps_per_frame`) as many as the library chooses for each. Returns
    `FrameSteps`; the charge bound is asked before each substep only where `ask` (the live
    preview does without). Raises CmscError (DivergedError) from the step."""
    substeps = frame.group_charge.shape[0]
    most = setup.max_steps_per_frame // substeps if setup.max_steps_per_frame else 0
    taken = asked = 0
    over = set()
    for k in range(substeps):
        a = (k + 1) / substeps
        sim.set_charges(frame.group_charge[k] @ setup.group_weights)
        if frame.ext_charge.shape[1]:
            sim.set_external_charges((1 - a) * frame.ext_world[0] + a * frame.ext_world[1], frame.ext_charge[k])
        sim.set_uniform_field(frame.field[k])
        if len(setup.pins):
            sim.set_pin_targets((1 - a) * frame.pin_world[0] + a * frame.pin_world[1])
        if frame.colliders is not None and frame.colliders.shape[1]:
            sim.move_mesh_colliders((1 - a) * frame.colliders[0] + a * frame.colliders[1])
        h = setup.params.time_step
        if ask:  # what `advance` asks of this substep (the same state and inputs)
            now, more = _charge_asks(sim, setup, h, max(most, 1))
            asked, over = max(asked, now), over | more
        if most > 1:
            taken += sim.advance(h, 1, most)
        else:
            sim.step(1)
            taken += 1
    return FrameSteps(taken, asked * substeps, tuple(sorted(over)))


def steps_line(steps):
    """"2.4 steps per frame on average, at most 8" of the steps (one count per frame) a run
    took; "" before any."""
    if not steps:
        return ""
    mean, most = sum(steps) / len(steps), max(steps)
    mean_text = f"{mean:.0f}" if mean == int(mean) else f"{mean:.1f}"
    if most == min(steps):
        return f"{most} step{'s' if most != 1 else ''} per frame"
    return f"{mean_text} steps per frame on average, at most {most}"


def to_local(world, world_to_local):
    """(n, 3) world positions in object space, or None when some coordinate is beyond what a
    float32 cache (and Blender) can hold."""
    m = world_to_local
    local = world @ m[:3, :3].T + m[:3, 3]
    if not (np.abs(local) <= np.finfo(np.float32).max).all():
        return None
    return local


def run(job, on_frame=None):
    """Runs the bake; returns the number of samples written (start frame included). Stops
    early, keeping valid caches of the frames done, on cancel or divergence (`job.outcome`,
    `job.error`).
    The caches are created new: an existing file at one of `job.cache_paths` is never
    overwritten (the caller removes its own old caches first); that, and any other failure to
    write them, is `job.error` too. `on_frame(job)` is called after each written frame
    (progress lines, progress bars)."""
    t0 = time.perf_counter()
    with job.create_simulation() as sim:
        job.coulomb_method = sim.coulomb_method
        job.timings["simulate"] += time.perf_counter() - t0
        created = []
        try:
            with contextlib.ExitStack() as caches:
                writers = []
                for path, (a, b) in zip(job.cache_paths, job.parts):
                    pc2 = Pc2Writer(path, b - a, start_frame=job.start_frame, exclusive=True)
                    writers.append(caches.enter_context(pc2))
                    created.append(path)
                _frames(job, sim, writers, on_frame)
        except OSError as e:
            path = e.filename or job.cache_paths[min(len(created), len(job.cache_paths) - 1)]
            job.stop(
                Outcome.WRITE_FAILED,
                f"writing the cache {path} failed after {job.frames_done} frames: {e.strerror or e}"
                if job.frames_done
                else f"cannot write the cache {path}: {e.strerror or e}",
            )
            if job.frames_done == 0:  # created above, so ours: nothing of them is usable
                for made in created:
                    with contextlib.suppress(OSError):
                        os.remove(made)
    if job.outcome is None:
        job.outcome = Outcome.DONE
    return job.frames_done


def _check_contact_steps(job, sim, frame):
    """Records in `job.contact_shortfall` the steps the contacts ask for over the frame that
    starts (`frame` − 1 → `frame`) where they are more than the frame may take (`most_steps`),
    and which parts' contacts ask."""
    each = sim.contact_steps_per_vertex(job.substeps * job.params.time_step)
    asked = [int(each[a:b].max(initial=1)) for a, b in job.parts]
    needed = max(asked)
    if needed > job.most_steps:
        most, first, parts = job.contact_shortfall or (0, frame, ())
        more = tuple(k for k, steps in enumerate(asked) if steps > job.most_steps and k not in parts)
        job.contact_shortfall = (max(most, needed), first, parts + more)


def _check_charge_steps(job, steps, frame):
    """Records in `job.charge_shortfall` the steps per frame the charges asked for over the frame
    that ended at `frame` (`FrameSteps`) where they are more than the frame may take
    (`most_steps`), and the parts whose charges asked."""
    if steps.charge > job.most_steps:
        most, first, parts = job.charge_shortfall or (0, frame, ())
        more = tuple(k for k in steps.over if k not in parts)
        job.charge_shortfall = (max(most, steps.charge), first, parts + more)


def _part_name(job, k):
    return job.part_names[k] if k < len(job.part_names) else f"part {k + 1}"


def _listed(names):
    """"A", "A and B", "A, B and C"."""
    return " and ".join([", ".join(names[:-1]), names[-1]]) if len(names) > 1 else names[0]


def _too_few_steps(job, asked):
    """For a warning that frames asked for `asked` steps, more than the bake takes: what the
    settings allow, what to raise, and the setting's value that would give the steps."""
    s = job.substeps
    if not job.max_steps_per_frame:
        return f"Substeps takes {s}", f"Turn on Adaptive Substeps or raise Substeps to {asked}", asked
    # Adaptive Substeps: each substep takes up to Max Substeps // Substeps steps (more than one)
    enough = max(2 * s, s * -(-asked // s))
    allows = f"Max Substeps allows {job.most_steps}"
    if job.most_steps != job.max_steps_per_frame:
        each = f"{s} substeps × {job.most_steps // s}"
        allows = f"Max Substeps {job.max_steps_per_frame} allows {job.most_steps} ({each})"
    return allows, f"Raise Max Substeps to {enough}", enough


def contact_warning(job):
    """What the artist reads when a bake took fewer steps than its contacts asked for
    (`BakeJob.contact_shortfall`), or ""."""
    if job.contact_shortfall is None:
        return ""
    most, first, parts = job.contact_shortfall
    who = _listed([_part_name(job, k) for k in parts]) if parts else "a mesh"
    limit, remedy, _ = _too_few_steps(job, most)
    return (
        f"from frame {first} {who} touched a curved collider, where the contacts ask for up to {most} steps per "
        f"frame (more for stiffer springs, more Spring Damping and tighter curves) and {limit}: contacts at longer "
        f"steps stretch the mesh and can give it energy from nothing (it jumps or is thrown off). {remedy}"
    )


def charge_warning(job):
    """What the artist reads when a bake took fewer steps than its charges asked for
    (`BakeJob.charge_shortfall`), or ""."""
    if job.charge_shortfall is None:
        return ""
    most, first, parts = job.charge_shortfall
    who = f"the charges of {_listed([_part_name(job, k) for k in parts])}" if parts else "the charges"
    limit, remedy, enough = _too_few_steps(job, most)
    if enough > MAX_SUBSTEPS:
        remedy = f"Lower the charges or raise the Mass: more than {MAX_SUBSTEPS} steps per frame cannot be set"
    return (
        f"from frame {first} {who} ask for up to {most} steps per frame (more for stronger charges closer "
        f"together on lighter vertices) and {limit}: at longer steps the forces between close charges are not "
        f"resolved, and the mesh can jitter, gain energy or pass through itself. {remedy}"
    )


def step_warnings(job):
    """The warnings of a bake that took fewer steps than its charges or its contacts asked for
    (`charge_warning`, `contact_warning`), those that apply."""
    return [text for text in (charge_warning(job), contact_warning(job)) if text]


def _has_contacts(job):
    """Whether `job`'s scene has colliders or self-collision."""
    self_contact = job.self_distance is not None and bool((job.self_distance > 0).any())
    return job.colliders is not None or self_contact


def _write(job, writers, positions, world_to_local):
    """One sample of every part into its cache, in its object's space; False (nothing written)
    when some coordinate is beyond what a float32 cache can hold."""
    samples = [to_local(positions[a:b], m) for (a, b), m in zip(job.parts, world_to_local)]
    if any(s is None for s in samples):
        return False
    for w, sample in zip(writers, samples):
        w.write(sample)
    return True


def _frames(job, sim, writers, on_frame):
    """The rest sample, then each frame into the `writers` (one per part), until done,
    cancelled or diverged."""
    clock = time.perf_counter
    t1 = clock()
    for w, (a, b) in zip(writers, job.parts):
        w.write(job.rest_local[a:b])
    job.frames_done = 1
    rest_sizes = [_size(job.x0[a:b]) for a, b in job.parts]
    audit = len(job.x0) <= ENERGY_AUDIT_MAX_VERTICES and job.frames > 0 and not drives(job)
    if audit:  # the charges the first step sets (they do not change: nothing drives the scene)
        sim.set_charges(job.group_charge[0, 0] @ job.group_weights)
    # with contacts, from the end of the first frame: a mesh that starts within a collider's
    # contact distance (a cloth laid on the floor) is pushed out in its first steps, work the
    # collider does (0.196 J lifting a 1 kg cloth by a 2 cm Outer Thickness), not a gain
    start = sim.energies() if audit and not _has_contacts(job) else None
    job.timings["write"] += clock() - t1
    for f in range(job.frames):
        if job.cancel.is_set():
            job.stop(Outcome.CANCELLED, f"cancelled at frame {job.start_frame + f + 1}")
            break
        t0 = clock()
        frame = job.start_frame + f + 1
        try:
            _check_contact_steps(job, sim, frame)
            steps = step_frame(sim, job, job.frame_inputs(f))
            job.steps.append(steps.taken)
            _check_charge_steps(job, steps, frame)
            positions = sim.positions
        except DivergedError as e:
            # what the charges asked where the frame failed: at the start of the substep that
            # diverged (where `advance` keeps the state), or at the last good fixed step
            with contextlib.suppress(CmscError):
                asked, over = _charge_asks(sim, job, job.params.time_step, job.most_steps // job.substeps)
                _check_charge_steps(job, FrameSteps(0, asked * job.substeps, tuple(sorted(over))), frame)
            job.stop(Outcome.DIVERGED, f"diverged at frame {frame}: {e}. {DIVERGED_HINT}")
            break
        except CmscError as e:
            job.stop(Outcome.FAILED, f"failed at frame {frame}: {e}")
            break
        finally:
            t1 = clock()
            job.timings["simulate"] += t1 - t0
        grown = blown_up(positions, job.parts, rest_sizes)
        if grown is not None:
            k, growth = grown
            text = (
                f"diverged at frame {frame}: {_part_name(job, k)} grew to {growth:.0f}× its size, past the "
                f"{GROWTH_LIMIT:.0f}× a bake allows (also when its own charges fling its pieces that far apart: then "
                f"lower the charge or bake fewer frames). {DIVERGED_HINT}"
            )
            job.stop(Outcome.DIVERGED, text)
            break
        if not _write(job, writers, positions, job.world_to_local[f]):
            job.stop(Outcome.DIVERGED, f"diverged at frame {frame}: vertices left the float32 range. {DIVERGED_HINT}")
            break
        job.frames_done += 1
        if audit and start is None:
            start = sim.energies()
        job.timings["write"] += clock() - t1
        if on_frame is not None:
            on_frame(job)
    if audit and job.outcome is None:
        end = sim.energies()
        # no motion at all: the whole mass moving a thousandth of the scene's size per second
        floor = 1e-6 * float(np.sum(job.masses)) * _size(job.x0) ** 2
        gain = energy_gain(start, end, floor)
        if gain is not None:
            job.stop(Outcome.GAINED_ENERGY, gained_text(gain, job.start_frame + job.frames, start, end, job.adaptive))
