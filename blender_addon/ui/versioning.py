"""Files made by earlier versions of the add-on keep their meaning.

Version 1 of the data added charge groups' `distribution` (default TOTAL: the charge is the
group's total) and `Object.cmsc.relative_damping` (default 2/s). A file saved before has no
stored values, which would read as those defaults and change its motion; its groups must stay
PER_VERTEX (charge × weight on each vertex) and its objects undamped. Version 2 lowered the
default Iterations from 10 to 6 (accelerated iterations): an object that never set them ran 10
and keeps 10. Version 3 added Adaptive Substeps (on for new objects: more steps only where the
charges or the motion need them, iterations that stop when converged): a file from before keeps
its fixed steps (off), an object that never set Substeps keeps the 5 it ran, and Self Collision
keeps its frictionless layers (Layer Friction 0). Version 4 reads colliders' Friction as Blender's
Cloth does, a Coulomb coefficient (Coulomb Friction, on for new objects): a file from before keeps
the per-step share Friction / 80 (off). The add-on
stamps every simulated object (enabled, or with charge groups) when a file is saved
(`save_pre`); on load (`load_post`) an object with an older stamp gets the old meanings of what
changed since, and the stamp."""

import bpy
from bpy.app.handlers import persistent

from . import cache

#: ID property on `Object.cmsc`: the version of the add-on's data in a saved file.
STAMP = "data_version"
#: 1: charge groups have `distribution`, objects `relative_damping`; 2: Iterations default 6;
#: 3: Adaptive Substeps; 4: Coulomb Friction.
DATA_VERSION = 4
#: The Iterations of files made before version 2 that never set them (Blender stores only values
#: that were set).
OLD_ITERATIONS = 10
#: The Substeps of files made before version 3 that never set them.
OLD_SUBSTEPS = 5


def _simulated():
    return [o for o in bpy.data.objects if o.type == "MESH" and (o.cmsc.enabled or len(o.cmsc.charge_groups))]


@persistent
def on_save_pre(filepath="", *args):
    """Stamps the data version, and makes the bakes this session made while the file was
    unsaved the file's own (`cache.adopt_records`), before the file is written."""
    for obj in _simulated():
        obj.cmsc[STAMP] = DATA_VERSION
    cache.adopt_records(filepath or bpy.data.filepath)


@persistent
def on_load_post(*args):
    """Objects of an earlier version keep their per-vertex charges and no settling (prints
    what it changed). Their bakes stay current: the values set are the ones they were baked
    with, so the outdated flags the setting callbacks raise are put back."""
    simulated = _simulated()
    outdated = {o.name_full: o.cmsc.cache_outdated for o in simulated}
    for obj in simulated:
        version = obj.cmsc.get(STAMP, 0)
        if version >= DATA_VERSION:
            continue
        kept = []
        if version < 1:
            for group in obj.cmsc.charge_groups:
                group.distribution = "PER_VERTEX"
            obj.cmsc.relative_damping = 0.0
            kept += ["per-vertex charges", "no Settling"]
        if version < 2 and obj.cmsc.get("iterations") is None:
            obj.cmsc.iterations = OLD_ITERATIONS
            kept.append(f"{OLD_ITERATIONS} iterations")
        if version < 3:
            obj.cmsc.adaptive_substeps = False
            kept.append("fixed substeps")
            obj.cmsc.self_collision_friction = 0.0  # self-collision had no friction between layers
            if not obj.cmsc.is_property_set("substeps") and obj.cmsc.substeps != OLD_SUBSTEPS:
                obj.cmsc.substeps = OLD_SUBSTEPS
                kept.append(f"{OLD_SUBSTEPS} substeps")
        if version < 4:
            obj.cmsc.coulomb_friction = False
            kept.append("per-step collider friction")
        obj.cmsc[STAMP] = DATA_VERSION
        if kept:
            print(f"cmsc: {obj.name}: from an earlier version: {', '.join(kept)}, as it was made", flush=True)
    for obj in simulated:
        obj.cmsc.cache_outdated = outdated[obj.name_full]
    cache.adopt_records(bpy.data.filepath)


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
