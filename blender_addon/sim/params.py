"""Simulation parameters as a typed dataclass mirroring the C struct `CmscParams`."""

import enum
import math
from dataclasses import dataclass, field

from .errors import InvalidArgumentError

#: Limits the library checks (CMSC_MAX_* of include/cmsc.h; tests/python/test_header_parity.py
#: checks these copies against the header).
MAX_ITERATIONS = 100_000
MAX_FAR_FIELD_INTERVAL = 1000
MAX_GRID_POINTS = 10_000_000
MIN_FIELD_TOLERANCE = 1e-4  # P3M's relative RMS force error, `Simulation.set_field_tolerance`
MAX_FIELD_TOLERANCE = 0.1
MAX_ADVANCE_STEPS = 1024  # steps of one `Simulation.advance`
#: The most Substeps and Max Substeps an object may ask for (the properties' limit).
MAX_SUBSTEPS = 1000
#: The iteration tolerance of adaptive substeps (`SimParams.iteration_tolerance`): a step's
#: local/global iterations stop once their relative update falls below it (the header's
#: CMSC_RECOMMENDED_ITERATION_TOLERANCE).
ADAPTIVE_ITERATION_TOLERANCE = 1e-3


class CoulombMethod(enum.IntEnum):
    """`CmscCoulomb` values."""

    OFF = 0
    DIRECT = 1
    DDEF = 2
    DDEF_GPU = 3
    DIRECT_GPU = 4
    AUTO = 5
    AUTO_CPU = 6  # AUTO without the GPU: what the add-on passes for AUTO with "Use GPU" off
    P3M = 7  # particle-particle particle-mesh: Ewald split, FFT mesh, exact near pairs (CPU)


class FrictionLaw(enum.IntEnum):
    """`CmscFrictionLaw` values: how the obstacles' friction values are read
    (`Simulation.set_collider_friction_law`)."""

    PER_STEP = 0  # 0..1, the fraction of tangential motion removed per step in contact
    COULOMB = 1  # a Coulomb coefficient mu >= 0 (Blender Cloth's: Collision Friction / 100)


class Integrator(enum.IntEnum):
    """`CmscIntegrator` values."""

    IMEX = 0
    VERLET = 1
    IMEX_LOW_DISSIPATION = 2


@dataclass
class SimParams:
    """Parameters in SI units; defaults equal `cmsc_params_default`."""

    time_step: float = 1.0 / 120.0  # h, s
    iterations: int = 6  # local/global iterations per step (accelerated: `Simulation.set_acceleration`)
    damping: float = 0.0  # 0..1
    gravity: tuple = field(default=(0.0, 0.0, -9.81))  # m/s^2
    coulomb_constant: float = 8.9875517923e9  # N m^2 / C^2
    coulomb: CoulombMethod = CoulombMethod.AUTO
    grid_points: int = 0  # DDEF m; 0 = adaptive
    integrator: Integrator = Integrator.IMEX
    ground_height: float = -math.inf  # m; -inf = no ground
    friction: float = 0.0  # 0..1
    # steps between whole evaluations of DDEF's far field (not in `CmscParams`: `Simulation`
    # passes it to `cmsc_set_far_field_interval`); 1 = every step
    far_field_interval: int = 1
    # local/global iterations stop once a step's relative update falls below this; `iterations`
    # is then the most (not in `CmscParams`: `Simulation` passes it to
    # `cmsc_set_iteration_tolerance`); 0 = always `iterations`
    iteration_tolerance: float = 0.0

    def validate(self):
        """Raises InvalidArgumentError naming the first bad field (the library checks again)."""
        finite = math.isfinite
        if not (finite(self.time_step) and self.time_step > 0):
            raise InvalidArgumentError(f"time_step must be finite and > 0 s, got {self.time_step}")
        if not 1 <= int(self.iterations) <= MAX_ITERATIONS:
            raise InvalidArgumentError(f"iterations must be in 1..{MAX_ITERATIONS}, got {self.iterations}")
        for name in ("damping", "friction"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise InvalidArgumentError(f"{name} must be in [0, 1], got {value}")
        if len(self.gravity) != 3 or not all(finite(g) for g in self.gravity):
            raise InvalidArgumentError(f"gravity must be 3 finite numbers, got {self.gravity}")
        if not (finite(self.coulomb_constant) and self.coulomb_constant >= 0):
            raise InvalidArgumentError(f"coulomb_constant must be finite and >= 0, got {self.coulomb_constant}")
        if not 1 <= int(self.far_field_interval) <= MAX_FAR_FIELD_INTERVAL:
            raise InvalidArgumentError(
                f"far_field_interval must be in 1..{MAX_FAR_FIELD_INTERVAL} steps, got {self.far_field_interval}"
            )
        if not (finite(self.iteration_tolerance) and self.iteration_tolerance >= 0):
            raise InvalidArgumentError(
                f"iteration_tolerance must be finite and >= 0 (0: all iterations), got {self.iteration_tolerance}"
            )
        if not 0 <= int(self.grid_points) <= MAX_GRID_POINTS:
            raise InvalidArgumentError(
                f"grid_points must be 0 (adaptive) or in 1..{MAX_GRID_POINTS}, got {self.grid_points}"
            )
        CoulombMethod(self.coulomb)
        Integrator(self.integrator)
        if self.ground_height == math.inf:
            raise InvalidArgumentError("ground_height must be finite, or -inf for no ground")

    def to_c(self, struct_type):
        """The C struct (`_native.CmscParams`) holding these values."""
        self.validate()
        c = struct_type()
        c.time_step = self.time_step
        c.iterations = int(self.iterations)
        c.damping = self.damping
        c.gravity[:] = [float(g) for g in self.gravity]
        c.coulomb_constant = self.coulomb_constant
        c.coulomb = int(self.coulomb)
        c.grid_points = int(self.grid_points)
        c.integrator = int(self.integrator)
        c.ground_height = self.ground_height
        c.friction = self.friction
        return c
