"""Writes the add-on zips, one per Blender extension platform, each with the library of that
platform alone and a manifest that lists only it (as Molecular Nodes builds its zips):

    python3 tools/package_addon.py DIST PLATFORM=LIBRARY [PLATFORM=LIBRARY ...]
    e.g. python3 tools/package_addon.py dist linux-x64=target/zig/.../libcmsc.so windows-x64=...

writes DIST/cmsc-<version>-<platform>.zip, <version> from blender_addon/blender_manifest.toml.
Blender's `extension build --split-platforms` only splits wheels, so it cannot do this: the
library is not a Python wheel.
"""

import os
import re
import sys
import zipfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
ADDON = os.path.join(ROOT, "blender_addon")

#: What ships from blender_addon/: files and packages (folders walked, bytecode left out).
CONTENTS = ["__init__.py", "blender_manifest.toml", "sim", "ui"]

#: Blender's platform tag -> the file name the loader (sim/_native.py, LIBRARY_FILES) looks for.
LIBRARY_FILES = {
    "linux-x64": "libcmsc.so",
    "windows-x64": "cmsc.dll",
    "macos-arm64": "libcmsc.dylib",
    "macos-x64": "libcmsc.dylib",
}

PLATFORMS_LINE = re.compile(r"^platforms\s*=.*$", re.MULTILINE)


def addon_files():
    """(path on disk, path in the zip below cmsc/) of every file that ships, sorted."""
    out = []
    for item in CONTENTS:
        path = os.path.join(ADDON, item)
        if os.path.isfile(path):
            out.append((path, item))
            continue
        for folder, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if not name.endswith((".pyc", ".pyo")):
                    full = os.path.join(folder, name)
                    out.append((full, os.path.relpath(full, ADDON).replace(os.sep, "/")))
    return sorted(out, key=lambda f: f[1])


def manifest_for(text, tag):
    """The manifest text with `platforms = ["<tag>"]` instead of its platforms line."""
    if len(PLATFORMS_LINE.findall(text)) != 1:
        sys.exit("blender_manifest.toml must have exactly one `platforms = [...]` line")
    return PLATFORMS_LINE.sub(f'platforms = ["{tag}"]', text)


def write_zip(dist, version, tag, library, manifest):
    path = os.path.join(dist, f"cmsc-{version}-{tag}.zip")
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for full, rel in addon_files():
            if rel == "blender_manifest.toml":
                z.writestr("cmsc/" + rel, manifest_for(manifest, tag))
            else:
                z.write(full, "cmsc/" + rel)
        z.write(library, f"cmsc/lib/{LIBRARY_FILES[tag]}")
    os.replace(tmp, path)
    print(f"{path}: {os.path.getsize(path) / 1e6:.1f} MB")


def main(dist, pairs):
    with open(os.path.join(ADDON, "blender_manifest.toml"), encoding="utf-8") as f:
        manifest = f.read()
    version = re.search(r'^version\s*=\s*"([^"]+)"', manifest, re.MULTILINE).group(1)
    os.makedirs(dist, exist_ok=True)
    for pair in pairs:
        tag, _, library = pair.partition("=")
        if tag not in LIBRARY_FILES or not os.path.isfile(library):
            sys.exit(f"bad PLATFORM=LIBRARY pair {pair!r} (platforms: {', '.join(LIBRARY_FILES)})")
        write_zip(dist, version, tag, library, manifest)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
