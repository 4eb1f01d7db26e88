"""Add-on preferences: threads of the native library, the GPU Coulomb methods, and the
library's version and ABI status."""

import os

import bpy
from bpy.props import BoolProperty, IntProperty

from ..sim import _native, methods
from ..sim.errors import LibraryError
from ..sim.params import CoulombMethod
from .text import wrapped_label

#: The add-on's module: "cmsc" as a legacy add-on, "bl_ext.<repo>.cmsc" as an extension.
ADDON_ID = __package__.rpartition(".")[0]


def get(context=None):
    """The add-on's preferences, or None while they are not available (during registration)."""
    context = context or bpy.context
    addon = context.preferences.addons.get(ADDON_ID)
    return addon.preferences if addon is not None else None


def use_gpu():
    prefs = get()
    return bool(prefs and prefs.use_gpu)


def apply_threads():
    """Sets the library's thread count from the preferences (before its pool starts); returns
    False if the pool already runs with another count (the change needs a restart)."""
    prefs = get()
    return _native.set_threads(prefs.threads if prefs else 0)


def _threads_changed(self, context):
    apply_threads()


def library_status():
    """(ok, text): the library's version and ABI, or why it cannot be used."""
    path = _native.addon_library_path()
    try:
        lib = _native.load(path)
    except LibraryError as e:
        return False, str(e)
    version, abi = lib.cmsc_version().decode(), lib.cmsc_abi_version()
    return True, f"libcmsc {version}, C ABI {abi} (add-on needs {_native.ABI_VERSION})"


def library_problem():
    """None if the native library loads, else the reason (shown in the panels)."""
    ok, text = library_status()
    return None if ok else text


def gpu_status():
    """(ok, text) for the GPU Coulomb methods of the shipped library."""
    path = _native.addon_library_path()
    problems = {m: methods.gpu_problem(path, m) for m in (CoulombMethod.DIRECT_GPU, CoulombMethod.DDEF_GPU)}
    if all(p is None for p in problems.values()):
        return True, "GPU Coulomb methods available"
    if all(p is not None for p in problems.values()):
        return False, f"GPU unavailable: {problems[CoulombMethod.DDEF_GPU]}; simulations run on the CPU"
    m = next(m for m, p in problems.items() if p is not None)
    return False, f"{m.name} unavailable: {problems[m]}"


def threads_status(prefs):
    """A line on the thread setting: when it applies."""
    started, env = _native.pool_threads()
    wanted = str(prefs.threads) if prefs.threads > 0 else os.environ.get(_native.THREADS_ENV)
    running = env or f"all {os.cpu_count()} cores"
    if not started:
        return True, "Applies to the first simulation of this session"
    if env == wanted:
        return True, f"The library runs with {running} threads" if env else f"The library runs on {running}"
    return False, f"Restart Blender to apply: the library's thread pool already runs with {running}"


class CMSC_AddonPreferences(bpy.types.AddonPreferences):
    bl_idname = ADDON_ID

    threads: IntProperty(
        name="Threads",
        description=(
            "Threads of the native library (0 = all cores). Read when its thread pool starts, "
            "with the first simulation of a session: a later change needs a Blender restart"
        ),
        default=0,
        min=0,
        max=1024,
        update=_threads_changed,
    )
    use_gpu: BoolProperty(
        name="Use GPU",
        description=(
            "Run the Coulomb forces on a CUDA GPU when the library offers it; otherwise the CPU "
            "method runs and the Physics panel says why"
        ),
        default=False,
    )

    def draw(self, context):
        layout = self.layout
        ok, text = library_status()
        wrapped_label(layout, text, icon="CHECKMARK" if ok else "ERROR")
        col = layout.column()
        col.enabled = ok
        col.prop(self, "threads")
        ok_threads, line = threads_status(self)
        wrapped_label(col, line, icon="INFO" if ok_threads else "ERROR")
        col.prop(self, "use_gpu")
        if ok and self.use_gpu:
            ok_gpu, line = gpu_status()
            wrapped_label(col, line, icon="CHECKMARK" if ok_gpu else "ERROR")


CLASSES = (CMSC_AddonPreferences,)
