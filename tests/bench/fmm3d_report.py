"""The markdown report of tests/bench/fmm3d_compare.py: the machine and builds, every row, DDEF
against each FMM3D tolerance side by side, and thread scaling."""

import math
import os
import platform


def fmt_time(t):
    return "—" if t is None else f"{t:.3g}"


def fmt_err(e):
    if e is None:
        return "—"
    return "0 (reference)" if e == 0 else f"{e:.2e}"


def fmt_true(r):
    if r["method"].startswith("FMM3D") and r["first"] is None:
        return "(true-sum proxy)"
    return "—" if r["true_err"] is None else f"{r['true_err']:.2e}"


def best_err(r):
    """The error a side-by-side row quotes: against the true sum where known, else against cmsc's direct sum."""
    return r["true_err"] if r["true_err"] is not None else r["err"]


def side_by_side(results):
    """DDEF's adaptive grid and P3M at each requested error against each FMM3D tolerance: same
    n, same threads, same run."""
    lines = ["| n | threads | cmsc | cmsc (s) | error | FMM3D | FMM3D (s) | error "
             "| cmsc time / FMM3D time |", "|---:|---:|---|---:|---:|---|---:|---:|---:|"]
    for res in results:
        rows = res["rows"]
        ours = [r for r in rows
                if (r["method"], r["param"]) == ("cmsc DDEF", "adaptive m") or r["method"] == "cmsc P3M"]
        for d in ours:
            name = "DDEF adaptive" if d["method"] == "cmsc DDEF" else f"P3M {d['param']}"
            for f in (r for r in rows if r["method"].startswith("FMM3D") and r["n"] == d["n"]
                      and r["first"] is not None):
                lines.append(f"| {d['n']} | {d['threads']} | {name} | {d['time']:.3g} | {best_err(d):.2e} "
                             f"| {f['param']} | {f['time']:.3g} | {best_err(f):.2e} "
                             f"| {d['time'] / f['time']:.2f} |")
    return lines if len(lines) > 2 else []


def scaling(results):
    """Each method's time on every thread count, and its speed-up over the first one."""
    if len(results) < 2:
        return []
    counts = [res["rows"][0]["threads"] for res in results]
    keys = dict.fromkeys((r["method"], r["param"], r["n"]) for r in results[0]["rows"] if r["first"] is not None)
    lines = ["| method | parameter | n | " + " | ".join(f"{t} thr (s)" for t in counts) + " | "
             + " | ".join(f"speed-up {t}/{counts[0]} thr" for t in counts[1:]) + " |",
             "|---|---|---:|" + "---:|" * (2 * len(counts) - 1)]
    for key in keys:
        times = []
        for res in results:
            hit = [r for r in res["rows"] if (r["method"], r["param"], r["n"]) == key]
            times.append(hit[0]["time"] if hit else None)
        if None in times:
            continue
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | " + " | ".join(f"{t:.3g}" for t in times) + " | "
                     + " | ".join(f"{times[0] / t:.2f}" for t in times[1:]) + " |")
    return lines


def render(results, args, command, load_before, load_after):
    info = results[0]["info"]
    conv = info["convention"]
    build = info["fmm3d"]
    cpus = os.cpu_count()
    c = conv["kernel_c"]
    if abs(4 * math.pi * c - 1) < 1e-9:
        kernel, force = "/ (4 pi r_ij)", "-4 pi k_c q_i grad_i"
    elif abs(c - 1) < 1e-9:
        kernel, force = "/ r_ij", "-k_c q_i grad_i"
    else:
        kernel, force = f"* {c:.7g} / r_ij", f"{conv['alpha_unit']:.7g} k_c q_i grad_i"
    omp = ", ".join(f"{res['rows'][0]['threads']} thread(s): omp_get_max_threads() = "
                    f"{res['info']['fmm3d']['omp_threads']}" for res in results)
    lines = [
        "# cmsc Coulomb methods vs FMM3D",
        "",
        f"Machine: processor `{platform.processor() or platform.machine()}`, {cpus} CPUs, "
        f"{platform.system()} {platform.release()}, Python {platform.python_version()}; "
        f"cmsc {info['cmsc_version']} (`{args.lib}`); numpy {info['numpy_version']}.",
        "",
        f"FMM3D: version {build['version']}, built from source by `make fmm3d` (FMM3D's "
        f"`make lib FAST_KER=ON`: gfortran -O3 -march=native, OpenMP, "
        f"{'its vectorised C++ kernels' if build['vectorised'] else 'WITHOUT its vectorised kernels'}), "
        f"`{build['path']}`, called through its C interface (lfmm3d_s_c_g); OpenMP threads as run: {omp}.",
        "",
        f"Command: `{command}`",
        "",
        f"Load average (1/5/15 min) before: {load_before}; after: {load_after}"
        + "".join(f"; {res['rows'][0]['threads']}-thread run started at {res['load_start']}"
                  + (f" after waiting {res['waited']:.0f} s" if res["waited"] else "") for res in results)
        + ".",
        "",
        "| method | parameter | n | threads | time (s) | first call (s) | CPU/wall "
        "| relative L2 error | vs true sum | load (1 min) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for res in results:
        for r in res["rows"]:
            lines.append(
                f"| {r['method']} | {r['param']} | {r['n']} | {r['threads']} | {fmt_time(r['time'])} "
                f"| {fmt_time(r['first'])} | {r['cpu']:.2f} | {fmt_err(r['err'])} "
                f"| {fmt_true(r)} | {r['load'].split(' / ')[0]} |"
            )
    sbs = side_by_side(results)
    if sbs:
        lines += ["", "Side by side (same run, same points, same threads): cmsc DDEF's adaptive grid and P3M "
                  "against each FMM3D tolerance; error against the true sum where it was computed, "
                  "else against cmsc's direct sum.", ""] + sbs
    sc = scaling(results)
    if sc:
        lines += ["", "Thread scaling (the same rows on each thread count):", ""] + sc
    direct_ns = [p["n"] for p in info["per_n"] if p["n"] <= args.direct_max]
    lines += [
        "",
        "Notes:",
        "",
        "- Points: torus surface (R = 1 m, r = 0.3 m, u = 5v grid, as cmsc-core `shapes::torus`); "
        "charges -1e-6 C on every fifth vertex, +1e-6 C elsewhere; k_c = 8.9875517923e9.",
        "- Reference: cmsc's exact direct sum (CMSC_COULOMB_DIRECT) through cmsc_coulomb_forces, for "
        f"n <= {args.direct_max} (here n = {', '.join(map(str, direct_ns)) or 'none'}). "
        "Without springs cmsc softens the kernel by 1e-3 x bounding-box diagonal / cbrt(n) ("
        + ", ".join(f"n = {p['n']}: {p['softening']:.3g} m" for p in info["per_n"])
        + "). 'relative L2 error' is sqrt(sum |F - F_ref|^2 / sum |F_ref|^2) against it.",
        f"- 'vs true sum': the same error against FMM3D at eps = {args.check_eps:g} as the true, "
        "unsoftened Coulomb sum; on the cmsc direct row it is the error the softening causes. "
        "Sampled numpy check (float64, every target against all n sources): "
        + "; ".join(
            f"n = {p['n']} ({p['sample']} targets): "
            + (f"cmsc direct vs numpy softened sum {p['direct_vs_np_soft']:.1e}, "
               if "direct_vs_np_soft" in p else "")
            + f"FMM3D eps = {args.check_eps:g} vs numpy true sum {p['fmm_tight_vs_np_true']:.1e}, "
            f"numpy softened vs true {p['soft_vs_true_np']:.1e}"
            for p in info["per_n"] if "sample" in p
        )
        + ".",
        f"- FMM3D convention (checked at run time): lfmm3d's potential is "
        f"u_i = sum_j q_j {kernel} (pot of two unit charges 1 m apart: {conv['kernel_c']:.7g}) and "
        f"`grad` is grad u (not the field -grad u), so the force is F_i = {force}; against cmsc's "
        f"direct sum on n = {conv['check_n']} torus points this differs by {conv['check_err']:.2e} "
        "(relative L2: the softening of the reference).",
        "- time: cmsc DDEF and P3M are the second call (grid or mesh built and cached by the first, shown as "
        "'first call'; the adaptive grid after it has settled); FMM3D is one call after a warm-up call "
        "(the warm-up shown as 'first call'); "
        f"with --repeat {args.repeat} the fastest of {args.repeat} timed calls. cmsc direct and the "
        "FMM3D accuracy check are single calls. CPU/wall is the process CPU time over the wall time "
        "of the timed call: the threads actually busy. 'load (1 min)' is the load average when the "
        "row was written; it counts this benchmark's own busy threads too (up to the thread count).",
        "- threads: RAYON_NUM_THREADS (cmsc) and OMP_NUM_THREADS (FMM3D) set to this value before "
        "either library is loaded; FMM3D's OpenMP runtime is checked to report that many threads.",
        "- OpenMP's threads wait for each other at every parallel region: when other processes take "
        "the cores, FMM3D on 2 threads slows far more than cmsc's rayon (work stealing). Compare on "
        "a quiet machine (--max-load).",
    ]
    return "\n".join(lines) + "\n"
