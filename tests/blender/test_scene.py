"""The scene simulates together (issue 18): the simulated objects of a scene bake in one run,
Coulomb forces act across them, each keeps its own settings and cache; a render farm bakes a
saved file from the command line."""

import os
import subprocess
import sys
import textwrap

import bpy
import numpy as np
import pytest

from conftest import deprecations
from scenes import addon_module, charged_sphere, draw, evaluated_coords, read_pc2


def centroid(path, frame):
    return read_pc2(path)[frame].mean(axis=0)


def two_spheres(tmp, charge=0.05, frames=12):
    """Two charged spheres 1.2 m apart along x (the same sign), no gravity."""
    left = charged_sphere(tmp, "left", charge=charge, frames=frames)
    left.location = (-0.6, 0.0, 0.0)
    right = charged_sphere(tmp, "right", charge=charge, frames=frames)
    right.location = (0.6, 0.0, 0.0)
    bpy.context.view_layer.update()
    return left, right


def test_charged_objects_baked_together_push_each_other_apart(scene):
    sc, tmp = scene
    left, right = two_spheres(tmp)
    bpy.context.view_layer.objects.active = left
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    assert os.path.exists(left.cmsc.cache_path) and os.path.exists(right.cmsc.cache_path)
    assert left.cmsc.cache_path != right.cmsc.cache_path
    # object space: the left sphere moves to -x, the right one to +x
    assert centroid(left.cmsc.cache_path, -1)[0] < -0.01
    assert centroid(right.cmsc.cache_path, -1)[0] > 0.01
    assert abs(centroid(left.cmsc.cache_path, -1)[0] + centroid(right.cmsc.cache_path, -1)[0]) < 1e-4
    # Free Bake frees the joint bake
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    assert not any(m.type == "MESH_CACHE" for o in (left, right) for m in o.modifiers)
    assert not os.path.exists(left.cmsc.cache_path) and not os.path.exists(right.cmsc.cache_path)


def test_each_alone_does_not_move(scene):
    sc, tmp = scene
    left, right = two_spheres(tmp)
    right.cmsc.enabled = False
    bpy.context.view_layer.objects.active = left
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    assert np.abs(centroid(left.cmsc.cache_path, -1)).max() < 1e-5
    assert not os.path.exists(right.cmsc.cache_path)


def test_objects_with_different_settings_bake_at_the_finest_step_and_say_so(scene):
    sc, tmp = scene
    panels = addon_module("ui.panels")
    left, right = two_spheres(tmp)
    left.cmsc.substeps, right.cmsc.substeps = 2, 5
    left.cmsc.frame_end, right.cmsc.frame_end = 12, 8
    bpy.context.view_layer.objects.active = left
    text = draw(panels.CMSC_PT_main).text()
    assert "Bakes together with right: frames 1–12, 5–32 adaptive substeps, up to 6 iterations" in text, text
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    assert len(read_pc2(left.cmsc.cache_path)) == len(read_pc2(right.cmsc.cache_path)) == 12


def test_a_setting_of_one_object_marks_the_joint_bake_outdated(scene):
    sc, tmp = scene
    left, right = two_spheres(tmp, frames=4)
    bpy.context.view_layer.objects.active = left
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    right.cmsc.stiffness = 40.0
    assert left.cmsc.cache_outdated and right.cmsc.cache_outdated


FARM = textwrap.dedent(
    """
    import os
    import sys
    import traceback
    import bpy  # noqa: I001
    import addon_utils

    addon_utils.enable("cmsc", default_set=True, handle_error=None)
    code = 1  # as `--python-exit-code 1` makes Blender exit when the bake raises
    try:
        bpy.ops.wm.open_mainfile(filepath=sys.argv[1])
        bpy.ops.cmsc.bake()
        bpy.ops.wm.save_mainfile()
        code = 0
    except Exception:
        traceback.print_exc()
    finally:
        addon_utils.disable("cmsc", default_set=True)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)  # the bpy module of Blender 4.2 crashes at interpreter exit (conftest.py)
    """
)

#: A render node without the add-on: opens the baked file, prints each mesh's evaluated
#: vertices at a frame (what a render of that frame shows).
RENDER = textwrap.dedent(
    """
    import json
    import os
    import sys
    import bpy

    bpy.ops.wm.open_mainfile(filepath=sys.argv[1])
    bpy.context.scene.frame_set(int(sys.argv[2]))
    dg = bpy.context.evaluated_depsgraph_get()
    out = {}
    for o in bpy.context.scene.objects:
        if o.type == "MESH":
            me = o.evaluated_get(dg).data
            out[o.name] = [tuple(v.co) for v in me.vertices]
    print("COORDS " + json.dumps(out), flush=True)
    os._exit(0)  # the bpy module of Blender 4.2 crashes at interpreter exit (conftest.py)
    """
)


def run_script(script, *args):
    return subprocess.run(
        [sys.executable, "-c", script, *map(str, args)], capture_output=True, text=True, timeout=600, env=os.environ
    )


@pytest.mark.parametrize("diverges", [False, True], ids=["bakes", "fails"])
def test_a_farm_bakes_a_saved_file_from_the_command_line(tmp_path, diverges):
    """What `blender -b scene.blend --python-exit-code 1 --python-expr "import bpy;
    bpy.ops.cmsc.bake()"` does, with the bpy module: a fresh process opens the saved file and
    bakes every simulated object, one progress line per frame, exit status 0; a bake that fails
    exits non-zero. Nothing is selected: the farm does not depend on the active object."""
    bpy.ops.wm.read_homefile(use_empty=True)
    try:
        sc = bpy.context.scene
        sc.cmsc.use_gravity = False
        left, right = two_spheres(tmp_path, charge=1e6 if diverges else 0.05, frames=6)
        for o in (left, right):
            o.cmsc.cache_path = f"//cache/{o.name}.pc2"
        bpy.ops.object.empty_add()  # the active object is not a simulated one
        blend = tmp_path / "farm.blend"
        assert bpy.ops.wm.save_as_mainfile(filepath=str(blend)) == {"FINISHED"}
    finally:
        bpy.ops.wm.read_homefile(use_empty=True)
    proc = run_script(FARM, blend)
    out = proc.stdout + proc.stderr
    assert deprecations(out) == []
    if diverges:
        assert proc.returncode != 0 and "diverged" in out, out[-3000:]
        return
    assert proc.returncode == 0, out[-3000:]
    assert [f"cmsc: baked frame {f} ({f}/6)" in out for f in range(2, 7)] == [True] * 5, out[-3000:]
    for name in ("left", "right"):
        assert len(read_pc2(tmp_path / "cache" / f"{name}.pc2")) == 6


@pytest.mark.parametrize("path", ["//cache/{}.pc2", ""], ids=["set path", "default path"])
def test_a_farm_job_saves_what_the_render_needs_and_runs_again(tmp_path, path):
    """README's farm command (bake, then save) in fresh processes: a file never baked locally
    renders the baked motion on a node without the add-on, and the same job queued again
    bakes again (its own cache: replaced, not refused)."""
    import json

    bpy.ops.wm.read_homefile(use_empty=True)
    try:
        bpy.context.scene.cmsc.use_gravity = False
        left, right = two_spheres(tmp_path, charge=0.05, frames=6)
        for o in (left, right):
            o.cmsc.cache_path = path.format(o.name)
        blend = tmp_path / "farm.blend"
        assert bpy.ops.wm.save_as_mainfile(filepath=str(blend)) == {"FINISHED"}
    finally:
        bpy.ops.wm.read_homefile(use_empty=True)
    for attempt in range(2):
        proc = run_script(FARM, blend)
        assert proc.returncode == 0, (attempt, (proc.stdout + proc.stderr)[-3000:])
        assert deprecations(proc.stdout + proc.stderr) == []
        caches = sorted((tmp_path / ("cache" if path else "cmsc_cache")).glob("*.pc2"))
        assert len(caches) == 2, caches  # the second run replaced the first run's files
        render = run_script(RENDER, blend, 5)
        assert render.returncode == 0, render.stderr[-3000:]
        line = next(x for x in render.stdout.splitlines() if x.startswith("COORDS "))
        coords = json.loads(line[len("COORDS "):])
        for name in ("left", "right"):
            (cache,) = [c for c in caches if c.name.startswith(name)]
            baked = read_pc2(cache)
            np.testing.assert_allclose(np.array(coords[name]), baked[4], rtol=0, atol=1e-5)
            assert np.abs(baked[4] - baked[0]).max() > 1e-4  # it moved: the render shows the bake


def test_the_live_preview_plays_the_objects_together_as_the_bake(scene):
    sc, tmp = scene
    preview = addon_module("ui.preview")
    left, right = two_spheres(tmp, frames=6)
    left.cmsc.preview_substeps = right.cmsc.preview_substeps = 0  # the bake's: the preview equals it
    played = {}
    for f in range(1, 7):
        sc.frame_set(f)
        played[f] = {o.name: evaluated_coords(o) for o in (left, right)}
    assert preview.is_running(left) and preview.is_running(right)
    assert played[6]["left"][:, 0].mean() < -0.005 and played[6]["right"][:, 0].mean() > 0.005, "pushed apart"
    bpy.context.view_layer.objects.active = right
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    assert not preview.is_running(left) and left.data.shape_keys is None
    for o in (left, right):
        cache = read_pc2(o.cmsc.cache_path)
        for f in range(1, 7):
            np.testing.assert_allclose(played[f][o.name], cache[f - 1], rtol=0, atol=2e-6, err_msg=f"{o.name} {f}")


def test_the_preview_restarts_when_the_scene_gains_or_loses_an_object(scene):
    sc, tmp = scene
    preview = addon_module("ui.preview")
    left, right = two_spheres(tmp)
    right.cmsc.enabled = False
    for f in (1, 2, 3):
        sc.frame_set(f)
    assert preview.is_running(left) and not preview.is_running(right)
    alone = evaluated_coords(left)
    assert np.abs(alone[:, 0].mean()) < 1e-6, "alone it stays"
    right.cmsc.enabled = True
    sc.frame_set(4)
    assert not preview.is_running(left) and left.data.shape_keys is None, "reset: the scene changed"
    assert "play from frame 1" in preview.status(left)[1] or "restarts at frame 1" in preview.status(left)[1]
    # with Live Preview off, an object still acts on the others but is not moved
    right.cmsc.preview = False
    for f in (1, 2, 3):
        sc.frame_set(f)
    assert preview.is_running(left) and right.data.shape_keys is None
    assert evaluated_coords(left)[:, 0].mean() < -1e-4, "pushed by the unshown right sphere"
