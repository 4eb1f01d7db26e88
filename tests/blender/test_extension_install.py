"""The zip also installs through Blender 4.2+'s extension flow (a local "user_default"
repository, `extensions.package_install_files`), as module `bl_ext.user_default.cmsc`.
In a fresh Blender process: this session already has the legacy-installed `cmsc` registered,
and the two cannot be registered at once (same class and property names)."""

import os
import subprocess
import sys

from conftest import deprecations, zip_path

HERE = os.path.dirname(os.path.abspath(__file__))


def test_extension_install_enables_and_bakes(tmp_path):
    """Also tries the Windows zip first (when `make addon` wrote it): Blender on Linux refuses
    it, since its manifest lists only windows-x64."""
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(tmp_path / "user"))
    foreign = zip_path().replace("-linux-x64.zip", "-windows-x64.zip")
    others = [foreign] if foreign != zip_path() and os.path.isfile(foreign) else []
    out = subprocess.run(
        [sys.executable, os.path.join(HERE, "extension_install_script.py"), "--", zip_path(), *others],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert deprecations(out.stdout + out.stderr) == []
    results = {
        line.split()[1]: line.split(None, 2)[2] for line in out.stdout.splitlines() if line.startswith("RESULT ")
    }
    if others:
        assert results["foreign"].split()[:2] == [os.path.basename(foreign), "refused"], out.stdout
    assert results["install"] == "['FINISHED']", out.stdout
    assert results["enabled"] == "True"
    assert results["in_repo"] == "True" and results["library"] == "True"
    assert results["prefs"] == "True"
    assert results["library_status"].startswith("(True, 'libcmsc ")
    assert results["bake"] == "['FINISHED']"
    assert results["samples"] == "5 modifier MESH_CACHE"
    assert results["disabled"] == "True"
