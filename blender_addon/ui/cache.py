"""The bake's cache on an object: the PC2 file with the Mesh Cache modifier that plays it, or
one shape key per frame; whether one exists, making a finished bake play (`finish`), freeing
it. The shape keys themselves are written and removed by `bridge`."""

import os

import bpy

from ..sim import methods
from ..sim.pc2 import read_pc2
from . import bridge

MODIFIER_NAME = "cmsc cache"
SHAPE_KEY_PREFIX = "cmsc "


def cache_path(obj):
    return bpy.path.abspath(obj.cmsc.cache_path)


def bake_path(obj):
    """Where the bake streams its samples: the cache itself, or a scratch PC2 that shape keys
    are built from."""
    path = cache_path(obj)
    return path if obj.cmsc.cache_format == "PC2" else path + ".shapekeys-tmp.pc2"


def has_bake(obj):
    """Whether `obj` plays a bake: the cache modifier or baked shape keys."""
    return obj.modifiers.get(MODIFIER_NAME) is not None or bridge.has_shape_keys_named(obj, SHAPE_KEY_PREFIX)


def free_bake(obj):
    """Removes the cache modifier and file, and the baked shape keys with their keyframes."""
    mod = obj.modifiers.get(MODIFIER_NAME)
    if mod is not None:
        obj.modifiers.remove(mod)
    path = cache_path(obj)
    if os.path.isfile(path):
        os.remove(path)
    bridge.remove_frame_shape_keys(obj, SHAPE_KEY_PREFIX)
    obj.cmsc.cache_outdated = False
    obj.cmsc.baked_coulomb_method = ""


def finish(obj, job):
    """Makes the frames `job` baked so far play: a Mesh Cache modifier first in the stack (PC2),
    or one shape key per frame keyed 0/1/0 with linear interpolation (shape keys). The bake then
    matches the settings (not outdated) and remembers the Coulomb method that ran."""
    if job.frames_done == 0:
        return
    obj.cmsc.cache_outdated = False
    if job.coulomb_method is not None:
        obj.cmsc.baked_coulomb_method = methods.describe(job.params.coulomb, job.coulomb_method)
    if obj.cmsc.cache_format == "SHAPE_KEYS":
        _, _, samples = read_pc2(job.cache_path)
        os.remove(job.cache_path)
        bridge.add_frame_shape_keys(obj, SHAPE_KEY_PREFIX, job.start_frame, samples)
        return
    mod = obj.modifiers.new(MODIFIER_NAME, "MESH_CACHE")
    mod.cache_format = "PC2"
    mod.filepath = job.cache_path
    mod.frame_start = job.start_frame
    obj.modifiers.move(len(obj.modifiers) - 1, 0)
