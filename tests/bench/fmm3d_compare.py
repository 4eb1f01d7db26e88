#!/usr/bin/env python3
"""Compare cmsc's Coulomb methods with FMM3D (Flatiron Institute) on the same points and threads.

For torus-surface point sets (R = 1 m, r = 0.3 m, u x v grid with u = 5v, as
cmsc-core/src/shapes.rs `torus`) carrying charges -1e-6 C on every fifth vertex and +1e-6 C
elsewhere, this script computes the vertex-vertex Coulomb force with

  * cmsc's exact direct sum (CMSC_COULOMB_DIRECT), the reference (up to --direct-max points),
  * cmsc's DDEF approximation (CMSC_COULOMB_DDEF) for several grid sizes m (0: the adaptive grid),
  * cmsc's P3M field (CMSC_COULOMB_P3M, what AUTO runs from 5,000 vertices on the CPU) at the
    relative RMS errors asked for with cmsc_set_field_tolerance (default 1e-2 and 1e-3),
  * FMM3D's Laplace FMM (lfmm3d_s_c_g, the routine fmm3dpy.lfmm3d calls) for several tolerances
    eps, from FMM3D's source built with OpenMP and its vectorised kernels (`make fmm3d`: FMM3D's
    own `make lib FAST_KER=ON`, gfortran -O3 -march=native), through its C interface
    (c/lfmm3d_c.h) loaded with ctypes,

all through their public interfaces (cmsc through its C ABI, include/cmsc.h, loaded with
ctypes) with the same thread count, and writes a markdown table of wall time and relative L2
error, sqrt(sum |F - F_ref|^2 / sum |F_ref|^2), and a side-by-side table of DDEF's adaptive grid
against each FMM3D tolerance (time ratio, errors) to stdout and to out/bench/fmm3d_compare.md.

The thread count is fixed through the environment (RAYON_NUM_THREADS for cmsc,
OMP_NUM_THREADS for FMM3D), which both libraries read only when they start their thread
pools, so each thread count runs in a child process of this script started with that
environment; the child checks that FMM3D's OpenMP runtime took it (omp_get_max_threads).

Run (from the repository root):
    make fmm3d && cargo build --release -p cmsc-ffi
    python tests/bench/fmm3d_compare.py --n 10000,100000 --threads 1,2
or `make bench-fmm3d`, which also builds FMM3D and creates the virtual environment from
tests/bench/requirements.txt. Time on a quiet machine (--max-load): under load FMM3D's OpenMP
slows far more than cmsc's rayon.
"""

import argparse
import ctypes
import json
import math
import os
import shlex
import subprocess
import sys
import tempfile
import time
from ctypes import POINTER, byref, c_char_p, c_double, c_int, c_size_t, c_uint32, c_void_p
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# the FMM3D wrapper is shared with the validation peers (tests/validation/fmm3d_c.py)
sys.path.insert(1, str(REPO / "tests" / "validation"))

from fmm3d_report import render  # noqa: E402  (this folder, first on sys.path)

DEFAULT_LIB = REPO / "target" / "release" / "libcmsc.so"
DEFAULT_OUT = REPO / "out" / "bench" / "fmm3d_compare.md"
# What `make fmm3d` builds (Makefile: FMM3D_LIB); $FMM3D_LIB or --fmm3d-lib overrides it.
DEFAULT_FMM3D = REPO / "target" / "fmm3d" / "fmm3dpy-2.1.0" / "lib" / "libfmm3d.so"

K_C = 8.9875517923e9  # Coulomb's constant (N m^2 / C^2), cmsc's COULOMB_CONSTANT
MAJOR, MINOR = 1.0, 0.3  # torus radii (m)

# CmscCoulomb values (include/cmsc.h).
CMSC_COULOMB_DIRECT = 1
CMSC_COULOMB_DDEF = 2
CMSC_COULOMB_P3M = 7
ADAPTIVE_WARMUP = 6  # calls before timing the adaptive grid (m = 0): its size settles in 2-4

THREAD_VARS = ("RAYON_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


# --------------------------------------------------------------------------------------------
# The C ABI (include/cmsc.h)
# --------------------------------------------------------------------------------------------


class CmscParams(ctypes.Structure):
    """`CmscParams` of include/cmsc.h: same fields, same order, same types."""

    _fields_ = [
        ("time_step", c_double),
        ("iterations", c_uint32),
        ("damping", c_double),
        ("gravity", c_double * 3),
        ("coulomb_constant", c_double),
        ("coulomb", c_uint32),
        ("grid_points", c_uint32),
        ("integrator", c_uint32),
        ("ground_height", c_double),
        ("friction", c_double),
    ]


# CmscStatus is a C enum: an int.
CmscStatus = c_int
P_DOUBLE = POINTER(c_double)

# Every function this script uses: name -> (restype, argtypes). Functions returning CmscStatus
# get an errcheck that raises CmscError with cmsc_last_error() on any non-zero status.
CMSC_FUNCTIONS = {
    "cmsc_params_default": (None, [POINTER(CmscParams)]),
    "cmsc_create": (
        CmscStatus,
        [
            P_DOUBLE,  # const double *positions
            c_size_t,  # size_t n_vertices
            P_DOUBLE,  # const double *masses
            POINTER(c_uint32),  # const uint32_t *springs
            c_size_t,  # size_t n_springs
            P_DOUBLE,  # const double *stiffness
            POINTER(CmscParams),  # const CmscParams *params
            POINTER(c_void_p),  # CmscSim **out
        ],
    ),
    "cmsc_set_charges": (CmscStatus, [c_void_p, P_DOUBLE, c_size_t]),
    "cmsc_coulomb_forces": (CmscStatus, [c_void_p, P_DOUBLE, c_size_t]),
    "cmsc_set_field_tolerance": (CmscStatus, [c_void_p, c_double]),
    "cmsc_last_error": (c_char_p, []),
    "cmsc_version": (c_char_p, []),
    "cmsc_destroy": (None, [c_void_p]),
}


class CmscError(RuntimeError):
    pass


def load_cmsc(path):
    lib = ctypes.CDLL(str(path))
    for name, (restype, argtypes) in CMSC_FUNCTIONS.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
        if restype is CmscStatus:

            def check(status, func, _args):
                if status != 0:
                    message = lib.cmsc_last_error().decode("utf-8", "replace")
                    raise CmscError(f"{func.__name__} returned status {status}: {message}")
                return status

            fn.errcheck = check
    return lib


def as_ptr(array):
    return array.ctypes.data_as(P_DOUBLE)


class Sim:
    """A cmsc simulation of free unit-mass vertices (no springs) with the given charges."""

    def __init__(self, lib, np, points, charges, coulomb, grid_points=1000, tolerance=None):
        self.lib, self.np = lib, np
        self.points = np.ascontiguousarray(points, dtype=np.float64)
        self.n = len(self.points)
        params = CmscParams()
        lib.cmsc_params_default(byref(params))
        params.coulomb = coulomb
        params.grid_points = grid_points
        params.coulomb_constant = K_C
        masses = np.ones(self.n)
        handle = c_void_p()
        lib.cmsc_create(as_ptr(self.points), self.n, as_ptr(masses), None, 0, None, byref(params),
                        byref(handle))
        self.handle = handle
        q = np.ascontiguousarray(charges, dtype=np.float64)
        lib.cmsc_set_charges(self.handle, as_ptr(q), self.n)
        if tolerance is not None:
            lib.cmsc_set_field_tolerance(self.handle, tolerance)

    def coulomb_forces(self):
        out = self.np.empty((self.n, 3))
        self.lib.cmsc_coulomb_forces(self.handle, as_ptr(out), self.n)
        return out

    def close(self):
        if self.handle:
            self.lib.cmsc_destroy(self.handle)
            self.handle = c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# --------------------------------------------------------------------------------------------
# Points, errors, timing
# --------------------------------------------------------------------------------------------


def torus_points(np, n):
    """Vertices of shapes::torus(5v, v, 1.0, 0.3) with v = round(sqrt(n / 5)): 5 v^2 points."""
    v = max(3, round(math.sqrt(n / 5)))
    u = 5 * v
    theta = 2 * np.pi * np.arange(u) / u
    phi = 2 * np.pi * np.arange(v) / v
    th, ph = np.meshgrid(theta, phi, indexing="ij")  # index i * v + j, as shapes.rs
    ring = MAJOR + MINOR * np.cos(ph)
    pts = np.stack([ring * np.cos(th), ring * np.sin(th), MINOR * np.sin(ph)], axis=-1)
    return np.ascontiguousarray(pts.reshape(-1, 3))


def torus_charges(np, n):
    return np.where(np.arange(n) % 5 == 0, -1e-6, 1e-6)


def auto_softening(np, points):
    """cmsc's automatic softening without springs (cmsc-core/src/system/mod.rs)."""
    diag = float(np.linalg.norm(points.max(axis=0) - points.min(axis=0)))
    return 1e-3 * diag / len(points) ** (1 / 3)


def rel_l2(np, f, ref):
    return float(np.sqrt(np.sum((f - ref) ** 2) / np.sum(ref**2)))


def numpy_forces(np, points, charges, targets, eps):
    """Plummer-softened (eps > 0) or true (eps = 0) Coulomb forces on `targets`, in numpy."""
    out = np.empty((len(targets), 3))
    block = max(1, min(16, 4_000_000 // len(points)))  # (block, n, 3) temporaries stay ~100 MB
    for start in range(0, len(targets), block):
        idx = targets[start:start + block]
        d = points[idx, None, :] - points[None, :, :]  # (k, n, 3): x_i - x_j
        r2 = np.einsum("knc,knc->kn", d, d) + eps * eps
        r2[np.arange(len(idx)), idx] = np.inf  # no self term
        w = charges[None, :] / (r2 * np.sqrt(r2))
        out[start:start + len(idx)] = K_C * charges[idx, None] * np.einsum("kn,knc->kc", w, d)
    return out


def timed(fn):
    """(result, wall seconds, process CPU seconds / wall seconds) of one call."""
    c0, t0 = time.process_time(), time.perf_counter()
    result = fn()
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    return result, wall, cpu / wall if wall > 0 else float("nan")


def best_of(fn, repeat):
    """The fastest of `repeat` timed calls: (result, wall, cpu/wall)."""
    best = None
    for _ in range(repeat):
        r = timed(fn)
        if best is None or r[1] < best[1]:
            best = r
    return best


# --------------------------------------------------------------------------------------------
# FMM3D
# --------------------------------------------------------------------------------------------


def fmm_convention(fmm, np, lib):
    """Find alpha with F_i = alpha * q_i * grad_i from two unit charges, then check it on a torus.

    Two unit charges at 0 and (1, 0, 0) repel: with k_c = 1 the force on the first is (-1, 0, 0),
    so alpha_unit = -1 / grad_x(first). FMM3D's `pot` there is the kernel constant c of
    u(x) = c * sum_j q_j / |x - x_j|.
    """
    src = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    pot, grad = fmm.gradient(src, np.ones(2), 1e-12)
    kernel_c = float(pot[0])
    alpha_unit = -1.0 / float(grad[0, 0])
    # Check against cmsc's direct sum on a small torus (n = 500).
    pts = torus_points(np, 500)
    q = torus_charges(np, len(pts))
    with Sim(lib, np, pts, q, CMSC_COULOMB_DIRECT) as sim:
        direct = sim.coulomb_forces()
    grad = fmm.gradient(pts, q, 1e-12)[1]
    err = rel_l2(np, K_C * alpha_unit * q[:, None] * grad, direct)
    if err > 1e-4:
        raise RuntimeError(
            f"FMM3D convention check failed: F = {alpha_unit:.6g} k_c q grad differs from cmsc's "
            f"direct sum by {err:.3e} (relative L2) on n = {len(pts)}"
        )
    return {"kernel_c": kernel_c, "alpha_unit": alpha_unit, "check_n": len(pts), "check_err": err}


# --------------------------------------------------------------------------------------------
# One thread count (child process)
# --------------------------------------------------------------------------------------------


def run_child(args):
    threads = str(args.threads_one)
    for var in THREAD_VARS:
        if os.environ.get(var) != threads:
            raise RuntimeError(f"{var} must be {threads} in the child (got {os.environ.get(var)!r})")
    import numpy as np  # noqa: E402  (after the thread environment is set)

    from fmm3d_c import Fmm3dC  # noqa: E402  (imports numpy: after the thread environment is set)

    lib = load_cmsc(args.lib)
    fmm = Fmm3dC(args.fmm3d_lib)
    build = fmm.describe()
    if build["omp_threads"] != int(threads):
        raise RuntimeError(f"{args.fmm3d_lib}: omp_get_max_threads() = {build['omp_threads']}, not {threads}: "
                           "not an OpenMP build, or OMP_NUM_THREADS was not taken")
    fmm_name = f"FMM3D {build['version']}"
    conv = fmm_convention(fmm, np, lib)
    alpha = K_C * conv["alpha_unit"]
    rows, per_n = [], []

    def row(method, param, n, time_s, first_s, cpu_ratio, f):
        err = rel_l2(np, f, ref) if ref is not None else None
        true_err = rel_l2(np, f, exact) if exact is not None else None
        rows.append({"method": method, "param": param, "n": n, "threads": int(threads),
                     "time": time_s, "first": first_s, "cpu": cpu_ratio, "err": err,
                     "true_err": true_err, "load": loadavg()})
        print(f"  [{threads} thr] {method:8s} {param:>10s} n={n}: {time_s:.4g} s, err {err}, "
              f"vs true {true_err}", file=sys.stderr, flush=True)

    for n_req in args.n:
        pts = torus_points(np, n_req)
        n = len(pts)
        q = torus_charges(np, n)
        soft = auto_softening(np, pts)
        info_n = {"n": n, "softening": soft}

        ref = exact = None  # cmsc's direct (softened) sum; the true sum, by FMM3D at --check-eps
        if n <= args.direct_max:
            with Sim(lib, np, pts, q, CMSC_COULOMB_DIRECT) as sim:
                direct, t_ref, cpu_ref = timed(sim.coulomb_forces)
        if args.check_eps > 0:
            grad, t_chk, cpu_chk = timed(lambda: fmm.gradient(pts, q, args.check_eps)[1])
            exact = alpha * q[:, None] * grad
            # Sampled numpy check: cmsc's direct sum is the softened sum, FMM3D at --check-eps
            # the true one.
            sample = np.unique(np.linspace(0, n - 1, min(n, 256)).round().astype(int))
            soft_np = numpy_forces(np, pts, q, sample, soft)
            true_np = numpy_forces(np, pts, q, sample, 0.0)
            info_n.update(sample=len(sample),
                          fmm_tight_vs_np_true=rel_l2(np, exact[sample], true_np),
                          soft_vs_true_np=rel_l2(np, soft_np, true_np))
            if n <= args.direct_max:
                info_n["direct_vs_np_soft"] = rel_l2(np, direct[sample], soft_np)
        per_n.append(info_n)
        if n <= args.direct_max:
            ref = direct
            row("cmsc direct", "(reference)", n, t_ref, None, cpu_ref, direct)
        if exact is not None:
            row(fmm_name, f"eps={args.check_eps:g}", n, t_chk, None, cpu_chk, exact)

        # Interleaved: each DDEF grid, then each FMM3D tolerance, on the same points.
        for m in args.m:
            with Sim(lib, np, pts, q, CMSC_COULOMB_DDEF, grid_points=m) as sim:
                _, first, _ = timed(sim.coulomb_forces)  # builds and caches the grid
                for _ in range(ADAPTIVE_WARMUP if m == 0 else 0):
                    sim.coulomb_forces()  # the adaptive grid settles (rebuilding as it goes)
                f, t, cpu = best_of(sim.coulomb_forces, args.repeat)
            row("cmsc DDEF", f"m={m}" if m else "adaptive m", n, t, first, cpu, f)

        for tol in args.p3m_tol:
            with Sim(lib, np, pts, q, CMSC_COULOMB_P3M, tolerance=tol) as sim:
                _, first, _ = timed(sim.coulomb_forces)  # chooses the mesh, transforms the kernel
                f, t, cpu = best_of(sim.coulomb_forces, args.repeat)
            row("cmsc P3M", f"tol={tol:g}", n, t, first, cpu, f)

        for eps in args.eps:
            call = lambda: fmm.gradient(pts, q, eps)[1]  # noqa: E731
            _, first, _ = timed(call)  # warm-up
            grad, t, cpu = best_of(call, args.repeat)
            row(fmm_name, f"eps={eps:g}", n, t, first, cpu, alpha * q[:, None] * grad)

    info = {
        "cmsc_version": lib.cmsc_version().decode(),
        "fmm3d": build,
        "numpy_version": np.__version__,
        "convention": conv,
        "per_n": per_n,
    }
    Path(args.child_json).write_text(json.dumps({"rows": rows, "info": info}))


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------


def csv_of(kind, parse):
    def f(text):
        try:
            return [parse(x) for x in text.split(",") if x.strip()]
        except ValueError as e:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list of {kind}: {e}")

    return f


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=csv_of("integers", int), default=[10_000, 100_000],
                   help="approximate point counts, comma-separated (default 10000,100000)")
    p.add_argument("--threads", type=csv_of("integers", int), default=[os.cpu_count() or 1],
                   help="thread counts, comma-separated; each runs in its own process "
                        "(default: the CPU count)")
    p.add_argument("--m", type=csv_of("integers", int), default=[0, 1000, 3000, 10_000],
                   help="DDEF grid sizes, 0 = adaptive (default 0,1000,3000,10000)")
    p.add_argument("--p3m-tol", type=csv_of("numbers", float), default=[1e-2, 1e-3],
                   help="P3M's requested relative RMS errors (cmsc_set_field_tolerance; default 1e-2,1e-3)")
    p.add_argument("--eps", type=csv_of("numbers", float), default=[0.5, 1e-3],
                   help="FMM3D tolerances (default 0.5,1e-3: DDEF's accuracy and FMM3D's usual one)")
    p.add_argument("--check-eps", type=float, default=1e-12,
                   help="tolerance of the FMM3D run that gives the true Coulomb sum (checks the softened "
                        "reference, and is the reference above --direct-max); 0 skips it (default 1e-12)")
    p.add_argument("--direct-max", type=int, default=200_000,
                   help="largest n for cmsc's O(n^2) direct sum (default 200000)")
    p.add_argument("--repeat", type=int, default=1,
                   help="timed calls per measurement, the fastest reported (default 1)")
    p.add_argument("--lib", type=Path, default=DEFAULT_LIB,
                   help="path of libcmsc.so (default target/release/libcmsc.so in the repository)")
    p.add_argument("--fmm3d-lib", type=Path, default=Path(os.environ.get("FMM3D_LIB", DEFAULT_FMM3D)),
                   help="FMM3D's libfmm3d.so, built with OpenMP (default $FMM3D_LIB, else what "
                        "`make fmm3d` builds: target/fmm3d/fmm3dpy-2.1.0/lib/libfmm3d.so)")
    p.add_argument("--max-load", type=float,
                   help="before each thread count, wait (polling every 60 s, at most --max-wait s) "
                        "until the 1-minute load average is below this (default: no wait)")
    p.add_argument("--max-wait", type=float, default=1200, help="see --max-load (default 1200 s)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT,
                   help="markdown output (default out/bench/fmm3d_compare.md in the repository)")
    p.add_argument("--threads-one", type=int, help=argparse.SUPPRESS)  # child process
    p.add_argument("--child-json", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if any(t < 1 for t in args.threads) or args.repeat < 1 or any(m < 0 for m in args.m):
        p.error("--threads and --repeat take values >= 1, --m values >= 0")
    if any(n < 5 for n in args.n):
        p.error("--n takes values >= 5")
    if args.check_eps <= 0 and any(n > args.direct_max for n in args.n):
        p.error("n above --direct-max needs --check-eps > 0 (the true sum is then the reference)")
    args.lib = args.lib.resolve()
    args.fmm3d_lib = args.fmm3d_lib.resolve()
    return args


def loadavg():
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def wait_for_quiet(max_load, max_wait):
    """Seconds waited until the 1-minute load average fell below max_load (or max_wait passed)."""
    t0 = time.monotonic()
    while os.getloadavg()[0] >= max_load and time.monotonic() - t0 < max_wait:
        print(f"load {loadavg()} >= {max_load}: waiting ...", file=sys.stderr, flush=True)
        time.sleep(60)
    return time.monotonic() - t0


def main(argv):
    args = parse_args(argv)
    if args.child_json:
        run_child(args)
        return 0

    try:
        import numpy  # noqa: F401
    except ImportError:
        sys.exit(f"error: numpy is not installed for {sys.executable}; run `make bench-fmm3d` "
                 "(or `pip install -r tests/bench/requirements.txt`).")
    if not args.lib.is_file():
        sys.exit(f"error: {args.lib} not found; build it with `cargo build --release -p cmsc-ffi` "
                 "or pass --lib.")
    if not args.fmm3d_lib.is_file():
        sys.exit(f"error: {args.fmm3d_lib} not found; build FMM3D with `make fmm3d` or pass --fmm3d-lib.")

    command = shlex.join(["python", os.path.relpath(__file__), *argv])
    load_before = loadavg()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for t in args.threads:
            waited = wait_for_quiet(args.max_load, args.max_wait) if args.max_load else 0.0
            env = dict(os.environ, **{var: str(t) for var in THREAD_VARS})
            js = Path(tmp) / f"threads{t}.json"
            child = [sys.executable, str(Path(__file__).resolve()), *argv, "--fmm3d-lib", str(args.fmm3d_lib),
                     "--threads-one", str(t), "--child-json", str(js)]
            load_start = loadavg()
            print(f"running with {t} thread(s) (load {load_start}) ...", file=sys.stderr, flush=True)
            rc = subprocess.run(child, env=env).returncode
            if rc != 0:
                sys.exit(f"error: the {t}-thread run failed (exit status {rc})")
            res = json.loads(js.read_text())
            res.update(load_start=load_start, waited=waited)
            results.append(res)
    text = render(results, args, command, load_before, loadavg())
    sys.stdout.write(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
