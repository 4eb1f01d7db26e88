"""Makes the add-on's pure-Python package importable as `sim` and finds the built library."""

import os
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "blender_addon"))


@pytest.fixture(scope="session")
def lib_path():
    """The libcmsc.so under test: $CMSC_LIB, else target/debug (built by `make pytest`)."""
    path = os.environ.get("CMSC_LIB", os.path.join(ROOT, "target", "debug", "libcmsc.so"))
    if not os.path.isfile(path):
        pytest.fail(f"{path} is missing: build it with `cargo build -p cmsc-ffi` (make pytest does)")
    return path
