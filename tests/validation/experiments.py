"""The paper's experiments, each a function of a configuration returning plain data (lists,
numbers, strings) that `report` turns into figures and tables. Nothing here is hard-coded
into the results: every number comes from a run."""

import math
import sys
import time

import numpy as np

import peers
from common import (
    CoulombMethod,
    Integrator,
    Simulation,
    UnavailableError,
    bunny_scene,
    cmsc_params,
    grid_mesh,
    lib_path,
    paper_torus,
    relative_error,
    run_cmsc,
    structural_scene,
    suzanne_mesh,
    torus_mesh,
    uv_sphere_mesh,
)
from ddef_mirror import Mirror


def log(msg):
    print(f"[validation {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def rel_l2(f, ref):
    return float(np.sqrt(np.sum((f - ref) ** 2) / np.sum(ref**2)))


def rms(a, b):
    return float(np.sqrt(np.mean(np.sum((np.asarray(a) - np.asarray(b)) ** 2, axis=-1))))


def finite_or_none(v):
    return None if v is None or not math.isfinite(v) else float(v)


# ---------------------------------------------------------------------------------------------
# Figs. 4 and 5: energy error of the integrators
# ---------------------------------------------------------------------------------------------

CODES = ("cmsc IMEX", "cmsc IMEX low-dissipation", "cmsc Verlet", "LAMMPS fix nve", "JAX MD nve")


def run_code(code, scene, h, duration, sample_dt, limit, cutoff, keep_x):
    if code == "cmsc IMEX":
        return run_cmsc(scene, h, Integrator.IMEX, duration, sample_dt, limit, keep_x)
    if code == "cmsc IMEX low-dissipation":
        return run_cmsc(scene, h, Integrator.IMEX_LOW_DISSIPATION, duration, sample_dt, limit, keep_x)
    if code == "cmsc Verlet":
        return run_cmsc(scene, h, Integrator.VERLET, duration, sample_dt, limit, keep_x)
    if code == "LAMMPS fix nve":
        return peers.run_lammps(scene, h, duration, sample_dt, limit, cutoff, keep_x)
    if code == "JAX MD nve":
        return peers.run_jaxmd(scene, h, duration, sample_dt, limit, keep_x)
    raise ValueError(code)


def fig4_torus(cfg):
    """Relative energy error over time of the paper's torus at several h (Fig. 4), against a
    small-step cmsc Verlet reference; positions compared inside the predictable window."""
    c = cfg["fig4"]
    scene = paper_torus()
    duration, sample_dt, limit, cutoff = c["duration"], c["sample_dt"], c["limit"], c["cutoff"]
    log(f"fig4: reference cmsc Verlet h = {c['h_ref']} over {duration} s")
    ref = run_cmsc(scene, c["h_ref"], Integrator.VERLET, duration, sample_dt, limit, keep_x=True)
    if ref.failed:
        raise RuntimeError(f"the reference failed: {ref.failed}")
    ref_t, ref_e = ref.as_arrays()
    drift = float(np.max(np.abs(ref_e / ref_e[0] - 1.0)))
    # Predictable window: the reference against itself from positions moved by 1e-9 m.
    rng = np.random.default_rng(0)
    x0 = scene.x + c["perturbation"] * rng.standard_normal(scene.x.shape)
    twin = run_cmsc(scene, c["h_ref"], Integrator.VERLET, duration, sample_dt, limit, keep_x=True, x0=x0)
    separation = [rms(a, b) for a, b in zip(ref.x, twin.x)]
    threshold = c["window_fraction"] * scene.size
    beyond = [t for t, s in zip(ref.t, separation) if s > threshold]
    window = beyond[0] if beyond else ref.t[-1]
    runs = []
    for h in c["h"]:
        for code in c["codes"]:
            log(f"fig4: {code} h = {h}")
            tr = run_code(code, scene, h, duration, sample_dt, limit, cutoff, keep_x=True)
            t, err = relative_error(tr, ref_t, ref_e)
            mean = float(np.mean(err)) if not tr.failed else math.inf
            inside = [k for k, tk in enumerate(tr.t) if tk <= window + 1e-9]
            pos = [rms(tr.x[k], ref.x[k]) for k in inside] if not tr.failed or len(inside) else []
            runs.append({"code": code, "h": h, "t": list(map(float, t)), "err": list(map(float, err)),
                         "mean_err": finite_or_none(mean), "failed": tr.failed,
                         "own_energy_gap": tr.own_energy_gap, "wall": tr.wall,
                         "pos_err_window": max(pos) if pos else None, "x": tr.x})
    # code-to-code position agreement at equal h inside the window
    pairs = []
    for h in c["h"]:
        by = {r["code"]: r for r in runs if r["h"] == h}
        codes = (("LAMMPS fix nve", "cmsc Verlet"), ("JAX MD nve", "cmsc Verlet"), ("LAMMPS fix nve", "JAX MD nve"))
        for a, b in codes:
            if a in by and b in by and not by[a]["failed"] and not by[b]["failed"]:
                k = [i for i, tk in enumerate(by[a]["t"]) if tk <= window + 1e-9]
                pairs.append({"a": a, "b": b, "h": h,
                              "max_rms": max(rms(by[a]["x"][i], by[b]["x"][i]) for i in k)})
    for r in runs:
        del r["x"]
    return {"scene": scene.params, "size": scene.size, "h_ref": c["h_ref"], "duration": duration,
            "sample_dt": sample_dt, "limit": limit, "cutoff": cutoff, "ref_drift": drift,
            "ref_own_energy_gap": ref.own_energy_gap, "ref_t": list(map(float, ref_t)),
            "window": float(window), "window_threshold": threshold, "perturbation": c["perturbation"],
            "separation": separation, "runs": runs, "pairs": pairs}


def fig5_bunny(cfg):
    """Mean and spread of the relative energy error over the last part of the run, against h,
    for the bunny-sized mesh at two charges (Fig. 5)."""
    c = cfg["fig5"]
    out = {"charges": [], "duration": c["duration"], "window": c["window"], "h": c["h"],
           "h_ref": c["h_ref"], "k_s": c["ks"], "limit": c["limit"], "cutoff": c["cutoff"]}
    for q in c["q"]:
        scene = bunny_scene(q, c["ks"], c["subdivisions"])
        log(f"fig5: q = {q} reference h = {c['h_ref']} ({scene.n} vertices)")
        ref = run_cmsc(scene, c["h_ref"], Integrator.VERLET, c["duration"], c["sample_dt"], c["limit"])
        check = run_cmsc(scene, 2 * c["h_ref"], Integrator.VERLET, c["duration"], c["sample_dt"], c["limit"])
        if ref.failed:
            raise RuntimeError(f"fig5 reference failed: {ref.failed}")
        ref_t, ref_e = ref.as_arrays()
        _, chk = relative_error(check, ref_t, ref_e)
        # the first swell (first local maximum of the radius) and the fall-back after it (the
        # next local minimum)
        radius = np.asarray(ref.radius)
        k_max = next((k for k in range(1, len(radius) - 1) if radius[k + 1] < radius[k]), len(radius) - 1)
        k_min = next((k for k in range(k_max, len(radius) - 1) if radius[k + 1] > radius[k]), len(radius) - 1)
        bounce = {"r_max": float(radius[k_max]), "t_max": float(ref_t[k_max]),
                  "r_min_after": float(radius[k_min]), "t_min_after": float(ref_t[k_min])}
        entry = {"q": q, "scene": scene.params, "ref_drift": float(np.max(np.abs(ref_e / ref_e[0] - 1))),
                 "bounce": bounce,
                 "ref_check": float(np.max(chk)) if not check.failed else None, "rows": []}
        for h in c["h"]:
            for code in c["codes"]:
                log(f"fig5: q = {q} {code} h = {h}")
                tr = run_code(code, scene, h, c["duration"], c["sample_dt"], c["limit"], c["cutoff"], False)
                t, err = relative_error(tr, ref_t, ref_e)
                last = err[t >= c["duration"] - c["window"] - 1e-9]
                ok = not tr.failed and len(last)
                entry["rows"].append({"code": code, "h": h, "failed": tr.failed, "wall": tr.wall,
                                      "mean": float(np.mean(last)) if ok else None,
                                      "std": float(np.std(last)) if ok else None})
        out["charges"].append(entry)
    # Suzanne, the mesh first meant for this figure: how far a small-step explicit reference is
    # from converging on it (see the report).
    if c.get("suzanne_check"):
        s = c["suzanne_check"]
        x, tri = suzanne_mesh()
        n = len(x)
        scene = structural_scene("suzanne", x, tri, c["ks"], 145.0 / n, 145.0 * c["q"][0] / n)
        rows = []
        for h in s["h"]:
            log(f"fig5: Suzanne reference check h = {h}")
            tr = run_cmsc(scene, h, Integrator.VERLET, s["duration"], s["sample_dt"], 1e6)
            e = np.asarray(tr.energy)
            rows.append({"h": h, "max_drift": float(np.max(np.abs(e / e[0] - 1))), "failed": tr.failed})
        out["suzanne_check"] = {"n": n, "duration": s["duration"], "rows": rows}
    return out


def fig12_grid(cfg):
    """Relative energy error at frame `frames` of IMEX (and of the low-dissipation IMEX,
    `err_low`) at h against Verlet at h_ref over a (k_s, q) grid (Fig. 12)."""
    c = cfg["fig12"]
    duration = c["frames"] * c["h"]
    cells = []
    for ks in c["ks"]:
        for q in c["q"]:
            scene = bunny_scene(q, ks, c["subdivisions"])
            imex = run_cmsc(scene, c["h"], Integrator.IMEX, duration, duration, c["limit"])
            low = run_cmsc(scene, c["h"], Integrator.IMEX_LOW_DISSIPATION, duration, duration, c["limit"])
            ref = run_cmsc(scene, c["h_ref"], Integrator.VERLET, duration, duration, c["limit"])

            def error(run):
                if run.failed or ref.failed:
                    return None
                return abs(run.energy[-1] - ref.energy[-1]) / abs(ref.energy[-1])

            cells.append({"ks": ks, "q": q, "err": error(imex), "err_low": error(low),
                          "failed": imex.failed or ref.failed, "failed_low": low.failed})
    log("fig12: reference check at the hardest corner")
    scene = bunny_scene(max(c["q"]), min(c["ks"]), c["subdivisions"])
    a = run_cmsc(scene, c["h_ref"], Integrator.VERLET, duration, duration, c["limit"])
    b = run_cmsc(scene, c["h_ref"] / 2, Integrator.VERLET, duration, duration, c["limit"])
    check = abs(a.energy[-1] - b.energy[-1]) / abs(b.energy[-1])
    return {"cells": cells, "h": c["h"], "h_ref": c["h_ref"], "frames": c["frames"],
            "subdivisions": c["subdivisions"], "ks": c["ks"], "q": c["q"], "ref_check": check,
            "n": scene.n}


# ---------------------------------------------------------------------------------------------
# Fig. 3 and the "far field ignored" table: DDEF accuracy
# ---------------------------------------------------------------------------------------------


def fig3_meshes(names):
    make = {
        "sphere": lambda: uv_sphere_mesh(64, 128, 1.0)[0],
        "torus": lambda: torus_mesh(200, 40, 1.0, 0.3)[0],
        "flat cloth": lambda: grid_mesh(90, 90, 0.01)[0],
        "suzanne": lambda: suzanne_mesh()[0],
        "small torus": lambda: torus_mesh(60, 20, 1.0, 0.3)[0],
    }
    return [(name, make[name]()) for name in names]


def free_charges_sim(x, method, m=1000):
    n = len(x)
    return Simulation(lib_path(), x, np.ones(n), np.zeros((0, 2)), np.zeros(0),
                      cmsc_params(0.01, Integrator.IMEX, method, m))


def cmsc_forces(x, q, method, m=1000):
    with free_charges_sim(x, method, m) as sim:
        sim.set_charges(q)
        return sim.coulomb_forces()


def auto_softening(x):
    """cmsc's automatic softening without springs: 1e-3 x box diagonal / cbrt(n)."""
    return 1e-3 * float(np.linalg.norm(x.max(axis=0) - x.min(axis=0))) / len(x) ** (1 / 3)


def fig3_ddef(cfg):
    c = cfg["fig3"]
    meshes = []
    for name, x in fig3_meshes(c["meshes"]):
        n = len(x)
        q = np.full(n, c["q"])
        log(f"fig3: {name} ({n} charges)")
        exact = cmsc_forces(x, q, CoulombMethod.DIRECT)
        # FMM3D at 1e-12 as the independent exact sum: checks cmsc's direct sum itself
        direct_vs_fmm = rel_l2(exact, peers.fmm3d_forces(x, q, 1e-12))
        errs = [rel_l2(cmsc_forces(x, q, CoulombMethod.DDEF, m), exact) for m in c["m"]]
        far = []
        for m in c["far_m"]:
            log(f"far field: {name} m = {m}")
            mirror = Mirror(x, q, m, auto_softening(x))
            full = mirror.forces(True)
            near = mirror.forces(False)
            ddef = cmsc_forces(x, q, CoulombMethod.DDEF, m)
            far.append({"m": m, "ddef": rel_l2(ddef, exact), "near_only": rel_l2(near, exact),
                        "mirror_vs_cmsc": rel_l2(full, ddef), "mean_near": mirror.mean_near})
        meshes.append({"name": name, "n": n, "m": c["m"], "err": errs, "far": far,
                       "direct_vs_fmm": direct_vs_fmm})
    return {"q": c["q"], "meshes": meshes}


# ---------------------------------------------------------------------------------------------
# Fig. 7: Coulomb evaluation time against n
# ---------------------------------------------------------------------------------------------


def torus_points(n):
    v = max(3, round(math.sqrt(n / 5)))
    return torus_mesh(5 * v, v, 1.0, 0.3)[0]


def best_time(fn, repeat):
    best, out = None, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    return out, best


def fig7_timing(cfg, threads):
    c = cfg["fig7"]
    omm = peers.OpenMMForces(threads)
    conv = peers.fmm3d_convention()
    log(f"fig7: FMM3D is the {peers.fmm3d_build()}")
    rows = []
    gpu = None
    for n_req in c["n"]:
        x = torus_points(n_req)
        n = len(x)
        q = np.full(n, c["q"])
        targets = np.unique(np.linspace(0, n - 1, min(n, c["samples"])).round().astype(int))
        log(f"fig7: n = {n}: exact reference on {len(targets)} vertices")
        exact = peers.exact_forces(x, q, targets)

        def add(method, param, t, first, f):
            rows.append({"method": method, "param": param, "n": n, "time": t, "first": first,
                         "err": rel_l2(f[targets], exact) if f is not None else None})

        if n <= c["direct_cap"]:
            log(f"fig7: n = {n}: cmsc direct")
            with free_charges_sim(x, CoulombMethod.DIRECT) as sim:
                sim.set_charges(q)
                f, t = best_time(sim.coulomb_forces, c["repeat"])
            add("cmsc direct", "", t, None, f)
            log(f"fig7: n = {n}: OpenMM")
            f, t, setup = omm.timed_forces(x, q, c["q"], c["repeat"])
            add("OpenMM CPU NoCutoff", "", t, setup, f)
        for m in c["m"]:
            log(f"fig7: n = {n}: cmsc DDEF m = {m}")
            with free_charges_sim(x, CoulombMethod.DDEF, m) as sim:
                sim.set_charges(q)
                _, first = best_time(sim.coulomb_forces, 1)
                f, t = best_time(sim.coulomb_forces, c["repeat"])
            add("cmsc DDEF", f"m={m}", t, first, f)
        for tol in c.get("p3m_tol", []):
            log(f"fig7: n = {n}: cmsc P3M tolerance {tol:g}")
            with free_charges_sim(x, CoulombMethod.P3M) as sim:
                sim.set_charges(q)
                sim.set_field_tolerance(tol)
                _, first = best_time(sim.coulomb_forces, 1)
                f, t = best_time(sim.coulomb_forces, c["repeat"])
            add("cmsc P3M", f"tol={tol:g}", t, first, f)
        if gpu is None or gpu is True:
            try:
                with free_charges_sim(x, CoulombMethod.DDEF_GPU, c["m"][0]) as sim:
                    sim.set_charges(q)
                    _, first = best_time(sim.coulomb_forces, 1)
                    f, t = best_time(sim.coulomb_forces, c["repeat"])
                add("cmsc DDEF GPU", f"m={c['m'][0]}", t, first, f)
                gpu = True
            except UnavailableError as err:
                gpu = str(err)
        for eps in c["fmm_eps"]:  # the OpenMP source build under `make validate` (peers._fmm3d)
            log(f"fig7: n = {n}: FMM3D eps = {eps}")
            _, first = best_time(lambda: peers.fmm3d_forces(x, q, eps), 1)
            f, t = best_time(lambda: peers.fmm3d_forces(x, q, eps), c["repeat"])
            add("FMM3D", f"eps={eps:g}", t, first, f)
    return {"rows": rows, "q": c["q"], "direct_cap": c["direct_cap"], "samples": c["samples"],
            "repeat": c["repeat"], "gpu": gpu if gpu is not True else "available",
            "fmm_convention": list(map(float, conv)), "fmm3d": peers.fmm3d_build(),
            "openmm_one_4pi_eps0": omm.one_4pi_eps0}
