"""The loader picks the library of this platform from the add-on's own folder and explains a
missing library or one built for another platform (sim/_native.py)."""

import shutil

import pytest

from sim import _native
from sim.errors import LibraryError

MACHO_ARM64 = b"\xcf\xfa\xed\xfe" + (0x0100000C).to_bytes(4, "little") + bytes(64)
PE_X64 = b"MZ" + bytes(58) + (64).to_bytes(4, "little") + b"PE\0\0" + (0x8664).to_bytes(2, "little") + bytes(64)


@pytest.mark.parametrize(
    "system, machine, tag",
    [
        ("linux", "x86_64", "linux-x64"),
        ("win32", "AMD64", "windows-x64"),
        ("darwin", "arm64", "macos-arm64"),
        ("darwin", "x86_64", "macos-x64"),
        ("linux", "aarch64", "linux-arm64"),
    ],
)
def test_platform_tags_are_blenders(system, machine, tag):
    assert _native.platform_tag(system, machine) == tag


def test_each_platform_has_its_library_file():
    assert _native.LIBRARY_FILES == {
        "linux-x64": "libcmsc.so",
        "windows-x64": "cmsc.dll",
        "macos-arm64": "libcmsc.dylib",
        "macos-x64": "libcmsc.dylib",
    }
    assert _native.addon_library_path().endswith(f"lib/{_native.LIB_NAME}".replace("/", _native.os.sep))


def test_binaries_are_described_from_their_headers(lib_path, tmp_path):
    assert _native.describe_binary(lib_path) == "an ELF (Linux) x86-64 library"
    (tmp_path / "a").write_bytes(MACHO_ARM64)
    (tmp_path / "b").write_bytes(PE_X64)
    (tmp_path / "c").write_bytes(b"text")
    assert _native.describe_binary(str(tmp_path / "a")) == "a Mach-O (macOS) arm64 library"
    assert _native.describe_binary(str(tmp_path / "b")) == "a PE (Windows) x86-64 library"
    assert _native.describe_binary(str(tmp_path / "c")) is None


needs_linux_x64 = pytest.mark.skipif(_native.platform_tag() != "linux-x64", reason="messages name linux-x64")


@needs_linux_x64
def test_a_library_of_another_platform_is_named_as_such(tmp_path):
    wrong = tmp_path / "libcmsc.so"
    wrong.write_bytes(MACHO_ARM64)
    with pytest.raises(LibraryError, match=r"Mach-O \(macOS\) arm64 library, this Blender runs on linux-x64; "
                       r"install the cmsc add-on zip for linux-x64"):
        _native.load(str(wrong))


@needs_linux_x64
def test_another_platforms_zip_is_recognised_when_the_library_is_missing(tmp_path, lib_path):
    (tmp_path / "cmsc.dll").write_bytes(PE_X64)
    with pytest.raises(LibraryError, match=r"not found .*built for another platform \(cmsc.dll is a PE \(Windows\)"):
        _native.load(str(tmp_path / "libcmsc.so"))
    (tmp_path / "cmsc.dll").unlink()
    with pytest.raises(LibraryError, match="not found .*reinstall the cmsc add-on zip for linux-x64"):
        _native.load(str(tmp_path / "libcmsc.so"))


def test_a_loaded_library_stays_loaded(lib_path, tmp_path):
    """Never unloaded: loading the same path again returns the same handle."""
    copy = tmp_path / "libcmsc.so"
    shutil.copy(lib_path, copy)
    assert _native.load(str(copy)) is _native.load(str(copy))
