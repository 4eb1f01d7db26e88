"""Writes suzanne.obj: Blender's Suzanne, one level of Catmull-Clark subdivision, triangulated.

The test fixture of a "real mesh" for the DDEF accuracy tests. Regenerate with Blender's Python
module (`pip install bpy==4.5.*`):  python make_suzanne.py
"""
import os

import bpy

bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.mesh.primitive_monkey_add(size=2.0)
obj = bpy.context.active_object
obj.modifiers.new("subdivision", "SUBSURF").levels = 1
obj.modifiers.new("triangulate", "TRIANGULATE")
mesh = obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).to_mesh()
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "suzanne.obj")
with open(path, "w") as f:
    f.write("# Blender %s Suzanne, subdivision level 1, triangulated (make_suzanne.py)\n" % bpy.app.version_string)
    for v in mesh.vertices:
        f.write("v %.6f %.6f %.6f\n" % tuple(v.co))
    for p in mesh.polygons:
        f.write("f %d %d %d\n" % tuple(i + 1 for i in p.vertices))
print("wrote", path, len(mesh.vertices), "vertices", len(mesh.polygons), "triangles")
