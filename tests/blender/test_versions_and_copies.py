"""A cache belongs to one .blend and one object (issue 27): a Save As copy of a .blend and a
duplicated object hold the original's record, but never replace, free or delete its cache;
Free Bake frees what it says; re-baking keeps the bake current whatever the vertex groups."""

import os

import bpy
import numpy as np
import pytest

from scenes import addon_module, charged_sphere, evaluated_coords, read_pc2, saved_scene


@pytest.fixture
def project(tmp_path):
    """An empty scene saved as <tmp>/project/shot_v01.blend; an empty unsaved file afterwards."""
    sc, blend = saved_scene(tmp_path, "shot_v01.blend")
    yield sc, tmp_path, blend
    bpy.ops.wm.read_homefile(use_empty=True)


def sphere(tmp, name="cloth", charge=2.0, frames=6, path=None):
    """A charged sphere with the default Cache Path (or `path`)."""
    obj = charged_sphere(tmp, name=name, charge=charge, frames=frames)
    if path is None:
        obj.cmsc.property_unset("cache_path")
    else:
        obj.cmsc.cache_path = path
    return obj


def played(obj):
    (mod,) = [m for m in obj.modifiers if m.type == "MESH_CACHE"]
    return bpy.path.abspath(mod.filepath)


def reopen(blend):
    assert bpy.ops.wm.open_mainfile(filepath=str(blend)) == {"FINISHED"}


def activate(obj):
    bpy.context.view_layer.objects.active = obj


# -- versioned files ---------------------------------------------------------------------------
@pytest.mark.parametrize("path", [None, "//cache/cloth.pc2"], ids=["default path", "set path"])
def test_a_save_as_copy_never_replaces_or_frees_the_originals_cache(project, path):
    sc, tmp, v01 = project
    obj = sphere(tmp, path=path)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    first = played(obj)
    first_bytes = open(first, "rb").read()
    assert bpy.ops.wm.save_mainfile() == {"FINISHED"}

    v02 = v01.parent / "shot_v02.blend"
    assert bpy.ops.wm.save_as_mainfile(filepath=str(v02)) == {"FINISHED"}
    obj = bpy.data.objects["cloth"]
    obj.cmsc.charge_groups[0].charge = 6.0  # another version of the shot
    if path is None:
        assert bpy.ops.cmsc.bake() == {"FINISHED"}  # bakes to a file of its own
        second = played(obj)
        assert second != first and os.path.isfile(second)
        assert not np.allclose(read_pc2(second)[-1], read_pc2(first)[-1])
    else:  # the file v01 wrote, set by hand: refused, naming v01
        with pytest.raises(RuntimeError) as e:
            bpy.ops.cmsc.bake()
        assert "shot_v01.blend" in str(e.value) and "Cache Path" in str(e.value), str(e.value)
        obj.cmsc.cache_path = "//cache/cloth_v02.pc2"
        assert bpy.ops.cmsc.bake() == {"FINISHED"}
        second = played(obj)
    assert open(first, "rb").read() == first_bytes  # v01's cache untouched
    assert bpy.ops.wm.save_mainfile() == {"FINISHED"}

    reopen(v01)  # v01 plays its own motion, still current
    obj = bpy.data.objects["cloth"]
    assert played(obj) == first and not obj.cmsc.cache_outdated
    sc = bpy.context.scene
    sc.frame_set(6)
    np.testing.assert_allclose(evaluated_coords(obj), read_pc2(first)[5], rtol=0, atol=1e-6)
    activate(obj)
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}  # frees v01's own file only
    assert not os.path.exists(first) and os.path.isfile(second)


def test_freeing_in_a_save_as_copy_keeps_the_originals_file(project):
    sc, tmp, v01 = project
    obj = sphere(tmp)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    first = played(obj)
    assert bpy.ops.wm.save_mainfile() == {"FINISHED"}
    assert bpy.ops.wm.save_as_mainfile(filepath=str(v01.parent / "shot_v02.blend")) == {"FINISHED"}
    activate(bpy.data.objects["cloth"])
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    assert os.path.isfile(first)  # v01 still plays it
    assert not [m for m in bpy.data.objects["cloth"].modifiers if m.type == "MESH_CACHE"]


def test_a_moved_project_still_owns_its_cache(project):
    sc, tmp, v01 = project
    obj = sphere(tmp)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    assert bpy.ops.wm.save_mainfile() == {"FINISHED"}
    bpy.ops.wm.read_homefile(use_empty=True)
    moved = tmp / "moved"
    os.rename(v01.parent, moved)
    reopen(moved / "shot_v01.blend")
    obj = bpy.data.objects["cloth"]
    path = played(obj)
    assert path.startswith(str(moved))
    activate(obj)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    assert played(obj) == path  # baked again in place, not to a new file


def test_a_same_named_copy_in_a_sibling_folder_never_replaces_a_cache_folder_they_share(project):
    """Shots named alike in sibling folders (sh010/shot.blend, sh020/shot.blend) with a Cache Path
    into a folder they share (`//../caches/`): the copy took the first one's file for its own
    (a moved project), so its bake overwrote it and its Free Bake deleted it. Moved alone, the
    .blend still owns it."""
    sc, tmp, v01 = project
    obj = sphere(tmp, path="//../caches/cloth.pc2")
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    first = os.path.normpath(played(obj))
    assert first == str(tmp / "caches" / "cloth.pc2")
    first_bytes = open(first, "rb").read()
    assert bpy.ops.wm.save_mainfile() == {"FINISHED"}

    copy = tmp / "sh020" / v01.name
    copy.parent.mkdir()
    assert bpy.ops.wm.save_as_mainfile(filepath=str(copy)) == {"FINISHED"}
    obj = bpy.data.objects["cloth"]
    obj.cmsc.charge_groups[0].charge = 6.0
    activate(obj)
    with pytest.raises(RuntimeError) as e:
        bpy.ops.cmsc.bake()
    assert str(v01) in str(e.value) and "Cache Path" in str(e.value), str(e.value)
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    assert open(first, "rb").read() == first_bytes

    bpy.ops.wm.read_homefile(use_empty=True)
    os.replace(v01, copy)  # the first .blend moved alone: its bake is still its own
    reopen(copy)
    obj = bpy.data.objects["cloth"]
    activate(obj)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    assert os.path.normpath(played(obj)) == first


def test_a_simulated_object_linked_from_a_library_plays_its_bake_and_is_left_out(tmp_path, capfd):
    """A linked simulated object joined the shot's bake: a new file in the shot's folder that its
    modifier (relative to the library) never played, so the shot's motion was simulated against
    one the render does not show, and Free Bake stripped its modifier."""
    sc, lib = saved_scene(tmp_path, "lib.blend")
    prop = sphere(tmp_path, name="prop", charge=3.0)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    prop_cache = played(prop)
    prop_bytes = open(prop_cache, "rb").read()
    assert bpy.ops.wm.save_mainfile() == {"FINISHED"}

    shots = tmp_path / "shots"
    shots.mkdir()
    bpy.ops.wm.read_homefile(use_empty=True)
    sc = bpy.context.scene
    sc.cmsc.use_gravity = False
    sc.render.fps = 24
    assert bpy.ops.wm.save_as_mainfile(filepath=str(shots / "shot.blend")) == {"FINISHED"}
    with bpy.data.libraries.load(str(lib), link=True, relative=True) as (src, dst):
        dst.objects = ["prop"]
    prop = dst.objects[0]
    sc.collection.objects.link(prop)
    hero = sphere(tmp_path, name="hero", charge=2.0)
    hero.location = (5.0, 0.0, 0.0)
    activate(hero)
    capfd.readouterr()
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    assert "prop is linked from lib.blend: it plays that file's bake" in capfd.readouterr().out
    assert os.listdir(shots / "cmsc_cache") == [os.path.basename(played(hero))]
    (mod,) = prop.modifiers  # still the library's, played from the library's folder
    assert mod.type == "MESH_CACHE"
    assert os.path.normpath(bpy.path.abspath(mod.filepath, library=prop.library)) == os.path.normpath(prop_cache)
    alone = read_pc2(played(hero))
    cache = addon_module("ui.cache")
    assert cache.missing_file(prop) is None  # its path is the library's, which has the file
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    assert [m.type for m in prop.modifiers] == ["MESH_CACHE"]
    activate(prop)
    with pytest.raises(RuntimeError, match="prop is linked from a library: free its bake in that file"):
        bpy.ops.cmsc.free_bake()
    assert [m.type for m in prop.modifiers] == ["MESH_CACHE"]
    assert open(prop_cache, "rb").read() == prop_bytes
    sc.collection.objects.unlink(prop)  # the hero alone bakes the same motion: prop took no part
    activate(hero)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    np.testing.assert_array_equal(read_pc2(played(hero)), alone)
    bpy.ops.wm.read_homefile(use_empty=True)


def test_a_bake_made_before_saving_is_the_files_own(tmp_path):
    """Baked in an unsaved file (absolute Cache Path), then saved: the saved file re-bakes it."""
    bpy.ops.wm.read_homefile(use_empty=True)
    try:
        bpy.context.scene.cmsc.use_gravity = False
        sphere(tmp_path, path=str(tmp_path / "cloth.pc2"))
        assert bpy.ops.cmsc.bake() == {"FINISHED"}
        assert bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "shot.blend")) == {"FINISHED"}
        reopen(tmp_path / "shot.blend")
        activate(bpy.data.objects["cloth"])
        assert bpy.ops.cmsc.bake() == {"FINISHED"}
        assert played(bpy.data.objects["cloth"]) == str(tmp_path / "cloth.pc2")
    finally:
        bpy.ops.wm.read_homefile(use_empty=True)


# -- duplicates --------------------------------------------------------------------------------
def shift_d(obj):
    """What Shift+D makes: a copy of the object and of its mesh, linked to the same collection."""
    copy = obj.copy()
    copy.data = obj.data.copy()
    bpy.context.scene.collection.objects.link(copy)
    return copy


def test_a_duplicate_bakes_to_its_own_default_cache(project):
    sc, tmp, blend = project
    obj = sphere(tmp)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    original = played(obj)
    copy = shift_d(obj)
    copy.location.x += 3.0
    activate(copy)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    assert played(copy) != played(obj) and played(obj) == original
    assert os.path.isfile(played(copy)) and os.path.isfile(original)


def test_free_bake_on_a_duplicate_keeps_the_originals_file(project):
    sc, tmp, blend = project
    obj = sphere(tmp)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    original = played(obj)
    copy = shift_d(obj)
    activate(copy)
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    assert os.path.isfile(original) and played(obj) == original
    assert not [m for m in copy.modifiers if m.type == "MESH_CACHE"]
    assert obj.cmsc.baked_cache_path and not copy.cmsc.baked_cache_path


def test_an_original_renamed_then_duplicated_still_owns_its_bake(project, capfd):
    """Bake "cloth", rename it "hero", Shift+D: Free Bake on hero said "it is the bake of cloth
    (hero is a copy of it)" and kept the file as if hero were the copy."""
    sc, tmp, blend = project
    obj = sphere(tmp)
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    original = played(obj)
    obj.name = "hero"
    copy = shift_d(obj)
    cache = addon_module("ui.cache")
    assert cache.owns_bake(obj) and not cache.owns_bake(copy)
    assert cache.foreign_owner(copy) == f"it is the bake of hero ({copy.name} is a copy of it)"
    assert bpy.ops.wm.save_mainfile() == {"FINISHED"}  # records adopted on save: still told apart
    assert cache.owns_bake(obj) and not cache.owns_bake(copy)
    activate(obj)
    capfd.readouterr()
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    assert f"kept {original}: {copy.name} plays it too" in capfd.readouterr().out
    assert os.path.isfile(original)
    activate(copy)  # the last to play it, the original's bake freed: no one's to keep
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    assert not os.path.exists(original)


def test_free_bake_on_an_object_no_longer_simulated_frees_only_its_own(project):
    sc, tmp, blend = project
    a = sphere(tmp, "a")
    b = sphere(tmp, "b")
    b.location.x = 3.0
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    b_file = played(b)
    a.cmsc.enabled = False
    activate(a)
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    assert not [m for m in a.modifiers if m.type == "MESH_CACHE"]
    assert played(b) == b_file and os.path.isfile(b_file)


def test_free_bake_frees_the_objects_baked_together(project):
    sc, tmp, blend = project
    a = sphere(tmp, "a")
    b = sphere(tmp, "b")
    b.location.x = 3.0
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    files = [played(a), played(b)]
    activate(a)
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    assert not any(os.path.exists(f) for f in files)
    assert not a.modifiers and not b.modifiers


# -- the record of vertex groups ---------------------------------------------------------------
@pytest.mark.parametrize("groups", [1, 2, 3])
def test_a_rebake_is_current_whatever_the_vertex_groups(project, groups):
    sc, tmp, blend = project
    obj = sphere(tmp)
    for k in range(1, groups):
        obj.vertex_groups.new(name=f"extra{k}")
    obj.cmsc.pin_group = ""
    for _ in range(2):  # the second bake re-assigns the record
        assert bpy.ops.cmsc.bake() == {"FINISHED"}
        assert not obj.cmsc.cache_outdated
        obj.vertex_groups.active_index = 0  # an update of the object that changes no input
        bpy.context.view_layer.update()
        assert not obj.cmsc.cache_outdated
    obj.vertex_groups[-1].name = "renamed"
    bpy.context.view_layer.update()
    assert obj.cmsc.cache_outdated


def test_a_record_from_before_is_not_outdated_by_reading_it(project):
    """A bake recorded before the names were JSON (NUL-joined, cut by Blender to the first)."""
    sc, tmp, blend = project
    watch = addon_module("ui.watch")
    obj = sphere(tmp)
    obj.vertex_groups.new(name="pins")
    assert bpy.ops.cmsc.bake() == {"FINISHED"}
    obj.cmsc[watch._GROUPS] = "all"  # what Blender kept of "all\0pins"
    obj.vertex_groups.active_index = 1
    bpy.context.view_layer.update()
    assert not obj.cmsc.cache_outdated
