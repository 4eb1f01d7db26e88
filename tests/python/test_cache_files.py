"""Cache paths without Blender: the default per-object path, resolving `//` against the saved
.blend (never the working directory), and the refusals that protect other files."""

import os

import pytest

from sim.cache_files import (
    CacheFileError,
    check_target,
    check_typed,
    default_path,
    file_stem,
    is_pc2,
    make_folder,
    resolve,
    same_file,
)
from sim.pc2 import Pc2Writer


def test_default_path_is_per_object_and_blend_relative():
    assert default_path("Cube", "1a2b3c4d") == "//cmsc_cache/Cube_1a2b3c4d.pc2"
    assert default_path("Cube.001", "1a2b3c4d") != default_path("Cube", "1a2b3c4d")
    assert file_stem('a/b\\c:d*?"<>|') == "a_b_c_d______"
    assert file_stem("..") == "object" and file_stem("Kugel ä") == "Kugel_ä"


def test_resolve_is_relative_to_the_blend_never_the_working_directory(tmp_path):
    blend = str(tmp_path / "project" / "scene.blend")
    assert resolve("//cmsc_cache/a.pc2", blend) == str(tmp_path / "project" / "cmsc_cache" / "a.pc2")
    assert resolve("a.pc2", blend) == str(tmp_path / "project" / "a.pc2")
    assert resolve("//../a.pc2", blend) == str(tmp_path / "a.pc2")
    assert resolve(str(tmp_path / "x" / ".." / "a.pc2"), "") == str(tmp_path / "a.pc2")  # absolute: saved or not
    for path in ("//a.pc2", "a.pc2"):
        with pytest.raises(CacheFileError, match="Save the .blend first"):
            resolve(path, "")
    with pytest.raises(CacheFileError, match="empty"):
        resolve("", blend)


def test_same_file_and_pc2_signature(tmp_path):
    assert same_file(str(tmp_path / "a" / ".." / "b.pc2"), str(tmp_path / "b.pc2"))
    assert not same_file(str(tmp_path / "a.pc2"), str(tmp_path / "b.pc2"))
    with Pc2Writer(tmp_path / "c.pc2", 3):
        pass
    (tmp_path / "t.png").write_bytes(b"\x89PNG")
    assert is_pc2(tmp_path / "c.pc2") and not is_pc2(tmp_path / "t.png") and not is_pc2(tmp_path / "none")


def test_check_target_refuses_what_is_not_a_new_or_own_cache(tmp_path):
    (tmp_path / "t.png").write_bytes(b"\x89PNG")
    with Pc2Writer(tmp_path / "own.pc2", 3):
        pass
    check_target(str(tmp_path / "new.pc2"), own=False, make_folders=False)
    check_target(str(tmp_path / "own.pc2"), own=True, make_folders=False)
    check_target(str(tmp_path / "new" / "deeper" / "a.pc2"), own=False, make_folders=True)
    refusals = {
        "is a folder": (tmp_path, False, True),
        "is not a cache this object baked": (tmp_path / "own.pc2", False, True),  # a PC2, not recorded
        "t.png exists and is not": (tmp_path / "t.png", True, True),  # recorded, but not a PC2 now
        "is a file, not a folder": (tmp_path / "t.png" / "a.pc2", False, True),
        "does not exist (a drive": (tmp_path / "unplugged" / "a.pc2", False, False),
    }
    for message, (path, own, make) in refusals.items():
        with pytest.raises(CacheFileError, match=message.replace("(", r"\(").replace(".", r"\.")):
            check_target(str(path), own=own, make_folders=make)
    assert not (tmp_path / "unplugged").exists() and not (tmp_path / "new").exists()


def test_make_folder(tmp_path):
    make_folder(str(tmp_path / "a" / "b" / "c.pc2"))
    assert os.path.isdir(tmp_path / "a" / "b")
    (tmp_path / "f").write_bytes(b"")
    with pytest.raises(CacheFileError, match="cannot create the folder"):
        make_folder(str(tmp_path / "f" / "b" / "c.pc2"))


@pytest.mark.parametrize(
    "typed, sep, says",
    [
        ("//caches\\cloth.pc2", "/", "so write //caches/cloth.pc2"),
        ("D:/caches/cloth.pc2", "/", "names a Windows drive (D:)"),
        ("~/caches/cloth.pc2", "/", "starts with ~"),
        ("~/caches/cloth.pc2", "\\", "starts with ~"),
    ],
)
def test_a_cache_path_typed_for_another_system_is_refused_with_the_path_to_write(typed, sep, says):
    """Baked on Linux, `//caches\\cloth.pc2` wrote a file of that name that nothing played, and
    `D:/…` and `~/…` made folders named `D:` and `~` beside the .blend, each reported "Baked"."""
    with pytest.raises(CacheFileError) as e:
        check_typed(typed, sep=sep)
    assert says in str(e.value), str(e.value)


@pytest.mark.parametrize(
    "typed, sep",
    [("//cmsc_cache/cloth.pc2", "/"), ("/mnt/caches/cloth.pc2", "/"), ("cache.pc2", "/"),
     ("D:\\caches\\cloth.pc2", "\\"), ("//caches\\cloth.pc2", "\\")],
)
def test_a_cache_path_of_this_system_is_taken(typed, sep):
    check_typed(typed, sep=sep)
