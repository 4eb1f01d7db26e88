"""Gradients and charge fitting through the binding (cmsc_rollout_gradient, cmsc_fit_charges),
and the add-on's fitter for a subset of the groups."""

import numpy as np
import pytest

from sim import CoulombMethod, Integrator, InvalidArgumentError, SimParams, Simulation, UnavailableError, _native
from sim.fitting import fit_group_charges
from sim.mesh import springs_from_triangles, vertex_masses


def octahedron():
    x = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], dtype=float) * 0.1
    tris = [[0, 2, 4], [2, 1, 4], [1, 3, 4], [3, 0, 4], [2, 0, 5], [1, 2, 5], [3, 1, 5], [0, 3, 5]]
    structural, bending = springs_from_triangles(tris)
    springs = np.concatenate([structural, bending])
    return x, vertex_masses(x, tris, 0.01), springs


def make(lib_path, stiffness=20.0, **params):
    x, m, springs = octahedron()
    p = SimParams(gravity=(0, 0, 0), coulomb=CoulombMethod.DIRECT, time_step=1 / 120, **params)
    return Simulation(lib_path, x, m, springs, np.full(len(springs), stiffness), p)


#: two groups: the top half and the bottom half (the equator vertices are in both, half weight)
WEIGHTS = np.array([[0.5, 0.5, 0.5, 0.5, 1, 0], [0.5, 0.5, 0.5, 0.5, 0, 1]])
TRUTH = np.array([2e-7, 1e-7])
STEPS = 12


def forward(sim, charges, steps=STEPS):
    """Final positions of a plain forward run (state restored afterwards)."""
    x, v = sim.positions, sim.velocities
    sim.set_charges(charges @ WEIGHTS)
    sim.step(steps)
    out = sim.positions
    sim.positions, sim.velocities = x, v
    return out


def test_the_library_has_the_gradient_symbols(lib_path):
    lib = _native.load(lib_path)
    assert _native.has(lib, "cmsc_rollout_gradient") and _native.has(lib, "cmsc_fit_charges")


def test_loss_is_that_of_the_forward_run_and_the_state_is_restored(lib_path):
    with make(lib_path) as sim:
        sim.velocities = np.full((6, 3), 0.01)
        before = sim.positions, sim.velocities
        target = sim.positions + 0.01
        loss, grad, scale = sim.rollout_gradient(STEPS, WEIGHTS, TRUTH, target)
        assert scale is None and grad.shape == (2,)
        assert np.array_equal(sim.positions, before[0]) and np.array_equal(sim.velocities, before[1])
        x = forward(sim, TRUTH)
        assert loss == pytest.approx(((x - target) ** 2).sum() / (2 * 6), rel=1e-9)


def test_gradients_match_central_differences(lib_path):
    with make(lib_path) as sim:
        target = forward(sim, TRUTH)
        q = np.array([1.2e-7, 1.6e-7])
        loss, grad, dscale = sim.rollout_gradient(STEPS, WEIGHTS, q, target, stiffness=True)
        assert loss > 0
        for g in range(2):
            e = np.zeros(2)
            e[g] = 1e-10
            fd = (sim.rollout_gradient(STEPS, WEIGHTS, q + e, target)[0]
                  - sim.rollout_gradient(STEPS, WEIGHTS, q - e, target)[0]) / 2e-10
            assert grad[g] == pytest.approx(fd, rel=1e-4), g
    eps = 1e-5
    losses = []
    for scale in (1 + eps, 1 - eps):
        with make(lib_path, stiffness=20.0 * scale) as sim:
            losses.append(sim.rollout_gradient(STEPS, WEIGHTS, q, target)[0])
    assert dscale == pytest.approx((losses[0] - losses[1]) / (2 * eps), rel=1e-4)


def test_fit_charges_recovers_the_truth(lib_path):
    with make(lib_path) as sim:
        target = forward(sim, TRUTH)
        q, loss = sim.fit_charges(STEPS, WEIGHTS, [1e-7, 1e-7], target, max_iterations=100)
        np.testing.assert_allclose(q, TRUTH, rtol=1e-3)
        assert loss < 1e-14


def test_a_subset_is_fitted_with_the_other_groups_held(lib_path):
    with make(lib_path) as sim:
        target = forward(sim, TRUTH)
        r = fit_group_charges(sim, STEPS, WEIGHTS, [TRUTH[0], 0.4e-7], target, free=[False, True])
        assert r.charges[0] == TRUTH[0], "the held group keeps its charge exactly"
        assert r.charges[1] == pytest.approx(TRUTH[1], rel=1e-3)
        assert r.loss < 1e-6 * r.initial_loss and r.converged
        # all groups: the library's fitter
        r = fit_group_charges(sim, STEPS, WEIGHTS, [1e-7, 1e-7], target)
        np.testing.assert_allclose(r.charges, TRUTH, rtol=1e-3)
        assert r.converged


@pytest.mark.parametrize("free", [None, [False, True]], ids=["library fitter", "subset"])
def test_a_fit_stopped_by_its_iteration_limit_says_it_did_not_converge(lib_path, free):
    with make(lib_path) as sim:
        target = forward(sim, TRUTH)
        start = [TRUTH[0], 0.2e-7] if free else [1e-8, 1e-8]
        r = fit_group_charges(sim, STEPS, WEIGHTS, start, target, free=free, max_iterations=1)
        assert not r.converged and r.loss < r.initial_loss
        r = fit_group_charges(sim, STEPS, WEIGHTS, r.charges, target, free=free, max_iterations=200)
        assert r.converged


def test_gradient_errors_are_typed(lib_path):
    with make(lib_path) as sim:
        target = sim.positions
        with pytest.raises(InvalidArgumentError, match="group_weights"):
            sim.rollout_gradient(STEPS, WEIGHTS[:, :5], TRUTH, target)
        with pytest.raises(InvalidArgumentError, match="group_charges"):
            sim.fit_charges(STEPS, WEIGHTS, [1e-7], target)
        with pytest.raises(InvalidArgumentError, match="no charge group"):
            fit_group_charges(sim, STEPS, WEIGHTS, TRUTH, target, free=[False, False])
    with make(lib_path, integrator=Integrator.VERLET) as sim:
        with pytest.raises(InvalidArgumentError, match="IMEX"):
            sim.rollout_gradient(STEPS, WEIGHTS, TRUTH, sim.positions)


def test_a_library_without_the_gradients_reports_them_unavailable():
    class OldLibrary:  # an ABI 1 library built before the gradients were appended
        @staticmethod
        def cmsc_version():
            return b"0.0.9"

    assert not _native.has(OldLibrary, "cmsc_fit_charges")
    with pytest.raises(UnavailableError, match="0.0.9 predates `cmsc_fit_charges`"):
        _native.require(OldLibrary, "cmsc_fit_charges")
    assert "cmsc_fit_charges" in _native.OPTIONAL and "cmsc_step" not in _native.OPTIONAL
