"""Real Blender (the `bpy` module from PyPI): installs the built add-on zip as a user would,
enables `cmsc`, and unregisters it before the interpreter exits (bpy hangs otherwise).

BLENDER_USER_RESOURCES must point to a scratch folder before bpy is imported (the Makefile sets
it), so the installation never touches a real user profile."""

import os

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


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
