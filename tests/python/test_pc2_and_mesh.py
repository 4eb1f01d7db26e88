"""PC2 streaming writer and mesh helpers."""

import numpy as np
import pytest

from sim.mesh import Faces, charge_shares, lumped_measure, mesh_springs, springs_from_triangles, vertex_masses
from sim.pc2 import HEADER, Pc2Writer, read_pc2


def test_pc2_round_trip_and_streaming_header(tmp_path):
    path = tmp_path / "cache.pc2"
    frames = [np.random.default_rng(i).normal(size=(5, 3)) for i in range(3)]
    w = Pc2Writer(path, 5, start_frame=7.0, sample_rate=0.5)
    for k, f in enumerate(frames):
        w.write(f)
        # readable at any time: the header already counts every sample written
        start, rate, samples = read_pc2(path)
        assert samples.shape == (k + 1, 5, 3)
    w.close()
    start, rate, samples = read_pc2(path)
    assert (start, rate) == (7.0, 0.5)
    assert np.allclose(samples, np.array(frames, dtype=np.float32))
    assert path.stat().st_size == HEADER.size + 3 * 5 * 3 * 4
    with pytest.raises(ValueError):
        Pc2Writer(tmp_path / "x.pc2", 5).write(np.zeros((4, 3)))


def test_springs_from_triangles_match_the_core():
    structural, bending = springs_from_triangles([[0, 2, 1], [1, 2, 3]])
    assert structural.tolist() == [[0, 1], [0, 2], [1, 2], [1, 3], [2, 3]]
    assert bending.tolist() == [[0, 3]]
    # a tetrahedron's bending pairs are all edges already
    s, b = springs_from_triangles([[0, 1, 2], [0, 3, 1], [1, 3, 2], [2, 3, 0]])
    assert len(s) == 6 and len(b) == 0
    # a closed u×v torus grid: 3uv edges and 3uv bending springs
    u, v = 7, 5
    idx = lambda i, j: (i % u) * v + (j % v)  # noqa: E731
    tris = [t for i in range(u) for j in range(v)
            for t in ([idx(i, j), idx(i + 1, j), idx(i + 1, j + 1)], [idx(i, j), idx(i + 1, j + 1), idx(i, j + 1)])]
    s, b = springs_from_triangles(tris)
    assert len(s) == 3 * u * v and len(b) == 3 * u * v


def test_vertex_masses_follow_area_and_sum_to_total():
    x = [[0, 0, 0], [2, 0, 0], [0, 2, 0], [5, 5, 5]]  # vertex 3 is on no triangle
    m = vertex_masses(x, [[0, 1, 2]], total_mass=3.0)
    assert m.sum() == pytest.approx(3.0)
    assert np.all(m > 0)
    assert m[0] == pytest.approx(m[1]) == pytest.approx(m[2])
    assert m[3] < 0.01 * m[0]


def grid_quads(nx, ny):
    """Quads of an nx × ny vertex grid, vertex (i, j) = j * nx + i, corners in order."""
    v = lambda i, j: j * nx + i  # noqa: E731
    return [[v(i, j), v(i + 1, j), v(i + 1, j + 1), v(i, j + 1)] for j in range(ny - 1) for i in range(nx - 1)]


def test_quads_get_both_diagonals_alike_and_triangles_stay_as_they_were():
    tris = [[0, 2, 1], [1, 2, 3]]
    s = mesh_springs(Faces.of(triangles=tris))
    structural, bending = springs_from_triangles(tris)
    assert s.structural.tolist() == structural.tolist() and s.bending.tolist() == bending.tolist()
    assert len(s.shear) == 0
    # one quad: 4 sides, both diagonals as shear, nothing to bend across
    s = mesh_springs(Faces.of(quads=[[0, 1, 2, 3]]))
    assert s.structural.tolist() == [[0, 1], [0, 3], [1, 2], [2, 3]]
    assert s.shear.tolist() == [[0, 2], [1, 3]]
    assert len(s.bending) == 0
    pairs, k = s.with_stiffness(100.0, 10.0)
    assert k.tolist() == [100.0] * 4 + [50.0] * 2


def test_a_quad_grid_is_mirror_symmetric():
    nx = ny = 5
    s = mesh_springs(Faces.of(quads=grid_quads(nx, ny)))
    mirror = lambda p: (p // nx) * nx + (nx - 1 - p % nx)  # noqa: E731 - x → -x

    def as_set(pairs):
        return {tuple(sorted(p)) for p in pairs.tolist()}

    for kind in (s.structural, s.shear, s.bending):
        assert as_set(kind) == as_set(mirror(kind.astype(np.int64))), kind
    x = np.array([[i, j, 0.0] for j in range(ny) for i in range(nx)])
    m = lumped_measure(x, Faces.of(quads=grid_quads(nx, ny)))
    assert np.allclose(m, m[mirror(np.arange(nx * ny))])
    assert m.sum() == pytest.approx((nx - 1) * (ny - 1))  # the grid's area


def test_strands_get_structural_and_second_neighbour_springs():
    # two strands 0-1-2-3 and 4-5-6, beside a triangle 7-8-9
    s = mesh_springs(Faces.of(triangles=[[7, 8, 9]], loose_edges=[[0, 1], [1, 2], [2, 3], [4, 5], [5, 6]]))
    assert {(0, 1), (1, 2), (2, 3), (4, 5), (5, 6), (7, 8), (8, 9), (7, 9)} == {tuple(p) for p in s.structural}
    assert {(0, 2), (1, 3), (4, 6)} == {tuple(p) for p in s.bending}
    # masses along a strand go by length: the ends carry half of an inner vertex
    x = np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0]], dtype=float)
    m = vertex_masses(x, [], 3.0, faces=Faces.of(loose_edges=[[0, 1], [1, 2], [2, 3]]))
    assert m.tolist() == pytest.approx([0.5, 1.0, 1.0, 0.5])


def test_a_groups_total_charge_spreads_by_weight_and_area():
    x = np.array([[0, 0, 0], [2, 0, 0], [0, 2, 0], [2, 2, 0], [9, 9, 9]], dtype=float)
    measure = lumped_measure(x, Faces.of(triangles=[[0, 1, 2], [1, 3, 2]]))
    shares = charge_shares([1.0, 1.0, 1.0, 0.0, 0.0], measure)
    assert shares.sum() == pytest.approx(1.0)
    assert shares[1] == pytest.approx(2 * shares[0]) and shares[3] == 0.0  # vertex 1 is on both triangles
    assert charge_shares(np.zeros(5), measure).tolist() == [0.0] * 5


def test_unique_rows_by_keys_equals_numpys_row_unique():
    """The key-sorting `_unique_rows` that makes a 200K-vertex mesh's springs fast gives exactly
    what `np.unique(axis=0)` gives, inverse and counts included."""
    from sim import mesh

    rows = np.random.default_rng(7).integers(0, 50, (2000, 2))
    got = mesh._unique_rows(rows, return_inverse=True, return_counts=True)
    want = np.unique(rows, axis=0, return_inverse=True, return_counts=True)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, np.asarray(w).reshape(g.shape))
    table = rows[::3]
    np.testing.assert_array_equal(mesh._isin_rows(rows, table), (rows[:, None, :] == table[None]).all(-1).any(-1))
