"""Live preview: stepping the timeline frame by frame simulates what the bake computes."""

import bpy
import numpy as np
import pytest

from scenes import addon_module, charged_sphere, evaluated_coords, external_charge, key_charge, mesh_coords, read_pc2

FRAMES = 8


@pytest.fixture
def preview():
    return addon_module("ui.preview")


def rigged(tmp, name="ball"):
    """A pinned, moving, keyframed sphere near a moving external charge, with gravity."""
    sc = bpy.context.scene
    sc.cmsc.use_gravity = True
    obj = charged_sphere(tmp, name, charge=0.5, frames=FRAMES)
    top = obj.vertex_groups.new(name="top")
    top.add([v.index for v in obj.data.vertices if v.co.z > 0.4], 1.0, "REPLACE")
    obj.cmsc.pin_group = "top"
    obj.location = (0, 0, 0)
    obj.keyframe_insert("location", frame=1)
    obj.location = (0.2, 0, 0.1)
    obj.keyframe_insert("location", frame=FRAMES)
    key_charge(obj.cmsc.charge_groups[0], [(1, 0.5), (6, 2.0)])
    empty = external_charge((2.0, 0.0, 0.0), -5.0)
    empty.keyframe_insert("location", frame=1)
    empty.location = (1.5, 0.0, 0.5)
    empty.keyframe_insert("location", frame=FRAMES)
    bpy.context.view_layer.objects.active = obj
    obj.cmsc.preview_substeps = 0  # the bake's substeps: the preview must equal the bake
    return obj


def play(sc, frames):
    out = {}
    for f in frames:
        sc.frame_set(f)
        out[f] = evaluated_coords(bpy.data.objects["ball"])
    return out


def test_handler_is_registered(preview):
    assert preview.on_frame_change in bpy.app.handlers.frame_change_post


def test_playback_equals_the_bake_and_jumping_back_resets(scene, preview):
    sc, tmp = scene
    obj = rigged(tmp)
    rest = mesh_coords(obj)
    played = play(sc, range(1, FRAMES + 1))
    assert preview.is_running(obj)
    assert preview.KEY_NAME in obj.data.shape_keys.key_blocks
    assert np.array_equal(mesh_coords(obj), rest), "the mesh itself keeps its rest shape"
    assert np.abs(played[FRAMES] - played[1]).max() > 1e-2, "the preview moved the mesh"

    # jump back: reset to the rest shape, no preview until the start frame comes again
    sc.frame_set(4)
    assert not preview.is_running(obj)
    assert obj.data.shape_keys is None, "the preview key (and the basis it added) are gone"
    assert np.array_equal(evaluated_coords(obj), rest)
    assert "jumped back" in preview.status(obj)[1]
    sc.frame_set(5)
    assert np.array_equal(evaluated_coords(obj), rest) and "play from frame 1" in preview.status(obj)[1]
    replayed = play(sc, range(1, 4))

    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    assert obj.data.shape_keys is None and not preview.is_running(obj)
    cache = read_pc2(obj.cmsc.cache_path)
    for f in range(1, FRAMES + 1):
        np.testing.assert_allclose(played[f], cache[f - 1], rtol=0, atol=2e-6, err_msg=f"frame {f}")
    for f in range(1, 4):
        np.testing.assert_allclose(replayed[f], cache[f - 1], rtol=0, atol=2e-6, err_msg=f"replayed frame {f}")

    # with a bake the preview stays off: what plays is the cache
    for f in (1, 2, 3):
        sc.frame_set(f)
        assert not preview.is_running(obj) and obj.data.shape_keys is None
        np.testing.assert_allclose(evaluated_coords(obj), cache[f - 1], rtol=0, atol=1e-6)


def test_dropped_frames_are_caught_up_and_long_jumps_pause(scene, preview):
    sc, tmp = scene
    # nothing moves but the (keyframed) charge: catching up over a gap is then exact
    obj = charged_sphere(tmp, "ball", charge=0.0, frames=20)
    obj.cmsc.preview_substeps = 0
    key_charge(obj.cmsc.charge_groups[0], [(1, 0.5), (6, 2.0)])
    play(sc, (1, 2))
    sc.frame_set(5)  # playback dropped frames 3 and 4
    at5 = evaluated_coords(obj)
    assert "skipped frames" in preview.status(obj)[1]
    sc.frame_set(5 + preview.MAX_CATCH_UP + 1)
    assert "paused at frame 5" in preview.status(obj)[1]
    np.testing.assert_array_equal(evaluated_coords(obj), at5)
    obj.cmsc.frame_end = 5
    sc.frame_set(1)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    np.testing.assert_allclose(at5, read_pc2(obj.cmsc.cache_path)[4], rtol=0, atol=2e-6)


def test_preview_substeps_set_the_previews_step_and_leave_the_bake_alone(scene, preview):
    sc, tmp = scene
    obj = rigged(tmp)
    assert obj.cmsc.substeps == 2
    obj.cmsc.adaptive_substeps = False  # fixed steps and iterations: the preview and the bakes alike
    obj.cmsc.preview_substeps = 1  # the default for new objects: one step of a whole frame
    played = play(sc, range(1, FRAMES + 1))
    assert preview.is_running(obj)

    # it is the motion of a bake with one fixed substep per frame, not of the two-substep bake
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    two = read_pc2(obj.cmsc.cache_path)
    assert not obj.cmsc.cache_outdated
    obj.cmsc.preview_substeps = 3  # a preview setting: the bake stays current
    assert not obj.cmsc.cache_outdated
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    obj.cmsc.substeps = 1
    sc.frame_set(1)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    one = read_pc2(obj.cmsc.cache_path)
    for f in range(1, FRAMES + 1):
        np.testing.assert_allclose(played[f], one[f - 1], rtol=0, atol=2e-6, err_msg=f"frame {f}")
    assert np.abs(played[FRAMES] - two[FRAMES - 1]).max() > 1e-4, "1 and 2 substeps should differ"

    # changing it restarts a running preview
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    play(sc, (1, 2, 3))
    assert preview.is_running(obj)
    obj.cmsc.preview_substeps = 2
    assert not preview.is_running(obj) and "restarts at frame 1" in preview.status(obj)[1]


def test_a_setting_change_restarts_the_preview(scene, preview):
    sc, tmp = scene
    obj = charged_sphere(tmp, "ball", charge=1.0, frames=10)
    play(sc, (1, 2, 3))
    assert preview.is_running(obj)
    obj.cmsc.stiffness = 30.0
    assert not preview.is_running(obj) and obj.data.shape_keys is None
    assert "restarts at frame 1" in preview.status(obj)[1]
    obj.cmsc.preview = False
    play(sc, (1, 2))
    assert not preview.is_running(obj) and obj.data.shape_keys is None


def test_a_diverging_preview_stops_with_a_message_and_never_raises(scene, preview):
    sc, tmp = scene
    obj = charged_sphere(tmp, "ball", charge=0.0, frames=10)
    # 1e200 µC: the Coulomb force overflows at the first substep of frame 4
    key_charge(obj.cmsc.charge_groups[0], [(1, 0.0), (4, 1e200)], interpolation="CONSTANT")
    played = play(sc, range(1, 7))  # must not raise
    assert not preview.is_running(obj)
    icon, text = preview.status(obj)
    assert icon == "ERROR" and "diverged at frame 4" in text and "raise Preview Substeps" in text
    # the mesh shows the last good frame
    np.testing.assert_array_equal(played[6], played[3])
    assert np.isfinite(played[6]).all()


def shape_key_pinned(tmp):
    """A sphere whose top vertices are pinned and lifted 0.3 m by an animated shape key of its
    own (keyed 0 at frame 1, 1 at the last): the pins follow the key."""
    obj = charged_sphere(tmp, "ball", charge=0.5, frames=FRAMES)
    top = [v.index for v in obj.data.vertices if v.co.z > 0.4]
    obj.vertex_groups.new(name="top").add(top, 1.0, "REPLACE")
    obj.cmsc.pin_group = "top"
    obj.shape_key_add(name="Basis", from_mix=False)
    lift = obj.shape_key_add(name="lift", from_mix=False)
    co = mesh_coords(obj)
    co[top, 2] += 0.3
    lift.data.foreach_set("co", co.ravel())
    for frame, value in ((1, 0.0), (FRAMES, 1.0)):
        lift.value = value
        lift.keyframe_insert("value", frame=frame)
    obj.cmsc.preview_substeps = 0
    return obj, top


def test_pins_driven_by_shape_keys_follow_them_in_the_preview_as_in_the_bake(scene, preview):
    sc, tmp = scene
    obj, top = shape_key_pinned(tmp)
    played = play(sc, range(1, FRAMES + 1))
    assert preview.is_running(obj)
    assert played[FRAMES][top, 2].min() > 0.4 + 0.25, "the pins rose with the key"
    sc.frame_set(1)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    baked = read_pc2(obj.cmsc.cache_path)
    for f in range(2, FRAMES + 1):
        np.testing.assert_allclose(played[f], baked[f - 1], rtol=0, atol=1e-5, err_msg=f"frame {f}")


def test_a_mesh_with_absolute_shape_keys_pauses_the_preview_with_a_reason(scene, preview):
    """The preview's key, shown through relative keys, became one more key of an absolute
    sequence: the mesh jumped 5-7 cm at frame 2 where the bake moves it 20 µm."""
    sc, tmp = scene
    obj = charged_sphere(tmp, "ball", charge=0.5, frames=FRAMES)
    obj.shape_key_add(name="Basis", from_mix=False)
    obj.shape_key_add(name="Next", from_mix=False)
    obj.data.shape_keys.use_relative = False
    bpy.context.view_layer.objects.active = obj
    rest = evaluated_coords(obj)
    play(sc, range(1, 4))
    assert not preview.is_running(obj)
    assert "shape keys are absolute (Relative unticked)" in preview.status(obj)[1]
    assert [kb.name for kb in obj.data.shape_keys.key_blocks] == ["Basis", "Next"]
    np.testing.assert_array_equal(evaluated_coords(obj), rest)


def test_a_frame_step_too_long_to_preview_is_named(scene, preview):
    """With Frame Step 10 each played frame was a jump, and the status said to play from frame 1,
    which the artist was doing."""
    sc, tmp = scene
    obj = charged_sphere(tmp, "ball", charge=0.5, frames=30)
    bpy.context.view_layer.objects.active = obj
    sc.frame_step = 10
    try:
        play(sc, [1, 11])
        assert "the timeline's Frame Step is 10: set it to 1 to preview" in preview.status(obj)[1]
    finally:
        sc.frame_step = 1
