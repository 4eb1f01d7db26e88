"""Checks the add-on zips that `make addon` writes, one per Blender extension platform, and the
native library inside each, with LIEF (pinned, from PyPI in .venv-lief):

- the zip is named cmsc-<version>-<platform>.zip, holds the add-on under cmsc/ and, in cmsc/lib/,
  exactly one library, under the name the zip's own loader (sim/_native.py) looks for;
- its blender_manifest.toml is the source manifest's, with `platforms = ["<platform>"]` alone;
- the library's format and architecture (ELF x86-64, PE32+ x86-64 DLL, thin Mach-O arm64 or
  x86_64 dylib) match the platform, it exports every `cmsc_*` function of include/cmsc.h and
  nothing else, and it needs only the system's libraries (glibc/libm on Linux, system DLLs and
  the C runtime on Windows, /usr/lib and /System on macOS);
- a macOS library's minimum OS (LC_BUILD_VERSION) is at most 11.2, the oldest macOS Blender 4.2
  runs on.

    python tests/check_package.py DIST                    # every zip in DIST
    python tests/check_package.py --library PLATFORM FILE # one library (exits 1 on a problem)
"""

import ast
import os
import re
import sys
import tempfile
import tomllib
import zipfile

import lief

lief.logging.disable()  # its parser's notes on optional Mach-O parts, not findings

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
PLATFORMS = ("linux-x64", "windows-x64", "macos-arm64", "macos-x64")
MACOS_MIN = (11, 2)

#: Libraries a Linux build may need: glibc's own (check_glibc.py bounds their versions).
LINUX_LIBS = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1", "ld-linux-x86-64.so.2",
              "libgcc_s.so.1"}
#: DLLs every Windows 10+ has (the C runtime included); anything else would have to ship too.
WINDOWS_DLLS = {"kernel32.dll", "ntdll.dll", "advapi32.dll", "bcrypt.dll", "bcryptprimitives.dll", "userenv.dll",
                "ws2_32.dll", "msvcrt.dll", "ucrtbase.dll", "user32.dll", "shell32.dll", "ole32.dll", "oleaut32.dll"}


def header_functions():
    """Every function the C header declares (a declaration starts a line, comments do not)."""
    with open(os.path.join(ROOT, "include", "cmsc.h"), encoding="utf-8") as f:
        text = f.read()
    names = set(re.findall(r"^[A-Za-z][\w \t]*?\**\s*(cmsc_\w+)\(", text, re.MULTILINE))
    if len(names) < 20:
        sys.exit(f"include/cmsc.h: only {len(names)} cmsc_* functions found; is the header parsed right?")
    return names


#: What zig's Mach-O linker exports from our dylibs whatever the export list (it ignores
#: -exported_symbols_list; fat LTO hides the rest): the header symbols it makes, the C++ operator
#: new/delete of its runtime, Rust's personality routine and one std static, and on x86_64 the
#: GEMM micro-kernels of private-gemm-x86 (faer), which it writes in global_asm! with `.globl`,
#: out of LTO's reach. Known leaks, named exactly: any other symbol still fails the check.
MACHO_LINKER_EXPORTS = re.compile(
    r"_mh_dylib_header|__dso_handle|rust_eh_personality|_Z(nw|na|dl|da)[mP]\w*"
    r"|_RNvNtCs\w+_3std9panicking11EMPTY_PANIC|gemm_v0_gemm_(microkernel|pack)_\w+"
)


def check_exports(exports, problems, tolerated=None):
    wanted = header_functions()
    missing = sorted(wanted - exports)
    extra = sorted(e for e in exports - wanted if not (tolerated and tolerated.fullmatch(e)))
    if missing:
        problems.append(f"does not export {len(missing)} function(s) of include/cmsc.h: {', '.join(missing)}")
    if extra:
        shown = ", ".join(extra[:8]) + (", ..." if len(extra) > 8 else "")
        problems.append(f"exports {len(extra)} symbol(s) that are not in include/cmsc.h: {shown}")


def check_elf(b, problems):
    if b.header.identity_class != lief.ELF.Header.CLASS.ELF64 or b.header.machine_type != lief.ELF.ARCH.X86_64:
        problems.append(f"is ELF {b.header.identity_class} {b.header.machine_type}, not ELF64 x86-64")
    if b.header.file_type != lief.ELF.Header.FILE_TYPE.DYN:
        problems.append(f"is an ELF {b.header.file_type}, not a shared library")
    check_exports({s.name for s in b.dynamic_symbols if s.exported}, problems)
    foreign = sorted(set(b.libraries) - LINUX_LIBS)
    if foreign:
        problems.append(f"needs non-system libraries: {', '.join(foreign)}")
    return "ELF x86-64 shared library"


def check_pe(b, problems):
    if b.header.machine != lief.PE.Header.MACHINE_TYPES.AMD64 or b.optional_header.magic != lief.PE.PE_TYPE.PE32_PLUS:
        problems.append(f"is PE {b.optional_header.magic} {b.header.machine}, not PE32+ x86-64")
    if not b.header.has_characteristic(lief.PE.Header.CHARACTERISTICS.DLL):
        problems.append("is not a DLL")
    export = b.get_export()
    check_exports({e.name for e in export.entries} if export is not None else set(), problems)
    imports = {i.name.lower() for i in b.imports}
    foreign = sorted(n for n in imports if n not in WINDOWS_DLLS and not n.startswith(("api-ms-win-", "ext-ms-win-")))
    if foreign:
        problems.append(f"needs DLLs that are not part of Windows: {', '.join(foreign)}")
    return f"PE32+ x86-64 DLL, imports {', '.join(sorted(imports))}"


def check_macho(path, arch, problems):
    fat = lief.MachO.parse(path)
    if fat is None or fat.size != 1:
        problems.append("is not a thin Mach-O file")
        return "not a thin Mach-O"
    b = fat.at(0)
    cpu = {"arm64": lief.MachO.Header.CPU_TYPE.ARM64, "x64": lief.MachO.Header.CPU_TYPE.X86_64}[arch]
    if b.header.cpu_type != cpu:
        problems.append(f"is Mach-O {b.header.cpu_type}, not {cpu}")
    if b.header.file_type != lief.MachO.Header.FILE_TYPE.DYLIB:
        problems.append(f"is a Mach-O {b.header.file_type}, not a dylib")
    # Mach-O C symbols carry a leading underscore.
    names = {s.name for s in b.exported_symbols}
    unprefixed = {n[1:] for n in names if n.startswith("_")} | {n for n in names if not n.startswith("_")}
    check_exports(unprefixed, problems, MACHO_LINKER_EXPORTS)
    own = [lib.name for lib in b.libraries if lib.command == lief.MachO.LoadCommand.TYPE.ID_DYLIB]
    if own != ["@rpath/libcmsc.dylib"]:
        problems.append(f"has install name {own}, not @rpath/libcmsc.dylib (a path of the build machine)")
    needed = [lib.name for lib in b.libraries if lib.command != lief.MachO.LoadCommand.TYPE.ID_DYLIB]
    foreign = sorted(n for n in needed if not n.startswith(("/usr/lib/", "/System/Library/")))
    if foreign:
        problems.append(f"needs libraries outside macOS: {', '.join(foreign)}")
    if not b.has_build_version:
        problems.append("has no LC_BUILD_VERSION: its minimum macOS is unknown")
        return "Mach-O without build version"
    bv = b.build_version
    minos = tuple(bv.minos)
    if bv.platform != lief.MachO.BuildVersion.PLATFORMS.MACOS:
        problems.append(f"is built for {bv.platform}, not macOS")
    if minos[:2] > MACOS_MIN:
        shown = ".".join(map(str, minos))
        problems.append(f"needs macOS {shown}, newer than {MACOS_MIN[0]}.{MACOS_MIN[1]} (Blender 4.2's minimum)")
    return f"Mach-O {arch} dylib, macOS >= {'.'.join(map(str, minos))}"


def check_library(tag, path):
    """(description, problems) of the library at `path` for platform `tag`."""
    problems = []
    os_name, arch = tag.split("-")
    if os_name == "macos":
        return check_macho(path, arch, problems), problems
    b = lief.parse(path)
    kind = {"linux": lief.ELF.Binary, "windows": lief.PE.Binary}[os_name]
    if not isinstance(b, kind):
        return f"not {kind.__module__}", [f"is {type(b).__name__ if b else 'unreadable'}, not {kind.__module__}"]
    return (check_elf if os_name == "linux" else check_pe)(b, problems), problems


def loader_file_names(source):
    """LIBRARY_FILES as written in a copy of sim/_native.py."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.AnnAssign | ast.Assign):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            if any(getattr(t, "id", None) == "LIBRARY_FILES" for t in targets):
                return ast.literal_eval(node.value)
    sys.exit("sim/_native.py has no LIBRARY_FILES")


def source_files():
    """The files of blender_addon/ that ship (paths below cmsc/)."""
    out = set()
    base = os.path.join(ROOT, "blender_addon")
    for item in ("__init__.py", "blender_manifest.toml"):
        out.add(item)
    for pkg in ("sim", "ui"):
        for folder, dirs, files in os.walk(os.path.join(base, pkg)):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            out |= {os.path.relpath(os.path.join(folder, f), base).replace(os.sep, "/")
                    for f in files if not f.endswith(".pyc")}
    return out


def check_zip(path, source_manifest):
    problems = []
    name = os.path.basename(path)
    m = re.fullmatch(r"cmsc-(.+)-(linux-x64|windows-x64|macos-arm64|macos-x64)\.zip", name)
    if not m:
        return [f"{name}: not named cmsc-<version>-<platform>.zip"]
    version, tag = m.groups()
    with zipfile.ZipFile(path) as z:
        entries = [i.filename for i in z.infolist() if not i.is_dir()]
        outside = [e for e in entries if not e.startswith("cmsc/")]
        if outside:
            problems.append(f"files outside cmsc/: {outside}")
        manifest = tomllib.loads(z.read("cmsc/blender_manifest.toml").decode())
        expected = dict(source_manifest, platforms=[tag])
        if manifest != expected:
            keys = set(manifest) | set(expected)
            diff = {k: (manifest.get(k), expected.get(k)) for k in keys if manifest.get(k) != expected.get(k)}
            problems.append(f"manifest differs from the source's with platforms = [{tag!r}]: {diff}")
        if manifest.get("version") != version:
            problems.append(f"manifest version {manifest.get('version')} is not the file name's {version}")
        libs = sorted(e for e in entries if e.startswith("cmsc/lib/"))
        lib_name = loader_file_names(z.read("cmsc/sim/_native.py").decode())[tag]
        what = "missing"
        if libs != [f"cmsc/lib/{lib_name}"]:
            problems.append(f"cmsc/lib/ holds {libs}, not just cmsc/lib/{lib_name} (what the loader opens on {tag})")
        python = {e[len("cmsc/"):] for e in entries if e.startswith("cmsc/") and not e.startswith("cmsc/lib/")}
        if python != source_files():
            problems.append(f"add-on files differ from blender_addon/: extra {sorted(python - source_files())}, "
                            f"missing {sorted(source_files() - python)}")
        if f"cmsc/lib/{lib_name}" in entries:
            with tempfile.TemporaryDirectory() as tmp:
                lib = z.extract(f"cmsc/lib/{lib_name}", tmp)
                what, lib_problems = check_library(tag, lib)
                problems += [f"cmsc/lib/{lib_name} {p}" for p in lib_problems]
    size = os.path.getsize(path) / 1e6
    verdict = " -- FAILED" if problems else ""
    print(f"{name}: {size:.1f} MB, {len(entries)} files, cmsc/lib/{lib_name}: {what}{verdict}")
    return [f"{name}: {p}" for p in problems]


def main(argv):
    if argv[:1] == ["--library"] and len(argv) == 3:
        what, problems = check_library(argv[1], argv[2])
        print(f"{argv[2]}: {what}")
        for p in problems:
            print(f"{argv[2]} {p}", file=sys.stderr)
        return 1 if problems else 0
    if len(argv) != 1:
        sys.exit(__doc__)
    dist = argv[0]
    with open(os.path.join(ROOT, "blender_addon", "blender_manifest.toml"), "rb") as f:
        source_manifest = tomllib.load(f)
    zips = sorted(f for f in os.listdir(dist) if f.startswith("cmsc-") and f.endswith(".zip"))
    found = {re.sub(r"^cmsc-.+-(\w+-\w+)\.zip$", r"\1", z) for z in zips}
    problems = [f"{dist}: no zip for {t}" for t in PLATFORMS if t not in found]
    for z in zips:
        problems += check_zip(os.path.join(dist, z), source_manifest)
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
