"""Build scenes by script, bake, and check what Blender then evaluates."""

import os

import bpy
import numpy as np
import pytest

from scenes import addon_module, charged_sphere, evaluated_coords, external_charge, key_charge, read_pc2


def test_contract_names_are_registered():
    for prop in ("cmsc", "cmsc_charge"):
        assert hasattr(bpy.types.Object, prop)
    assert hasattr(bpy.types.Scene, "cmsc")
    for op in ("bake", "free_bake", "charge_group_add", "charge_group_remove"):
        assert hasattr(bpy.ops.cmsc, op)


def test_bake_writes_pc2_that_the_modifier_plays(scene):
    sc, tmp = scene
    obj = charged_sphere(tmp)
    assert obj.cmsc.charge_groups[0].vertex_group == "all"
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    cache = read_pc2(obj.cmsc.cache_path)
    assert cache.shape == (10, len(obj.data.vertices), 3)
    assert obj.modifiers[0].type == "MESH_CACHE"
    # like charges repel: the sphere grows
    radius = np.linalg.norm(cache, axis=2).mean(axis=1)
    assert radius[-1] > radius[0] * 1.01
    # what Blender evaluates at each frame is the baked sample
    for frame in (1, 4, 10):
        sc.frame_set(frame)
        assert np.allclose(evaluated_coords(obj), cache[frame - 1], atol=1e-6), frame


def test_keyframed_charge_changes_the_motion(scene):
    sc, tmp = scene
    still = charged_sphere(tmp, "still", charge=0.0)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    keyed = charged_sphere(tmp, "keyed", charge=0.0)
    item = keyed.cmsc.charge_groups[0]
    item.keyframe_insert("charge", frame=1)
    item.charge = 3.0
    item.keyframe_insert("charge", frame=6)
    item.charge = 0.0  # the static value must not be what the bake uses
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    paths = [fc.data_path for fc in addon_module("ui.bridge").fcurves(keyed)]  # Blender 5.0: no Action.fcurves
    assert paths == ['cmsc.charge_groups["all"].charge'], paths  # rewritten to name-keyed
    a, b = read_pc2(still.cmsc.cache_path), read_pc2(keyed.cmsc.cache_path)
    assert np.allclose(a[-1], a[0], atol=1e-9)  # uncharged, no gravity: at rest
    assert np.abs(b[-1] - b[0]).max() > 1e-3  # the keyframed charge moved it


@pytest.mark.parametrize("charge, pull", [(-20.0, 1.0), (20.0, -1.0)], ids=["opposite attracts", "like repels"])
def test_external_charge_attracts_or_repels(scene, charge, pull):
    sc, tmp = scene
    obj = charged_sphere(tmp, charge=0.5)
    external_charge((2.0, 0.0, 0.0), charge)
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    cache = read_pc2(obj.cmsc.cache_path)
    shift = cache[-1][:, 0].mean() - cache[0][:, 0].mean()
    assert pull * shift > 1e-3, f"the ball moved {shift:+.2e} m along x (toward the charge at +x: +)"


def test_external_charge_moves_with_its_object(scene):
    """A charge keyframed from beside the ball to above and beside it pulls the ball up; held at
    its first place it pulls only sideways. So the bake reads where the object is at each frame."""
    sc, tmp = scene
    shifts = {}
    for moving in (False, True):
        obj = charged_sphere(tmp, name=f"ball_{moving}", charge=0.5)
        empty = external_charge((2.0, 0.0, 0.0), -2.0)
        if moving:
            empty.keyframe_insert("location", frame=1)
            empty.location = (2.0, 0.0, 3.0)
            empty.keyframe_insert("location", frame=5)
        bpy.context.view_layer.objects.active = obj
        assert bpy.ops.cmsc.bake() == {"FINISHED"}
        cache = read_pc2(obj.cmsc.cache_path)
        shifts[moving] = cache[-1].mean(axis=0) - cache[0].mean(axis=0)
        bpy.data.objects.remove(empty)
        bpy.data.objects.remove(obj)
    held, moved = shifts[False], shifts[True]
    print(f"shift of the ball's centre (m): held charge {held}, moving charge {moved}")
    assert held[0] > 1e-3 and abs(held[2]) < 0.01 * held[0], f"held charge: shift {held}"
    assert moved[2] > 0.2 * moved[0] > 0, f"moving charge: shift {moved}, held: {held}"


def test_free_bake_removes_modifier_and_file(scene):
    sc, tmp = scene
    obj = charged_sphere(tmp, frames=3)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    assert os.path.isfile(obj.cmsc.cache_path)
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    assert not os.path.exists(obj.cmsc.cache_path)
    assert all(m.type != "MESH_CACHE" for m in obj.modifiers)


def test_keyframes_follow_their_group_when_another_is_removed(scene):
    sc, tmp = scene
    obj = charged_sphere(tmp, charge=0.0, frames=6)  # group 0 "all", static 0 µC
    bpy.ops.cmsc.charge_group_add()  # group 1 "all.001" on the same vertices
    animated = obj.cmsc.charge_groups[1]
    animated.distribution = "PER_VERTEX"
    assert animated.name == "all.001"
    animated.charge = 0.0
    animated.keyframe_insert("charge", frame=1)  # Blender keys it as charge_groups[1]
    animated.charge = 4.0
    animated.keyframe_insert("charge", frame=3)
    animated.charge = 0.0  # only working keyframes can move the sphere
    obj.cmsc.charge_group_index = 0
    assert bpy.ops.cmsc.charge_group_remove() == {"FINISHED"}  # "all.001" moves to index 0
    assert [g.name for g in obj.cmsc.charge_groups] == ["all.001"]
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    cache = read_pc2(obj.cmsc.cache_path)
    assert np.abs(cache[-1] - cache[0]).max() > 1e-3  # its keyframes still drive it


def test_shape_key_bake_equals_pc2_bake(scene):
    sc, tmp = scene
    obj = charged_sphere(tmp, frames=6)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    cache = read_pc2(obj.cmsc.cache_path)
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    obj.cmsc.cache_format = "SHAPE_KEYS"
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    assert not os.path.exists(obj.cmsc.cache_path)  # no PC2 left behind
    assert all(m.type != "MESH_CACHE" for m in obj.modifiers)
    assert len(obj.data.shape_keys.key_blocks) == 1 + 6
    for frame in (1, 3, 6):
        sc.frame_set(frame)
        assert np.allclose(evaluated_coords(obj), cache[frame - 1], atol=1e-6), frame
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    assert obj.data.shape_keys is None


def test_a_keyframed_charge_bakes_to_shape_keys_and_frees(scene):
    """Both kinds of animation on one object: the charge's keyframes (the object's action) drive
    a bake into shape keys (keyed on the mesh's shape-key action), equal to the PC2 bake; Free
    Bake removes the keys and their action and keeps the charge's keyframes."""
    sc, tmp = scene
    bridge = addon_module("ui.bridge")
    obj = charged_sphere(tmp, charge=0.0, frames=6)
    key_charge(obj.cmsc.charge_groups[0], [(1, 0.0), (6, 3.0)])
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    cache = read_pc2(obj.cmsc.cache_path)
    assert np.abs(cache[-1] - cache[0]).max() > 1e-3, "the keyframed charge moved it"
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    obj.cmsc.cache_format = "SHAPE_KEYS"
    actions = set(bpy.data.actions)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    keys = obj.data.shape_keys
    assert len(keys.key_blocks) == 1 + 6 and len(bridge.fcurves(keys)) == 6
    for frame in (1, 4, 6):
        sc.frame_set(frame)
        assert np.allclose(evaluated_coords(obj), cache[frame - 1], atol=1e-6), frame
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    assert obj.data.shape_keys is None and set(bpy.data.actions) == actions
    assert [fc.data_path for fc in bridge.fcurves(obj)] == ['cmsc.charge_groups["all"].charge']


@pytest.mark.parametrize("over_keys", ["driver", "muted F-curve"])
def test_a_charge_bakes_as_blender_shows_it_over_its_keyframes(scene, over_keys):
    """A driver overrides a keyframed charge, and a muted F-curve animates nothing: the bake
    used the keyframes in both cases (4 µC swelled a sphere that Blender showed at 0 µC)."""
    sc, tmp = scene
    obj = charged_sphere(tmp, "shown", charge=0.0, frames=6)
    item = obj.cmsc.charge_groups[0]
    key_charge(item, [(1, 4.0), (6, 4.0)])
    if over_keys == "driver":
        item.driver_add("charge").driver.expression = "0.0"
    else:
        (fc,) = addon_module("ui.bridge").fcurves(obj)
        fc.mute = True
        item.charge = 0.0
    sc.frame_set(3)
    assert item.charge == 0.0  # what Blender shows
    sc.frame_set(1)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    cache = read_pc2(obj.cmsc.cache_path)
    np.testing.assert_allclose(cache[-1], cache[0], rtol=0, atol=1e-9)  # uncharged, no gravity: at rest


def test_a_charge_keyed_again_after_a_bake_bakes_as_blender_shows_it(scene):
    """Keying a charge (an index-keyed F-curve) after a bake had renamed its F-curve by the
    group's name made a second F-curve, whose key the bake ignored (3 µC keyed, 0.2 µC baked).
    And a removed group's keyframes went to the next group of its name."""
    sc, tmp = scene
    obj = charged_sphere(tmp, "ball", charge=0.2, frames=4)
    item = obj.cmsc.charge_groups[0]
    item.keyframe_insert("charge", frame=1)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    first = read_pc2(obj.cmsc.cache_path)
    item.charge = 3.0
    item.keyframe_insert("charge", frame=1)  # a second F-curve (Blender 4.5 then shows 0.2 still)
    item.keyframe_insert("charge", frame=3)  # and a key where the first F-curve has none
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    rekeyed = read_pc2(obj.cmsc.cache_path)
    bridge = addon_module("ui.bridge")
    (fc,) = bridge.fcurves(obj)
    assert fc.data_path == 'cmsc.charge_groups["all"].charge'
    assert [tuple(k.co) for k in fc.keyframe_points] == [(1.0, 3.0), (3.0, 3.0)]
    sc.frame_set(3)
    assert item.charge == 3.0  # one F-curve with the new keys: what Blender shows, what was baked
    sc.frame_set(1)
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    bpy.context.view_layer.objects.active = obj
    obj.cmsc.charge_groups[0].driver_add("charge").driver.expression = "3.0"
    assert bpy.ops.cmsc.charge_group_remove() == {"FINISHED"}
    assert not bridge.fcurves(obj)
    assert not obj.animation_data or not obj.animation_data.drivers  # its driver went with it
    assert bpy.ops.cmsc.charge_group_add() == {"FINISHED"}  # named "all" again, after the vertex group
    obj.cmsc.charge_groups[0].distribution = "PER_VERTEX"
    obj.cmsc.charge_groups[0].charge = 3.0
    sc.frame_set(3)
    assert obj.cmsc.charge_groups[0].charge == 3.0  # no keyframes of the removed group
    sc.frame_set(1)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    np.testing.assert_allclose(rekeyed, read_pc2(obj.cmsc.cache_path), rtol=0, atol=1e-7)
    assert np.abs(rekeyed[-1] - first[-1]).max() > 1e-3
