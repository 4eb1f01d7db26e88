#!/usr/bin/env bash
# Python 3.13 for the bpy wheels of Blender 5.1 and newer (they are built for CPython 3.13 only),
# on Debian 12, whose own packages stop at 3.11. The source is Debian 13's (trixie) python3.13
# source package, from the same apt mirror this machine uses: a private apt configuration under
# $WORK (nothing in /etc/apt changes) with a `deb-src` line for trixie, `apt-get source
# --download-only`, which checks the files against trixie's signed Sources index. The upstream
# tarball inside it is built with the system compiler into $PREFIX; no PGO, no LTO (a few minutes
# on 2 cores). Debian's build dependencies for the stdlib modules bpy and pip need (ssl, zlib,
# ctypes, bz2, lzma, sqlite3, ...) come from apt. Run once; the Makefile's stamp keeps the result.
#
# usage: tools/build_python313.sh PREFIX      (then PREFIX/bin/python3.13)
set -euo pipefail

PREFIX=$(realpath -m "${1:?usage: build_python313.sh PREFIX}")
WORK="$PREFIX.build"
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo

# The mirror of this machine's own Debian sources (deb822 or one-line format); Debian's default.
mirror=$(grep -hsE '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
	/etc/apt/sources.list.d/*.sources 2>/dev/null | grep -oE 'https?://[^ ]*/debian/?( |$)' | head -n1 | tr -d ' ' || true)
mirror=${mirror:-http://deb.debian.org/debian}

deps=(build-essential pkg-config dpkg-dev libssl-dev zlib1g-dev libffi-dev libbz2-dev liblzma-dev
	libsqlite3-dev libreadline-dev libncurses-dev libgdbm-dev uuid-dev libexpat1-dev xz-utils)
missing=()
for p in "${deps[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	$SUDO apt-get update
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi

rm -rf "$WORK"
mkdir -p "$WORK/apt/lists/partial" "$WORK/apt/cache/archives/partial" "$WORK/src"
cat > "$WORK/apt/sources.list" <<EOF
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror trixie main
EOF
apt_opts=(-o "Dir::Etc::SourceList=$WORK/apt/sources.list" -o "Dir::Etc::SourceParts=-"
	-o "Dir::State::Lists=$WORK/apt/lists" -o "Dir::Cache=$WORK/apt/cache" -o "APT::Sandbox::User=$(id -un)")
apt-get "${apt_opts[@]}" update
(cd "$WORK/src" && apt-get "${apt_opts[@]}" source --download-only python3.13)

orig=$(ls "$WORK"/src/python3.13_*.orig.tar.xz | head -n1)
tar -xf "$orig" -C "$WORK/src"
srcdir=$(find "$WORK/src" -mindepth 1 -maxdepth 1 -type d -name 'Python-3.13*' | head -n1)
[ -n "$srcdir" ] || { echo "no Python-3.13* folder in $orig" >&2; exit 1; }

cd "$srcdir"
./configure --prefix="$PREFIX" --with-ensurepip=install --disable-test-modules \
	LDFLAGS="-Wl,-rpath,$PREFIX/lib" >"$WORK/configure.log"
make -j"$(nproc)" >"$WORK/make.log" 2>&1 || { tail -n 50 "$WORK/make.log"; exit 1; }
make install >"$WORK/install.log" 2>&1 || { tail -n 50 "$WORK/install.log"; exit 1; }
# The modules bpy, numpy and pip rely on must have been built (configure skips any whose
# headers are missing, silently).
"$PREFIX/bin/python3.13" -c 'import ssl, zlib, ctypes, bz2, lzma, sqlite3, venv, ensurepip'
rm -rf "$WORK"
echo "built $("$PREFIX/bin/python3.13" --version) in $PREFIX"
