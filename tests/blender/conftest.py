"""Real Blender (the `bpy` module from PyPI): installs the built add-on zip as a user would,
enables `cmsc`, and unregisters it before the interpreter exits (bpy hangs otherwise).

BLENDER_USER_RESOURCES must point to a scratch folder before bpy is imported (the Makefile sets
it), so the installation never touches a real user profile.

The same suite runs on every Blender release of the matrix (Makefile: BLENDER_RELEASES): whole on
the LTS releases, the tests in SMOKE (`-m smoke`) on the others. A DeprecationWarning that Blender
raises while the add-on's code (or these tests' own) runs fails the test: it names an API the next
release removes. Subprocesses inherit PYTHONWARNINGS so that they print theirs, which the tests
that start them check with `deprecations()`."""

import os
import re
import sys
import warnings

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HERE = os.path.dirname(os.path.abspath(__file__))

#: The smoke subset, one place: what an artist does on any release. Install the zip as a user
#: would and enable it (the session fixture below, and the extension flow), a joint bake, with
#: a Collision object too, keyframed charges baked to PC2 and to Shape Keys, Free Bake, the live
#: preview over a few frames, saving and reopening files (cache paths, versioning of old files,
#: the preview's key kept out), the farm command line, fitting charges to a shape key (broke on
#: 5.0: new shape keys at value 1), and disabling.
SMOKE = [
    "test_extension_install.py::test_extension_install_enables_and_bakes",
    "test_bake.py::test_contract_names_are_registered",
    "test_bake.py::test_keyframed_charge_changes_the_motion",
    "test_bake.py::test_free_bake_removes_modifier_and_file",
    "test_bake.py::test_a_keyframed_charge_bakes_to_shape_keys_and_frees",
    "test_scene.py::test_charged_objects_baked_together_push_each_other_apart",
    "test_scene.py::test_a_farm_bakes_a_saved_file_from_the_command_line",
    "test_contact.py::test_a_cloth_dropped_on_a_cube_rests_on_it",
    "test_contact.py::test_a_joint_bake_of_charged_objects_lands_on_a_collider",
    "test_feedback.py::test_freeing_a_shape_key_bake_is_silent_and_complete",
    "test_feedback.py::test_freeing_keeps_the_users_own_shape_key_animation",
    "test_feedback.py::test_saving_during_the_preview_keeps_its_shape_key_out_of_the_file",
    "test_preview.py::test_playback_equals_the_bake_and_jumping_back_resets",
    "test_cache_files.py::test_the_default_cache_survives_save_and_reload",
    "test_fidelity.py::test_files_of_earlier_versions_keep_their_charges_settling_and_iterations",
    "test_fit_charges.py::test_fit_recovers_the_charges_of_all_groups",
    "test_unregister.py::test_disable_removes_handlers_buttons_types_and_preview_keys",
]

os.environ.setdefault("PYTHONWARNINGS", "default::DeprecationWarning")


def pytest_configure(config):
    config.addinivalue_line("markers", "smoke: the subset run on every Blender release of the matrix")


@pytest.hookimpl(tryfirst=True)  # before `-m smoke` deselects
def pytest_collection_modifyitems(config, items):
    found = set()
    for item in items:
        name = item.nodeid.split("[")[0]
        if name in SMOKE:
            item.add_marker(pytest.mark.smoke)
            found.add(name)
    files = {item.nodeid.split("::")[0] for item in items}
    stale = [n for n in SMOKE if n.split("::")[0] in files and n not in found]
    if stale:
        raise pytest.UsageError(f"conftest.SMOKE names tests that do not exist: {stale}")


_ADDON_FILE = re.compile(r"[/\\]cmsc[/\\]((ui|sim)[/\\])?\w+\.py$")


def _ours(filename):
    """Whether `filename` is the installed add-on's code (legacy or extension install) or these
    tests'."""
    path = os.path.abspath(filename)
    return bool(_ADDON_FILE.search(path)) or path.startswith(HERE + os.sep)


_PRINTED = re.compile(r"^(.+?):\d+: DeprecationWarning: (.*)$", re.M)


def deprecations(output):
    """The DeprecationWarnings a subprocess printed (PYTHONWARNINGS, above) from our code."""
    return [m.group(0) for m in _PRINTED.finditer(output) if _ours(m.group(1))]


@pytest.hookimpl(wrapper=True)
def _deprecations_fail(item):
    caught = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", DeprecationWarning)
            result = yield
    finally:  # out of the recording: the others go on to pytest's own summary
        ours = [w for w in caught if issubclass(w.category, DeprecationWarning) and _ours(w.filename)]
        for w in caught:
            if w not in ours:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
    if ours:
        raise AssertionError(
            "Blender deprecates an API the add-on uses:\n"
            + "\n".join(f"{w.filename}:{w.lineno}: {w.category.__name__}: {w.message}" for w in ours)
        )
    return result


pytest_runtest_setup = pytest_runtest_call = pytest_runtest_teardown = _deprecations_fail


def pytest_sessionfinish(session, exitstatus):
    session.config._cmsc_exitstatus = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """Ends the process with pytest's exit status before the interpreter's own exit: the `bpy`
    module of Blender 4.2 crashes there (SIGSEGV: at C++ static destruction its space types free
    Python classes after Python has finalised, once any class was registered, even if since
    unregistered; 4.5 and 5.x exit cleanly, and Blender the application exits through
    WM_exit, not this path). The subprocesses the tests start end the same way."""
    status = getattr(config, "_cmsc_exitstatus", None)
    if status is not None:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def zip_path():
    return os.environ.get("CMSC_ADDON_ZIP", os.path.join(ROOT, "dist", "cmsc-0.1.0-linux-x64.zip"))


@pytest.fixture(scope="session", autouse=True)
def addon():
    import bpy  # noqa: I001 - bpy first: it puts addon_utils on the path
    import addon_utils

    path = zip_path()
    if not os.path.isfile(path):
        pytest.fail(f"{path} is missing: build it with `make addon`")
    assert bpy.ops.preferences.addon_install(filepath=path, overwrite=True) == {"FINISHED"}
    module = addon_utils.enable("cmsc", default_set=True, handle_error=None)
    assert module is not None, "the cmsc add-on failed to enable"
    assert os.path.dirname(module.__file__).startswith(os.environ.get("BLENDER_USER_RESOURCES", "")), module.__file__
    yield module
    addon_utils.disable("cmsc", default_set=True)


@pytest.fixture
def scene(tmp_path):
    """An empty scene at frame 1, restored afterwards; gravity off, 24 fps."""
    import bpy

    sc = bpy.context.scene
    for o in list(sc.objects):
        bpy.data.objects.remove(o)
    sc.cmsc.use_gravity = False
    sc.cmsc.field = (0.0, 0.0, 0.0)
    sc.render.fps = 24
    sc.frame_set(1)
    yield sc, tmp_path
    for o in list(sc.objects):
        bpy.data.objects.remove(o)
    sc.frame_set(1)
