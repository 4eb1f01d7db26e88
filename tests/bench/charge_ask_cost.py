"""What the bake's look at the charges costs (issue 30): before each substep the add-on asks the
library what the charge bound of each vertex asks for (`Simulation.charge_steps_per_vertex`) and
takes each object's largest, to warn when Max Substeps holds the steps back and name whose
charges asked. This times that look against one step of the same cloth.

    RAYON_NUM_THREADS=2 .venv/bin/python tests/bench/charge_ask_cost.py

The cloth: a flat 2 m square grid of 10,000 and 100,489 vertices, 1 kg, structural, shear and
bending springs of 100 N/m, 150 µC spread evenly, the Coulomb method AUTO, steps of 1/72 s; the
look is timed as the mean of 10, split over two objects' halves."""

import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "blender_addon"))

from sim import SimParams, Simulation  # noqa: E402


def grid_cloth(side):
    """Positions (n, 3) of a flat 2 m grid of side × side vertices and its springs (s, 2)."""
    ij = np.arange(side * side).reshape(side, side)
    u = np.linspace(0.0, 2.0, side)
    x = np.stack(np.meshgrid(u, u), -1).reshape(-1, 2)
    springs = np.r_[
        np.c_[ij[:, :-1].ravel(), ij[:, 1:].ravel()],
        np.c_[ij[:-1].ravel(), ij[1:].ravel()],
        np.c_[ij[:-1, :-1].ravel(), ij[1:, 1:].ravel()],
        np.c_[ij[:-2].ravel(), ij[2:].ravel()],
    ]
    return np.c_[x, np.zeros(len(x))], springs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", default=os.path.join(ROOT, "target", "release", "libcmsc.so"))
    parser.add_argument("--sides", default="100,317", help="grid sides, comma-separated")
    args = parser.parse_args()
    for side in map(int, args.sides.split(",")):
        x, springs = grid_cloth(side)
        n, h = len(x), 1.0 / 72.0
        stiffness = np.full(len(springs), 100.0)
        with Simulation(args.lib, x, np.full(n, 1.0 / n), springs, stiffness, SimParams(time_step=h)) as sim:
            sim.set_charges(np.full(n, 150e-6 / n))
            sim.step(1)  # the charges in force, the factorization built
            halves = [(0, n // 2), (n // 2, n)]
            t = time.perf_counter()
            for _ in range(10):
                each = sim.charge_steps_per_vertex(h)
                [int(each[a:b].max(initial=1)) for a, b in halves]
            look = (time.perf_counter() - t) / 10
            t = time.perf_counter()
            sim.step(1)
            step = time.perf_counter() - t
        print(f"n = {n}: the look {look * 1e3:.2f} ms, one step {step * 1e3:.1f} ms: {look / step:.3f} of a step")


if __name__ == "__main__":
    main()
