"""Finds and loads libcmsc with ctypes, declares every symbol once, and turns statuses into
exceptions. The add-on loads the library only from its own `lib/` folder (by absolute path,
never through PATH or the system's search), picking the file for this platform; tests pass the
path of a freshly built `target/` library explicitly.

A loaded library is never unloaded: rayon's worker threads and the library's thread-locals
outlive any call into it, so unloading it under them would crash. It stays loaded until the
process (Blender) exits; on Windows the DLL file also stays locked until then, so an updated
add-on takes effect after a restart."""

import ctypes
import os
import platform
import sys
import threading

from .errors import BY_STATUS, CmscError, LibraryError, UnavailableError

#: The C ABI version this wrapper is written against (CMSC_ABI_VERSION of include/cmsc.h).
ABI_VERSION = 1

#: Blender's extension platform tag -> the library file the add-on ships in `lib/` for it.
LIBRARY_FILES = {
    "linux-x64": "libcmsc.so",
    "windows-x64": "cmsc.dll",
    "macos-arm64": "libcmsc.dylib",
    "macos-x64": "libcmsc.dylib",
}


def platform_tag(system=None, machine=None):
    """This process's platform as Blender's extension tag (`linux-x64`, `windows-x64`,
    `macos-arm64`, `macos-x64`), or e.g. `linux-arm64` for one cmsc does not ship."""
    system = sys.platform if system is None else system
    machine = (platform.machine() if machine is None else machine).lower()
    os_name = "windows" if system.startswith("win") else "macos" if system == "darwin" else system
    if os_name.startswith("linux"):
        os_name = "linux"
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(machine, machine)
    return f"{os_name}-{arch}"


#: The library file for this platform (the Linux name where cmsc ships no library).
LIB_NAME = LIBRARY_FILES.get(platform_tag(), "libcmsc.so")

_ELF_MACHINES = {0x3E: "x86-64", 0xB7: "arm64", 0x03: "x86"}
_PE_MACHINES = {0x8664: "x86-64", 0xAA64: "arm64", 0x14C: "x86"}
_MACHO_CPUS = {0x01000007: "x86-64", 0x0100000C: "arm64"}
_ARCH_OF_TAG = {"x64": "x86-64", "arm64": "arm64"}


def describe_binary(path):
    """What kind of library the file at `path` is, from its header: e.g. "a Mach-O arm64
    library", or None if it is none of ELF, PE or (thin) Mach-O."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return None
    if head[:4] == b"\x7fELF" and len(head) >= 20:
        machine = int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")
        return f"an ELF (Linux) {_ELF_MACHINES.get(machine, hex(machine))} library"
    if head[:4] in (b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe") and len(head) >= 8:
        cpu = int.from_bytes(head[4:8], "little")
        return f"a Mach-O (macOS) {_MACHO_CPUS.get(cpu, hex(cpu))} library"
    if head[:2] == b"MZ" and len(head) >= 64:
        pe = int.from_bytes(head[60:64], "little")
        if head[pe : pe + 4] == b"PE\0\0":
            machine = int.from_bytes(head[pe + 4 : pe + 6], "little")
            return f"a PE (Windows) {_PE_MACHINES.get(machine, hex(machine))} library"
    return None


def _expected_binary(tag):
    """The `describe_binary` text of a library built for platform `tag`."""
    os_name, _, arch = tag.partition("-")
    kind = {"linux": "an ELF (Linux)", "windows": "a PE (Windows)", "macos": "a Mach-O (macOS)"}.get(os_name)
    return f"{kind} {_ARCH_OF_TAG.get(arch, arch)} library" if kind else None


def _load_problem(path, error):
    """Why the file at `path` did not load: its platform or architecture when that is the
    cause, else the loader's own message."""
    here = platform_tag()
    found = describe_binary(path)
    wanted = _expected_binary(here)
    if found is not None and wanted is not None and found != wanted:
        return (
            f"cannot load {path}: it is {found}, this Blender runs on {here}; "
            f"install the cmsc add-on zip for {here} (cmsc-<version>-{here}.zip)"
        )
    return f"cannot load {path}: {error}"


class CmscParams(ctypes.Structure):
    """Mirror of `CmscParams` (field order fixed by the C ABI v1)."""

    _fields_ = [
        ("time_step", ctypes.c_double),
        ("iterations", ctypes.c_uint32),
        ("damping", ctypes.c_double),
        ("gravity", ctypes.c_double * 3),
        ("coulomb_constant", ctypes.c_double),
        ("coulomb", ctypes.c_uint32),
        ("grid_points", ctypes.c_uint32),
        ("integrator", ctypes.c_uint32),
        ("ground_height", ctypes.c_double),
        ("friction", ctypes.c_double),
    ]


class CmscEnergies(ctypes.Structure):
    """Mirror of `CmscEnergies`."""

    _fields_ = [(name, ctypes.c_double) for name in ("kinetic", "spring", "coulomb", "external", "total")]


_sim = ctypes.c_void_p
_dptr = ctypes.POINTER(ctypes.c_double)
_uptr = ctypes.POINTER(ctypes.c_uint32)
_size = ctypes.c_size_t
_u32ptr = ctypes.POINTER(ctypes.c_uint32)
_status = ctypes.c_int

#: name -> (restype, argtypes): the one table of every symbol used.
SIGNATURES = {
    "cmsc_params_default": (None, [ctypes.POINTER(CmscParams)]),
    "cmsc_create": (
        _status,
        [_dptr, _size, _dptr, _uptr, _size, _dptr, ctypes.POINTER(CmscParams), ctypes.POINTER(_sim)],
    ),
    "cmsc_step": (_status, [_sim, ctypes.c_uint32]),
    "cmsc_advance": (_status, [_sim, ctypes.c_double, ctypes.c_uint32, ctypes.c_uint32, _u32ptr]),
    "cmsc_charge_steps_per_vertex": (_status, [_sim, ctypes.c_double, _u32ptr, _size]),
    "cmsc_contact_steps": (_status, [_sim, ctypes.c_double, _u32ptr]),
    "cmsc_contact_steps_per_vertex": (_status, [_sim, ctypes.c_double, _u32ptr, _size]),
    "cmsc_set_iteration_tolerance": (_status, [_sim, ctypes.c_double]),
    "cmsc_set_charges": (_status, [_sim, _dptr, _size]),
    "cmsc_get_positions": (_status, [_sim, _dptr, _size]),
    "cmsc_set_positions": (_status, [_sim, _dptr, _size]),
    "cmsc_get_velocities": (_status, [_sim, _dptr, _size]),
    "cmsc_set_velocities": (_status, [_sim, _dptr, _size]),
    "cmsc_set_pins": (_status, [_sim, _uptr, _size]),
    "cmsc_set_pin_targets": (_status, [_sim, _dptr, _size]),
    "cmsc_set_external_charges": (_status, [_sim, _dptr, _dptr, _size]),
    "cmsc_set_uniform_field": (_status, [_sim, _dptr]),
    "cmsc_set_relative_damping": (_status, [_sim, ctypes.c_double]),
    "cmsc_set_acceleration": (_status, [_sim, ctypes.c_uint32]),
    "cmsc_set_far_field_interval": (_status, [_sim, ctypes.c_uint32]),
    "cmsc_set_field_tolerance": (_status, [_sim, ctypes.c_double]),
    "cmsc_set_parts": (_status, [_sim, ctypes.POINTER(ctypes.c_uint32), _size, _dptr, _size]),
    "cmsc_set_spring_damping": (_status, [_sim, _dptr, _size]),
    "cmsc_set_mesh_colliders": (_status, [_sim, _dptr, _size, _u32ptr, _size, _u32ptr, _dptr, _dptr, _size]),
    "cmsc_move_mesh_colliders": (_status, [_sim, _dptr, _size]),
    "cmsc_set_self_collision": (_status, [_sim, _u32ptr, _size, _dptr, _size]),
    "cmsc_set_self_collision_friction": (_status, [_sim, _dptr, _size]),
    "cmsc_set_collider_friction_law": (_status, [_sim, ctypes.c_uint32]),
    "cmsc_set_surface": (_status, [_sim, _u32ptr, _size]),
    "cmsc_set_sphere_colliders": (_status, [_sim, _dptr, _dptr, _size]),
    "cmsc_coulomb_forces": (_status, [_sim, _dptr, _size]),
    "cmsc_energies": (_status, [_sim, ctypes.POINTER(CmscEnergies)]),
    "cmsc_get_coulomb_method": (_status, [_sim, _uptr]),
    "cmsc_last_error": (ctypes.c_char_p, []),
    "cmsc_version": (ctypes.c_char_p, []),
    "cmsc_abi_version": (ctypes.c_uint32, []),
    "cmsc_destroy": (None, [_sim]),
    # appended to ABI 1 with the gradients (issue 6): see OPTIONAL
    "cmsc_rollout_gradient": (_status, [_sim, ctypes.c_uint32, _dptr, _size, _dptr, _dptr, _dptr, _dptr, _dptr]),
    "cmsc_fit_charges": (_status, [_sim, ctypes.c_uint32, _dptr, _size, _dptr, _dptr, ctypes.c_uint32, _dptr]),
}

#: Symbols appended to ABI 1 after libraries without them were built: such a library still
#: loads (same ABI version), and calling a missing one raises UnavailableError (`require`).
OPTIONAL = frozenset({"cmsc_rollout_gradient", "cmsc_fit_charges"})

_lock = threading.Lock()
_loaded = {}

#: The library's thread pool (rayon) reads this variable once, when it starts.
THREADS_ENV = "RAYON_NUM_THREADS"
#: The variable as this process started with it: what "0 threads" (automatic) restores.
_threads_env_at_start = os.environ.get(THREADS_ENV)
#: The variable's value when the first simulation was created (the pool has started since),
#: or _NOT_STARTED.
_NOT_STARTED = object()
_pool_env = _NOT_STARTED


def set_threads(count):
    """Sets how many threads the library's pool will start with: `count` > 0, or 0 for
    automatic (all cores, or RAYON_NUM_THREADS if the process was started with it).

    The pool starts with the first simulation and keeps its size for the life of the process;
    returns True if this setting will be used, False if the pool already runs with another
    (then it takes effect in the next session)."""
    count = int(count)
    if count < 0:
        raise ValueError(f"thread count must be >= 0, got {count}")
    if count > 0:
        os.environ[THREADS_ENV] = str(count)
    elif _threads_env_at_start is None:
        os.environ.pop(THREADS_ENV, None)
    else:
        os.environ[THREADS_ENV] = _threads_env_at_start
    return _pool_env is _NOT_STARTED or _pool_env == os.environ.get(THREADS_ENV)


def pool_threads():
    """(started, setting): whether the pool has started, and the RAYON_NUM_THREADS value it
    started with (None = automatic)."""
    if _pool_env is _NOT_STARTED:
        return False, None
    return True, _pool_env


def note_pool_start():
    """Called when a simulation is created: from then on the pool size is fixed."""
    global _pool_env
    if _pool_env is _NOT_STARTED:
        _pool_env = os.environ.get(THREADS_ENV)


def load(path):
    """Loads the library at `path` (once per path), declares its symbols and checks its ABI.

    Raises LibraryError when the file is missing, cannot be loaded, lacks a symbol, or was built
    for another ABI version.
    """
    path = os.path.abspath(path)
    with _lock:
        if path in _loaded:
            return _loaded[path]
        if not os.path.isfile(path):
            raise LibraryError(_missing(path))
        try:
            # An absolute path: the loader takes this file and never searches PATH for it.
            lib = ctypes.CDLL(path)
        except OSError as e:
            raise LibraryError(_load_problem(path, e)) from e
        for name, (restype, argtypes) in SIGNATURES.items():
            try:
                fn = getattr(lib, name)
            except AttributeError as e:
                if name in OPTIONAL:
                    continue
                raise LibraryError(f"{path} lacks `{name}`: not a cmsc library of ABI {ABI_VERSION}") from e
            fn.restype = restype
            fn.argtypes = argtypes
        found = lib.cmsc_abi_version()
        if found != ABI_VERSION:
            raise LibraryError(f"{path} implements cmsc ABI {found}, this add-on needs ABI {ABI_VERSION}")
        _loaded[path] = lib
        return lib


def has(lib, name):
    """Whether the loaded library exports `name` (always true outside OPTIONAL)."""
    return hasattr(lib, name)


def require(lib, name):
    """Raises UnavailableError if an OPTIONAL symbol is missing from this library."""
    if not has(lib, name):
        version = lib.cmsc_version().decode("utf-8", "replace")
        raise UnavailableError(f"libcmsc {version} predates `{name}`: update the library (the add-on) to use it")


def _missing(path):
    """Why there is no library at `path`: another platform's add-on zip, a platform cmsc does
    not ship, or a damaged installation."""
    here = platform_tag()
    message = f"cmsc library not found at {path}"
    if here not in LIBRARY_FILES:
        return f"{message}: cmsc ships no library for {here} (only {', '.join(LIBRARY_FILES)})"
    folder = os.path.dirname(path)
    others = sorted(set(LIBRARY_FILES.values()) - {os.path.basename(path)})
    present = [name for name in others if os.path.isfile(os.path.join(folder, name))]
    if present:
        found = describe_binary(os.path.join(folder, present[0])) or present[0]
        return (
            f"{message}: this add-on was built for another platform ({present[0]} is {found}); "
            f"install the cmsc add-on zip for {here} (cmsc-<version>-{here}.zip)"
        )
    return f"{message}: reinstall the cmsc add-on zip for {here}"


def addon_library_path():
    """The library shipped inside the add-on for this platform: `<add-on>/lib/libcmsc.so`,
    `lib/cmsc.dll` or `lib/libcmsc.dylib` (see LIBRARY_FILES)."""
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib", LIB_NAME)


def check(lib, status):
    """Raises the exception of a non-zero status, with the library's message."""
    if status == 0:
        return
    message = lib.cmsc_last_error().decode("utf-8", "replace")
    raise BY_STATUS.get(status, CmscError)(message)
