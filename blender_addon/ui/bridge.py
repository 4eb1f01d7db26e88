"""The only module that touches mesh and animation data: Blender objects → numpy arrays."""

import numpy as np


def mesh_arrays(obj):
    """Rest coordinates (n, 3) in object space and triangles (t, 3) of a mesh object."""
    me = obj.data
    n = len(me.vertices)
    co = np.empty(3 * n)
    me.vertices.foreach_get("co", co)
    me.calc_loop_triangles()
    tris = np.empty(3 * len(me.loop_triangles), dtype=np.int64)
    me.loop_triangles.foreach_get("vertices", tris)
    return co.reshape(n, 3), tris.reshape(-1, 3)


def to_world(matrix, local):
    m = np.array(matrix)
    return local @ m[:3, :3].T + m[:3, 3]


def to_local(matrix, world):
    m = np.linalg.inv(np.array(matrix))
    return world @ m[:3, :3].T + m[:3, 3]


def group_weights(obj, name):
    """Per-vertex weight in vertex group `name` (zeros if the group does not exist)."""
    n = len(obj.data.vertices)
    w = np.zeros(n)
    group = obj.vertex_groups.get(name) if name else None
    if group is None:
        return w
    gi = group.index
    for v in obj.data.vertices:
        for g in v.groups:
            if g.group == gi:
                w[v.index] = g.weight
    return w


def fcurves(id_data):
    """The F-curves animating `id_data` (legacy and Blender 4.4+ slotted actions)."""
    ad = id_data.animation_data
    if ad is None or ad.action is None:
        return []
    action = ad.action
    slot = getattr(ad, "action_slot", None)
    if slot is not None:
        try:
            from bpy_extras import anim_utils

            bag = anim_utils.action_get_channelbag_for_slot(action, slot)
            if bag is not None:
                return list(bag.fcurves)
        except (ImportError, AttributeError):
            pass
    return list(getattr(action, "fcurves", []))


def animated(id_data, paths, index, default, frame):
    """The value of an animatable property at a (sub)frame: the F-curve on any of `paths`
    evaluated at `frame`, else the property's current value `default`."""
    for fc in fcurves(id_data):
        if fc.data_path in paths and fc.array_index == index:
            return fc.evaluate(frame)
    return default


def group_charge_paths(i, item):
    """Both forms of a charge group's RNA path: name-keyed (stable under reordering, what the
    add-on creates) and index-keyed (what older files may hold)."""
    return (f'cmsc.charge_groups["{item.name}"].charge', f"cmsc.charge_groups[{i}].charge")


def name_keyed_charge_paths(obj):
    """Rewrites index-keyed charge-group F-curve paths (`cmsc.charge_groups[2].charge`, what
    Blender creates when a charge is keyframed) to name-keyed ones
    (`cmsc.charge_groups["Tentacle"].charge`), so that keyframes stay with their group when
    groups are removed or reordered. Returns the number of paths rewritten."""
    import re

    groups = obj.cmsc.charge_groups
    pattern = re.compile(r"^cmsc\.charge_groups\[(\d+)\]\.(.+)$")
    changed = 0
    for fc in fcurves(obj):
        m = pattern.match(fc.data_path)
        if m and int(m.group(1)) < len(groups):
            fc.data_path = f'cmsc.charge_groups["{groups[int(m.group(1))].name}"].{m.group(2)}'
            changed += 1
    return changed
