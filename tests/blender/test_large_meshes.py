"""Large meshes keep the interface alive (issue 27): the live preview builds its simulation on a
worker thread (the interface waits at most `START_WAIT`, with a status line after), and a newly
enabled mesh above `PREVIEW_DEFAULT_MAX_VERTICES` starts with Live Preview off, saying why."""

import time

import bpy

from scenes import addon_module, charged_sphere


def grid(vertices_per_side, name="Sheet"):
    n = vertices_per_side - 1
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=n, y_subdivisions=n, size=2.0)
    obj = bpy.context.active_object
    obj.name = name
    return obj


def test_a_large_mesh_starts_with_the_preview_off_and_says_why(scene):
    sc, tmp = scene
    preview, activity = addon_module("ui.preview"), addon_module("ui.activity")
    side = int(preview.PREVIEW_DEFAULT_MAX_VERTICES**0.5) + 2
    big = grid(side)
    big.cmsc.enabled = True
    assert not big.cmsc.preview
    assert "Live Preview is off for a mesh of" in activity.status(big)[1]
    big.cmsc.enabled = False
    big.cmsc.preview = True  # the artist's choice is kept
    big.cmsc.enabled = True
    assert big.cmsc.preview
    small = charged_sphere(tmp, frames=3)
    assert small.cmsc.preview


def test_the_preview_is_built_off_the_main_thread(scene, monkeypatch):
    sc, tmp = scene
    preview, activity = addon_module("ui.preview"), addon_module("ui.activity")
    monkeypatch.setattr(preview, "start_wait", lambda: 0.0)  # as the interface does, without waiting
    obj = grid(150)  # 22,500 vertices: building its simulation takes a while
    obj.cmsc.enabled = True
    obj.cmsc.frame_start, obj.cmsc.frame_end = 1, 5
    sc.frame_set(1)
    state = activity.preview(obj)
    assert state is not None and not state.ready, "the main thread did not wait for the build"
    assert "Preview starting: building the simulation of 22,500 vertices" in activity.status(obj)[1]
    deadline = time.monotonic() + 300
    while not state.ready and time.monotonic() < deadline:
        time.sleep(0.05)
    assert state.ready and state.failure is None
    sc.frame_set(2)  # now it steps
    assert state.frame == 2 and preview.KEY_NAME in obj.data.shape_keys.key_blocks
    assert activity.status(obj) is None or "starting" not in activity.status(obj)[1]


def test_a_preview_ended_while_it_is_built_leaves_nothing(scene, monkeypatch):
    sc, tmp = scene
    preview, activity = addon_module("ui.preview"), addon_module("ui.activity")
    monkeypatch.setattr(preview, "start_wait", lambda: 0.0)
    obj = grid(150)
    obj.cmsc.enabled = True
    sc.frame_set(obj.cmsc.frame_start)
    state = activity.preview(obj)
    obj.cmsc.enabled = False  # ends it mid-build
    state._built.wait(300)
    assert state.sim is None and activity.preview(obj) is None
