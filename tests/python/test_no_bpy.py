"""The pure-Python package must never import bpy (it runs in worker threads and tests)."""

import os
import subprocess
import sys

HERE = os.path.dirname(__file__)
ADDON = os.path.join(HERE, "..", "..", "blender_addon")


def test_sim_package_imports_without_bpy():
    # A fresh interpreter in which `import bpy` fails loudly, importing every module of `sim`.
    code = (
        "import sys, importlib, pkgutil\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'bpy' or name.startswith('bpy.'):\n"
        "            raise ImportError('bpy imported by the pure-Python package')\n"
        "sys.meta_path.insert(0, Block())\n"
        f"sys.path.insert(0, {os.path.abspath(ADDON)!r})\n"
        "import sim\n"
        "for m in pkgutil.iter_modules(sim.__path__):\n"
        "    importlib.import_module('sim.' + m.name)\n"
        "print('ok', sorted(k for k in sys.modules if k.startswith('sim')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "sim.simulation" in out.stdout and "sim.pc2" in out.stdout


def test_no_module_mentions_bpy():
    sim_dir = os.path.join(ADDON, "sim")
    for name in os.listdir(sim_dir):
        if name.endswith(".py"):
            with open(os.path.join(sim_dir, name)) as f:
                text = f.read()
            assert "import bpy" not in text and "from bpy" not in text, name
