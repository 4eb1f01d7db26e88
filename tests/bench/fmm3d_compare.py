#!/usr/bin/env python3
"""Compare cmsc's Coulomb methods with FMM3D (fmm3dpy, Flatiron Institute) on the same points.

For torus-surface point sets (R = 1 m, r = 0.3 m, u x v grid with u = 5v, as
cmsc-core/src/shapes.rs `torus`) carrying charges -1e-6 C on every fifth vertex and +1e-6 C
elsewhere, this script computes the vertex-vertex Coulomb force with

  * cmsc's exact direct sum (CMSC_COULOMB_DIRECT), the reference,
  * cmsc's DDEF approximation (CMSC_COULOMB_DDEF) for several grid sizes m (0: the adaptive grid),
  * FMM3D's Laplace FMM (fmm3dpy.lfmm3d) for several tolerances eps,

all through their public interfaces (cmsc through its C ABI, include/cmsc.h, loaded with
ctypes) with the same thread count, and writes a markdown table of wall time and relative L2
error, sqrt(sum |F - F_ref|^2 / sum |F_ref|^2), to stdout and to out/bench/fmm3d_compare.md.

The thread count is fixed through the environment (RAYON_NUM_THREADS for cmsc,
OMP_NUM_THREADS for FMM3D), which both libraries read only when they start their thread
pools, so each thread count runs in a child process of this script started with that
environment.

Run (from the repository root):
    cargo build --release -p cmsc-ffi
    python tests/bench/fmm3d_compare.py --n 10000,100000 --threads 1
or `make bench-fmm3d`, which also creates the virtual environment from
tests/bench/requirements.txt.
"""

import argparse
import ctypes
import importlib.util
import json
import math
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from ctypes import POINTER, byref, c_char_p, c_double, c_int, c_size_t, c_uint32, c_void_p
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_LIB = REPO / "target" / "release" / "libcmsc.so"
DEFAULT_OUT = REPO / "out" / "bench" / "fmm3d_compare.md"

K_C = 8.9875517923e9  # Coulomb's constant (N m^2 / C^2), cmsc's COULOMB_CONSTANT
MAJOR, MINOR = 1.0, 0.3  # torus radii (m)

# CmscCoulomb values (include/cmsc.h).
CMSC_COULOMB_DIRECT = 1
CMSC_COULOMB_DDEF = 2
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

    def __init__(self, lib, np, points, charges, coulomb, grid_points=1000):
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
    for start in range(0, len(targets), 16):
        idx = targets[start:start + 16]
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


def fmm_openmp(fmm3dpy):
    """Whether the installed fmm3dpy binaries link an OpenMP runtime (else OMP_NUM_THREADS is moot)."""
    base = Path(fmm3dpy.__file__).parent
    files = list(base.glob("lfmm3d*.so")) + list(base.parent.glob("fmm3dpy.libs/*"))
    markers = (b"GOMP_parallel", b"libgomp", b"__kmpc_fork_call", b"libomp")
    for f in files:
        try:
            data = f.read_bytes()
        except OSError:
            continue
        if any(m in data for m in markers):
            return True
    return False


def fmm_gradient(fmm3dpy, np, points, charges, eps):
    out = fmm3dpy.lfmm3d(eps=eps, sources=np.asfortranarray(points.T), charges=charges, pg=2)
    return np.asarray(out.grad).T  # (n, 3)


def fmm_convention(fmm3dpy, np, lib):
    """Find alpha with F_i = alpha * q_i * grad_i from two unit charges, then check it on a torus.

    Two unit charges at 0 and (1, 0, 0) repel: with k_c = 1 the force on the first is (-1, 0, 0),
    so alpha_unit = -1 / grad_x(first). fmm3dpy's `pot` there is the kernel constant c of
    u(x) = c * sum_j q_j / |x - x_j|.
    """
    src = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    out = fmm3dpy.lfmm3d(eps=1e-12, sources=np.asfortranarray(src.T), charges=np.ones(2), pg=2)
    kernel_c = float(np.asarray(out.pot)[0])
    grad_x = float(np.asarray(out.grad)[0, 0])
    alpha_unit = -1.0 / grad_x
    # Check against cmsc's direct sum on a small torus (n = 500).
    pts = torus_points(np, 500)
    q = torus_charges(np, len(pts))
    with Sim(lib, np, pts, q, CMSC_COULOMB_DIRECT) as sim:
        direct = sim.coulomb_forces()
    grad = fmm_gradient(fmm3dpy, np, pts, q, 1e-12)
    err = rel_l2(np, K_C * alpha_unit * q[:, None] * grad, direct)
    if err > 1e-4:
        raise RuntimeError(
            f"fmm3dpy convention check failed: F = {alpha_unit:.6g} k_c q grad differs from cmsc's "
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
    import fmm3dpy  # noqa: E402
    import numpy as np  # noqa: E402  (after the thread environment is set)

    lib = load_cmsc(args.lib)
    conv = fmm_convention(fmm3dpy, np, lib)
    alpha = K_C * conv["alpha_unit"]
    rows, per_n = [], []

    def row(method, param, n, time_s, first_s, cpu_ratio, err, f=None):
        true_err = rel_l2(np, f, exact) if (f is not None and exact is not None) else None
        rows.append({"method": method, "param": param, "n": n, "threads": int(threads),
                     "time": time_s, "first": first_s, "cpu": cpu_ratio, "err": err,
                     "true_err": true_err})
        print(f"  [{threads} thr] {method:8s} {param:>10s} n={n}: {time_s:.4g} s, err {err}",
              file=sys.stderr, flush=True)

    for n_req in args.n:
        pts = torus_points(np, n_req)
        n = len(pts)
        q = torus_charges(np, n)
        soft = auto_softening(np, pts)

        exact = None  # the true (unsoftened) sum, by FMM3D at --check-eps
        with Sim(lib, np, pts, q, CMSC_COULOMB_DIRECT) as sim:
            ref, t_ref, cpu_ref = timed(sim.coulomb_forces)
        info_n = {"n": n, "softening": soft}
        if args.check_eps > 0:
            grad, t, cpu = timed(lambda: fmm_gradient(fmm3dpy, np, pts, q, args.check_eps))
            exact = alpha * q[:, None] * grad
            # Sampled numpy check of both: cmsc's direct sum is the softened sum, FMM3D at
            # --check-eps the true one.
            sample = np.unique(np.linspace(0, n - 1, min(n, 256)).round().astype(int))
            soft_np = numpy_forces(np, pts, q, sample, soft)
            true_np = numpy_forces(np, pts, q, sample, 0.0)
            info_n.update(sample=len(sample),
                          direct_vs_np_soft=rel_l2(np, ref[sample], soft_np),
                          fmm_tight_vs_np_true=rel_l2(np, exact[sample], true_np),
                          soft_vs_true_np=rel_l2(np, soft_np, true_np))
        per_n.append(info_n)
        row("cmsc direct", "(reference)", n, t_ref, None, cpu_ref, 0.0, ref)
        if exact is not None:
            row("FMM3D", f"eps={args.check_eps:g}", n, t, None, cpu, rel_l2(np, exact, ref))

        for m in args.m:
            with Sim(lib, np, pts, q, CMSC_COULOMB_DDEF, grid_points=m) as sim:
                _, first, _ = timed(sim.coulomb_forces)  # builds and caches the grid
                for _ in range(ADAPTIVE_WARMUP if m == 0 else 0):
                    sim.coulomb_forces()  # the adaptive grid settles (rebuilding as it goes)
                f, t, cpu = best_of(sim.coulomb_forces, args.repeat)
            row("cmsc DDEF", f"m={m}" if m else "adaptive m", n, t, first, cpu, rel_l2(np, f, ref), f)

        for eps in args.eps:
            call = lambda: fmm_gradient(fmm3dpy, np, pts, q, eps)  # noqa: E731
            _, first, _ = timed(call)  # warm-up
            grad, t, cpu = best_of(call, args.repeat)
            f = alpha * q[:, None] * grad
            row("FMM3D", f"eps={eps:g}", n, t, first, cpu, rel_l2(np, f, ref), f)

    info = {
        "cmsc_version": lib.cmsc_version().decode(),
        "fmm3dpy_version": getattr(fmm3dpy, "__version__", None) or pkg_version("fmm3dpy"),
        "fmm_openmp": fmm_openmp(fmm3dpy),
        "numpy_version": np.__version__,
        "convention": conv,
        "per_n": per_n,
    }
    Path(args.child_json).write_text(json.dumps({"rows": rows, "info": info}))


def pkg_version(name):
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:  # noqa: BLE001
        return "?"


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------


def fmt_time(t):
    return "—" if t is None else f"{t:.3g}"


def fmt_err(e):
    if e is None:
        return "—"
    return "0 (reference)" if e == 0 else f"{e:.2e}"


def fmt_true(r):
    if r["method"] == "FMM3D" and r["true_err"] is None and r["first"] is None:
        return "(true-sum proxy)"
    return "—" if r["true_err"] is None else f"{r['true_err']:.2e}"


def render(results, args, command, load_before, load_after):
    info = results[0]["info"]
    conv = info["convention"]
    cpus = os.cpu_count()
    c = conv["kernel_c"]
    if abs(4 * math.pi * c - 1) < 1e-9:
        kernel, force = "/ (4 pi r_ij)", "-4 pi k_c q_i grad_i"
    elif abs(c - 1) < 1e-9:
        kernel, force = "/ r_ij", "-k_c q_i grad_i"
    else:
        kernel, force = f"* {c:.7g} / r_ij", f"{conv['alpha_unit']:.7g} k_c q_i grad_i"
    omp = "yes" if info["fmm_openmp"] else "no: serial build, OMP_NUM_THREADS has no effect"
    lines = [
        "# cmsc Coulomb methods vs FMM3D",
        "",
        f"Machine: processor `{platform.processor() or platform.machine()}`, {cpus} CPUs, "
        f"{platform.system()} {platform.release()}, Python {platform.python_version()}; "
        f"cmsc {info['cmsc_version']} (`{args.lib}`); fmm3dpy {info['fmm3dpy_version']} "
        f"(OpenMP: {omp}); numpy {info['numpy_version']}.",
        "",
        f"Command: `{command}`",
        "",
        f"Load average (1/5/15 min) before: {load_before}; after: {load_after}.",
        "",
        "| method | parameter | n | threads | time (s) | first call (s) | CPU/wall "
        "| relative L2 error | vs true sum |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for res in results:
        for r in res["rows"]:
            lines.append(
                f"| {r['method']} | {r['param']} | {r['n']} | {r['threads']} | {fmt_time(r['time'])} "
                f"| {fmt_time(r['first'])} | {r['cpu']:.2f} | {fmt_err(r['err'])} "
                f"| {fmt_true(r)} |"
            )
    lines += [
        "",
        "Notes:",
        "",
        "- Points: torus surface (R = 1 m, r = 0.3 m, u = 5v grid, as cmsc-core `shapes::torus`); "
        "charges -1e-6 C on every fifth vertex, +1e-6 C elsewhere; k_c = 8.9875517923e9.",
        "- Reference: cmsc's exact direct sum (CMSC_COULOMB_DIRECT) through cmsc_coulomb_forces. "
        "Without springs cmsc softens the kernel by 1e-3 x bounding-box diagonal / cbrt(n) ("
        + ", ".join(f"n = {p['n']}: {p['softening']:.3g} m" for p in info["per_n"])
        + "). 'relative L2 error' is sqrt(sum |F - F_ref|^2 / sum |F_ref|^2) against it.",
        f"- 'vs true sum': the same error against FMM3D at eps = {args.check_eps:g} as the true, "
        "unsoftened Coulomb sum; on the cmsc direct row it is the error the softening causes. "
        "Sampled numpy check (float64, every target against all n sources): "
        + "; ".join(
            f"n = {p['n']} ({p['sample']} targets): cmsc direct vs numpy softened sum "
            f"{p['direct_vs_np_soft']:.1e}, FMM3D eps = {args.check_eps:g} vs numpy true sum "
            f"{p['fmm_tight_vs_np_true']:.1e}, numpy softened vs true {p['soft_vs_true_np']:.1e}"
            for p in info["per_n"] if "sample" in p
        )
        + ".",
        f"- FMM3D convention (checked at run time): lfmm3d's potential is "
        f"u_i = sum_j q_j {kernel} (pot of two unit charges 1 m apart: {conv['kernel_c']:.7g}) and "
        f"`grad` is grad u (not the field -grad u), so the force is F_i = {force}; against cmsc's "
        f"direct sum on n = {conv['check_n']} torus points this differs by {conv['check_err']:.2e} "
        "(relative L2: the softening of the reference).",
        "- time: cmsc DDEF is the second call (grid built and cached by the first, shown as "
        "'first call'); FMM3D is one call after a warm-up call (the warm-up shown as 'first call'); "
        f"with --repeat {args.repeat} the fastest of {args.repeat} timed calls. cmsc direct and the "
        "FMM3D accuracy check are single calls. CPU/wall is the process CPU time over the wall time "
        "of the timed call: the threads actually busy.",
        "- threads: RAYON_NUM_THREADS (cmsc) and OMP_NUM_THREADS (FMM3D) set to this value before "
        "either library is loaded.",
    ]
    if not info["fmm_openmp"]:
        lines.append(
            "- The installed fmm3dpy wheel links no OpenMP runtime, so FMM3D runs on one thread "
            "whatever OMP_NUM_THREADS says (see its CPU/wall)."
        )
    return "\n".join(lines) + "\n"


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
    p.add_argument("--eps", type=csv_of("numbers", float), default=[1e-2, 1e-3],
                   help="FMM3D tolerances (default 1e-2,1e-3)")
    p.add_argument("--check-eps", type=float, default=1e-12,
                   help="tolerance of the FMM3D run that checks the softened reference against "
                        "the true Coulomb sum; 0 skips it (default 1e-12)")
    p.add_argument("--repeat", type=int, default=1,
                   help="timed calls per measurement, the fastest reported (default 1)")
    p.add_argument("--lib", type=Path, default=DEFAULT_LIB,
                   help="path of libcmsc.so (default target/release/libcmsc.so in the repository)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT,
                   help="markdown output (default out/bench/fmm3d_compare.md in the repository)")
    p.add_argument("--threads-one", type=int, help=argparse.SUPPRESS)  # child process
    p.add_argument("--child-json", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if any(t < 1 for t in args.threads) or args.repeat < 1 or any(m < 0 for m in args.m):
        p.error("--threads and --repeat take values >= 1, --m values >= 0")
    if any(n < 5 for n in args.n):
        p.error("--n takes values >= 5")
    args.lib = args.lib.resolve()
    return args


def loadavg():
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def main(argv):
    args = parse_args(argv)
    if args.child_json:
        run_child(args)
        return 0

    missing = [m for m in ("numpy", "fmm3dpy") if importlib.util.find_spec(m) is None]
    if missing:
        sys.exit(f"error: Python package(s) {', '.join(missing)} not installed for {sys.executable}; "
                 "run `make bench-fmm3d` (or `pip install -r tests/bench/requirements.txt`).")
    if not args.lib.is_file():
        sys.exit(f"error: {args.lib} not found; build it with `cargo build --release -p cmsc-ffi` "
                 "or pass --lib.")

    command = shlex.join(["python", os.path.relpath(__file__), *argv])
    load_before = loadavg()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for t in args.threads:
            env = dict(os.environ, **{var: str(t) for var in THREAD_VARS})
            js = Path(tmp) / f"threads{t}.json"
            child = [sys.executable, str(Path(__file__).resolve()), *argv,
                     "--threads-one", str(t), "--child-json", str(js)]
            print(f"running with {t} thread(s) (load {loadavg()}) ...", file=sys.stderr, flush=True)
            rc = subprocess.run(child, env=env).returncode
            if rc != 0:
                sys.exit(f"error: the {t}-thread run failed (exit status {rc})")
            results.append(json.loads(js.read_text()))
    text = render(results, args, command, load_before, loadavg())
    sys.stdout.write(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
