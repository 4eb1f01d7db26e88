"""Caches: one per object, never anyone else's file (issue 16). Each object bakes to its own file
by default; the bake overwrites and Free Bake deletes only what the bake itself wrote for that
object; the Mesh Cache modifier's path is relative to the saved .blend, so a moved project still
plays; a relative path on an unsaved file, and bad paths, are reported, never a traceback."""

import os
import shutil
import warnings

import bpy
import numpy as np
import pytest

from scenes import addon_module, charged_sphere, draw, evaluated_coords, key_charge, read_pc2, saved_scene

KNOWN = bytes(range(256)) * 8  # a foreign file's bytes: a bake must leave them exactly so


@pytest.fixture
def saved(tmp_path):
    """An empty scene (as `scene` makes it) in a .blend saved as <tmp>/project/scene.blend; an
    empty unsaved file again afterwards (the other tests bake with absolute paths in an unsaved
    file)."""
    sc, blend = saved_scene(tmp_path, "scene.blend")
    yield sc, tmp_path, blend
    bpy.ops.wm.read_homefile(use_empty=True)
    assert bpy.data.filepath == "" and hasattr(bpy.types.Object, "cmsc")


def default_path_sphere(tmp, name, charge=1.0, frames=6):
    """A charged sphere with the default (unset) Cache Path."""
    obj = charged_sphere(tmp, name=name, charge=charge, frames=frames)
    obj.cmsc.property_unset("cache_path")
    return obj


def cache_modifiers(obj):
    return [m for m in obj.modifiers if m.type == "MESH_CACHE"]


def played_file(obj):
    """The file the object's Mesh Cache modifier plays, as an absolute path."""
    (mod,) = cache_modifiers(obj)
    return bpy.path.abspath(mod.filepath)


def bake_error(**kw):
    """Runs the bake operator, which must fail; returns its report (bpy.ops raises on ERROR)."""
    with pytest.raises(RuntimeError) as e:
        bpy.ops.cmsc.bake(**kw)
    text = str(e.value)
    assert "Traceback" not in text, text
    return text


def foreign_file(path):
    path.write_bytes(KNOWN)
    return path


# -- one cache per object ----------------------------------------------------------------------
def test_each_object_gets_its_own_default_cache(saved):
    sc, tmp, blend = saved
    a = default_path_sphere(tmp, "a", charge=2.0)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    a_cache = read_pc2(played_file(a))
    b = default_path_sphere(tmp, "b", charge=0.0)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    assert played_file(a) != played_file(b)
    for obj in (a, b):
        folder, name = os.path.split(played_file(obj))
        assert folder == str(blend.parent / "cmsc_cache") and name.startswith(f"{obj.name}_"), played_file(obj)
    sc.frame_set(6)
    np.testing.assert_allclose(evaluated_coords(a), a_cache[5], rtol=0, atol=1e-6)  # still a's own motion
    assert np.abs(a_cache[5] - a_cache[0]).max() > 1e-3  # ... which moved (b, uncharged, stays)


def test_the_default_cache_survives_save_and_reload(saved):
    sc, tmp, blend = saved
    cache = addon_module("ui.cache")
    obj = default_path_sphere(tmp, "a")
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    path = cache.cache_path(obj)
    assert os.path.basename(path).startswith("a_") and played_file(obj) == path
    assert bpy.ops.wm.save_mainfile() == {"FINISHED"}
    assert bpy.ops.wm.open_mainfile(filepath=str(blend)) == {"FINISHED"}
    obj = bpy.data.objects["a"]
    assert cache.cache_path(obj) == path  # the same file after reload (a stable id, not session_uid)
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.cmsc.bake() == {"FINISHED"}  # its own cache: baked again in place
    assert played_file(obj) == path and len(cache_modifiers(obj)) == 1


def test_two_objects_with_the_same_cache_file_refuse_naming_the_other(scene):
    sc, tmp = scene
    a = charged_sphere(tmp, "first", frames=4)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    before = (tmp / "first.pc2").read_bytes()
    b = charged_sphere(tmp, "second", charge=0.0, frames=4)
    b.cmsc.cache_path = a.cmsc.cache_path
    error = bake_error()
    assert "first" in error, error
    assert (tmp / "first.pc2").read_bytes() == before
    assert not cache_modifiers(b)


# -- Free Bake deletes what the bake wrote -----------------------------------------------------
def test_free_bake_deletes_what_the_bake_wrote_not_the_current_path(scene):
    sc, tmp = scene
    obj = charged_sphere(tmp, "ball", frames=3)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    assert obj.cmsc.baked_cache_path and bpy.path.abspath(obj.cmsc.baked_cache_path) == str(tmp / "ball.pc2")
    texture = foreign_file(tmp / "texture.png")
    obj.cmsc.cache_path = str(texture)  # the path changes after the bake
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    assert texture.read_bytes() == KNOWN
    assert not (tmp / "ball.pc2").exists()  # the cache the bake wrote, not orphaned
    assert obj.cmsc.baked_cache_path == "" and not cache_modifiers(obj)


def test_the_written_path_is_read_only(scene):
    sc, tmp = scene
    obj = charged_sphere(tmp, "ball", frames=2)
    with pytest.raises((AttributeError, TypeError)):
        obj.cmsc.baked_cache_path = str(tmp / "texture.png")
    prop = obj.cmsc.bl_rna.properties["baked_cache_path"]
    assert prop.is_readonly
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    layout = draw(addon_module("ui.panels").CMSC_PT_main)
    assert layout.find("prop", "baked_cache_path") is None  # shown as text, not a field
    assert f"Baked to {tmp / 'ball.pc2'}" in layout.text(), layout.text()


def test_free_bake_keeps_a_cache_that_another_object_plays(scene):
    sc, tmp = scene
    obj = charged_sphere(tmp, "ball", frames=3)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    copy = obj.copy()  # Shift+D: the copy plays the same file
    sc.collection.objects.link(copy)
    copy.cmsc.enabled = False  # not simulated (a simulated copy would be freed with the joint bake)
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    assert (tmp / "ball.pc2").is_file()  # the copy still plays it
    assert not cache_modifiers(obj) and len(cache_modifiers(copy)) == 1


# -- never overwrite a foreign file ------------------------------------------------------------
def test_the_bake_never_overwrites_a_file_it_did_not_write(scene):
    sc, tmp = scene
    obj = charged_sphere(tmp, "ball", frames=3)
    texture = foreign_file(tmp / "texture.png")
    obj.cmsc.cache_path = str(texture)
    error = bake_error()
    assert "texture.png" in error and "not" in error, error
    assert texture.read_bytes() == KNOWN
    assert not cache_modifiers(obj)
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    assert texture.read_bytes() == KNOWN


def test_the_bake_never_overwrites_the_blend_itself(saved):
    sc, tmp, blend = saved
    before = blend.read_bytes()
    obj = charged_sphere(tmp, "ball", frames=3)
    obj.cmsc.cache_path = "//scene.blend"
    bake_error()
    assert blend.read_bytes() == before
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    assert blend.read_bytes() == before


def test_a_cache_baked_before_the_record_is_still_its_own(scene):
    """A file from before the add-on recorded what it wrote: its "cmsc cache" modifier plays
    the object's explicit Cache Path. Baking again replaces that cache, as it used to."""
    sc, tmp = scene
    obj = charged_sphere(tmp, "old", frames=3)
    shutil.copyfile(_a_pc2(tmp, len(obj.data.vertices)), tmp / "old.pc2")
    mod = obj.modifiers.new("cmsc cache", "MESH_CACHE")
    mod.cache_format, mod.filepath = "PC2", str(tmp / "old.pc2")
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    assert len(cache_modifiers(obj)) == 1 and read_pc2(tmp / "old.pc2").shape[0] == 3


def _a_pc2(tmp, points):
    """A PC2 file of 2 samples of `points` zeros."""
    path = tmp / "legacy-source.pc2"
    header = np.zeros(8, dtype="<i4").tobytes()
    head = bytearray(b"POINTCACHE2\0" + header[:20])
    head[12:16] = np.int32(1).tobytes()
    head[16:20] = np.int32(points).tobytes()
    head[20:24] = np.float32(1).tobytes()
    head[24:28] = np.float32(1).tobytes()
    head[28:32] = np.int32(2).tobytes()
    path.write_bytes(bytes(head) + np.zeros(2 * points * 3, dtype="<f4").tobytes())
    return path


# -- relative paths in the modifier ------------------------------------------------------------
def test_cache_path_accepts_blend_relative_paths_without_a_warning(scene):
    sc, tmp = scene
    obj = charged_sphere(tmp, frames=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        obj.cmsc.cache_path = "//caches/ball.pc2"
    assert [str(w.message) for w in caught] == []


def test_a_moved_project_still_plays_its_cache(saved):
    sc, tmp, blend = saved
    obj = default_path_sphere(tmp, "ball", frames=6)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    assert cache_modifiers(obj)[0].filepath.startswith("//"), cache_modifiers(obj)[0].filepath
    baked = read_pc2(played_file(obj))
    assert bpy.ops.wm.save_mainfile() == {"FINISHED"}
    moved = tmp / "moved"
    bpy.ops.wm.read_homefile(use_empty=True)  # let go of the file before moving its folder
    shutil.move(str(blend.parent), str(moved))
    assert bpy.ops.wm.open_mainfile(filepath=str(moved / "scene.blend")) == {"FINISHED"}
    obj = bpy.data.objects["ball"]
    assert played_file(obj).startswith(str(moved))
    bpy.context.scene.frame_set(5)
    np.testing.assert_allclose(evaluated_coords(obj), baked[4], rtol=0, atol=1e-6)
    assert np.abs(baked[4] - baked[0]).max() > 1e-3
    bpy.context.view_layer.objects.active = obj
    written = played_file(obj)
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}  # the record moved with the project too
    assert not os.path.exists(written)


# -- unsaved files and bad paths ---------------------------------------------------------------
@pytest.mark.parametrize("path", [None, "//ball.pc2", "ball.pc2"], ids=["default", "blend-relative", "bare"])
def test_a_relative_cache_path_on_an_unsaved_file_is_refused(scene, monkeypatch, path):
    sc, tmp = scene
    assert bpy.data.filepath == ""
    work = tmp / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    obj = charged_sphere(tmp, "ball", frames=3)
    if path is None:
        obj.cmsc.property_unset("cache_path")
    else:
        obj.cmsc.cache_path = path
    assert "Save the .blend first" in bake_error()
    assert list(work.iterdir()) == []  # nothing in the working directory
    assert not cache_modifiers(obj)


def test_a_shape_key_bake_needs_no_saved_file(scene, monkeypatch):
    sc, tmp = scene
    monkeypatch.chdir(tmp)
    obj = charged_sphere(tmp, "ball", frames=3)
    obj.cmsc.property_unset("cache_path")
    obj.cmsc.cache_format = "SHAPE_KEYS"
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    assert len(obj.data.shape_keys.key_blocks) == 1 + 3
    assert sorted(p.name for p in tmp.iterdir()) == []  # nothing written beside it either


def _sys_is_read_only():
    try:
        open("/sys/cmsc-probe.pc2", "xb").close()
    except OSError:
        return True
    os.remove("/sys/cmsc-probe.pc2")
    return False


@pytest.mark.parametrize(
    "kind", ["folder", "under a file", "missing drive", "no permission", "typed on Windows"]
)
def test_bad_paths_are_reported(scene, kind):
    sc, tmp = scene
    obj = charged_sphere(tmp, "ball", frames=3)
    foreign_file(tmp / "notes.txt")
    if kind == "no permission" and not _sys_is_read_only():
        pytest.skip("/sys is writable here")
    path = {
        "folder": str(tmp),
        "under a file": str(tmp / "notes.txt" / "ball.pc2"),
        "missing drive": str(tmp / "unmounted-drive" / "ball.pc2"),  # an absolute path: no folder made
        "no permission": "/sys/cmsc-ball.pc2",
        "typed on Windows": str(tmp) + "\\ball.pc2",  # on Linux and macOS: a file named "<tmp>\ball.pc2"
    }[kind]
    obj.cmsc.cache_path = path
    error = bake_error()
    assert "cmsc:" in error and path in error, error
    assert not (tmp / "unmounted-drive").exists() and not os.path.exists(str(tmp) + "\\ball.pc2")
    assert (tmp / "notes.txt").read_bytes() == KNOWN
    assert not cache_modifiers(obj)


def test_modal_bake_reports_a_bad_path(scene):
    sc, tmp = scene
    bake, cache_files = addon_module("ui.bake"), addon_module("sim.cache_files")
    obj = charged_sphere(tmp, "ball", frames=3)
    obj.cmsc.cache_path = str(tmp)
    with pytest.raises(cache_files.CacheFileError) as e:
        bake.ModalBake(bpy.context, obj)
    assert str(tmp) in str(e.value)


def test_a_cache_file_deleted_by_hand_is_said_missing_not_baked(scene):
    """The panel said "Baked" while the Mesh Cache modifier found no file and the mesh stood still."""
    sc, tmp = scene
    panels = addon_module("ui.panels")
    charged_sphere(tmp, "ball", frames=3)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    assert draw(panels.CMSC_PT_bake).text().startswith("Baked to")
    assert "Baked: changing a setting" in draw(panels.CMSC_PT_bake).text()
    os.remove(tmp / "ball.pc2")
    text = draw(panels.CMSC_PT_bake).text()
    assert f"The cache file {tmp / 'ball.pc2'} is missing (deleted or moved)" in text, text
    assert "Baked: changing a setting" not in text, text
    assert bpy.ops.cmsc.bake() == {"FINISHED"}  # baked again: it plays
    assert "missing" not in draw(panels.CMSC_PT_bake).text()


# -- a refused bake keeps the bake before it ---------------------------------------------------
@pytest.mark.parametrize("fmt", ["PC2", "SHAPE_KEYS"])
@pytest.mark.parametrize("refusal", ["self-collision distance", "an empty mesh baked with it"])
def test_a_bake_refused_for_its_inputs_keeps_the_bake_before_it(scene, fmt, refusal):
    """The old bake was freed (its file deleted) before the inputs were read, so a refusal found
    while reading them lost it: on a farm, the saved .blend then played a missing file."""
    sc, tmp = scene
    obj = charged_sphere(tmp, "ball", charge=2.0, frames=4)
    obj.cmsc.cache_format = fmt
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    sc.frame_set(4)
    played = evaluated_coords(obj)
    assert np.abs(played - evaluated_coords_at(obj, 1)).max() > 1e-3  # the bake moves it
    before = (tmp / "ball.pc2").read_bytes() if fmt == "PC2" else None
    if refusal == "self-collision distance":
        obj.cmsc.self_collision = True
        obj.cmsc.self_collision_distance = 5.0  # longer than the whole sphere
        named = "ball: Self Collision Distance"
    else:
        empty = bpy.data.objects.new("Nothing", bpy.data.meshes.new("Nothing"))
        sc.collection.objects.link(empty)
        empty.cmsc.enabled = True
        empty.cmsc.cache_path = str(tmp / "nothing.pc2")
        named = "Nothing has no vertices to simulate"
    bpy.context.view_layer.objects.active = obj
    error = bake_error()
    assert named in error, error
    assert addon_module("ui.cache").has_bake(obj)
    sc.frame_set(4)
    np.testing.assert_allclose(evaluated_coords(obj), played, rtol=0, atol=1e-6)  # it still plays
    if fmt == "PC2":
        assert (tmp / "ball.pc2").read_bytes() == before
        assert len(cache_modifiers(obj)) == 1
    else:
        assert not obj.modifiers


def evaluated_coords_at(obj, frame):
    bpy.context.scene.frame_set(frame)
    return evaluated_coords(obj)


# -- one outcome per bake, one modifier per bake -----------------------------------------------
def test_a_diverged_script_bake_reports_only_the_error(scene, capfd):
    sc, tmp = scene
    obj = charged_sphere(tmp, charge=0.0, frames=10)
    key_charge(obj.cmsc.charge_groups[0], [(1, 0.0), (5, 1e200)], interpolation="CONSTANT")
    capfd.readouterr()
    error = bake_error()
    assert "diverged at frame 5" in error and "kept 4 baked frames" in error, error
    printed = capfd.readouterr().out  # Blender prints every report (bpy.ops raises only the errors)
    assert "Error: cmsc: diverged at frame 5" in printed, printed
    assert "Info: cmsc: baked" not in printed, printed
    assert read_pc2(obj.cmsc.cache_path).shape[0] == 4  # the frames before are kept and play
    assert len(cache_modifiers(obj)) == 1


def test_a_renamed_cache_modifier_is_still_the_bakes(scene):
    sc, tmp = scene
    panels = addon_module("ui.panels")
    obj = charged_sphere(tmp, frames=3)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    cache_modifiers(obj)[0].name = "My Cache"
    assert not draw(panels.CMSC_PT_main).find("prop", "stiffness")[0].is_active()  # still baked
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    assert len(cache_modifiers(obj)) == 1
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    assert not cache_modifiers(obj) and not os.path.exists(obj.cmsc.cache_path)
