"""Which Coulomb method the add-on asks the library for: the user's choice, with the add-on's GPU
preference applied, brought back to the CPU, with a reason the UI shows, when the library
reports the GPU method unavailable (CMSC_UNAVAILABLE). Never a silent swap.

AUTO is not decided here: the library resolves it (`CMSC_COULOMB_AUTO`, or `AUTO_CPU` when the
user turned the GPU off), and `Simulation.coulomb_method` reads back what runs (`describe`)."""

import threading

import numpy as np

from .errors import CmscError, UnavailableError
from .params import CoulombMethod, SimParams
from .simulation import Simulation

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
    x = np.array([[0, 0, 0], [0.1, 0, 0], [0, 0.1, 0], [0, 0, 0.1]], dtype=float)
    params = SimParams(coulomb=CoulombMethod(method), grid_points=8)
    try:
        Simulation(library, x, np.full(4, 0.01), [[0, 1], [1, 2], [2, 3], [3, 0]], np.ones(4), params).close()
    except UnavailableError as e:
        return str(e) or "unavailable"
    except CmscError as e:
        return f"{type(e).__name__}: {e}"
    return None


def choose(library, requested, use_gpu, problem=gpu_problem):
    """The method to pass to the library and a note for the user ("" when the request is met as
    asked).

    requested: a CoulombMethod (AUTO, DIRECT, DDEF, DDEF_GPU or P3M, as the UI offers); use_gpu: the
    add-on preference "use the GPU when available". AUTO goes to the library as AUTO, which may
    pick a GPU method, or as AUTO_CPU with the preference off; with the preference on and no
    usable GPU the note says why AUTO stays on the CPU. The preference upgrades DIRECT and DDEF
    to their GPU variants; an explicit GPU method is tried whatever the preference. A GPU method
    the library reports unavailable is replaced by its CPU variant, and the note says so and why.
    `problem(library, method)` is the probe (injectable for tests).
    """
    method = CoulombMethod(requested)
    if method == CoulombMethod.AUTO:
        if not use_gpu:
            return CoulombMethod.AUTO_CPU, ""
        reason = problem(library, CoulombMethod.DIRECT_GPU)
        return method, "" if reason is None else f"GPU unavailable ({reason}); AUTO chooses a CPU method"
    if use_gpu:
        method = GPU_VARIANT.get(method, method)
    if method not in CPU_VARIANT:
        return method, ""
    reason = problem(library, method)
    if reason is None:
        return method, ""
    cpu = CPU_VARIANT[method]
    return cpu, f"{method.name} unavailable ({reason}); running {cpu.name} on the CPU"


def describe(asked, runs):
    """What the panel and the bake report say about the method that ran: "DDEF (chosen by
    AUTO)" when AUTO (or AUTO_CPU) was asked, else the method's name."""
    runs = CoulombMethod(runs)
    if CoulombMethod(asked) in (CoulombMethod.AUTO, CoulombMethod.AUTO_CPU):
        return f"{runs.name} (chosen by AUTO)"
    return runs.name
