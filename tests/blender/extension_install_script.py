"""Run by test_extension_install.py in a fresh Blender process: installs the add-on zip through
the Blender 4.2+ extension flow (Preferences > Get Extensions > Install from Disk), bakes, and
disables it. Prints RESULT lines the test checks; any failure exits non-zero."""

import os
import sys
import tempfile

# isort: off
import bpy  # bpy first: it puts addon_utils on the path
import addon_utils
# isort: on
import numpy as np

zip_path, *foreign = sys.argv[sys.argv.index("--") + 1 :]
repo = next(r for r in bpy.context.preferences.extensions.repos if r.module == "user_default")
# another platform's zip (its manifest lists only that platform) is refused, nothing installed
for other in foreign:
    try:
        refused = bpy.ops.extensions.package_install_files(filepath=other, repo=repo.module, enable_on_install=True)
    except RuntimeError as e:
        refused = str(e).strip().replace("\n", " ")
    installed = os.path.isdir(os.path.join(repo.directory, "cmsc"))
    print("RESULT foreign", os.path.basename(other), "installed" if installed else "refused", refused)
result = bpy.ops.extensions.package_install_files(filepath=zip_path, repo=repo.module, enable_on_install=True)
print("RESULT install", sorted(result))
module_name = f"bl_ext.{repo.module}.cmsc"
enabled = [a.module for a in bpy.context.preferences.addons]
print("RESULT enabled", module_name in enabled)
module = sys.modules[module_name]
folder = os.path.dirname(module.__file__)
print("RESULT in_repo", folder == os.path.join(repo.directory, "cmsc"))
print("RESULT library", os.path.isfile(os.path.join(folder, "lib", "libcmsc.so")))
prefs = bpy.context.preferences.addons[module_name].preferences
print("RESULT prefs", prefs.threads == 0 and prefs.use_gpu is False)
print("RESULT library_status", sys.modules[module_name + ".ui.preferences"].library_status())

# a bake, as in the legacy install
for o in list(bpy.context.scene.objects):
    bpy.data.objects.remove(o)
bpy.context.scene.cmsc.use_gravity = False
bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=1, radius=0.5)
obj = bpy.context.active_object
obj.vertex_groups.new(name="all").add(list(range(len(obj.data.vertices))), 1.0, "REPLACE")
obj.cmsc.enabled = True
obj.cmsc.frame_start, obj.cmsc.frame_end = 1, 5
obj.cmsc.cache_path = os.path.join(tempfile.mkdtemp(), "ext.pc2")
bpy.ops.cmsc.charge_group_add()
print("RESULT bake", sorted(bpy.ops.cmsc.bake()))
head = np.fromfile(obj.cmsc.cache_path, dtype="<i4", count=8)
print("RESULT samples", int(head[7]), "modifier", obj.modifiers[0].type)

addon_utils.disable(module_name, default_set=True)
print("RESULT disabled", not hasattr(bpy.types.Object, "cmsc"))
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)  # the bpy module of Blender 4.2 crashes at interpreter exit (conftest.py)
