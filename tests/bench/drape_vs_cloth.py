"""A cloth dropped on a sphere, side by side with Blender's Cloth (issue 30): where does each
hold at a given Collision Friction?

Run in Blender's Python (bpy from PyPI):

    .venv-blender/bin/python tests/bench/drape_vs_cloth.py --friction 0,2,3,5,9,20

The scene: a UV sphere of radius 0.6 m (64 × 32) with Collision physics at Friction F, and a
2 m grid of 40 × 40 cuts (1,681 vertices) 5 cm above its top and 5 cm off its centre along x,
gravity on, 24 fps, 72 frames (3 s). Blender's Cloth runs at its defaults (quality 5); cmsc at
the add-on's defaults, and with each `--cmsc` variant (`name=value` settings of `Object.cmsc`,
`;`-separated, e.g. `stiffness=3000`). A row gives the centroid's x at frames 24, 48 and 72
(it starts at 0.050 m) and its height at frame 72: a cloth that holds stays near x = 0.05 and
above z = 0; one that slides off ends far along x and below the sphere. The add-on is installed
from the zip (--zip, default the `make addon` output) into a scratch Blender user folder."""

import argparse
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bake_benchmark import ROOT, bake_frames, gravity_scene, settings_of  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "tests", "blender"))  # scenes.py: imported after bpy starts

FRAMES = 72


def parse():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--friction", default="0,2,3,5,9,20", help="Collision Friction values (Blender's 0–80)")
    p.add_argument("--cmsc", action="append", default=[], help="a cmsc variant: name=value;name=value")
    p.add_argument("--zip", default=os.path.join(ROOT, "dist", "cmsc-0.1.0-linux-x64.zip"))
    p.add_argument("--user-dir", default=os.path.join(tempfile.gettempdir(), "cmsc-drape-user"))
    return p.parse_args()


def cmsc(module, friction, settings, cache):
    """Centroids (frames × 3, world) of the cmsc bake with `settings` over the add-on's defaults."""
    from scenes import drape_scene

    obj = drape_scene(friction)
    return bake_frames(module, obj, settings, cache, FRAMES).mean(axis=1) + np.array(obj.location)


def row(name, friction, c):
    from scenes import DRAPE_OFFSET

    x = c[[23, 47, 71], 0]
    verdict = "holds" if abs(x[2] - DRAPE_OFFSET) < 0.1 and c[-1, 2] > 0.0 else "slides"
    print(f"| {name} | {friction:g} | {x[0]:.3f} | {x[1]:.3f} | {x[2]:.3f} | {c[-1, 2]:.3f} | {verdict} |", flush=True)


def main():
    args = parse()
    module = gravity_scene(args.user_dir, args.zip, FRAMES)
    import bpy

    from scenes import DRAPE_OFFSET, cloth_centroids, drape_scene  # after bpy: it imports bpy

    variants = [("cmsc (defaults)", {})] + [(f"cmsc {text}", settings_of(text)) for text in args.cmsc]
    print(f"Blender {bpy.app.version_string}; centroid x (m) at frames 24, 48, 72 (start {DRAPE_OFFSET}) and z at 72\n")
    print("| solver | Friction | x 24 | x 48 | x 72 | z 72 | |\n|---|---:|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for friction in map(float, args.friction.split(",")):
            row("Blender Cloth", friction, cloth_centroids(drape_scene(friction), FRAMES))
            for k, (name, settings) in enumerate(variants):
                row(name, friction, cmsc(module, friction, settings, os.path.join(tmp, f"c{k}_{friction:g}.pc2")))


if __name__ == "__main__":
    main()
