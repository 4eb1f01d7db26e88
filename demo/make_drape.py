"""README's picture: a charged cloth draping over a collider, baked with cmsc in headless
Blender and rendered with Cycles into out/drape_contact_sheet.png (frames 1, 16, 32, 48).

A 2 m cloth (41 × 41) falls onto a sphere that has Blender's Collision physics; it carries
60 µC, whose repulsion keeps its skirt flared out as it drapes.

Run by `make demo-drape`:
    python demo/make_drape.py OUT_DIR ADDON_ZIP
"""

import math
import os
import sys

import bpy
from make_demo import fresh_blender_with_addon, render_contact_sheet

OUT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "out")
ZIP = sys.argv[2] if len(sys.argv) > 2 else "dist/cmsc-0.1.0-linux-x64.zip"
FRAMES, RENDER_FRAMES = 48, (1, 16, 32, 48)


def build():
    scene = bpy.context.scene
    scene.render.fps = 24
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.6, location=(0.0, 0.0, 0.0))
    ball = bpy.context.active_object
    ball.name = "collider"
    bpy.ops.object.modifier_add(type="COLLISION")
    ball.data.shade_smooth()
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=40, y_subdivisions=40, size=2.0, location=(0.0, 0.0, 0.9))
    cloth = bpy.context.active_object
    cloth.name = "cloth"
    n = len(cloth.data.vertices)
    cloth.vertex_groups.new(name="all").add(list(range(n)), 1.0, "REPLACE")
    s = cloth.cmsc
    s.enabled = True
    s.frame_start, s.frame_end = 1, FRAMES
    s.cache_path = os.path.join(OUT, "drape.pc2")
    bpy.ops.cmsc.charge_group_add()
    s.charge_groups[-1].charge = 60.0  # µC in all (the Total distribution)
    print(f"cmsc drape: {n} cloth vertices over a {len(ball.data.vertices)}-vertex collider")
    return cloth, ball


def stage(cloth, ball):
    scene = bpy.context.scene
    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = 16
    scene.render.resolution_x, scene.render.resolution_y = 320, 240
    world = bpy.data.worlds.new("world")
    world.color = (0.05, 0.05, 0.07)
    scene.world = world
    cam = bpy.data.objects.new("camera", bpy.data.cameras.new("camera"))
    cam.location, cam.rotation_euler = (0.0, -4.2, 1.6), (math.radians(72), 0.0, 0.0)
    scene.collection.objects.link(cam)
    scene.camera = cam
    sun = bpy.data.objects.new("sun", bpy.data.lights.new("sun", "SUN"))
    sun.rotation_euler = (math.radians(35), math.radians(25), 0.0)
    sun.data.energy = 4.0
    scene.collection.objects.link(sun)
    for obj, colour in ((cloth, (0.85, 0.3, 0.2, 1.0)), (ball, (0.3, 0.5, 0.8, 1.0))):
        mat = bpy.data.materials.new(obj.name)
        mat.use_nodes = True
        mat.node_tree.nodes["Principled BSDF"].inputs["Base Color"].default_value = colour
        obj.data.materials.append(mat)
    cloth.data.shade_smooth()
    solid = cloth.modifiers.new("Solidify", "SOLIDIFY")  # after the cache: it keeps working
    solid.thickness = 0.01


def main():
    with fresh_blender_with_addon(ZIP, "drape.pc2"):
        cloth, ball = build()
        bpy.context.view_layer.objects.active = cloth
        if bpy.ops.cmsc.bake() != {"FINISHED"}:
            sys.exit("cmsc drape: the bake failed")
        stage(cloth, ball)
        bpy.ops.wm.save_as_mainfile(filepath=os.path.join(OUT, "drape.blend"))
        render_contact_sheet(OUT, "drape", RENDER_FRAMES)
        print(f"cmsc drape: wrote {OUT}/drape.blend, drape.pc2, drape_contact_sheet.png")


if __name__ == "__main__":
    main()
