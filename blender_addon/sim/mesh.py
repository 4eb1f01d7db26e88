"""Mesh → simulation arrays: springs from triangles and mass distribution (numpy only)."""

import numpy as np


def springs_from_triangles(triangles):
    """Structural springs (unique edges) and bending springs (the two vertices opposite each
    edge shared by exactly two triangles, skipping pairs that are already edges), as (s, 2)
    uint32 arrays, each sorted. Mirrors `cmsc_core::springs_from_triangles`."""
    tris = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    if tris.size == 0:
        empty = np.zeros((0, 2), dtype=np.uint32)
        return empty, empty
    # each triangle's 3 edges with the opposite vertex
    edges = np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]])
    opposite = np.concatenate([tris[:, 2], tris[:, 0], tris[:, 1]])
    edges.sort(axis=1)
    structural, inverse, counts = np.unique(edges, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(inverse, kind="stable")
    first = np.searchsorted(inverse[order], np.arange(len(structural)))
    interior = np.nonzero(counts == 2)[0]
    a = opposite[order[first[interior]]]
    b = opposite[order[first[interior] + 1]]
    pairs = np.sort(np.stack([a, b], axis=1), axis=1)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    if len(pairs):
        pairs = np.unique(pairs, axis=0)
        pairs = pairs[~_isin_rows(pairs, structural)]
    return structural.astype(np.uint32), pairs.astype(np.uint32).reshape(-1, 2)


def _isin_rows(rows, table):
    """Which (a, b) rows of `rows` appear in `table`, via 64-bit keys a·2³² + b."""

    def key(r):
        return r[:, 0].astype(np.int64) << 32 | r[:, 1].astype(np.int64)

    return np.isin(key(rows), key(table))


def vertex_masses(positions, triangles, total_mass):
    """Splits `total_mass` (kg) over the vertices in proportion to their share of the surface
    area (a third of each incident triangle's area); vertices on no triangle share equally
    what a zero-area mesh leaves. Every vertex gets a positive mass."""
    x = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
    tris = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    n = len(x)
    weight = np.zeros(n)
    if len(tris):
        area = 0.5 * np.linalg.norm(np.cross(x[tris[:, 1]] - x[tris[:, 0]], x[tris[:, 2]] - x[tris[:, 0]]), axis=1)
        np.add.at(weight, tris.reshape(-1), np.repeat(area / 3.0, 3))
    floor = 1e-3 * (weight.sum() / n if weight.sum() > 0 else 1.0)
    weight = np.maximum(weight, floor)
    return total_mass * weight / weight.sum()
