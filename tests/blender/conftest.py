"""Real Blender (the `bpy` module from PyPI): installs the built add-on zip as a user would,
enables `cmsc`, and unregisters it before the interpreter exits (bpy hangs otherwise).

BLENDER_USER_RESOURCES must point to a scratch folder before bpy is imported (the Makefile sets
it), so the installation never touches a real user profile."""

import os

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


@pytest.fixture(scope="session", autouse=True)
def addon():
    import addon_utils
    import bpy

    zip_path = os.environ.get("CMSC_ADDON_ZIP", os.path.join(ROOT, "dist", "cmsc-0.1.0-linux-x86_64.zip"))
    if not os.path.isfile(zip_path):
        pytest.fail(f"{zip_path} is missing: build it with `make addon`")
    assert bpy.ops.preferences.addon_install(filepath=zip_path, overwrite=True) == {"FINISHED"}
    module = addon_utils.enable("cmsc", default_set=True, handle_error=None)
    assert module is not None, "the cmsc add-on failed to enable"
    assert os.path.dirname(module.__file__).startswith(os.environ.get("BLENDER_USER_RESOURCES", "")), module.__file__
    yield module
    addon_utils.disable("cmsc", default_set=True)
