#!/usr/bin/env python3
"""cmsc validation report: the paper's experiments (Figs. 3, 4, 5, 7, 12 and the "far field
ignored" table) with cmsc (through the add-on's pure-Python wrapper over the C ABI) side by side
with LAMMPS, JAX MD, OpenMM and FMM3D. Writes OUT/report.md, OUT/*.png and OUT/results.json.

    cargo build --release -p cmsc-ffi
    python tests/validation/run.py --out out/validation            # full (~15-40 min on 2 cores)
    python tests/validation/run.py --out out/validation --smoke    # small version (~2-3 min)
    python tests/validation/run.py --out out/validation --only fig4,fig3

(`make validate` / `make validate-smoke` create the virtual environment .venv-validation from
tests/validation/requirements.txt first.) $CMSC_LIB selects the library (default
target/release/libcmsc.so).
"""

import argparse
import os
import shlex
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

EXPERIMENTS = ("fig3", "fig4", "fig5", "fig7", "fig12")

FULL = {
    "fig3": {"meshes": ["sphere", "torus", "flat cloth", "suzanne"], "q": 1e-6,
             "m": [10, 30, 100, 300, 1000, 3000, 10000], "far_m": [1000, 2000, 10000]},
    "fig4": {"h": [0.015, 0.03, 0.15], "h_ref": 0.0005, "duration": 15.0, "sample_dt": 0.15,
             "limit": 20.0, "cutoff": 1000.0, "perturbation": 1e-9, "window_fraction": 1e-3,
             "codes": ["cmsc IMEX", "cmsc IMEX low-dissipation", "cmsc Verlet", "LAMMPS fix nve", "JAX MD nve"]},
    "fig5": {"q": [6e-6, 8e-6], "ks": 0.5, "subdivisions": 3, "h": [0.01, 0.02, 0.05, 0.1, 0.15, 0.2],
             "h_ref": 0.0025, "duration": 15.0, "window": 5.0, "sample_dt": 0.25,
             "limit": 100.0, "cutoff": 1000.0,
             "codes": ["cmsc IMEX", "cmsc IMEX low-dissipation", "cmsc Verlet", "LAMMPS fix nve", "JAX MD nve"],
             "suzanne_check": {"h": [0.005, 0.0025], "duration": 2.0, "sample_dt": 0.05}},
    "fig7": {"n": [1000, 4000, 16000, 64000, 256000, 1000000], "direct_cap": 64000, "q": 1e-6,
             "m": [1000], "p3m_tol": [1e-2, 1e-3], "fmm_eps": [0.5, 1e-2], "samples": 256, "repeat": 1},
    "fig12": {"ks": [2.0, 4.0, 6.0, 8.0, 10.0], "q": [1e-6, 2e-6, 3e-6, 4e-6, 5e-6, 6e-6],
              "subdivisions": 3, "h": 0.05, "h_ref": 0.01, "frames": 100, "limit": 100.0},
}

SMOKE = {
    "fig3": {"meshes": ["suzanne", "small torus"], "q": 1e-6, "m": [10, 100, 1000], "far_m": [1000]},
    "fig4": dict(FULL["fig4"]),
    "fig5": {"q": [6e-6], "ks": 0.5, "subdivisions": 2, "h": [0.02, 0.15], "h_ref": 0.0025,
             "duration": 6.0, "window": 2.0, "sample_dt": 0.05, "limit": 100.0, "cutoff": 1000.0,
             "codes": ["cmsc IMEX", "cmsc IMEX low-dissipation", "cmsc Verlet", "LAMMPS fix nve"]},
    "fig7": {"n": [1000, 4000], "direct_cap": 4000, "q": 1e-6, "m": [1000], "p3m_tol": [1e-2, 1e-3],
             "fmm_eps": [0.5, 1e-2],
             "samples": 128, "repeat": 1},
    "fig12": {"ks": [2.0, 10.0], "q": [1e-6, 6e-6], "subdivisions": 2, "h": 0.05, "h_ref": 0.01,
              "frames": 100, "limit": 100.0},
}

THREAD_VARS = ("RAYON_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path("out/validation"), help="output folder")
    p.add_argument("--smoke", action="store_true", help="the small version (a few minutes)")
    p.add_argument("--only", default=",".join(EXPERIMENTS),
                   help=f"comma-separated subset of {','.join(EXPERIMENTS)}")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                   help="threads for cmsc (rayon), OpenMM, FMM3D (OpenMP), XLA (default: all CPUs)")
    args = p.parse_args(argv)
    args.only = [e.strip() for e in args.only.split(",") if e.strip()]
    unknown = set(args.only) - set(EXPERIMENTS)
    if unknown:
        p.error(f"unknown experiment(s) {sorted(unknown)}; choose from {EXPERIMENTS}")
    return args


def main(argv):
    args = parse_args(argv)
    # Thread pools read these when they start, i.e. before any of the libraries is loaded.
    for var in THREAD_VARS:
        os.environ[var] = str(args.threads)
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               " --xla_force_host_platform_device_count=1").strip()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    sys.path.insert(0, str(HERE))

    import json

    import experiments
    import report
    from common import loadavg, machine_info

    cfg = SMOKE if args.smoke else FULL
    command = shlex.join(["python", "tests/validation/run.py", *argv])
    results = {"command": command, "smoke": args.smoke, "threads": args.threads,
               "machine": machine_info(), "versions": report.versions(),
               "config": {k: cfg[k] for k in args.only}, "load_before": loadavg(), "timing": {}}
    args.out.mkdir(parents=True, exist_ok=True)
    t_all = time.perf_counter()
    for name in args.only:
        t0 = time.perf_counter()
        if name == "fig3":
            results["fig3"] = experiments.fig3_ddef(cfg)
        elif name == "fig4":
            results["fig4"] = experiments.fig4_torus(cfg)
        elif name == "fig5":
            results["fig5"] = experiments.fig5_bunny(cfg)
        elif name == "fig7":
            results["fig7"] = experiments.fig7_timing(cfg, args.threads)
        elif name == "fig12":
            results["fig12"] = experiments.fig12_grid(cfg)
        results["timing"][name] = time.perf_counter() - t0
        experiments.log(f"{name} done in {results['timing'][name]:.1f} s")
        # what is done so far, in case a later experiment fails
        results["load_after"] = loadavg()
        (args.out / "results.json").write_text(json.dumps(results, indent=1, default=str))
        report.write(results, args.out)
    results["timing"]["total"] = time.perf_counter() - t_all
    results["load_after"] = loadavg()
    (args.out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    report.write(results, args.out)
    experiments.log(f"wrote {args.out / 'report.md'} ({results['timing']['total']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
