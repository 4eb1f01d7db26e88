"""PC2 streaming writer and mesh helpers."""

import numpy as np
import pytest

from sim.mesh import springs_from_triangles, vertex_masses
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
