"""Coulomb method choice with the GPU preference (visible fallback), and the thread setting."""

import os
import re
import subprocess
import sys

import pytest

from sim import methods
from sim.params import CoulombMethod as M

ADDON = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "blender_addon"))


def no_gpu(library, method):
    return "no CUDA device"


def gpu(library, method):
    return None


@pytest.mark.parametrize(
    "requested, use_gpu, n, probe, expected, note",
    [
        (M.AUTO, False, 100, no_gpu, M.AUTO, ""),
        (M.DIRECT, False, 100, no_gpu, M.DIRECT, ""),
        (M.DDEF, False, 100, no_gpu, M.DDEF, ""),
        (M.AUTO, True, 100, gpu, M.DIRECT_GPU, ""),
        (M.AUTO, True, 50_000, gpu, M.DDEF_GPU, ""),
        (M.DDEF, True, 100, gpu, M.DDEF_GPU, ""),
        (M.AUTO, True, 100, no_gpu, M.DIRECT, "DIRECT_GPU unavailable (no CUDA device); running DIRECT on the CPU"),
        (M.AUTO, True, 50_000, no_gpu, M.DDEF, "DDEF_GPU unavailable (no CUDA device); running DDEF on the CPU"),
        (M.DDEF_GPU, False, 100, no_gpu, M.DDEF, "DDEF_GPU unavailable (no CUDA device); running DDEF on the CPU"),
        (M.DDEF_GPU, False, 100, gpu, M.DDEF_GPU, ""),
    ],
)
def test_choose(requested, use_gpu, n, probe, expected, note):
    assert methods.choose("lib", requested, use_gpu, n, problem=probe) == (expected, note)


def test_auto_threshold_matches_the_header():
    header = open(os.path.join(ADDON, "..", "include", "cmsc.h")).read()
    stated = re.search(r"DIRECT below ([\d,]+) vertices, DDEF above", header)
    assert stated is not None, "the header no longer states AUTO's threshold"
    assert methods.AUTO_DDEF_FROM == int(stated.group(1).replace(",", ""))


def test_gpu_probe_reports_the_library_reason(lib_path):
    for method in (M.DIRECT_GPU, M.DDEF_GPU):
        problem = methods.gpu_problem(lib_path, method)
        chosen, note = methods.choose(lib_path, method, True, 10)
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
