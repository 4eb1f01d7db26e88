"""A bake as plain data: every input the simulation needs, per frame and per substep, gathered
on Blender's main thread into numpy arrays, then run anywhere (a worker thread in the modal
bake) without touching bpy. Writes the PC2 cache as frames complete.

`Setup` is a simulation at its start frame; the bake (`BakeJob` extends it), the live preview and
the charge fit all create their simulation with `Setup.create_simulation()`. `step_frame`
advances one frame from per-frame inputs; the bake and the live preview both use it, so a preview
played frame by frame equals the bake."""

import contextlib
import os
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from .errors import CmscError, DivergedError
from .params import CoulombMethod, SimParams
from .pc2 import Pc2Writer
from .simulation import Simulation

#: What a diverged frame's message suggests.
DIVERGED_HINT = "Try more substeps, a lower stiffness or charge, or some damping"


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
    relative_damping: float = 0.0  # 1/s (Simulation.set_relative_damping)
    note: str = ""  # a fallback the user should know about (e.g. GPU unavailable → CPU)
    #: mistakes in the inputs that do not stop the simulation (`checks.input_warnings`)
    warnings: list = field(default_factory=list)

    def create_simulation(self):
        """The simulation at the start frame (pins and damping set); the caller closes it."""
        sim = Simulation(self.library, self.x0, self.masses, self.springs, self.stiffness, self.params)
        try:
            if len(self.pins):
                sim.set_pins(self.pins)
            if self.relative_damping:
                sim.set_relative_damping(self.relative_damping)
        except CmscError:
            sim.close()
            raise
        return sim


@dataclass(kw_only=True)
class BakeJob(Setup):
    """Inputs of a bake over `frames` frames after the start frame, `substeps` steps each: the
    `Setup` plus what changes per frame and substep.

    Shapes as in Setup; k external charges, F frames, S substeps.
    """

    cache_path: str
    start_frame: int
    world_to_local: np.ndarray  # (F, 4, 4) per frame, to write object-space samples
    pin_world: np.ndarray  # (F + 1, p, 3) pin targets at the start and each frame
    ext_world: np.ndarray  # (F + 1, k, 3) external charge positions
    group_charge: np.ndarray  # (F, S, g) C per unit weight, at each substep
    ext_charge: np.ndarray  # (F, S, k) C
    field: np.ndarray  # (F, S, 3) V/m
    cancel: threading.Event = field(default_factory=threading.Event)
    frames_done: int = 0  # samples written so far (read by the UI thread for progress)
    error: str = ""  # why the bake stopped early, if it did
    #: the Coulomb method that runs, read back from the library once the simulation exists
    #: (None before): what AUTO chose, shown in the panel and the report
    coulomb_method: CoulombMethod | None = None
    #: wall-clock seconds spent in the simulation ("simulate") and writing the cache ("write")
    timings: dict = field(default_factory=lambda: {"simulate": 0.0, "write": 0.0})

    @property
    def frames(self):
        return self.group_charge.shape[0]

    @property
    def substeps(self):
        return self.group_charge.shape[1]


def step_frame(sim, group_weights, pins, pin_world, ext_world, group_charge, ext_charge, field):
    """Advances one frame of `len(group_charge)` substeps.

    pin_world, ext_world: (2, p, 3) and (2, k, 3) positions at the frame's start and end (m),
    linearly interpolated per substep; group_charge (S, g) C per unit weight, ext_charge (S, k) C
    and field (S, 3) V/m at each substep's end. Raises CmscError (DivergedError) from the step.
    """
    substeps = group_charge.shape[0]
    for k in range(substeps):
        a = (k + 1) / substeps
        sim.set_charges(group_charge[k] @ group_weights)
        if ext_charge.shape[1]:
            sim.set_external_charges((1 - a) * ext_world[0] + a * ext_world[1], ext_charge[k])
        sim.set_uniform_field(field[k])
        if len(pins):
            sim.set_pin_targets((1 - a) * pin_world[0] + a * pin_world[1])
        sim.step(1)


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
    early, keeping a valid cache of the frames done, on cancel or divergence (`job.error`).
    The cache is created new: an existing file at `job.cache_path` is never overwritten (the
    caller removes its own old cache first); that, and any other failure to write it, is
    `job.error` too. `on_frame(job)` is called after each written frame (progress lines,
    progress bars)."""
    t0 = time.perf_counter()
    with job.create_simulation() as sim:
        job.coulomb_method = sim.coulomb_method
        job.timings["simulate"] += time.perf_counter() - t0
        try:
            pc2 = Pc2Writer(job.cache_path, len(job.x0), start_frame=job.start_frame, exclusive=True)
        except OSError as e:
            job.error = f"cannot write the cache {job.cache_path}: {e.strerror or e}"
            return 0
        try:
            with pc2:
                _frames(job, sim, pc2, on_frame)
        except OSError as e:
            job.error = f"writing the cache {job.cache_path} failed after {job.frames_done} frames: {e.strerror or e}"
            if job.frames_done == 0:  # created above, so ours: nothing of it is usable
                with contextlib.suppress(OSError):
                    os.remove(job.cache_path)
    return job.frames_done


def _frames(job, sim, pc2, on_frame):
    """The rest sample, then each frame into `pc2`, until done, cancelled or diverged."""
    clock = time.perf_counter
    t1 = clock()
    pc2.write(job.rest_local)
    job.frames_done = 1
    job.timings["write"] += clock() - t1
    for f in range(job.frames):
        if job.cancel.is_set():
            job.error = f"cancelled at frame {job.start_frame + f + 1}"
            break
        t0 = clock()
        frame = job.start_frame + f + 1
        try:
            step_frame(
                sim, job.group_weights, job.pins, job.pin_world[f : f + 2], job.ext_world[f : f + 2],
                job.group_charge[f], job.ext_charge[f], job.field[f],
            )
            local = to_local(sim.positions, job.world_to_local[f])
        except DivergedError as e:
            job.error = f"diverged at frame {frame}: {e}. {DIVERGED_HINT}"
            break
        except CmscError as e:
            job.error = f"failed at frame {frame}: {e}"
            break
        finally:
            t1 = clock()
            job.timings["simulate"] += t1 - t0
        if local is None:
            job.error = f"diverged at frame {frame}: vertices left the float32 range. {DIVERGED_HINT}"
            break
        pc2.write(local)
        job.frames_done += 1
        job.timings["write"] += clock() - t1
        if on_frame is not None:
            on_frame(job)
