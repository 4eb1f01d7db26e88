"""Coulomb method choice with the GPU preference (visible fallback), what AUTO resolves to (read
back from the library), and the thread setting."""

import os
import subprocess
import sys

import numpy as np
import pytest

from sim import SimParams, Simulation, methods
from sim.params import CoulombMethod as M

ADDON = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "blender_addon"))


def no_gpu(library, method):
    return "no CUDA device"


def gpu(library, method):
    return None


@pytest.mark.parametrize(
    "requested, use_gpu, probe, expected, note",
    [
        (M.AUTO, False, no_gpu, M.AUTO_CPU, ""),
        (M.DIRECT, False, no_gpu, M.DIRECT, ""),
        (M.DDEF, False, no_gpu, M.DDEF, ""),
        (M.AUTO, True, gpu, M.AUTO, ""),
        (M.AUTO, True, no_gpu, M.AUTO, "GPU unavailable (no CUDA device); AUTO chooses a CPU method"),
        (M.DIRECT, True, gpu, M.DIRECT_GPU, ""),
        (M.DDEF, True, gpu, M.DDEF_GPU, ""),
        (M.DIRECT, True, no_gpu, M.DIRECT, "DIRECT_GPU unavailable (no CUDA device); running DIRECT on the CPU"),
        (M.DDEF, True, no_gpu, M.DDEF, "DDEF_GPU unavailable (no CUDA device); running DDEF on the CPU"),
        (M.DDEF_GPU, False, no_gpu, M.DDEF, "DDEF_GPU unavailable (no CUDA device); running DDEF on the CPU"),
        (M.DDEF_GPU, False, gpu, M.DDEF_GPU, ""),
        (M.P3M, True, gpu, M.P3M, ""),
        (M.P3M, False, no_gpu, M.P3M, ""),
    ],
)
def test_choose(requested, use_gpu, probe, expected, note):
    assert methods.choose("lib", requested, use_gpu, problem=probe) == (expected, note)


def resolved(lib_path, asked, n):
    """The method a simulation of `n` scattered points (no springs) runs when created with `asked`."""
    x = np.random.default_rng(1).uniform(-1, 1, size=(n, 3))
    with Simulation(lib_path, x, np.full(n, 1e-3), np.zeros((0, 2)), np.zeros(0), SimParams(coulomb=asked)) as s:
        return s.coulomb_method


def test_auto_is_resolved_by_the_library_and_read_back(lib_path):
    """AUTO and AUTO_CPU run DIRECT on small meshes and P3M from 5,000 vertices (AUTO may take
    the GPU's direct sum there instead, when a CUDA device is usable); explicit methods run as
    asked. The add-on shows what this reads back and predicts nothing."""
    for asked in (M.AUTO, M.AUTO_CPU):
        assert resolved(lib_path, asked, 100) == M.DIRECT
    assert resolved(lib_path, M.AUTO_CPU, 10_000) == M.P3M
    gpu_usable = methods.gpu_problem(lib_path, M.DIRECT_GPU) is None
    assert resolved(lib_path, M.AUTO, 10_000) == (M.DIRECT_GPU if gpu_usable else M.P3M)
    assert resolved(lib_path, M.DDEF, 100) == M.DDEF and resolved(lib_path, M.DIRECT, 10_000) == M.DIRECT
    assert resolved(lib_path, M.P3M, 100) == M.P3M
    assert methods.describe(M.AUTO_CPU, M.DDEF) == "DDEF (chosen by AUTO)"
    assert methods.describe(M.DDEF, M.DDEF) == "DDEF"


def test_gpu_probe_reports_the_library_reason(lib_path):
    for method in (M.DIRECT_GPU, M.DDEF_GPU):
        problem = methods.gpu_problem(lib_path, method)
        chosen, note = methods.choose(lib_path, method, True)
        if problem is None:  # a CUDA build on a machine with a device
            assert chosen == method and note == ""
        else:
            assert chosen == methods.CPU_VARIANT[method] and problem in note
    assert methods.gpu_problem(lib_path, M.DDEF_GPU) is methods.gpu_problem(lib_path, M.DDEF_GPU)  # probed once


POOL_SCRIPT = """
import os, sys
sys.path.insert(0, {addon!r})
import numpy as np
from sim import _native, Simulation, SimParams
assert _native.set_threads({n}) is True and _native.pool_threads() == (False, None)
x = np.random.default_rng(0).normal(size=(2000, 3))
with Simulation({lib!r}, x, np.ones(2000), [[0, 1]], [1.0], SimParams()) as s:
    s.set_charges(np.full(2000, 1e-9))
    s.step(1)
    print(len(os.listdir("/proc/self/task")), _native.pool_threads()[1],
          _native.set_threads({n}), _native.set_threads({n} + 1))
"""


def test_thread_setting_sizes_the_library_pool(lib_path):
    """RAYON_NUM_THREADS set before the first simulation sizes the pool; later changes are
    reported as not applying (they need a new process)."""
    counts = {}
    for n in (1, 3):
        env = {k: v for k, v in os.environ.items() if k != "RAYON_NUM_THREADS"}
        out = subprocess.run(
            [sys.executable, "-c", POOL_SCRIPT.format(addon=ADDON, n=n, lib=lib_path)],
            capture_output=True, text=True, env=env, timeout=120,
        )
        assert out.returncode == 0, out.stderr
        tasks, started_with, same, other = out.stdout.split()
        assert (started_with, same, other) == (str(n), "True", "False")
        counts[n] = int(tasks)
    assert counts[3] - counts[1] == 2  # two more pool threads


def test_set_threads_zero_restores_the_process_setting(monkeypatch):
    from sim import _native

    monkeypatch.setattr(_native, "_threads_env_at_start", None)
    monkeypatch.setenv(_native.THREADS_ENV, "7")
    _native.set_threads(0)
    assert _native.THREADS_ENV not in os.environ
    monkeypatch.setattr(_native, "_threads_env_at_start", "5")
    _native.set_threads(0)
    assert os.environ[_native.THREADS_ENV] == "5"
    _native.set_threads(2)
    assert os.environ[_native.THREADS_ENV] == "2"
    with pytest.raises(ValueError):
        _native.set_threads(-1)
