"""Files made by earlier versions of the add-on keep their meaning.

Charge groups gained `distribution` (default TOTAL: the charge is the group's total). A file
saved before that has no stored value, which would read as TOTAL and change every charge it
holds; its groups must stay PER_VERTEX (charge × weight on each vertex). The add-on stamps every
object with charge groups when a file is saved (`save_pre`); on load (`load_post`) the groups of
an object without the stamp are set to PER_VERTEX, and stamped."""

import bpy
from bpy.app.handlers import persistent

#: ID property on `Object.cmsc`: the version of the add-on's data in a saved file.
STAMP = "data_version"
#: 1: charge groups have `distribution`.
DATA_VERSION = 1


def _with_groups():
    return [o for o in bpy.data.objects if o.type == "MESH" and len(o.cmsc.charge_groups)]


@persistent
def on_save_pre(*args):
    for obj in _with_groups():
        obj.cmsc[STAMP] = DATA_VERSION


@persistent
def on_load_post(*args):
    """Old groups keep their per-vertex meaning (prints what it changed)."""
    for obj in _with_groups():
        if obj.cmsc.get(STAMP, 0) >= DATA_VERSION:
            continue
        for group in obj.cmsc.charge_groups:
            group.distribution = "PER_VERTEX"
        obj.cmsc[STAMP] = DATA_VERSION
        print(f"cmsc: {obj.name}: charge groups from an earlier version keep their per-vertex charges", flush=True)


def _handlers():
    h = bpy.app.handlers
    return ((h.save_pre, on_save_pre), (h.load_post, on_load_post))


def register():
    for handlers, fn in _handlers():
        handlers.append(fn)


def unregister():
    for handlers, fn in _handlers():
        while fn in handlers:
            handlers.remove(fn)
