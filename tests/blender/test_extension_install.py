"""The zip also installs through Blender 4.2+'s extension flow (a local "user_default"
repository, `extensions.package_install_files`), as module `bl_ext.user_default.cmsc`.
In a fresh Blender process: this session already has the legacy-installed `cmsc` registered,
and the two cannot be registered at once (same class and property names)."""

import os
import subprocess
import sys

from conftest import zip_path

HERE = os.path.dirname(os.path.abspath(__file__))


def test_extension_install_enables_and_bakes(tmp_path):
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(tmp_path / "user"))
    out = subprocess.run(
        [sys.executable, os.path.join(HERE, "extension_install_script.py"), "--", zip_path()],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    results = {
        line.split()[1]: line.split(None, 2)[2] for line in out.stdout.splitlines() if line.startswith("RESULT ")
    }
    assert results["install"] == "['FINISHED']", out.stdout
    assert results["enabled"] == "True"
    assert results["in_repo"] == "True" and results["library"] == "True"
    assert results["prefs"] == "True"
    assert results["library_status"].startswith("(True, 'libcmsc ")
    assert results["bake"] == "['FINISHED']"
    assert results["samples"] == "5 modifier MESH_CACHE"
    assert results["disabled"] == "True"
