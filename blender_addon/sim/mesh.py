"""Mesh → simulation arrays: springs from faces and strands, lumped vertex measures, masses and
charge shares (numpy only).

A mesh comes as `Faces`: triangles (triangles, and n-gons of 5+ corners triangulated), quads
(corners in order) and loose edges (edges of no face: hair, ropes). Springs (`mesh_springs`):

- structural: every edge of a face and every loose edge, at the object's Stiffness;
- shear: both diagonals of every quad, each at half the Stiffness (together they resist shear
  as the one diagonal of a triangulated quad did, but with no preferred direction, so a
  symmetric grid hangs symmetric);
- bending: across every edge between two faces, the two vertices opposite it (for quads, both
  ways of splitting them), and along strands the two neighbours of every vertex that joins two
  loose edges, at the Bending stiffness.

Triangle-only meshes get exactly the springs of `springs_from_triangles`."""

from dataclasses import dataclass

import numpy as np

#: Stiffness of a quad's diagonal (shear) spring relative to the structural stiffness.
SHEAR_FRACTION = 0.5


@dataclass(frozen=True)
class Faces:
    """A mesh's faces and strands as index arrays: triangles (t, 3), quads (q, 4) with corners
    in order around the face, loose edges (e, 2) that belong to no face."""

    triangles: np.ndarray
    quads: np.ndarray
    loose_edges: np.ndarray

    @staticmethod
    def of(triangles=(), quads=(), loose_edges=()):
        return Faces(
            np.asarray(triangles, dtype=np.int64).reshape(-1, 3),
            np.asarray(quads, dtype=np.int64).reshape(-1, 4),
            np.asarray(loose_edges, dtype=np.int64).reshape(-1, 2),
        )

    def surface(self):
        """The surface as triangles (t + 2q, 3): quads split along one diagonal (collisions)."""
        q = self.quads
        return np.concatenate([self.triangles, q[:, [0, 1, 2]], q[:, [0, 2, 3]]])

    def both_triangulations(self):
        """The triangles with each quad split both ways, (t + 4q, 3): every face covered twice
        (each quad once per diagonal), so measures from it are symmetric and twice the area."""
        q = self.quads
        split = np.concatenate([q[:, [0, 1, 2]], q[:, [0, 2, 3]], q[:, [0, 1, 3]], q[:, [1, 2, 3]]])
        return np.concatenate([self.triangles, self.triangles, split])


@dataclass(frozen=True)
class MeshSprings:
    """Spring index pairs (s, 2), uint32, each row sorted, no pair in two kinds."""

    structural: np.ndarray
    shear: np.ndarray
    bending: np.ndarray

    def with_stiffness(self, stiffness, bending_stiffness):
        """(pairs (s, 2), stiffness (s,) N/m) of all springs."""
        pairs = np.concatenate([self.structural, self.shear, self.bending]).reshape(-1, 2)
        k = np.concatenate([
            np.full(len(self.structural), float(stiffness)),
            np.full(len(self.shear), SHEAR_FRACTION * stiffness),
            np.full(len(self.bending), float(bending_stiffness)),
        ])
        return pairs, k


def _key(rows):
    """64-bit keys a·2³² + b of (a, b) rows of non-negative 32-bit indices: sorting the keys
    sorts the rows lexicographically."""
    return rows[:, 0].astype(np.int64) << 32 | rows[:, 1].astype(np.int64)


def _unique_rows(rows, return_inverse=False, return_counts=False):
    """`np.unique(rows, axis=0, ...)` for (s, 2) index rows, by sorting their 64-bit keys: the
    same result, fast with any numpy (`axis=0` sorts rows as opaque records, and numpy 2's
    hashed `np.unique` of these keys collides on their low bits: 11 s and 10 s of a 200K-vertex
    grid's springs, against ~0.3 s)."""
    keys = _key(rows)
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    first = np.ones(len(ordered), dtype=bool)
    first[1:] = ordered[1:] != ordered[:-1]
    kept = ordered[first]
    out = [np.stack([kept >> 32, kept & 0xFFFFFFFF], axis=1)]
    if return_inverse:
        inverse = np.empty(len(keys), dtype=np.int64)
        inverse[order] = np.cumsum(first) - 1
        out.append(inverse)
    if return_counts:
        out.append(np.diff(np.append(np.flatnonzero(first), len(ordered))))
    return out[0] if len(out) == 1 else tuple(out)


def _rows(pairs):
    """Sorted, unique rows of (a, b) pairs with a < b, as int64 (s, 2)."""
    p = np.sort(np.asarray(pairs, dtype=np.int64).reshape(-1, 2), axis=1)
    p = p[p[:, 0] != p[:, 1]]
    return _unique_rows(p) if len(p) else p


def _minus(rows, table):
    return rows[~_isin_rows(rows, table)] if len(rows) and len(table) else rows


def _strand_bending(loose_edges):
    """The pairs (a, b) of neighbours of every vertex joined to exactly two loose edges."""
    e = np.asarray(loose_edges, dtype=np.int64).reshape(-1, 2)
    if not len(e):
        return e
    ends = np.concatenate([e, e[:, ::-1]])  # (vertex, neighbour) both ways
    ends = ends[np.argsort(ends[:, 0], kind="stable")]
    vertex, start, count = np.unique(ends[:, 0], return_index=True, return_counts=True)
    middle = start[count == 2]
    return np.stack([ends[middle, 1], ends[middle + 1, 1]], axis=1)


def mesh_springs(faces):
    """The springs of `faces` (a `Faces`), as the module docs describe."""
    q = faces.quads
    if not len(q):
        structural, bending = springs_from_triangles(faces.triangles)
        structural, bending = structural.astype(np.int64), bending.astype(np.int64)
        shear = np.zeros((0, 2), dtype=np.int64)
    else:
        split_a = np.concatenate([faces.triangles, q[:, [0, 1, 2]], q[:, [0, 2, 3]]])
        split_b = np.concatenate([faces.triangles, q[:, [0, 1, 3]], q[:, [1, 2, 3]]])
        s_a, b_a = springs_from_triangles(split_a)
        s_b, b_b = springs_from_triangles(split_b)
        edges = _rows(np.concatenate([s_a, s_b]))
        diagonals = _rows(np.concatenate([q[:, [0, 2]], q[:, [1, 3]]]))
        shear = edges[_isin_rows(edges, diagonals)]
        structural = _minus(edges, diagonals)
        bending = _minus(_rows(np.concatenate([b_a, b_b])), edges)
    loose = _rows(faces.loose_edges)
    structural = _rows(np.concatenate([structural, loose]))
    strand = _minus(_minus(_rows(_strand_bending(faces.loose_edges)), structural), shear)
    bending = _rows(np.concatenate([bending, strand]))
    u32 = lambda a: a.astype(np.uint32).reshape(-1, 2)  # noqa: E731
    return MeshSprings(u32(structural), u32(shear), u32(bending))


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
    structural, inverse, counts = _unique_rows(edges, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(inverse, kind="stable")
    first = np.searchsorted(inverse[order], np.arange(len(structural)))
    interior = np.nonzero(counts == 2)[0]
    a = opposite[order[first[interior]]]
    b = opposite[order[first[interior] + 1]]
    pairs = np.sort(np.stack([a, b], axis=1), axis=1)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    if len(pairs):
        pairs = _unique_rows(pairs)
        pairs = pairs[~_isin_rows(pairs, structural)]
    return structural.astype(np.uint32), pairs.astype(np.uint32).reshape(-1, 2)


def _isin_rows(rows, table):
    """Which (a, b) rows of `rows` appear in `table`, via 64-bit keys a·2³² + b."""

    keys, table = _key(rows), np.sort(_key(table))
    at = np.minimum(np.searchsorted(table, keys), len(table) - 1)
    return table[at] == keys if len(table) else np.zeros(len(keys), dtype=bool)


def lumped_measure(positions, faces):
    """Each vertex's share of the mesh (its lumped measure, `Faces` `faces`): a third of the
    area of each incident triangle (quads split both ways, averaged); for a vertex on no face,
    half the length of each incident loose edge times the mean loose-edge length (an area, so
    strands and surfaces mix in one mesh); a vertex on neither gets 1e-3 of the mean measure
    (or 1 when the mesh has none), so that every vertex has a positive share."""
    x = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
    n = len(x)
    measure = np.zeros(n)
    tris = faces.both_triangulations()
    if len(tris):
        area = 0.5 * np.linalg.norm(np.cross(x[tris[:, 1]] - x[tris[:, 0]], x[tris[:, 2]] - x[tris[:, 0]]), axis=1)
        np.add.at(measure, tris.reshape(-1), np.repeat(area / 6.0, 3))  # each face is in `tris` twice
    e = faces.loose_edges
    if len(e):
        length = np.linalg.norm(x[e[:, 1]] - x[e[:, 0]], axis=1)
        strand = np.zeros(n)
        np.add.at(strand, e.reshape(-1), np.repeat(length / 2.0, 2))
        bare = measure == 0
        measure[bare] = strand[bare] * length.mean()
    floor = 1e-3 * (measure.sum() / n if measure.sum() > 0 else 1e3)
    return np.maximum(measure, floor)


def vertex_masses(positions, triangles, total_mass, faces=None):
    """Splits `total_mass` (kg) over the vertices in proportion to their `lumped_measure` (of
    `faces`, or of plain `triangles` when no `Faces` is given). Every vertex gets a positive
    mass."""
    faces = faces if faces is not None else Faces.of(triangles=triangles)
    w = lumped_measure(positions, faces)
    return total_mass * w / w.sum()


def charge_shares(weights, measure):
    """How a group's total charge spreads over the vertices: in proportion to weight × lumped
    measure, summing to 1 (all zero for a group with no weight)."""
    share = np.asarray(weights, dtype=np.float64) * measure
    total = share.sum()
    return share / total if total > 0 else share


#: A triangle whose area is below this fraction of its longest edge squared counts as having no
#: area. The library refuses triangles below 1e-12 of it (`cmsc-core` collision::mesh); this
#: keeps a margin so that no triangle let through is refused there.
DEGENERATE_AREA = 1e-9


def proper_triangles(vertices, triangles):
    """Whether each of `triangles` (t, 3) on `vertices` (v, 3) has three distinct corners and an
    area: a bool mask (t,). Zero-area faces (collapsed, or a corner on the opposite edge) have no
    normal to collide against."""
    tri = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    v = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
    a, b, c = v[tri[:, 0]], v[tri[:, 1]], v[tri[:, 2]]
    cross = np.linalg.norm(np.cross(b - a, c - a), axis=1)
    longest = np.max([((b - a) ** 2).sum(1), ((c - b) ** 2).sum(1), ((a - c) ** 2).sum(1)], axis=0)
    distinct = (tri[:, 0] != tri[:, 1]) & (tri[:, 1] != tri[:, 2]) & (tri[:, 0] != tri[:, 2])
    return distinct & (cross > DEGENERATE_AREA * longest)
