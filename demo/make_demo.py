"""The main job: build a charged creature in headless Blender, bake it with cmsc, and write
out/demo.blend, out/demo.pc2 and out/demo_contact_sheet.png (Cycles renders of 4 frames).

A jellyfish: a bell with six tentacles hanging from it (their top rings pinned to the bell).
Each tentacle is a charge group whose charge is keyframed in sequence, so the tentacles flare
out one after another, pushed by the bell's charge; a negative external charge circles the
creature and pulls the charged tentacles toward it.

Run by `make demo` (which installs the add-on zip into a scratch Blender profile):
    python demo/make_demo.py OUT_DIR ADDON_ZIP
"""

import contextlib
import math
import os
import sys

import bpy  # noqa: I001 - bpy first: it puts addon_utils and bmesh on the path
import addon_utils
import bmesh
import numpy as np

OUT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "out")
ZIP = sys.argv[2] if len(sys.argv) > 2 else "dist/cmsc-0.1.0-linux-x64.zip"
TENTACLES, FRAMES, RENDER_FRAMES = 6, 96, (1, 32, 64, 96)


def build_creature():
    bm = bmesh.new()
    bmesh.ops.create_uvsphere(bm, u_segments=24, v_segments=10, radius=1.0)
    for v in [v for v in bm.verts if v.co.z < -0.05]:  # keep the upper half: the bell
        bm.verts.remove(v)
    bell = list(bm.verts)
    groups = []  # (every vertex of the tentacle, its top ring)
    for t in range(TENTACLES):
        angle = 2 * math.pi * t / TENTACLES
        cx, cy = 0.6 * math.cos(angle), 0.6 * math.sin(angle)
        ring, rings = 5, 14
        rows = []
        for r in range(rings):
            z = -0.05 - 0.2 * r
            rows.append([bm.verts.new((cx + 0.07 * math.cos(2 * math.pi * k / ring), cy + 0.07 * math.sin(2 * math.pi * k / ring), z)) for k in range(ring)])
        for a, b in zip(rows, rows[1:]):
            for k in range(ring):
                bm.faces.new((a[k], a[(k + 1) % ring], b[(k + 1) % ring], b[k]))
        groups.append(([v for row in rows for v in row], rows[0]))
    # new vertices reuse the removed ones' slots, so the mesh's vertex order is bmesh's iteration
    # order, not creation order: number them as the mesh will
    bm.verts.index_update()
    bell = [v.index for v in bell]
    groups = [([v.index for v in every], [v.index for v in top]) for every, top in groups]
    me = bpy.data.meshes.new("jellyfish")
    bm.to_mesh(me)
    bm.free()
    obj = bpy.data.objects.new("jellyfish", me)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)
    pin = obj.vertex_groups.new(name="pinned")
    crown = [i for i in bell if me.vertices[i].co.z > 0.9]
    pin.add(crown + [i for _, top in groups for i in top], 1.0, "REPLACE")
    obj.vertex_groups.new(name="bell").add(bell, 1.0, "REPLACE")
    for t, (every, _) in enumerate(groups):
        obj.vertex_groups.new(name=f"tentacle {t + 1}").add(every, 1.0, "REPLACE")
    return obj


def rig(obj):
    s = obj.cmsc
    s.enabled = True
    s.mass, s.stiffness, s.bending_stiffness, s.damping = 0.5, 60.0, 6.0, 0.02
    s.substeps, s.iterations = 3, 10
    s.pin_group = "pinned"
    s.frame_start, s.frame_end = 1, FRAMES
    s.cache_path = os.path.join(OUT, "demo.pc2")
    for name in ["bell"] + [f"tentacle {t + 1}" for t in range(TENTACLES)]:
        obj.vertex_groups.active_index = obj.vertex_groups[name].index
        bpy.ops.cmsc.charge_group_add()
        s.charge_groups[-1].distribution = "PER_VERTEX"  # charges below are per vertex of weight 1
    s.charge_groups["bell"].charge = 0.6
    for t in range(TENTACLES):  # tentacle t charges up in turn, then discharges
        item = s.charge_groups[f"tentacle {t + 1}"]
        for frame, q in ((1, 0.0), (6 + 12 * t, 0.0), (14 + 12 * t, 0.4), (40 + 12 * t, 0.0)):
            item.charge = q
            item.keyframe_insert("charge", frame=frame)
    bpy.ops.object.empty_add(type="SPHERE", radius=0.15, location=(2.2, 0.0, -1.2))
    probe = bpy.context.active_object
    probe.name = "external charge"
    probe.cmsc_charge.enabled = True
    probe.cmsc_charge.charge = -1.5
    for frame in range(1, FRAMES + 1, 8):  # circles the creature
        a = 2 * math.pi * (frame - 1) / FRAMES
        probe.location = (2.2 * math.cos(a), 2.2 * math.sin(a), -1.2)
        probe.keyframe_insert("location", frame=frame)
    bpy.context.view_layer.objects.active = obj
    bpy.context.scene.gravity = (0.0, 0.0, -2.0)


def stage():
    scene = bpy.context.scene
    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = 16
    scene.render.resolution_x, scene.render.resolution_y = 320, 240
    scene.render.film_transparent = False
    world = bpy.data.worlds.new("world")
    world.color = (0.02, 0.04, 0.08)
    scene.world = world
    cam = bpy.data.objects.new("camera", bpy.data.cameras.new("camera"))
    cam.location, cam.rotation_euler = (0.0, -10.0, -1.0), (math.radians(90), 0.0, 0.0)
    scene.collection.objects.link(cam)
    scene.camera = cam
    sun = bpy.data.objects.new("sun", bpy.data.lights.new("sun", "SUN"))
    sun.rotation_euler = (math.radians(40), math.radians(20), 0.0)
    sun.data.energy = 4.0
    scene.collection.objects.link(sun)
    mat = bpy.data.materials.new("jelly")
    mat.use_nodes = True
    bsdf = mat.node_tree.nodes["Principled BSDF"]
    bsdf.inputs["Base Color"].default_value = (0.9, 0.35, 0.7, 1.0)
    bsdf.inputs["Emission Color"].default_value = (0.5, 0.1, 0.4, 1.0)
    bsdf.inputs["Emission Strength"].default_value = 0.3
    jelly = bpy.data.objects["jellyfish"]
    jelly.data.materials.append(mat)
    # smooth the low-poly creature after the cache, as an artist would: the Mesh Cache modifier
    # stays first in the stack, subdivision follows it
    jelly.data.shade_smooth()
    subsurf = jelly.modifiers.new("Subdivision", "SUBSURF")
    subsurf.levels = subsurf.render_levels = 2
    assert jelly.modifiers[0].type == "MESH_CACHE", [m.type for m in jelly.modifiers]


def render_contact_sheet(out_dir, name, frames):
    """Renders the scene at each of the 4 `frames` into out_dir/<name>_frame_NNN.png and joins
    them into out_dir/<name>_contact_sheet.png."""
    paths = []
    for f in frames:
        bpy.context.scene.frame_set(f)
        path = os.path.join(out_dir, f"{name}_frame_{f:03d}.png")
        bpy.context.scene.render.filepath = path
        bpy.ops.render.render(write_still=True)
        paths.append(path)
    contact_sheet(paths, os.path.join(out_dir, f"{name}_contact_sheet.png"))


def contact_sheet(paths, out):
    tiles = []
    for p in paths:
        img = bpy.data.images.load(p)
        w, h = img.size
        tiles.append(np.array(img.pixels[:]).reshape(h, w, 4))
    top, bottom = np.hstack(tiles[:2]), np.hstack(tiles[2:4])
    sheet = np.vstack([bottom, top])  # Blender images start at the bottom row
    img = bpy.data.images.new("contact sheet", sheet.shape[1], sheet.shape[0])
    img.pixels = sheet.ravel()
    img.filepath_raw, img.file_format = out, "PNG"
    img.save()


@contextlib.contextmanager
def fresh_blender_with_addon(zip_path, cache):
    """An empty Blender with the add-on installed from `zip_path` and enabled (disabled after);
    `cache`, an earlier run's PC2 in OUT, is removed first: the bake never overwrites a file
    that is not its object's own recorded cache, and that .blend's object is gone."""
    os.makedirs(OUT, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(OUT, cache))
    bpy.ops.wm.read_factory_settings(use_empty=True)
    assert bpy.ops.preferences.addon_install(filepath=os.path.abspath(zip_path), overwrite=True) == {"FINISHED"}
    if addon_utils.enable("cmsc", default_set=True, handle_error=None) is None:
        sys.exit("the cmsc add-on failed to enable")
    try:
        yield
    finally:
        addon_utils.disable("cmsc", default_set=True)


def main():
    with fresh_blender_with_addon(ZIP, "demo.pc2"):
        obj = build_creature()
        rig(obj)
        print(f"cmsc demo: {len(obj.data.vertices)} vertices, {len(obj.cmsc.charge_groups)} charge groups")
        if bpy.ops.cmsc.bake() != {"FINISHED"}:
            sys.exit("cmsc demo: the bake failed")
        stage()
        bpy.ops.wm.save_as_mainfile(filepath=os.path.join(OUT, "demo.blend"))
        render_contact_sheet(OUT, "demo", RENDER_FRAMES)
        print(f"cmsc demo: wrote {OUT}/demo.blend, demo.pc2, demo_contact_sheet.png")


if __name__ == "__main__":
    main()
