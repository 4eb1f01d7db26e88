"""The deformed mesh drives the simulation (issue 17): pins follow an Armature, the cache goes
after the modifiers that keep the vertices and before those that change the topology, and a
bake in Edit Mode bakes the mesh being edited."""

import bpy  # noqa: I001 - bpy first: it makes bmesh importable
import bmesh
import numpy as np

from scenes import addon_module, evaluated_coords, mesh_coords, read_pc2


def rigged_cloth(tmp, frames=24):
    """A 2 m cloth whose top row is weighted to a bone that moves 1 m along +x between frames 1
    and 12, pinned there, with a Subdivision Surface at the end of the stack."""
    sc = bpy.context.scene
    sc.cmsc.use_gravity = True
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=10, y_subdivisions=10, size=2.0)
    cloth = bpy.context.active_object
    top = [v.index for v in cloth.data.vertices if v.co.y > 0.999]
    cloth.vertex_groups.new(name="Bone").add(top, 1.0, "REPLACE")
    bpy.ops.object.armature_add(location=(0.0, 1.0, 0.0))
    rig = bpy.context.active_object
    bone = rig.pose.bones["Bone"]
    bone.keyframe_insert("location", frame=1)
    bone.location = (1.0, 0.0, 0.0)  # the bone's x is the world's x
    bone.keyframe_insert("location", frame=12)
    cloth.modifiers.new("Armature", "ARMATURE").object = rig
    cloth.modifiers.new("Subdivision", "SUBSURF")
    bpy.context.view_layer.objects.active = cloth
    s = cloth.cmsc
    s.enabled = True
    s.pin_group = "Bone"
    s.frame_start, s.frame_end = 1, frames
    s.cache_path = str(tmp / "cloth.pc2")
    return cloth, np.array(top)


def test_pins_follow_the_rig_and_the_cache_sits_between_armature_and_subdivision(scene):
    sc, tmp = scene
    cloth, top = rigged_cloth(tmp)
    rest = mesh_coords(cloth)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    assert [m.type for m in cloth.modifiers] == ["ARMATURE", "MESH_CACHE", "SUBSURF"]
    samples = read_pc2(cloth.cmsc.cache_path)
    moved = rest + np.array([1.0, 0.0, 0.0])
    for f in range(12, 25):  # frames 12..24: the bone has arrived
        assert np.abs(samples[f - 1][top] - moved[top]).max() < 1e-3, f
    free = np.setdiff1d(np.arange(len(rest)), top)
    assert samples[-1][free, 0].mean() > 0.5, "the rest of the cloth is dragged along"
    sc.frame_set(24)
    final = evaluated_coords(cloth)
    assert len(final) > len(rest), "the Subdivision Surface after the cache still evaluates"
    assert final[:, 0].mean() > 0.5


def test_the_live_preview_pauses_with_a_rig_and_says_why(scene):
    sc, tmp = scene
    preview = addon_module("ui.preview")
    cloth, _ = rigged_cloth(tmp)
    for f in (1, 2, 3):
        sc.frame_set(f)
    assert not preview.is_running(cloth)
    assert "Armature" in preview.status(cloth)[1]


def test_a_bake_in_edit_mode_bakes_the_edited_mesh(scene):
    sc, tmp = scene
    bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=2, radius=0.5)
    obj = bpy.context.active_object
    s = obj.cmsc
    s.enabled = True
    s.frame_start, s.frame_end = 1, 3
    s.cache_path = str(tmp / "edited.pc2")
    bpy.ops.object.mode_set(mode="EDIT")
    try:
        bm = bmesh.from_edit_mesh(obj.data)
        for v in bm.verts:
            v.co.z += 2.0  # only in the edit mesh so far
        bmesh.update_edit_mesh(obj.data)
        assert bpy.ops.cmsc.bake() == {"FINISHED"}
    finally:
        bpy.ops.object.mode_set(mode="OBJECT")
    first = read_pc2(s.cache_path)[0]
    assert abs(first[:, 2].mean() - 2.0) < 1e-5, "the first sample is the edited mesh"
