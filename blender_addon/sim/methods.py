"""Which Coulomb method a simulation runs: the user's choice, upgraded to the GPU variant when
the add-on's GPU preference is on, and brought back to the CPU, with a reason the UI shows,
when the library reports the GPU method unavailable (CMSC_UNAVAILABLE). Never a silent swap."""

import threading

import numpy as np

from .errors import CmscError, UnavailableError
from .params import CoulombMethod, SimParams

#: `CMSC_COULOMB_AUTO` runs DIRECT below this many vertices and DDEF from it on (include/cmsc.h).
AUTO_DDEF_FROM = 10_000

#: CPU method → its GPU variant.
GPU_VARIANT = {CoulombMethod.DIRECT: CoulombMethod.DIRECT_GPU, CoulombMethod.DDEF: CoulombMethod.DDEF_GPU}
#: GPU method → the CPU method it falls back to.
CPU_VARIANT = {gpu: cpu for cpu, gpu in GPU_VARIANT.items()}

_probe_lock = threading.Lock()
_probed = {}


def gpu_problem(library, method):
    """None if `library` can create a simulation with GPU `method`, else the library's reason
    (the message of CMSC_UNAVAILABLE, or of another failure). Probed once per library and method
    on a 4-vertex mesh."""
    key = (library, CoulombMethod(method))
    with _probe_lock:
        if key not in _probed:
            _probed[key] = _probe(library, method)
        return _probed[key]


def _probe(library, method):
    from .simulation import Simulation

    x = np.array([[0, 0, 0], [0.1, 0, 0], [0, 0.1, 0], [0, 0, 0.1]], dtype=float)
    params = SimParams(coulomb=CoulombMethod(method), grid_points=8)
    try:
        Simulation(library, x, np.full(4, 0.01), [[0, 1], [1, 2], [2, 3], [3, 0]], np.ones(4), params).close()
    except UnavailableError as e:
        return str(e) or "unavailable"
    except CmscError as e:
        return f"{type(e).__name__}: {e}"
    return None


def choose(library, requested, use_gpu, n_vertices, problem=gpu_problem):
    """The method to run and a note for the user ("" when the request is met as asked).

    requested: a CoulombMethod (AUTO, DIRECT, DDEF or DDEF_GPU, as the UI offers); use_gpu: the
    add-on preference "use the GPU when available", which upgrades DIRECT/DDEF (and AUTO's pick
    for this vertex count) to their GPU variants. An explicit GPU method is tried whatever the
    preference. A GPU method the library reports unavailable is replaced by its CPU variant, and
    the note says so and why. `problem(library, method)` is the probe (injectable for tests).
    """
    requested = CoulombMethod(requested)
    method = requested
    if use_gpu:
        if method == CoulombMethod.AUTO:
            method = CoulombMethod.DDEF if n_vertices >= AUTO_DDEF_FROM else CoulombMethod.DIRECT
        method = GPU_VARIANT.get(method, method)
    if method not in CPU_VARIANT:
        return method, ""
    reason = problem(library, method)
    if reason is None:
        return method, ""
    cpu = CPU_VARIANT[method]
    return cpu, f"{method.name} unavailable ({reason}); running {cpu.name} on the CPU"
