"""Bake time of the cmsc add-on in real Blender, split into simulation and Blender I/O, next to
Blender's own Cloth bake of the same mesh (no self-collision, no collision, same frame range).

Run in Blender's Python (bpy from PyPI):

    .venv-blender/bin/python tests/bench/bake_benchmark.py --verts 10000,100000 --frames 250

`--frames` takes one count for every size or one per size (e.g. `250,25`). Writes a markdown
table to out/bench/bake.md (--out). The add-on is installed from the zip (--zip, default the
`make addon` output) into a scratch Blender user folder, as a user would.

What is timed, per mesh (a square grid of about N vertices, 2 m wide, its top row pinned,
gravity on, 5 substeps per frame and the add-on's default local/global iterations (6,
accelerated), Coulomb method per --methods, default AUTO; each with the Far Field Interval of
--far-intervals, default 1 and 5, where the method that ran is DDEF):

- cmsc **collect**: Blender I/O on the main thread — the mesh, springs and masses, then
  frame_set through the range to read keyframed charges, the field and moving objects;
- cmsc **simulate**: the library's steps (and reading positions back), `BakeJob.timings`;
- cmsc **write**: the PC2 samples (`BakeJob.timings`), plus **finish** (the Mesh Cache modifier);
- **Cloth**: `ptcache.bake` of a Cloth modifier on a copy of the grid (default quality 5 steps
  per frame, self-collision and collision off, the same pins), into Blender's memory cache;
- **preview**: the live preview's cost per frame over 10 frames of `frame_set`, with no bake
  present, at its default 1 substep per frame and at the bake's 5 (`preview_substeps` 0): all
  of it, and its simulation and I/O parts (reading charges and positions, writing the preview
  shape key); the rest is Blender's own frame change.

The cmsc cloth has the add-on's defaults, 1 kg in all and springs of 100 / 10 N/m, and every
vertex charged, 10 µC in all: it swings down from the horizontal and hangs, a 2 m cloth at every
resolution (`cmsc-core/examples/bake_profile.rs` runs the same scene without Blender). Until
2026-11-24 the benchmark gave each vertex Cloth's 0.3 kg and 1 nC: 30 t at 100K vertices, which
100 N/m springs cannot hold, so that cloth tore loose and fell freely, its pinned rows
stretched into a thread hundreds of metres long.
"""

import argparse
import os
import platform
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TOTAL_MASS = 1.0  # kg, the whole cloth (the add-on's default)
TOTAL_CHARGE = 10.0  # µC, shared equally by the vertices


def parse():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--verts", default="10000", help="comma-separated vertex counts (square grids)")
    p.add_argument("--frames", default="250", help="frames after the start frame: one count, or one per size")
    p.add_argument("--zip", default=os.path.join(ROOT, "dist", "cmsc-0.1.0-linux-x64.zip"))
    p.add_argument("--out", default=os.path.join(ROOT, "out", "bench", "bake.md"))
    p.add_argument(
        "--methods", default="AUTO", help="comma-separated Coulomb methods of the add-on (AUTO, DIRECT, DDEF)"
    )
    p.add_argument("--far-intervals", default="1,5",
                   help="comma-separated Far Field Intervals to bake DDEF with (5: its far field once per frame)")
    p.add_argument("--direct-max", type=int, default=20_000,
                   help="time DIRECT (the exact O(n²) sum) only up to this many vertices")
    p.add_argument("--threads", type=int, default=0, help="the add-on's thread preference (0 = all cores)")
    p.add_argument("--user-dir", default=os.path.join(ROOT, "target", "bench-blender-user"),
                   help="scratch Blender user folder the add-on is installed into")
    p.add_argument("--no-cloth", action="store_true", help="skip the Cloth reference bake")
    args = p.parse_args()
    verts = [int(v) for v in args.verts.split(",")]
    frames = [int(f) for f in args.frames.split(",")]
    if len(frames) == 1:
        frames *= len(verts)
    if len(frames) != len(verts):
        p.error("--frames: one count, or one per --verts size")
    return args, verts, frames


def install(zip_path):
    import bpy  # noqa: I001 - bpy first: it puts addon_utils on the path
    import addon_utils

    if not os.path.isfile(zip_path):
        sys.exit(f"{zip_path} is missing: build it with `make addon`")
    assert bpy.ops.preferences.addon_install(filepath=zip_path, overwrite=True) == {"FINISHED"}
    module = addon_utils.enable("cmsc", default_set=True, handle_error=None)
    if module is None:
        sys.exit("the cmsc add-on failed to enable")
    return module


def grid(name, n):
    """A square grid of about n vertices, 2 m wide, with a vertex group "top" (its top row)
    and "all" (every vertex)."""
    import bpy

    cuts = max(1, round(n ** 0.5) - 1)
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=cuts, y_subdivisions=cuts, size=2.0, location=(0, 0, 1))
    obj = bpy.context.active_object
    obj.name = name
    top = [v.index for v in obj.data.vertices if v.co.y > 1.0 - 1e-6]
    obj.vertex_groups.new(name="top").add(top, 1.0, "REPLACE")
    obj.vertex_groups.new(name="all").add(list(range(len(obj.data.vertices))), 1.0, "REPLACE")
    return obj


def extent_at(scene, obj, frame):
    """The world-space extent (x, y, z, m) of `obj`'s evaluated mesh at `frame`: what its bake
    plays, to show that both cloths hang as 2 m cloths."""
    import bpy
    import numpy as np

    scene.frame_set(frame)
    mesh = obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).data
    co = np.empty(3 * len(mesh.vertices))
    mesh.vertices.foreach_get("co", co)
    m = np.array(obj.matrix_world)
    world = co.reshape(-1, 3) @ m[:3, :3].T + m[:3, 3]
    return np.ptp(world, axis=0)


def bench_cmsc(module, scene, n, frames, cache_dir, method, far_field_interval):
    import bpy

    bake = sys.modules[module.__name__ + ".ui.bake"]
    cache = sys.modules[module.__name__ + ".ui.cache"]
    run = sys.modules[module.__name__ + ".sim.bake_job"].run
    obj = grid("cmsc", n)
    s = obj.cmsc
    s.enabled = True
    s.mass = TOTAL_MASS
    s.stiffness, s.bending_stiffness = 100.0, 10.0
    s.substeps = 5
    s.coulomb_method = method
    s.far_field_interval = far_field_interval
    s.pin_group = "top"
    s.frame_start, s.frame_end = 1, 1 + frames
    s.cache_path = os.path.join(cache_dir, f"cmsc_{n}_{method}_{far_field_interval}.pc2")
    with bpy.context.temp_override(active_object=obj, object=obj):
        bpy.ops.cmsc.charge_group_add()
    s.charge_groups[0].vertex_group = "all"
    s.charge_groups[0].charge = TOTAL_CHARGE  # µC in all (the TOTAL distribution)
    clock = time.perf_counter

    t0 = clock()
    objects, job = bake.collect(bpy.context, obj)
    t1 = clock()
    run(job)
    t2 = clock()
    bake.finish(scene, objects, job)
    t3 = clock()
    if job.error:
        print(f"cmsc bake of {n} vertices stopped: {job.error}", flush=True)
    row = {
        "n": len(obj.data.vertices),
        "frames": frames,
        "coulomb": coulomb_label(module, job)
        + (f", far field every {far_field_interval} steps" if far_field_interval > 1 else ""),
        "collect": t1 - t0,
        "simulate": job.timings["simulate"],
        "write": job.timings["write"],
        "finish": t3 - t2,
        "run": t2 - t1,
        "frames_done": job.frames_done,
    }
    row["total"] = t3 - t0
    row["io"] = row["collect"] + row["write"] + row["finish"]
    row["extent"] = extent_at(scene, obj, s.frame_end)

    # live preview: 10 frames of playback without a bake, at the default one substep per frame
    # ("preview") and at the bake's substeps ("preview_full")
    preview = sys.modules[module.__name__ + ".ui.preview"]
    cache.free_bake(obj)
    for key, substeps in (("preview", 1), ("preview_full", 0)):
        s.preview_substeps = substeps
        scene.frame_set(1)
        t0 = clock()
        for f in range(2, 12):
            scene.frame_set(f)
        row[key] = (clock() - t0) / 10
        pt = preview.timings(obj)
        if pt is None:
            raise SystemExit(f"the preview of {n} vertices did not run: {preview.status(obj)}")
        row[key + "_sim"] = pt["simulate"] / 10
        row[key + "_io"] = (pt["read"] + pt["write"]) / 10
    s.enabled = False
    scene.frame_set(1)
    bpy.data.objects.remove(obj)
    return row


def coulomb_label(module, job):
    """The method that ran, as the library reported it: e.g. "DDEF (chosen by AUTO)"."""
    methods = sys.modules[module.__name__ + ".sim.methods"]
    return methods.describe(job.params.coulomb, job.coulomb_method)


def method_that_runs(module, method, n, use_gpu):
    """The CoulombMethod the library runs for the add-on's `method` on n vertices: asked as the
    add-on asks (its GPU preference applied), read back from a simulation of n points."""
    import numpy as np

    pkg = module.__name__ + ".sim"
    native, methods, sim = (sys.modules[f"{pkg}.{m}"] for m in ("_native", "methods", "simulation"))
    lib = native.addon_library_path()
    asked, _ = methods.choose(lib, methods.CoulombMethod[method], use_gpu)
    x = np.random.default_rng(0).uniform(-1, 1, size=(n, 3))
    params = sys.modules[pkg + ".params"].SimParams(coulomb=asked)
    with sim.Simulation(lib, x, np.full(n, 1e-3), np.zeros((0, 2)), np.zeros(0), params) as s:
        return s.coulomb_method


def bench_cloth(scene, n, frames):
    import bpy

    obj = grid("cloth", n)
    mod = obj.modifiers.new("Cloth", "CLOTH")
    mod.settings.vertex_group_mass = "top"  # pins
    mod.collision_settings.use_collision = False
    mod.collision_settings.use_self_collision = False
    cache = mod.point_cache
    cache.frame_start, cache.frame_end = 1, 1 + frames
    scene.frame_set(1)
    t0 = time.perf_counter()
    with bpy.context.temp_override(point_cache=cache, active_object=obj, object=obj):
        assert bpy.ops.ptcache.bake(bake=True) == {"FINISHED"}
    elapsed = time.perf_counter() - t0
    baked = cache.is_baked
    extent = extent_at(scene, obj, cache.frame_end)
    bpy.data.objects.remove(obj)
    return elapsed, baked, extent


def dims(extent):
    return " × ".join(f"{e:.2f}" for e in extent)


def machine():
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{model}, {os.cpu_count()} logical cores, {platform.system()} {platform.release()}"


def main():
    args, verts, frames = parse()
    os.environ["BLENDER_USER_RESOURCES"] = args.user_dir  # before bpy starts: never the real profile
    import bpy  # noqa: E402

    module = install(args.zip)
    prefs = bpy.context.preferences.addons["cmsc"].preferences
    prefs.threads = args.threads
    scene = bpy.context.scene
    for o in list(scene.objects):
        bpy.data.objects.remove(o)
    scene.render.fps = 24
    scene.cmsc.use_gravity = True
    native = sys.modules[module.__name__ + ".sim._native"]
    lib = native.load(native.addon_library_path())
    load_before = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory() as cache_dir:
        for n, f in zip(verts, frames):
            seen = set()
            for i, method in enumerate(args.methods.split(",")):
                runs = method_that_runs(module, method, round(n ** 0.5) ** 2, prefs.use_gpu).name
                if runs in seen:  # e.g. AUTO runs DDEF at this size: timed once
                    continue
                if runs == "DIRECT" and n > args.direct_max:
                    continue
                seen.add(runs)
                intervals = [int(k) for k in args.far_intervals.split(",")] if runs.startswith("DDEF") else [1]
                for k in intervals:
                    print(f"cmsc: {n} vertices, {f} frames, {method}, far field interval {k} ...", flush=True)
                    row = bench_cmsc(module, scene, n, f, cache_dir, method, k)
                    print(f"  cmsc {row['total']:.1f} s (simulate {row['simulate']:.1f} s)", flush=True)
                    if not args.no_cloth and i == 0 and k == intervals[0]:
                        print(f"cloth: {n} vertices, {f} frames ...", flush=True)
                        row["cloth"], row["cloth_baked"], row["cloth_extent"] = bench_cloth(scene, n, f)
                        print(f"  cloth {row['cloth']:.1f} s", flush=True)
                    rows.append(row)
    load_after = os.getloadavg()
    threads = args.threads or os.cpu_count()
    lines = [
        "# Bake benchmark: cmsc add-on vs Blender Cloth",
        "",
        f"- Machine: {machine()}; load average {load_before[0]:.1f} before, {load_after[0]:.1f} after "
        "(shared machine: other jobs ran alongside)",
        f"- Blender {bpy.app.version_string} (bpy from PyPI, background), libcmsc {lib.cmsc_version().decode()}, "
        f"{threads} library threads",
        f"- Mesh: square grid 2 m wide, top row pinned, gravity; cmsc: {TOTAL_MASS:g} kg in all, springs 100 / 10 N/m, "
        f"every vertex charged, {TOTAL_CHARGE:g} µC in all, 5 substeps per frame, the add-on's default "
        "local/global iterations (6, accelerated), Coulomb as listed (the method that ran, read back from the library; "
        "DDEF with its adaptive grid, the add-on's default); "
        "Cloth at its default quality (5 steps per frame), collision and self-collision off",
        "- Blender I/O = collect (mesh, frame_set through the range) + PC2 writes + Mesh Cache modifier",
        "",
        "| vertices | frames | Coulomb | cmsc total (s) | simulation (s) | Blender I/O (s) | I/O share "
        "| collect / write / finish (s) | ms per frame | preview ms/frame, 1 substep (sim + I/O) "
        "| preview ms/frame, 5 substeps | Cloth bake (s) | Cloth ms per frame "
        "| extent at the last frame (m), cmsc / Cloth |",
        "|---:|---:|---|---:|---:|---:|---:|---|---:|---|---:|---:|---:|---|",
    ]
    for r in rows:
        cloth = f"{r['cloth']:.1f}" if "cloth" in r else "—"
        if "cloth" in r and not r["cloth_baked"]:
            cloth += " (bake incomplete)"
        cloth_ms = f"{1000 * r['cloth'] / r['frames']:.0f}" if "cloth" in r else "—"
        done = f"{r['frames']}" if r["frames_done"] == r["frames"] + 1 else f"{r['frames_done'] - 1} of {r['frames']}"
        lines.append(
            f"| {r['n']:,} | {done} | {r['coulomb']} | {r['total']:.1f} | {r['simulate']:.1f} | {r['io']:.2f} "
            f"| {100 * r['io'] / r['total']:.1f} % | {r['collect']:.2f} / {r['write']:.2f} / {r['finish']:.3f} "
            f"| {1000 * r['total'] / max(1, r['frames_done'] - 1):.0f} "
            f"| {1000 * r['preview']:.0f} ({1000 * r['preview_sim']:.0f} + {1000 * r['preview_io']:.1f}) "
            f"| {1000 * r['preview_full']:.0f} | {cloth} | {cloth_ms} "
            f"| {dims(r['extent'])} / {dims(r['cloth_extent']) if 'cloth_extent' in r else '—'} |"
        )
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    import addon_utils

    addon_utils.disable("cmsc", default_set=True)


if __name__ == "__main__":
    main()
