"""Fails unless every versioned glibc symbol a shared library needs is at most a given version,
i.e. the library loads on systems with that glibc (official Blender builds need 2.28).

    python tests/check_glibc.py LIBRARY MAX_VERSION
"""

import re
import subprocess
import sys


def main(path, limit):
    out = subprocess.run(["objdump", "-T", path], capture_output=True, text=True, check=True).stdout
    versions = {tuple(int(p) for p in v.split(".")) for v in re.findall(r"GLIBC_([0-9.]+)", out)}
    if not versions:
        sys.exit(f"{path}: no versioned glibc symbols found; is it a glibc shared library?")
    newest = max(versions)
    wanted = tuple(int(p) for p in limit.split("."))
    shown = ".".join(map(str, newest))
    if newest > wanted:
        sys.exit(f"{path} needs glibc {shown}, newer than {limit}: it would not load in official Blender builds")
    print(f"{path}: needs glibc {shown} (limit {limit})")


if __name__ == "__main__":
    main(*sys.argv[1:3])
