"""Checks that the workspace's `rust-version` (Cargo.toml) is true: on every platform the
library is built for, no locked dependency declares a newer minimum Rust. (Our own code is held
to it by clippy's `incompatible_msrv` lint, which reads the same field.)
Usage: python3 tests/check_msrv.py"""

import json
import subprocess
import sys

#: The targets `make addon` builds the library for; each needs its own check, since target-specific
#: dependencies differ (on Windows, faer's threading pulls in windows-core, which needs Rust 1.95).
PLATFORMS = ["x86_64-unknown-linux-gnu"]


def version(text):
    """`1.88` and `1.88.0` as the same (major, minor, patch)."""
    parts = [int(p) for p in text.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def main():
    for platform in PLATFORMS:
        check(platform)


def check(platform):
    command = ["cargo", "metadata", "--format-version", "1", "--locked", "--filter-platform", platform]
    meta = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
    members = set(meta["workspace_members"])
    resolved = {node["id"] for node in meta["resolve"]["nodes"]}
    declared = {p["rust_version"] for p in meta["packages"] if p["id"] in members}
    if len(declared) != 1 or None in declared:
        sys.exit(f"workspace members declare rust-version {sorted(map(str, declared))}: expected one value")
    ours = declared.pop()
    needs = [
        (version(p["rust_version"]), p["name"], p["version"])
        for p in meta["packages"]
        if p["id"] in resolved and p["id"] not in members and p.get("rust_version")
    ]
    newest = max(needs)
    if newest[0] > version(ours):
        sys.exit(
            f"Cargo.toml says rust-version = {ours}, but on {platform} {newest[1]} {newest[2]} needs Rust "
            f"{'.'.join(map(str, newest[0]))}: raise rust-version"
        )
    need = ".".join(map(str, newest[0]))
    print(f"rust-version {ours} holds for {platform}: the newest need is {newest[1]} {newest[2]}'s, Rust {need}")


if __name__ == "__main__":
    main()
