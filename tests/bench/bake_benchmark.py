"""Bake time of the cmsc add-on in real Blender, split into simulation and Blender I/O, next to
Blender's own Cloth bake of the same mesh (no self-collision, no collision, same frame range) and
Blender 5.2's Geometry Nodes XPBD cloth, with the quality of each: pin drift, edge stretch and,
for cmsc, the error against a converged bake.

Run in Blender's Python (bpy from PyPI):

    .venv-blender/bin/python tests/bench/bake_benchmark.py --verts 10000,100000 --frames 60,10

`--frames` takes one count for every size or one per size (e.g. `250,25`). Writes a markdown
table to out/bench/bake.md (--out). The add-on is installed from the zip (--zip, default the
`make addon` output) into a scratch Blender user folder, as a user would.

What is timed, per mesh (a square grid of about N vertices, 2 m wide, its top row pinned,
gravity on; Coulomb method per --methods, default AUTO; each with the Far Field Interval of
--far-intervals, default 1 and 5, where the method that ran is DDEF; and per --adaptive):

- cmsc rows, adaptive **on** (where the add-on has `Object.cmsc.adaptive_substeps`): the
  add-on's defaults for Substeps (then the least steps per frame), Max Substeps and Iterations
  (then the most, stopping at the add-on's tolerance); **off**: a fixed 5 substeps per frame of
  the add-on's default local/global iterations (6, accelerated), as before adaptive substeps.
  `--substeps` sets Substeps on both. The steps per frame the bake took (mean / most) come from
  `BakeJob.steps` (else `Object.cmsc.baked_steps`; fixed: Substeps).
- cmsc **collect**: Blender I/O on the main thread — the mesh, springs and masses, then
  frame_set through the range to read keyframed charges, the field and moving objects;
- cmsc **simulate**: the library's steps (and reading positions back), `BakeJob.timings`;
- cmsc **write**: the PC2 samples (`BakeJob.timings`), plus **finish** (the Mesh Cache modifier);
- **Cloth**: `ptcache.bake` of a Cloth modifier on a copy of the grid (default quality 5 steps
  per frame, self-collision and collision off, the same pins), into Blender's memory cache;
  "× Cloth" is a row's time per frame over the Cloth's of the same process;
- **XPBD**: Blender 5.2's "Cloth Dynamics (Experimental)" Essentials asset (the XPBD Solver
  node) as a Geometry Nodes modifier on a copy of the grid, the same pins (its Pin Group input
  reads the vertex group "top"), gravity, 5 substeps and the asset's other defaults (15
  constraint steps): `frame_set` through the range in order, reading the evaluated positions of
  each frame (`xpbd_cloth.py`). It runs in this process under bpy 5.2 or later, else in a child
  process under `.venv-blender-5.2` (--blender-5.2-python) that also bakes the classic Cloth, so
  that its "× Cloth" compares two solvers of one process; skipped, with a note, without it.
- **preview**: the live preview's cost per frame over 10 frames of `frame_set`, with no bake
  present, at its default 1 substep per frame and at the bake's (`preview_substeps` 0): all
  of it, and its simulation and I/O parts (reading charges and positions, writing the preview
  shape key); the rest is Blender's own frame change.
- Quality, at the last frame: **pin drift**, the farthest a pinned vertex is from its rest
  position (mm), and **stretch**, the most any edge is longer than at rest (%), for cmsc, Cloth
  and XPBD; and with --quality (default: meshes up to --quality-max, 20K, vertices) the cmsc
  bake's **error**: the RMS distance of its vertices from a converged cmsc bake of the same scene
  (fixed steps, 4× the Substeps or the mean steps per frame of the scene's rows, whichever is
  more, 30 iterations, adaptive substeps off, the far field every step, baked as far as the
  last frame compared), 30 and 60 frames after
  the start (those within the range, else the last frame), relative to the mesh's bounding-box
  diagonal at rest. The converged bake is not timed.

The cmsc cloth has the add-on's defaults, 1 kg in all and springs of 100 / 10 N/m, and every
vertex charged, 10 µC in all: it swings down from the horizontal and hangs, a 2 m cloth at every
resolution (`cmsc-core/examples/bake_profile.rs` runs the same scene without Blender). Until
2026-11-24 the benchmark gave each vertex Cloth's 0.3 kg and 1 nC: 30 t at 100K vertices, which
100 N/m springs cannot hold, so that cloth tore loose and fell freely, its pinned rows
stretched into a thread hundreds of metres long.
"""

import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TOTAL_MASS = 1.0  # kg, the whole cloth (the add-on's default)
TOTAL_CHARGE = 10.0  # µC, shared equally by the vertices
FIXED_SUBSTEPS = 5  # the fixed rows' substeps per frame (the add-on's default before adaptive substeps)
QUALITY_FRAMES = (30, 60)  # frames after the start where the error is measured
CONVERGED_FACTOR = 4  # the converged bake takes this many times the steps ...
CONVERGED_ITERATIONS = 30  # ... of this many local/global iterations


def parse():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--verts", default="10000", help="comma-separated vertex counts (square grids)")
    p.add_argument("--frames", default="250", help="frames after the start frame: one count, or one per size")
    p.add_argument("--zip", default=os.path.join(ROOT, "dist", "cmsc-0.1.0-linux-x64.zip"))
    p.add_argument("--out", default=os.path.join(ROOT, "out", "bench", "bake.md"))
    p.add_argument(
        "--methods", default="AUTO", help="comma-separated Coulomb methods of the add-on (AUTO, DIRECT, DDEF)"
    )
    p.add_argument(
        "--far-intervals",
        default="1,5",
        help="comma-separated Far Field Intervals to bake DDEF with (5: its far field once per frame)",
    )
    p.add_argument(
        "--adaptive",
        help="comma-separated: on (adaptive substeps, the add-on's defaults), off (fixed Substeps); "
        "default both where the add-on has adaptive substeps, else off",
    )
    p.add_argument(
        "--substeps",
        type=int,
        help=f"Substeps of every cmsc row (adaptive: the least); default {FIXED_SUBSTEPS} for the fixed rows "
        "and the add-on's default for the adaptive ones",
    )
    p.add_argument(
        "--quality",
        choices=("auto", "on", "off"),
        default="auto",
        help="the cmsc error against a converged bake (an extra slow bake per scene): auto = up to --quality-max "
        "vertices, on = every size, off = none",
    )
    p.add_argument("--quality-max", type=int, default=20_000, help="--quality auto: up to this many vertices")
    p.add_argument(
        "--direct-max", type=int, default=20_000, help="time DIRECT (the exact O(n²) sum) only up to this many vertices"
    )
    p.add_argument("--threads", type=int, default=0, help="the add-on's thread preference (0 = all cores)")
    p.add_argument(
        "--user-dir",
        default=os.path.join(ROOT, "target", "bench-blender-user"),
        help="scratch Blender user folder the add-on is installed into",
    )
    p.add_argument("--no-cloth", action="store_true", help="skip the Cloth reference bake")
    p.add_argument("--no-xpbd", action="store_true", help="skip Blender 5.2's XPBD cloth")
    p.add_argument(
        "--blender-5.2-python",
        dest="python52",
        default=os.path.join(ROOT, ".venv-blender-5.2", "bin", "python"),
        help="a Python with bpy 5.2 or later, for the XPBD cloth when this one has an older bpy",
    )
    args = p.parse_args()
    verts = [int(v) for v in args.verts.split(",")]
    frames = [int(f) for f in args.frames.split(",")]
    if len(frames) == 1:
        frames *= len(verts)
    if len(frames) != len(verts):
        p.error("--frames: one count, or one per --verts size")
    if args.adaptive is not None:
        modes = args.adaptive.split(",")
        if not modes or any(m not in ("on", "off") for m in modes):
            p.error("--adaptive: on, off or on,off")
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


def has_setting(name):
    """Whether the installed add-on's object settings (`Object.cmsc`) have `name`."""
    import bpy

    return name in bpy.types.Object.bl_rna.properties["cmsc"].fixed_type.properties


def grid(name, n):
    """A square grid of about n vertices, 2 m wide, with a vertex group "top" (its top row)
    and "all" (every vertex)."""
    import bpy

    cuts = max(1, round(n**0.5) - 1)
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=cuts, y_subdivisions=cuts, size=2.0, location=(0, 0, 1))
    obj = bpy.context.active_object
    obj.name = name
    top = [v.index for v in obj.data.vertices if v.co.y > 1.0 - 1e-6]
    obj.vertex_groups.new(name="top").add(top, 1.0, "REPLACE")
    obj.vertex_groups.new(name="all").add(list(range(len(obj.data.vertices))), 1.0, "REPLACE")
    return obj


def world_positions(scene, obj, frame=None):
    """(n, 3) world positions of `obj`'s evaluated mesh (at `frame`, else the current frame):
    what its bake or modifier plays."""
    import bpy
    import numpy as np

    if frame is not None:
        scene.frame_set(frame)
    mesh = obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).data
    co = np.empty(3 * len(mesh.vertices))
    mesh.vertices.foreach_get("co", co)
    return to_world(obj, co)


def to_world(obj, co):
    import numpy as np

    m = np.array(obj.matrix_world)
    return co.reshape(-1, 3) @ m[:3, :3].T + m[:3, 3]


def rest_positions(obj):
    """(n, 3) world positions of `obj`'s own mesh (the grid at rest, before any modifier)."""
    import numpy as np

    co = np.empty(3 * len(obj.data.vertices))
    obj.data.vertices.foreach_get("co", co)
    return to_world(obj, co)


def shape_report(scene, obj, frame):
    """At `frame`: the world-space extent (x, y, z, m) of `obj`'s evaluated mesh, to show that
    the cloths hang as 2 m cloths; the pins' drift, the farthest a vertex of the top row is from
    its rest position (mm); and the stretch, the most any edge is longer than at rest (%)."""
    import numpy as np

    x = world_positions(scene, obj, frame)
    rest = rest_positions(obj)
    out = {"extent": np.ptp(x, axis=0).tolist(), "pin_drift": None, "stretch": None}
    if len(x) != len(rest):  # the modifier changed the topology: no vertex to compare
        return out
    local_y = np.empty(3 * len(obj.data.vertices))
    obj.data.vertices.foreach_get("co", local_y)
    top = local_y.reshape(-1, 3)[:, 1] > 1.0 - 1e-6
    out["pin_drift"] = 1000 * float(np.linalg.norm(x[top] - rest[top], axis=1).max())
    edges = np.empty(2 * len(obj.data.edges), dtype=np.int32)
    obj.data.edges.foreach_get("vertices", edges)
    a, b = edges.reshape(-1, 2).T
    length = np.linalg.norm(x[a] - x[b], axis=1)
    rest_length = np.linalg.norm(rest[a] - rest[b], axis=1)
    out["stretch"] = 100 * float((length / rest_length).max() - 1)
    return out


def quality_frames(frames):
    """Frames after the start where the error is measured: 30 and 60 where the range has them,
    else the last."""
    return [k for k in QUALITY_FRAMES if k <= frames] or [frames]


def cmsc_grid(module, n, frames, cache_dir, method, far_field_interval, adaptive, substeps, iterations=None):
    """The benchmark's charged grid with the add-on enabled on it. `adaptive`: True/False sets
    Adaptive Substeps (None: the add-on has none); `substeps`/`iterations` None: the add-on's
    defaults."""
    import bpy

    obj = grid("cmsc", n)
    s = obj.cmsc
    s.enabled = True
    s.mass = TOTAL_MASS
    s.stiffness, s.bending_stiffness = 100.0, 10.0
    if adaptive is not None:
        s.adaptive_substeps = adaptive
    if substeps is not None:
        s.substeps = substeps
    if iterations is not None:
        s.iterations = iterations
    s.coulomb_method = method
    s.far_field_interval = far_field_interval
    s.pin_group = "top"
    s.frame_start, s.frame_end = 1, 1 + frames
    mode = {True: "adaptive", False: "fixed", None: "fixed"}[adaptive]
    s.cache_path = os.path.join(
        cache_dir, f"cmsc_{n}_{method}_{far_field_interval}_{mode}_{s.substeps}x{s.iterations}.pc2"
    )
    with bpy.context.temp_override(active_object=obj, object=obj):
        bpy.ops.cmsc.charge_group_add()
    s.charge_groups[0].vertex_group = "all"
    s.charge_groups[0].charge = TOTAL_CHARGE  # µC in all (the TOTAL distribution)
    return obj


def bake_cmsc(module, scene, obj):
    """Bakes `obj` as the Bake button does, timed: (job, collect, run, finish seconds)."""
    import bpy

    bake = sys.modules[module.__name__ + ".ui.bake"]
    run = sys.modules[module.__name__ + ".sim.bake_job"].run
    clock = time.perf_counter
    t0 = clock()
    objects, job = bake.collect(bpy.context, obj)
    t1 = clock()
    run(job)
    t2 = clock()
    bake.finish(scene, objects, job)
    t3 = clock()
    if job.error:
        print(f"cmsc bake of {len(obj.data.vertices)} vertices stopped: {job.error}", flush=True)
    return job, t1 - t0, t2 - t1, t3 - t2


def gravity_scene(user_dir, zip_path, frames):
    """Starts Blender with the scratch user folder `user_dir` (set before bpy starts: never the
    real profile), installs the add-on from `zip_path` and sets the scene to 24 fps, frames
    1..`frames`, gravity on; returns the add-on's module."""
    os.environ["BLENDER_USER_RESOURCES"] = user_dir
    import bpy

    module = install(zip_path)
    scene = bpy.context.scene
    scene.render.fps = 24
    scene.frame_start, scene.frame_end = 1, frames
    scene.cmsc.use_gravity = True
    return module


def settings_of(text):
    """The `Object.cmsc` settings {name: value} written "name=value;name=value"."""
    return dict(kv.split("=", 1) for kv in text.split(";") if kv)


def bake_frames(module, obj, settings, cache, frames):
    """Bakes `obj` over frames 1..`frames` with `settings` ({name: value} of `Object.cmsc` over
    the add-on's defaults) into the PC2 file `cache`; returns its positions (frames, n, 3), in
    the object's space. Exits where the bake stops."""
    import bpy
    import numpy as np

    s = obj.cmsc
    s.enabled = True
    s.frame_start, s.frame_end = 1, frames
    s.cache_path = cache
    for name, value in settings.items():
        setattr(s, name, type(getattr(s, name))(value))
    job, *_ = bake_cmsc(module, bpy.context.scene, obj)
    if job.error:
        sys.exit(f"the cmsc bake stopped: {job.error}")
    return np.fromfile(cache, dtype="<f4", offset=32).reshape(frames, -1, 3)


def steps_taken(job, s, adaptive):
    """(mean, most) steps per frame the bake took, or a text where only that is known."""
    steps = list(getattr(job, "steps", None) or [])
    if steps:
        return sum(steps) / len(steps), max(steps)
    if getattr(s, "baked_steps", ""):
        return s.baked_steps
    if not adaptive:
        return float(s.substeps), s.substeps
    return None


def bench_cmsc(module, scene, n, frames, cache_dir, method, far_field_interval, adaptive, substeps, quality):
    """One cmsc row: the timed bake, its quality, and the live preview's cost."""
    import bpy

    cache = sys.modules[module.__name__ + ".ui.cache"]
    obj = cmsc_grid(module, n, frames, cache_dir, method, far_field_interval, adaptive, substeps)
    s = obj.cmsc
    job, collect, run_time, finish = bake_cmsc(module, scene, obj)
    row = {
        "kind": "cmsc",
        "n": len(obj.data.vertices),
        "frames": frames,
        "method": method,
        "solver": "cmsc, "
        + coulomb_label(module, job)
        + (f", far field every {far_field_interval} steps" if far_field_interval > 1 else ""),
        "adaptive": bool(adaptive),
        "setting": (
            f"adaptive, {s.substeps}–{getattr(s, 'max_substeps', '?')} per frame, ≤ {s.iterations} iterations"
            if adaptive
            else f"fixed {s.substeps} per frame × {s.iterations} iterations"
        ),
        "substeps": s.substeps,
        "steps": steps_taken(job, s, adaptive),
        "collect": collect,
        "simulate": job.timings["simulate"],
        "write": job.timings["write"],
        "finish": finish,
        "run": run_time,
        "frames_done": job.frames_done,
    }
    row["total"] = collect + run_time + finish
    row["io"] = row["collect"] + row["write"] + row["finish"]
    row.update(shape_report(scene, obj, s.frame_end))
    if quality:
        row["at"] = {k: world_positions(scene, obj, 1 + k) for k in quality_frames(frames)}
        row["size"] = size_of(obj)

    # live preview: 10 frames of playback without a bake, at the default one substep per frame
    # ("preview") and at the bake's substeps ("preview_full")
    preview = sys.modules[module.__name__ + ".ui.preview"]
    cache.free_bake(obj)
    s.preview = True  # a mesh above the add-on's preview limit is enabled with it off
    for key, preview_substeps in (("preview", 1), ("preview_full", 0)):
        s.preview_substeps = preview_substeps
        scene.frame_set(1)
        t0 = time.perf_counter()
        for f in range(2, 12):
            scene.frame_set(f)
        row[key] = (time.perf_counter() - t0) / 10
        pt = preview.timings(obj)
        if pt is None:
            raise SystemExit(f"the preview of {n} vertices did not run: {preview.status(obj)}")
        row[key + "_sim"] = pt["simulate"] / 10
        row[key + "_io"] = (pt["read"] + pt["write"]) / 10
    s.enabled = False
    scene.frame_set(1)
    bpy.data.objects.remove(obj)
    return row


def size_of(obj):
    """The mesh's size: its bounding-box diagonal at rest (m)."""
    import numpy as np

    return float(np.linalg.norm(np.ptp(rest_positions(obj), axis=0)))


def converged(module, scene, n, frames, cache_dir, method, rows, adaptive_exists):
    """Bakes the converged reference of the scene of `rows` (cmsc rows of one size and Coulomb
    method) and sets each row's "error": {frames after the start: RMS vertex distance / size}."""
    import bpy
    import numpy as np

    most = max(max(r["substeps"], math.ceil(r["steps"][0]) if isinstance(r["steps"], tuple) else 0) for r in rows)
    substeps = CONVERGED_FACTOR * most
    last = max(quality_frames(frames))  # baked only as far as it is compared
    obj = cmsc_grid(
        module,
        n,
        last,
        cache_dir,
        method,
        1,
        False if adaptive_exists else None,
        substeps,
        CONVERGED_ITERATIONS,
    )
    print(f"  converged reference: {substeps} substeps × {CONVERGED_ITERATIONS} iterations ...", flush=True)
    job, collect, run_time, finish = bake_cmsc(module, scene, obj)
    ref = {"substeps": substeps, "frames": last, "time": collect + run_time + finish}
    ref.update(error=job.error, method=coulomb_label(module, job))
    if job.frames_done == last + 1:
        at = {k: world_positions(scene, obj, 1 + k) for k in quality_frames(frames)}
        for r in rows:
            if r["frames_done"] == frames + 1:
                r["error"] = {
                    k: float(np.sqrt(np.mean(np.sum((r["at"][k] - at[k]) ** 2, axis=1)))) / r["size"] for k in at
                }
    obj.cmsc.enabled = False
    scene.frame_set(1)
    bpy.data.objects.remove(obj)
    return ref


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
    """Blender's Cloth on the grid: {"time", "baked", "blender", "extent", "pin_drift", "stretch"}."""
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
    out = {"time": time.perf_counter() - t0, "baked": cache.is_baked, "blender": bpy.app.version_string}
    out.update(shape_report(scene, obj, cache.frame_end))
    bpy.data.objects.remove(obj)
    return out


def bench_xpbd(args, scene, n, frames, cloth):
    """Blender 5.2's XPBD cloth on the grid, and the classic Cloth of the same process:
    {"cloth", "xpbd"} or {"skipped": why}. In this process where it runs bpy 5.2 or later
    (`cloth`: this process's Cloth, None to bake it), else in a child under --blender-5.2-python."""
    import bpy

    import xpbd_cloth

    if bpy.app.version >= (5, 2, 0):
        why = xpbd_cloth.unavailable()
        if why:
            return {"skipped": why}
        if cloth is None and not args.no_cloth:
            cloth = bench_cloth(scene, n, frames)
        return {"cloth": cloth, "xpbd": xpbd_cloth.bench_xpbd(scene, n, frames)}
    if not os.path.isfile(args.python52):
        return {"skipped": f"no bpy 5.2 Python at {args.python52} (--blender-5.2-python)"}
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "xpbd.json")
        cmd = [args.python52, xpbd_cloth.__file__, "--verts", str(n), "--frames", str(frames), "--json", out]
        cmd += ["--user-dir", args.user_dir + "-5.2"] + (["--no-cloth"] if args.no_cloth else [])
        done = subprocess.run(cmd, cwd=ROOT)
        if done.returncode != 0 or not os.path.isfile(out):
            return {"skipped": f"the bpy 5.2 child ({args.python52}) failed with exit status {done.returncode}"}
        with open(out) as f:
            return json.load(f)


def dims(extent):
    return " × ".join(f"{e:.2f}" for e in extent) if extent is not None else "—"


def num(value, spec):
    return "—" if value is None else format(value, spec)


def machine():
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{model}, {os.cpu_count()} logical cores, {platform.system()} {platform.release()}"


def steps_text(steps):
    if steps is None:
        return "—"
    if isinstance(steps, str):
        return steps
    if steps[0] == steps[1]:
        return f"{steps[1]} / {steps[1]}"
    return f"{steps[0]:.1f} / {steps[1]}"


def table_row(r):
    """A markdown table row of a cmsc row or an XPBD row."""
    done = r["frames_done"] - (1 if r["kind"] == "cmsc" else 0)  # cmsc counts the start frame
    frames = f"{r['frames']}" if done == r["frames"] else f"{done} of {r['frames']}"
    ms = 1000 * r["total"] / max(1, done)
    cloth = r.get("cloth")
    cloth_time = cloth_ms = ratio = "—"
    if cloth:
        cloth_time = f"{cloth['time']:.1f}" + ("" if cloth["baked"] else " (bake incomplete)")
        cloth_time += f" ({cloth['blender']})" if r["kind"] == "xpbd" else ""
        cloth_ms = f"{1000 * cloth['time'] / r['frames']:.0f}"
        ratio = f"{ms / (1000 * cloth['time'] / r['frames']):.2f}"
    error = r.get("error")
    error = " / ".join(f"{100 * e:.2f} % at {k}" for k, e in error.items()) if error else "—"
    if r["kind"] == "cmsc":
        sim = (
            f"| {r['simulate']:.1f} | {r['io']:.2f} | {100 * r['io'] / r['total']:.1f} % "
            f"| {r['collect']:.2f} / {r['write']:.2f} / {r['finish']:.3f} "
        )
        preview = (
            f"| {1000 * r['preview']:.0f} ({1000 * r['preview_sim']:.0f} + {1000 * r['preview_io']:.1f}) "
            f"| {1000 * r['preview_full']:.0f} "
        )
    else:
        sim = "| — | — | — | — "
        preview = "| — | — "
    c = cloth or {}
    return (
        f"| {r['n']:,} | {frames} | {r['solver']} | {r['setting']} | {steps_text(r.get('steps'))} "
        f"| {r['total']:.1f} {sim}| {ms:.0f} | {ratio} {preview}| {cloth_time} | {cloth_ms} "
        f"| {num(r['pin_drift'], '.2f')} / {num(c.get('pin_drift'), '.2f')} "
        f"| {num(r['stretch'], '.1f')} / {num(c.get('stretch'), '.1f')} | {error} "
        f"| {dims(r['extent'])} / {dims(c.get('extent'))} |"
    )


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
    adaptive_exists = has_setting("adaptive_substeps")
    modes = args.adaptive.split(",") if args.adaptive else ["on", "off"]
    notes = []
    if not adaptive_exists:
        if "on" in modes:
            notes.append("adaptive substeps: not in this add-on (no `Object.cmsc.adaptive_substeps`): fixed rows only")
        modes = ["off"]
    load_before = os.getloadavg()
    rows = []
    refs = []
    with tempfile.TemporaryDirectory() as cache_dir:
        for n, f in zip(verts, frames):
            quality = args.quality == "on" or (args.quality == "auto" and n <= args.quality_max)
            seen = set()
            cloth = None
            for method in args.methods.split(","):
                runs = method_that_runs(module, method, round(n**0.5) ** 2, prefs.use_gpu).name
                if runs in seen:  # e.g. AUTO runs DDEF at this size: timed once
                    continue
                if runs == "DIRECT" and n > args.direct_max:
                    continue
                seen.add(runs)
                intervals = [int(k) for k in args.far_intervals.split(",")] if runs.startswith("DDEF") else [1]
                scene_rows = []
                for k in intervals:
                    for mode in modes:
                        adaptive = (mode == "on") if adaptive_exists else None
                        substeps = args.substeps if args.substeps or adaptive else FIXED_SUBSTEPS
                        print(
                            f"cmsc: {n} vertices, {f} frames, {method}, far field interval {k}, {mode} ...", flush=True
                        )
                        row = bench_cmsc(module, scene, n, f, cache_dir, method, k, adaptive, substeps, quality)
                        print(f"  cmsc {row['total']:.1f} s (simulate {row['simulate']:.1f} s)", flush=True)
                        if not args.no_cloth and cloth is None:
                            print(f"cloth: {n} vertices, {f} frames ...", flush=True)
                            cloth = bench_cloth(scene, n, f)
                            print(f"  cloth {cloth['time']:.1f} s", flush=True)
                        row["cloth"] = cloth
                        rows.append(row)
                        scene_rows.append(row)
                if quality:
                    ref = converged(module, scene, n, f, cache_dir, method, scene_rows, adaptive_exists)
                    refs.append((n, f, ref))
                    for r in scene_rows:
                        r.pop("at", None)
            if not args.no_xpbd:
                print(f"xpbd: {n} vertices, {f} frames ...", flush=True)
                x = bench_xpbd(args, scene, n, f, cloth)
                if "skipped" in x:
                    notes.append(f"XPBD cloth at {n:,} vertices skipped: {x['skipped']}")
                else:
                    xr = x["xpbd"]
                    xr.update(
                        kind="xpbd",
                        frames=f,
                        solver=f"Blender {x['blender'] if 'blender' in x else bpy.app.version_string} "
                        "Geometry Nodes XPBD (Cloth Dynamics asset)",
                        setting=xr["settings"],
                        total=xr["time"],
                        cloth=x.get("cloth"),
                    )
                    print(f"  xpbd {xr['time']:.1f} s", flush=True)
                    rows.append(xr)
    load_after = os.getloadavg()
    threads = args.threads or os.cpu_count()
    for n, f, ref in refs:
        notes.append(
            f"converged reference at {n:,} vertices ({f} frames; baked {ref['frames']}), {ref['method']}: "
            f"{ref['substeps']} substeps × {CONVERGED_ITERATIONS} iterations, adaptive off, far field every step "
            f"({ref['time']:.1f} s, not in the table)" + (f"; it stopped: {ref['error']}" if ref["error"] else "")
        )
    lines = [
        "# Bake benchmark: cmsc add-on vs Blender Cloth and Blender 5.2's XPBD cloth",
        "",
        f"- Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- Machine: {machine()}; load average {load_before[0]:.1f} before, {load_after[0]:.1f} after "
        "(shared machine: other jobs ran alongside)",
        f"- Blender {bpy.app.version_string} (bpy from PyPI, background), libcmsc {lib.cmsc_version().decode()}, "
        f"{threads} library threads",
        f"- Mesh: square grid 2 m wide, top row pinned, gravity; cmsc: {TOTAL_MASS:g} kg in all, springs 100 / 10 N/m, "
        f"every vertex charged, {TOTAL_CHARGE:g} µC in all, substeps and iterations as listed (adaptive: the "
        "add-on's defaults), Coulomb as listed (the method that ran, read back from the library; "
        "DDEF with its adaptive grid, the add-on's default); "
        "Cloth at its default quality (5 steps per frame), collision and self-collision off; XPBD: the "
        'Essentials asset "Cloth Dynamics (Experimental)" on a Geometry Nodes modifier, Pin Group = the top row, '
        "gravity (0, 0, −9.81), 5 substeps, its other inputs at their defaults, timed by frame_set through "
        "the range (its Cloth column: the classic Cloth in the same bpy 5.2 process)",
        "- Blender I/O = collect (mesh, frame_set through the range) + PC2 writes + Mesh Cache modifier; "
        "× Cloth = ms per frame over Cloth's of the same process",
        "- Pin drift: the farthest a top-row vertex is from rest at the last frame; stretch: the longest edge over "
        "its rest length at the last frame; error: RMS vertex distance from the converged cmsc bake (below) "
        "relative to the bounding-box diagonal at rest, at (frames after the start)",
    ]
    lines += [f"- Note: {note}" for note in notes]
    lines += [
        "",
        "| vertices | frames | solver | substeps | steps per frame (mean / most) | total (s) | simulation (s) "
        "| Blender I/O (s) | I/O share | collect / write / finish (s) | ms per frame | × Cloth "
        "| preview ms/frame, 1 substep (sim + I/O) | preview ms/frame, the bake's substeps | Cloth bake (s) "
        "| Cloth ms per frame | pin drift (mm), this / Cloth | max stretch (%), this / Cloth "
        "| error vs converged | extent at the last frame (m), this / Cloth |",
        "|---:|---:|---|---|---:|---:|---:|---:|---:|---|---:|---:|---|---:|---:|---:|---|---|---|---|",
    ]
    lines += [table_row(r) for r in rows]
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    import addon_utils

    addon_utils.disable("cmsc", default_set=True)


if __name__ == "__main__":
    main()
