"""The modal bake, driven as Blender's event loop would drive it (background mode has no event
loop): timer events while the worker runs, Esc to cancel, the result written on this thread."""

import os
import time

import bpy
import numpy as np
import pytest

from scenes import Reports, addon_module, charged_sphere, evaluated_coords, key_charge, read_pc2


@pytest.fixture
def bake():
    return addon_module("ui.bake")


@pytest.fixture
def activity():
    return addon_module("ui.activity")


def drive(run, esc_after=None, timeout=120.0):
    """Sends TIMER events (and one ESC once `esc_after` frames are done) until the worker ends;
    returns how many events it took."""
    events, t0 = 0, time.monotonic()
    sent_esc = False
    while True:
        event = "TIMER"
        if esc_after is not None and not sent_esc and run.job.frames_done >= esc_after:
            event, sent_esc = "ESC", True
        events += 1
        if run.update(event):
            return events
        assert time.monotonic() - t0 < timeout, "the bake never finished"
        time.sleep(0.005)


def test_esc_keeps_the_frames_baked_so_far(scene, bake, activity):
    sc, tmp = scene
    obj = charged_sphere(tmp, frames=400, subdivisions=3)
    run = bake.ModalBake(bpy.context, obj)
    assert activity.bake_job(obj) is run.job  # the panel draws this job's progress
    drive(run, esc_after=3)
    reports = Reports()
    assert run.finish(reports) == {"CANCELLED"}
    assert activity.bake_job(obj) is None
    done = run.job.frames_done
    assert 3 <= done < 401
    assert run.job.error == f"cancelled at frame {done + 1}"
    assert f"kept {done} baked frames" in reports.text("WARNING")
    cache = read_pc2(obj.cmsc.cache_path)  # asserts the header's count matches the data
    assert cache.shape[0] == done
    assert obj.modifiers[0].type == "MESH_CACHE" and obj.modifiers[0].filepath == obj.cmsc.cache_path
    assert not obj.cmsc.cache_outdated
    sc.frame_set(done)  # the last baked frame plays from the cache
    np.testing.assert_allclose(evaluated_coords(obj), cache[done - 1], rtol=0, atol=1e-6)


def test_a_diverged_bake_stops_naming_the_frame(scene, bake):
    sc, tmp = scene
    obj = charged_sphere(tmp, charge=0.0, frames=10)
    key_charge(obj.cmsc.charge_groups[0], [(1, 0.0), (5, 1e200)], interpolation="CONSTANT")
    run = bake.ModalBake(bpy.context, obj)
    drive(run)
    reports = Reports()
    assert run.finish(reports) == {"CANCELLED"}
    error = reports.text("ERROR")
    assert "diverged at frame 5" in error and "substeps" in error and "kept 4 baked frames" in error
    cache = read_pc2(obj.cmsc.cache_path)
    assert cache.shape[0] == 4 and np.isfinite(cache).all()
    assert obj.modifiers[0].type == "MESH_CACHE"


def test_a_finished_modal_bake_equals_the_script_bake(scene, bake):
    sc, tmp = scene
    obj = charged_sphere(tmp, frames=6)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    expected = read_pc2(obj.cmsc.cache_path)
    run = bake.ModalBake(bpy.context, obj)
    assert drive(run) >= 1
    reports = Reports()
    assert run.finish(reports) == {"FINISHED"} and "baked 6 frames" in reports.text("INFO")
    np.testing.assert_array_equal(read_pc2(obj.cmsc.cache_path), expected)
    assert [m.type for m in obj.modifiers].count("MESH_CACHE") == 1


def test_invoke_in_background_mode_runs_to_the_end(scene, activity):
    sc, tmp = scene
    obj = charged_sphere(tmp, frames=5)
    assert bpy.app.background  # no event loop would ever call modal()
    assert bpy.ops.cmsc.bake("INVOKE_DEFAULT") == {"FINISHED"}
    assert activity.bake_job(obj) is None
    assert read_pc2(obj.cmsc.cache_path).shape[0] == 5
    assert os.path.isfile(obj.cmsc.cache_path)
