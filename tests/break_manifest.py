"""Writes a copy of an add-on zip whose manifest Blender must refuse: `make package-check` checks
that each release's extension validator does fail on it, so that its passing the real zips means
something. The broken field is the version, which must be semantic (e.g. 1.0.0).

usage: python3 tests/break_manifest.py GOOD.zip BROKEN.zip"""

import sys
import zipfile

MANIFEST = "cmsc/blender_manifest.toml"


def main(good, broken):
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(broken, "w", zipfile.ZIP_DEFLATED) as dst:
        names = src.namelist()
        if MANIFEST not in names:
            sys.exit(f"{good} has no {MANIFEST}: {names[:5]}")
        for name in names:
            data = src.read(name)
            if name == MANIFEST:
                text = data.decode()
                lines = [line for line in text.splitlines() if line.startswith("version = ")]
                if len(lines) != 1:
                    sys.exit(f"{MANIFEST} of {good} has no single version line")
                data = text.replace(lines[0], 'version = "not a version"').encode()
            dst.writestr(name, data)


if __name__ == "__main__":
    main(*sys.argv[1:3])
