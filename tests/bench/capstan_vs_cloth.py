"""A strip hanging over a cylinder, unequal sides, side by side with Blender's Cloth (issue 30):
at which Collision Friction does each hold, against the friction Coulomb's law needs?

Run in Blender's Python (bpy from PyPI):

    .venv-blender/bin/python tests/bench/capstan_vs_cloth.py --friction 3,4.5,6,7.5,9,12,18

The scene (`strip_scene` in tests/blender/scenes.py): a cylinder of radius 0.3 m (64 sides,
its axis along y) with Collision physics at Friction F, and a strip 2 cm wide of quads 2 cm long
laid over its top on a circle of radius r = 0.32 m (its Outer Thickness above the surface),
hanging 0.3 m on its light side and 0.45 m on its heavy side; gravity on, 24 fps, 72 frames
(3 s). The strip's rest shape is the one it starts in, so its springs hold no load at the start.

Coulomb's law gives the least friction that holds it (`strip_coulomb_mu`): along the arc, at
the angle φ from the top (toward the heavy side), a strip of weight ρ g per length that is
about to slip toward the heavy side has

    dT/dφ = μ (T + ρ g r cos φ) − ρ g r sin φ,  T(−π/2) = ρ g × 0.3 m,

(the capstan equation with the weight of the strip on the arc: the normal force per length is
T/r + ρ g cos φ), and it holds while T(π/2) ≤ ρ g × 0.45 m. A row gives the angle of the
strip's middle (from the top, seen from the axis, positive toward the heavy side) at frames 12
and 72: one that holds stays near its start; one that slides runs off to the heavy side.

Blender's Cloth runs at its defaults but for its Steps per frame (`--cloth-steps`, its default
5); cmsc at the add-on's defaults but for `--cmsc` (`name=value` settings of `Object.cmsc`,
`;`-separated; by default `stiffness=3000`, N/m: a stiffer strip than the default cloth's).
Both have the Bending of `--bending` (0: none; a strip bent at rest resists sliding its bends
along). The add-on is installed from the zip (--zip, default the `make addon` output) into a
scratch Blender user folder."""

import argparse
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bake_benchmark import ROOT, bake_frames, gravity_scene, settings_of  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "tests", "blender"))  # scenes.py: imported after bpy starts

FRAMES = 72


def cloth(friction, bending, steps):
    """The middle's angle at each frame under Blender's Cloth at its defaults but `bending` and
    `steps` per frame."""
    from scenes import cloth_frames, strip_angle, strip_scene

    obj, mid = strip_scene(friction)
    return [strip_angle(x, mid) for x in cloth_frames(obj, FRAMES, bending_stiffness=bending, quality=steps)]


def cmsc(module, friction, settings, bending, cache):
    """The middle's angle at each frame of the cmsc bake with `bending` and `settings` (of
    `Object.cmsc`) over the add-on's defaults."""
    from scenes import strip_angle, strip_scene

    obj, mid = strip_scene(friction)
    frames = bake_frames(module, obj, {"bending_stiffness": bending, **settings}, cache, FRAMES)
    return [strip_angle(x, mid) for x in frames]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--friction", default="3,4.5,6,7.5,9,12,18", help="Collision Friction values (Blender's 0–80)")
    p.add_argument("--cmsc", default="stiffness=3000", help="cmsc's settings: name=value;name=value")
    p.add_argument("--cloth-steps", type=int, default=5, help="Cloth's Quality Steps (per frame)")
    p.add_argument("--bending", type=float, default=0.0, help="Cloth's Bending and cmsc's (N/m)")
    p.add_argument("--zip", default=os.path.join(ROOT, "dist", "cmsc-0.1.0-linux-x64.zip"))
    p.add_argument("--user-dir", default=os.path.join(tempfile.gettempdir(), "cmsc-capstan-user"))
    args = p.parse_args()
    module = gravity_scene(args.user_dir, args.zip, FRAMES)
    import bpy

    from scenes import STRIP_PATH, STRIP_SIDES, strip_coulomb_mu  # after bpy: it imports bpy

    mu = strip_coulomb_mu()
    light, heavy = STRIP_SIDES
    print(f"Blender {bpy.app.version_string}; sides {light} and {heavy} m over r = {STRIP_PATH} m: Coulomb holds from "
          f"μ = {mu:.4f} (Friction {100 * mu:.2f}). The middle's angle (°) at frames 12 and 72:\n")
    print("| Friction | ÷ Coulomb's | Cloth 12 | Cloth 72 | cmsc 12 | cmsc 72 |\n|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for friction in map(float, args.friction.split(",")):
            a = cloth(friction, args.bending, args.cloth_steps)
            cache = os.path.join(tmp, f"strip_{friction:g}.pc2")
            b = cmsc(module, friction, settings_of(args.cmsc), args.bending, cache)
            angles = [f"{v[k]:.1f}" for v in (a, b) for k in (11, -1)]
            cells = [f"{friction:g}", f"{friction / (100 * mu):.2f}", *angles]
            print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
