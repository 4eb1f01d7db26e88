"""Blender 5.2's Geometry Nodes XPBD cloth (the Essentials asset "Cloth Dynamics (Experimental)",
built on the XPBD Solver node) on the bake benchmark's grid, timed next to Blender's classic
Cloth in the same process. `bake_benchmark.py` uses it in its own process when that runs bpy 5.2
or later, else runs this file as a child under bpy 5.2 (Python 3.13):

    .venv-blender-5.2/bin/python tests/bench/xpbd_cloth.py --verts 10000 --frames 60 --json out.json

which writes {"blender": ..., "cloth": {...}, "xpbd": {...}} (or {"skipped": why}) to --json.

The asset's node group is appended from `geometry_nodes_dynamics_assets.blend` in Blender's
datafiles (inside the bpy wheel) onto a Geometry Nodes modifier of a copy of the grid, and its
inputs are set before the first frame is evaluated: Pin Group = the vertex group "top" (the
input is a float field that takes a named attribute, by default "Group"), Gravity on at
(0, 0, -9.81) m/s², Substeps 5 (the classic Cloth's default quality steps, the fixed cmsc rows'
substeps) and the asset's defaults otherwise (15 constraint steps per substep, Stretchiness and
Bendiness 0, Linear Damping 1, no tearing, no effectors). Timed: `frame_set` through the frame
range in order, reading the evaluated mesh's positions each frame so that every frame is
really computed (its simulation zone caches each frame as it goes).
"""

import argparse
import json
import os
import sys
import time

ASSET_FILE = "geometry_nodes_dynamics_assets.blend"
NODE_GROUP = "Cloth Dynamics (Experimental)"
#: Solver steps per frame: Blender Cloth's default quality, and the fixed cmsc rows' substeps.
SUBSTEPS = 5
GRAVITY = (0.0, 0.0, -9.81)
#: (input name, socket type, value): what the benchmark sets; the rest keep the asset's defaults.
SETTINGS = [
    ("Invert Pin Group", "NodeSocketBool", False),
    ("Substeps", "NodeSocketInt", SUBSTEPS),
    ("Gravity", "NodeSocketBool", True),
    ("Gravity", "NodeSocketVector", GRAVITY),
    ("Tearing", "NodeSocketBool", False),
]


def asset_path():
    import bpy

    return os.path.join(bpy.utils.system_resource("DATAFILES"), "assets", "nodes", ASSET_FILE)


def unavailable():
    """Why this Blender cannot run the XPBD cloth (None: it can)."""
    import bpy

    if bpy.app.version < (5, 2, 0):
        return f"Blender {bpy.app.version_string} has no XPBD cloth (5.2 or later)"
    if not os.path.isfile(asset_path()):
        return f"{asset_path()} is missing"
    return None


def node_group():
    """The asset's node group, appended once (with the groups it uses)."""
    import bpy

    group = bpy.data.node_groups.get(NODE_GROUP)
    if group is not None:
        return group
    with bpy.data.libraries.load(asset_path(), link=False) as (src, dst):
        if NODE_GROUP not in src.node_groups:
            raise RuntimeError(f"{asset_path()} has no node group {NODE_GROUP!r}")
        dst.node_groups = [NODE_GROUP]
    return dst.node_groups[0]


def input_item(group, name, socket_type=None):
    for item in group.interface.items_tree:
        if (
            item.item_type == "SOCKET"
            and item.in_out == "INPUT"
            and item.name == name
            and (socket_type is None or item.socket_type == socket_type)
        ):
            return item
    raise KeyError(f"{group.name} has no input {name!r} ({socket_type or 'any type'})")


def set_input(mod, name, socket_type=None, value=None, attribute=None):
    """Sets the modifier's input `name` to `value`, or to the named attribute `attribute`:
    through `mod.properties.inputs` (Blender 5.x) or the modifier's ID properties (4.x)."""
    ident = input_item(mod.node_group, name, socket_type).identifier
    props = getattr(mod, "properties", None)
    if props is not None and hasattr(props, "inputs"):
        sock = getattr(props.inputs, ident)
        if attribute is not None:
            sock.type = "ATTRIBUTE"
            sock.attribute_name = attribute
        else:
            if hasattr(sock, "type") and sock.type != "VALUE":
                sock.type = "VALUE"
            sock.value = value
    elif attribute is not None:
        mod[ident + "_use_attribute"] = True
        mod[ident + "_attribute_name"] = attribute
    else:
        mod[ident] = value


def describe(group):
    """The solver settings the row ran with, for the table."""
    steps = input_item(group, "Constraint Steps").default_value
    damping = input_item(group, "Linear Damping").default_value
    return f"{SUBSTEPS} substeps × {steps} constraint steps, linear damping {damping:g} (asset defaults)"


def bench_xpbd(scene, n, frames):
    """Times the XPBD cloth on a grid of about n vertices over `frames` frames after frame 1.
    Returns {"time", "settings", "frames_done", "steps", "extent", "pin_drift", "stretch", "n"}."""
    import bpy
    import numpy as np

    import bake_benchmark as bench

    group = node_group()
    obj = bench.grid("xpbd", n)
    mod = obj.modifiers.new("XPBD Cloth", "NODES")
    mod.node_group = group
    set_input(mod, "Pin Group", "NodeSocketFloat", attribute="top")  # pins: the top row
    for name, socket_type, value in SETTINGS:
        set_input(mod, name, socket_type, value)
    scene_range = scene.frame_start, scene.frame_end
    scene.frame_start, scene.frame_end = 1, 1 + frames
    scene.frame_set(1)  # the first frame: the simulation zone starts from the input mesh
    depsgraph = bpy.context.evaluated_depsgraph_get()
    count = len(obj.data.vertices)
    co = np.empty(3 * count)
    done = 0
    t0 = time.perf_counter()
    for f in range(2, 2 + frames):
        scene.frame_set(f)
        mesh = obj.evaluated_get(depsgraph).data
        if len(mesh.vertices) != count:
            break
        mesh.vertices.foreach_get("co", co)  # read: the frame is computed
        done += 1
    elapsed = time.perf_counter() - t0
    row = {"n": count, "time": elapsed, "settings": describe(group), "frames_done": done, "steps": [SUBSTEPS, SUBSTEPS]}
    row.update(bench.shape_report(scene, obj, 1 + frames))
    bpy.data.objects.remove(obj)
    scene.frame_start, scene.frame_end = scene_range
    return row


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--verts", type=int, required=True, help="about this many vertices (a square grid)")
    p.add_argument("--frames", type=int, required=True, help="frames after the start frame")
    p.add_argument("--json", required=True, help="where to write the results")
    p.add_argument("--user-dir", help="scratch Blender user folder (BLENDER_USER_RESOURCES)")
    p.add_argument("--no-cloth", action="store_true", help="skip the classic Cloth bake")
    args = p.parse_args()
    if args.user_dir:
        os.environ["BLENDER_USER_RESOURCES"] = args.user_dir  # before bpy starts
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bpy

    import bake_benchmark as bench

    out = {"blender": bpy.app.version_string}
    why = unavailable()
    if why:
        out["skipped"] = why
    else:
        scene = bpy.context.scene
        for o in list(scene.objects):
            bpy.data.objects.remove(o)
        scene.render.fps = 24
        if not args.no_cloth:
            print(
                f"  Blender {bpy.app.version_string} Cloth: {args.verts} vertices, {args.frames} frames ...", flush=True
            )
            out["cloth"] = bench.bench_cloth(scene, args.verts, args.frames)
        print(f"  Blender {bpy.app.version_string} XPBD: {args.verts} vertices, {args.frames} frames ...", flush=True)
        out["xpbd"] = bench_xpbd(scene, args.verts, args.frames)
    with open(args.json, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
