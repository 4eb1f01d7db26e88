"""A Shape Keys bake of a mesh with shape keys of its own plays what the PC2 bake plays (issue
27): the baked keys are relative to what the own keys already add, so those are not applied
twice (a squashed sphere played flat, pins were 0.6 m off)."""

import bpy
import numpy as np
import pytest

from scenes import charged_sphere, evaluated_coords, read_pc2


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
