"""cmsc's pure-Python layer: the ctypes binding of libcmsc, typed errors, parameters, the
`Simulation` handle, mesh-to-array helpers and cache writers. Nothing here imports `bpy`
(a test enforces it), so all of it runs and is tested without Blender."""

from .errors import (
    CmscError,
    DeviceFailureError,
    DivergedError,
    InternalError,
    InvalidArgumentError,
    UnavailableError,
)
from .params import CoulombMethod, FrictionLaw, Integrator, SimParams
from .simulation import Simulation

__all__ = [
    "CmscError",
    "CoulombMethod",
    "DeviceFailureError",
    "DivergedError",
    "FrictionLaw",
    "Integrator",
    "InternalError",
    "InvalidArgumentError",
    "SimParams",
    "Simulation",
    "UnavailableError",
]
