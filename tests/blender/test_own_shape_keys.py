"""A Shape Keys bake of a mesh with shape keys of its own plays what the PC2 bake plays (issue
27): the baked keys are relative to what the own keys already add, so those are not applied
twice (a squashed sphere played flat, pins were 0.6 m off)."""

import bpy
import numpy as np
import pytest

from scenes import addon_module, charged_sphere, evaluated_coords, read_pc2


def squashed_sphere(tmp, animated):
    """A charged sphere with a shape key that squashes it to half its height: at 1, or keyed
    from 0 at frame 1 to 1 at frame 6."""
    obj = charged_sphere(tmp, "squashed", charge=1.0, frames=8)
    obj.shape_key_add(name="Basis", from_mix=False)
    squash = obj.shape_key_add(name="squash", from_mix=False)
    co = np.empty(3 * len(squash.data))
    squash.data.foreach_get("co", co)
    co = co.reshape(-1, 3)
    co[:, 2] *= 0.5
    squash.data.foreach_set("co", co.ravel())
    if animated:
        for frame, value in ((1, 0.0), (6, 1.0)):
            squash.value = value
            squash.keyframe_insert("value", frame=frame)
    else:
        squash.value = 1.0
    return obj


@pytest.mark.parametrize("animated", [False, True], ids=["active key", "animated key"])
def test_a_shape_key_bake_plays_as_the_pc2_bake(scene, animated):
    sc, tmp = scene
    obj = squashed_sphere(tmp, animated)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    pc2 = read_pc2(obj.cmsc.cache_path)
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    obj.cmsc.cache_format = "SHAPE_KEYS"
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    for frame in (1, 4, 8):
        sc.frame_set(frame)
        np.testing.assert_allclose(evaluated_coords(obj), pc2[frame - 1], rtol=0, atol=1e-5, err_msg=f"frame {frame}")
    if not animated:  # it starts squashed (the keyed one starts round: only pins would follow the key)
        height = np.ptp(pc2[-1][:, 2])
        assert height < 0.85, height  # unsquashed, the charge swells it past 1 m
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    assert [kb.name for kb in obj.data.shape_keys.key_blocks] == ["Basis", "squash"]


@pytest.mark.parametrize("fmt", ["PC2", "SHAPE_KEYS"])
def test_an_own_key_whose_name_starts_like_the_bakes_is_the_artists(scene, fmt):
    """The bake's keys are "cmsc <frame>": an artist's "cmsc target" key was taken for one, so
    the panel said "Baked" before any bake, and baking deleted it (and the basis with it)."""
    sc, tmp = scene
    obj = charged_sphere(tmp, "ball", charge=1.0, frames=4)
    obj.shape_key_add(name="Basis", from_mix=False)
    target = obj.shape_key_add(name="cmsc target", from_mix=False)
    target.value = 0.0
    target.keyframe_insert("value", frame=1)
    cache = addon_module("ui.cache")
    assert not cache.has_bake(obj)
    obj.cmsc.cache_format = fmt
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    names = [kb.name for kb in obj.data.shape_keys.key_blocks]
    assert names == ["Basis", "cmsc target"] + ([f"cmsc {f}" for f in range(1, 5)] if fmt == "SHAPE_KEYS" else [])
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    assert [kb.name for kb in obj.data.shape_keys.key_blocks] == ["Basis", "cmsc target"]
    paths = [fc.data_path for fc in addon_module("ui.bridge").fcurves(obj.data.shape_keys)]
    assert paths == ['key_blocks["cmsc target"].value'], paths


def test_freeing_a_shape_key_bake_keeps_a_driver_on_the_artists_key(scene):
    """Removing the bake's keyframes cleared the shape keys' whole animation data when its action
    emptied, drivers included (a corrective key's driver was lost)."""
    sc, tmp = scene
    obj = charged_sphere(tmp, "ball", charge=1.0, frames=4)
    obj.shape_key_add(name="Basis", from_mix=False)
    corrective = obj.shape_key_add(name="corrective", from_mix=False)
    corrective.driver_add("value").driver.expression = "0.25"
    obj.cmsc.cache_format = "SHAPE_KEYS"
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    drivers = obj.data.shape_keys.animation_data.drivers
    assert [d.data_path for d in drivers] == ['key_blocks["corrective"].value']


def test_the_preview_keeps_an_artists_lone_shape_key(scene):
    """An artist's only key (a basis renamed "MyRest") was taken for the basis the preview adds
    and removed with the preview's key."""
    sc, tmp = scene
    obj = charged_sphere(tmp, "ball", charge=1.0, frames=4)
    obj.shape_key_add(name="MyRest", from_mix=False)
    obj.cmsc.preview = True
    for frame in (1, 2, 3):
        sc.frame_set(frame)
    assert "Preview (cmsc)" in obj.data.shape_keys.key_blocks
    sc.frame_set(2)  # a jump back ends the preview and removes its key
    assert obj.data.shape_keys is not None, "the artist's key was removed"
    assert [kb.name for kb in obj.data.shape_keys.key_blocks] == ["MyRest"]


def test_freeing_a_shape_key_bake_from_before_the_basis_was_marked_removes_its_basis(scene):
    """Bakes made before the add-on marked the basis it adds left it unmarked: freeing them kept
    a lone "Basis" for good (and Blender refuses to apply modifiers to a mesh with shape keys)."""
    sc, tmp = scene
    obj = charged_sphere(tmp, "ball", charge=1.0, frames=4)
    obj.cmsc.cache_format = "SHAPE_KEYS"
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    del obj.data.shape_keys["cmsc_added_basis"]  # as a file from before holds it
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    assert obj.data.shape_keys is None
