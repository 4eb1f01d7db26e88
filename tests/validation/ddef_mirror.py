"""A numpy/scipy re-implementation of cmsc's DDEF (paper §3.1, Alg. 1) for the paper's "far
field ignored" table.

The C ABI offers DDEF only whole (CMSC_COULOMB_DDEF); the core's `Ddef::without_far_field`
(the near field alone) is not exposed. This module rebuilds DDEF from its documented rule
(cmsc-core/src/coulomb/ddef/{mod,grid}.rs) so that the near field can be switched off:

1. grid: the charges' bounding box padded by max(1 % of its diagonal, (s - e)/2) per axis
   (s = diagonal / cbrt(m), e = the axis extent), its 8 corners, and m Halton points (bases
   2, 3, 5, indices 1..m) scaled to the box; Delaunay tetrahedralization (scipy/Qhull);
2. per charge i: containing tet tau_i, barycentric psi_i, near grid points N_i = the vertices of
   every tet sharing a vertex with tau_i (cmsc's default `Neighborhood::Ring`);
3. near charges of i: C_i = {j : N_j contains a vertex of tau_i};
4. field at i = sum_k psi_ik [E(u_k) - sum_{j in C_i} e(u_k, x_j)] + sum_{j in C_i, j != i} e(x_i, x_j)
   where E(u) is the full field at grid point u and e(p, x_j) = q_j (p - x_j) /
   max(|p - x_j|, a)^3 (each charge a ball of radius a = `eps`, cmsc's short-range form);
   force = k_c q_i field; then the mean force is removed.
   "Far field ignored" keeps only the last sum (and the mean removal).

`full` agreeing with cmsc's own DDEF through the C ABI (reported as `mirror_vs_cmsc`) is the
evidence that this mirror is the same algorithm; only then is its near-only error reported.
"""

import numpy as np
from scipy import sparse
from scipy.spatial import Delaunay

from common import K_C


def halton(m, base):
    """Radical inverses of 1..m in `base` (the `halton` crate's Sequence::new(base))."""
    out = np.zeros(m)
    idx = np.arange(1, m + 1)
    f = 1.0
    while np.any(idx > 0):
        f /= base
        out += f * (idx % base)
        idx //= base
    return out


def grid_box(x, m, min_size):
    lo, hi = x.min(axis=0), x.max(axis=0)
    extent = hi - lo
    diagonal = max(float(np.linalg.norm(extent)), min_size)
    spacing = diagonal / max(m, 1) ** (1.0 / 3.0)
    pad = np.maximum(0.01 * diagonal, 0.5 * (spacing - extent))
    return lo - pad, extent + 2.0 * pad


def _term_sum(p, xs, qs, eps2):
    """sum_j q_j (p - x_j) / max(|p - x_j|^2, a^2)^{3/2} for p (k, 3) against all sources (a^2 =
    `eps2`)."""
    out = np.zeros((len(p), 3))
    for s in range(0, len(p), 64):
        d = p[s:s + 64, None, :] - xs[None, :, :]
        r2 = np.maximum(np.einsum("knc,knc->kn", d, d), eps2)
        w = qs[None, :] / (r2 * np.sqrt(r2))
        out[s:s + 64] = np.einsum("kn,knc->kc", w, d)
    return out


def _pair_terms(p, xs, qs, eps2):
    d = p - xs
    r2 = np.maximum(np.einsum("kc,kc->k", d, d), eps2)
    return d * (qs / (r2 * np.sqrt(r2)))[:, None]


class Mirror:
    """DDEF of `x`, `q` with `m` grid points and softening `eps` (both terms of the result)."""

    def __init__(self, x, q, m, eps):
        self.x, self.q, self.eps2 = np.asarray(x, float), np.asarray(q, float), eps * eps
        lo, size = grid_box(self.x, m, max(eps, 1e-9))
        corners = np.array([[c & 1, (c >> 1) & 1, (c >> 2) & 1] for c in range(8)], dtype=float)
        unit = np.vstack([corners, np.stack([halton(m, 2), halton(m, 3), halton(m, 5)], axis=1)])
        self.grid = lo + unit * size
        scale = float(size.max())
        tri = Delaunay(unit * (size / scale))  # cmsc's reference coordinates
        ref_x = (self.x - lo) / scale
        tet = tri.find_simplex(ref_x)
        if np.any(tet < 0):
            raise RuntimeError(f"{int(np.sum(tet < 0))} charges outside the tetrahedralization")
        tr = tri.transform[tet]
        b = np.einsum("kij,kj->ki", tr[:, :3, :], ref_x - tr[:, 3, :])
        self.psi = np.hstack([b, 1.0 - b.sum(axis=1, keepdims=True)])
        self.tets = tri.simplices
        self.tet = tet
        n_t, n_p = len(tri.simplices), len(unit)
        incidence = sparse.csr_matrix((np.ones(4 * n_t), (np.repeat(np.arange(n_t), 4), tri.simplices.ravel())),
                                      shape=(n_t, n_p))
        ring = ((incidence @ incidence.T) @ incidence).astype(bool).astype(np.int32)  # tet -> near points
        near_of_charge = ring[tet]  # N_j, (n, m + 8)
        vertices_of_charge = incidence[tet]  # vertices of tau_i
        c = (vertices_of_charge @ near_of_charge.T).tocsr()  # C_i, (n, n)
        c.data[:] = 1
        self.near = c
        self.mean_near = c.nnz / len(self.x)

    def forces(self, far_field=True):
        x, q, eps2 = self.x, self.q, self.eps2
        n = len(x)
        rows = np.repeat(np.arange(n), np.diff(self.near.indptr))
        cols = self.near.indices
        keep = rows != cols
        field = np.zeros((n, 3))
        np.add.at(field, rows[keep], _pair_terms(x[rows[keep]], x[cols[keep]], q[cols[keep]], eps2))
        if far_field:
            e_grid = _term_sum(self.grid, x, q, eps2)
            for k in range(4):
                v = self.tets[self.tet, k]  # vertex k of tau_i
                interp = e_grid[v].copy()
                removed = np.zeros((n, 3))
                np.add.at(removed, rows, _pair_terms(self.grid[v[rows]], x[cols], q[cols], eps2))
                field += self.psi[:, k, None] * (interp - removed)
        f = K_C * q[:, None] * field
        charged = q != 0
        f[charged] -= f[charged].mean(axis=0)
        return f
