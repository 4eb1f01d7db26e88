"""Add-on preferences: threads, GPU with a visible fallback, library version and ABI status."""

import os
import shutil

import bpy
import pytest

from scenes import Reports, addon_module, charged_sphere, draw, read_pc2


@pytest.fixture
def mods():
    names = ("ui.preferences", "ui.panels", "ui.bake", "ui.inputs", "sim._native", "sim.methods")
    return {name: addon_module(name) for name in names}


@pytest.fixture
def prefs(mods):
    p = mods["ui.preferences"].get()
    yield p
    p.threads = 0
    p.use_gpu = False


def prefs_layout(mods, prefs):
    from scenes import Layout

    proxy = type("Prefs", (), {"layout": Layout(), "threads": prefs.threads, "use_gpu": prefs.use_gpu})()
    mods["ui.preferences"].CMSC_AddonPreferences.draw(proxy, bpy.context)
    return proxy.layout


def test_preferences_show_the_library_version_and_abi(mods, prefs):
    assert prefs is not None and prefs.threads == 0 and prefs.use_gpu is False
    lib = mods["sim._native"].load(mods["sim._native"].addon_library_path())
    layout = prefs_layout(mods, prefs)
    ok, line = mods["ui.preferences"].library_status()
    assert ok and f"libcmsc {lib.cmsc_version().decode()}" in line and "C ABI 1" in line
    assert layout.text().startswith(line) and layout.icon_of(line) == "CHECKMARK"


def test_threads_set_the_pool_size_and_say_when_it_applies(scene, mods, prefs):
    sc, tmp = scene
    native = mods["sim._native"]
    charged_sphere(tmp, frames=2)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}  # the library's pool has started
    started, running = native.pool_threads()
    assert started
    prefs.threads = 1 if running != "1" else 2
    assert os.environ[native.THREADS_ENV] == str(prefs.threads)
    ok, line = mods["ui.preferences"].threads_status(prefs)
    assert not ok and line.startswith("Restart Blender to apply")
    assert line in prefs_layout(mods, prefs).text()
    prefs.threads = 0
    assert os.environ.get(native.THREADS_ENV) == running
    ok, line = mods["ui.preferences"].threads_status(prefs)
    assert ok and ("runs on all" in line or "runs with" in line)


def test_gpu_preference_falls_back_visibly(scene, mods, prefs):
    sc, tmp = scene
    obj = charged_sphere(tmp, frames=3)
    native, methods = mods["sim._native"], mods["sim.methods"]
    M = methods.CoulombMethod
    problem = methods.gpu_problem(native.addon_library_path(), M.DIRECT_GPU)
    # AUTO goes to the library as AUTO_CPU with the preference off, as AUTO with it on
    params, note = mods["ui.inputs"].params(sc, obj.cmsc)
    assert params.coulomb == M.AUTO_CPU and note == ""
    prefs.use_gpu = True
    params, note = mods["ui.inputs"].params(sc, obj.cmsc)
    assert params.coulomb == M.AUTO
    assert note == ("" if problem is None else f"GPU unavailable ({problem}); AUTO chooses a CPU method")
    # an explicit CPU method is upgraded to its GPU variant, and falls back visibly
    obj.cmsc.coulomb_method = "DIRECT"
    params, note = mods["ui.inputs"].params(sc, obj.cmsc)
    reports = Reports()
    assert mods["ui.bake"].bake(bpy.context, obj, reports)[1].frames_done == 3
    assert read_pc2(obj.cmsc.cache_path).shape[0] == 3
    panel_text = draw(mods["ui.panels"].CMSC_PT_main).text()
    prefs_text = prefs_layout(mods, prefs).text()
    if problem is None:  # a CUDA device: the GPU method runs, nothing to report
        assert params.coulomb == M.DIRECT_GPU and note == ""
        assert "GPU Coulomb methods available" in prefs_text
        return
    assert params.coulomb == M.DIRECT
    assert note.startswith("DIRECT_GPU unavailable (") and note.endswith("running DIRECT on the CPU")
    assert problem in note
    assert note in reports.text("WARNING")
    assert note in panel_text
    assert "GPU unavailable: " + problem in prefs_text
    # an explicit GPU method falls back the same way, with the preference off too
    prefs.use_gpu = False
    obj.cmsc.coulomb_method = "DDEF_GPU"
    params, note = mods["ui.inputs"].params(sc, obj.cmsc)
    assert params.coulomb == M.DDEF and "DDEF_GPU unavailable" in note
    assert note in draw(mods["ui.panels"].CMSC_PT_main).text()


def test_missing_or_wrong_library_is_reported_and_disables_baking(scene, mods, monkeypatch, tmp_path):
    sc, tmp = scene
    charged_sphere(tmp, frames=2)
    native, preferences, panels = mods["sim._native"], mods["ui.preferences"], mods["ui.panels"]
    good = native.addon_library_path()
    monkeypatch.setattr(native, "addon_library_path", lambda: str(tmp_path / "nowhere" / "libcmsc.so"))
    ok, line = preferences.library_status()
    assert not ok and "not found" in line
    assert draw(panels.CMSC_PT_main).text() == "cmsc library unavailable: " + line
    assert not bpy.ops.cmsc.bake.poll()
    layout = prefs_layout(mods, preferences.get())
    assert layout.text().startswith(line) and layout.icon_of(line) == "ERROR"

    copy = tmp_path / "abi" / "libcmsc.so"
    copy.parent.mkdir()
    shutil.copy(good, copy)
    monkeypatch.setattr(native, "addon_library_path", lambda: str(copy))
    monkeypatch.setattr(native, "ABI_VERSION", native.ABI_VERSION + 1)
    ok, line = preferences.library_status()
    assert not ok and f"this add-on needs ABI {native.ABI_VERSION}" in line
    assert line in draw(panels.CMSC_PT_main).text()
    assert not bpy.ops.cmsc.bake.poll()
    monkeypatch.undo()
    assert bpy.ops.cmsc.bake.poll()
