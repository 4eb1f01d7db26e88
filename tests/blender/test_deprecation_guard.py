"""The guard in conftest.py: a DeprecationWarning raised from the add-on's code fails the test
that ran it, one from elsewhere (Blender's own scripts) does not, and a subprocess's printed ones
are found. Run as a separate pytest in a fresh process, on probe tests placed in a `cmsc` folder
(where the installed add-on's modules live), with this conftest."""

import os
import shutil
import subprocess
import sys
import textwrap

from conftest import HERE, deprecations

PROBE = textwrap.dedent(
    """
    import warnings


    def test_blender_scripts_may_deprecate():
        warnings.warn_explicit("not ours", DeprecationWarning, "/opt/bpy/scripts/modules/addon_utils.py", 3)


    def test_the_addon_may_not():
        warnings.warn("'Action.fcurves' is expected to be removed in Blender 5.0", DeprecationWarning)
    """
)


def test_a_deprecation_in_the_addon_fails_its_test_and_only_that(tmp_path):
    folder = tmp_path / "cmsc"
    folder.mkdir()
    shutil.copy(os.path.join(HERE, "conftest.py"), folder)
    (folder / "test_probe.py").write_text(PROBE)
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(tmp_path / "user"), PYTHONPATH=HERE)
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(folder)],
        capture_output=True, text=True, env=env, timeout=300,
    )
    text = out.stdout + out.stderr
    assert out.returncode == 1, text
    assert "1 failed, 1 passed" in text, text
    assert "test_probe.py::test_the_addon_may_not" in text, text
    assert "Blender deprecates an API the add-on uses" in text and "Action.fcurves" in text, text


def test_printed_deprecations_are_found_by_path():
    printed = "\n".join([
        "/tmp/u/extensions/user_default/cmsc/ui/bridge.py:130: DeprecationWarning: 'Action.fcurves' is expected",
        "/x/bpy/5.2/scripts/modules/addon_utils.py:9: DeprecationWarning: something of Blender's",
        "cmsc: baked frame 2 (2/6)",
    ])
    assert deprecations(printed) == [printed.splitlines()[0]]
