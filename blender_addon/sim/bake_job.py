"""A bake as plain data: every input the simulation needs, per frame and per substep, gathered
on Blender's main thread into numpy arrays, then run anywhere (a worker thread in the modal
bake) without touching bpy. Writes the PC2 cache as frames complete."""

import threading
from dataclasses import dataclass, field

import numpy as np

from .errors import CmscError, DivergedError
from .params import SimParams
from .pc2 import Pc2Writer
from .simulation import Simulation


@dataclass
class BakeJob:
    """Inputs of a bake over `frames` frames after the start frame, `substeps` steps each.

    Shapes: n vertices, s springs, p pins, g charge groups, k external charges, F frames.
    """

    library: str
    cache_path: str
    start_frame: int
    rest_local: np.ndarray  # (n, 3) object-space rest coordinates: the first cache sample
    x0: np.ndarray  # (n, 3) world-space start positions (m)
    masses: np.ndarray  # (n,) kg
    springs: np.ndarray  # (s, 2)
    stiffness: np.ndarray  # (s,) N/m
    params: SimParams
    pins: np.ndarray  # (p,) vertex indices
    group_weights: np.ndarray  # (g, n)
    world_to_local: np.ndarray  # (F, 4, 4) per frame, to write object-space samples
    pin_world: np.ndarray  # (F + 1, p, 3) pin targets at the start and each frame
    ext_world: np.ndarray  # (F + 1, k, 3) external charge positions
    group_charge: np.ndarray  # (F, S, g) C per unit weight, at each substep
    ext_charge: np.ndarray  # (F, S, k) C
    field: np.ndarray  # (F, S, 3) V/m
    cancel: threading.Event = field(default_factory=threading.Event)
    frames_done: int = 0  # samples written so far (read by the UI thread for progress)
    error: str = ""  # why the bake stopped early, if it did

    @property
    def frames(self):
        return self.group_charge.shape[0]

    @property
    def substeps(self):
        return self.group_charge.shape[1]


def run(job, on_frame=None):
    """Runs the bake; returns the number of samples written (start frame included). Stops
    early, keeping a valid cache of the frames done, on cancel or divergence (`job.error`).
    `on_frame(job)` is called after each written frame (progress lines, progress bars)."""
    with Simulation(job.library, job.x0, job.masses, job.springs, job.stiffness, job.params) as sim, Pc2Writer(
        job.cache_path, len(job.x0), start_frame=job.start_frame
    ) as pc2:
        if len(job.pins):
            sim.set_pins(job.pins)
        pc2.write(job.rest_local)
        job.frames_done = 1
        for f in range(job.frames):
            if job.cancel.is_set():
                job.error = f"cancelled at frame {job.start_frame + f + 1}"
                break
            try:
                for k in range(job.substeps):
                    a = (k + 1) / job.substeps
                    sim.set_charges(job.group_charge[f, k] @ job.group_weights)
                    if job.ext_charge.shape[2]:
                        pos = (1 - a) * job.ext_world[f] + a * job.ext_world[f + 1]
                        sim.set_external_charges(pos, job.ext_charge[f, k])
                    sim.set_uniform_field(job.field[f, k])
                    if len(job.pins):
                        sim.set_pin_targets((1 - a) * job.pin_world[f] + a * job.pin_world[f + 1])
                    sim.step(1)
            except DivergedError as e:
                job.error = (
                    f"diverged at frame {job.start_frame + f + 1}: {e}. "
                    "Try more substeps, a lower stiffness or charge, or some damping"
                )
                break
            except CmscError as e:
                job.error = f"failed at frame {job.start_frame + f + 1}: {e}"
                break
            m = job.world_to_local[f]
            local = sim.positions @ m[:3, :3].T + m[:3, 3]
            if not (np.abs(local) <= np.finfo(np.float32).max).all():
                # finite in f64 but beyond what a float32 cache (and Blender) can hold
                job.error = (
                    f"diverged at frame {job.start_frame + f + 1}: vertices left the float32 range. "
                    "Try more substeps, a lower stiffness or charge, or some damping"
                )
                break
            pc2.write(local)
            job.frames_done += 1
            if on_frame is not None:
                on_frame(job)
    return job.frames_done
