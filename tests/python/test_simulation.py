"""The ctypes binding against the real library: physics through the wrapper, errors as typed
exceptions, lifetime rules."""

import math

import numpy as np
import pytest

from sim import (
    CmscError,
    CoulombMethod,
    DivergedError,
    FrictionLaw,
    Integrator,
    InvalidArgumentError,
    SimParams,
    Simulation,
    UnavailableError,
    _native,
)
from sim.errors import LibraryError

KC = 8.9875517923e9


def two_charges(lib_path, **params):
    x = np.array([[0.0, 0.0, 0.0], [0.3, 0.4, 0.0]])
    p = SimParams(gravity=(0.0, 0.0, 0.0), coulomb=CoulombMethod.DIRECT, **params)
    return Simulation(lib_path, x, [1.0, 2.0], np.zeros((0, 2)), [], p)


def test_coulombs_law_and_momentum(lib_path):
    with two_charges(lib_path) as s:
        s.set_charges([3e-6, -5e-6])
        f = s.coulomb_forces()
        expected = KC * 3e-6 * 5e-6 / 0.25
        assert np.linalg.norm(f[0]) == pytest.approx(expected, rel=1e-5)
        assert np.allclose(f[0] / np.linalg.norm(f[0]), [0.6, 0.8, 0.0])
        s.step(50)
        v = s.velocities
        momentum = 1.0 * v[0] + 2.0 * v[1]
        assert np.linalg.norm(momentum) < 1e-10 * np.linalg.norm(v[0])
        assert s.energies()["kinetic"] > 0


def test_state_round_trip_and_pins(lib_path):
    x = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], dtype=float)
    with Simulation(lib_path, x, [1, 1, 1], [[0, 1], [1, 2], [2, 0]], [10, 10, 10]) as s:
        s.set_pins([0])
        s.step(10)
        assert np.array_equal(s.positions[0], x[0])
        assert s.positions[1, 2] < 0  # the rest fell
        s.set_pin_targets([[0.0, 0.0, 0.5]])
        s.step()
        assert np.array_equal(s.positions[0], [0.0, 0.0, 0.5])
        s.positions = x
        s.velocities = np.zeros((3, 3))
        assert np.array_equal(s.positions, x) and not s.velocities.any()
        s.set_external_charges([[5.0, 0, 0]], [1e-6])
        s.set_uniform_field([0, 0, 100])
        s.set_sphere_colliders([[0, 0, -10]], [1.0])


def test_errors_are_typed_and_name_the_argument(lib_path):
    x = np.array([[0, 0, 0], [1, 0, 0]], dtype=float)
    with pytest.raises(InvalidArgumentError, match="masses"):
        Simulation(lib_path, x, [1.0, -1.0], [[0, 1]], [1.0])
    with pytest.raises(InvalidArgumentError, match="springs"):
        Simulation(lib_path, x, [1.0, 1.0], [[0, 5]], [1.0])
    with pytest.raises(InvalidArgumentError, match="time_step"):
        Simulation(lib_path, x, [1.0, 1.0], [[0, 1]], [1.0], SimParams(time_step=0.0))
    with pytest.raises(UnavailableError, match="CUDA"):
        Simulation(lib_path, x, [1.0, 1.0], [[0, 1]], [1.0], SimParams(coulomb=CoulombMethod.DIRECT_GPU))
    with two_charges(lib_path) as s:
        with pytest.raises(InvalidArgumentError, match="index 1"):
            s.set_charges([1e-6, math.nan])
        with pytest.raises(InvalidArgumentError, match="shape"):
            s.set_charges([1e-6])


def test_divergence_keeps_the_last_good_state(lib_path):
    x = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], dtype=float)
    p = SimParams(integrator=Integrator.VERLET, time_step=1.0, gravity=(0, 0, 0))
    with Simulation(lib_path, x, [1e-3] * 3, [[0, 1], [1, 2], [2, 0]], [1e4] * 3, p) as s:
        s.velocities = [[0, 0, 1], [0, 0, 0], [0, 0, 0]]
        last = s.positions
        for _ in range(1000):
            try:
                s.step()
                last = s.positions
            except DivergedError as e:
                assert "diverged" in str(e)
                assert np.array_equal(s.positions, last)
                return
        pytest.fail("never diverged")


def test_closed_simulation_refuses_calls(lib_path):
    s = two_charges(lib_path)
    s.close()
    s.close()  # idempotent
    with pytest.raises(CmscError, match="closed"):
        s.step()


def test_library_loading_errors(tmp_path):
    with pytest.raises(LibraryError, match="not found"):
        _native.load(str(tmp_path / "missing.so"))
    bogus = tmp_path / "libcmsc.so"
    bogus.write_bytes(b"not an ELF file")
    with pytest.raises(LibraryError, match="cannot load"):
        _native.load(str(bogus))


def test_abi_version_is_checked(lib_path):
    lib = _native.load(lib_path)
    assert lib.cmsc_abi_version() == _native.ABI_VERSION


def test_python_defaults_equal_the_librarys(lib_path):
    lib = _native.load(lib_path)
    c = _native.CmscParams()
    lib.cmsc_params_default(c)
    ours = SimParams().to_c(_native.CmscParams)
    for name, _ in _native.CmscParams._fields_:
        theirs, mine = getattr(c, name), getattr(ours, name)
        if isinstance(theirs, float) and math.isnan(theirs):
            assert math.isnan(mine), name
        elif name == "gravity":
            assert list(theirs) == list(mine), name
        else:
            assert theirs == mine, name
    assert c.grid_points == 0, "the default DDEF grid is adaptive"


def test_far_field_interval_reaches_the_library_and_is_checked(lib_path):
    """SimParams.far_field_interval is passed to cmsc_set_far_field_interval: a DDEF cloud of
    charges steps differently with the far field held for 4 steps; 0 is refused before and by
    the library."""
    rng = np.random.default_rng(3)
    x = rng.random((400, 3))

    def run(**params):
        p = SimParams(gravity=(0.0, 0.0, 0.0), coulomb=CoulombMethod.DDEF, grid_points=100, **params)
        with Simulation(lib_path, x, np.full(400, 1e-3), np.zeros((0, 2)), [], p) as s:
            s.set_charges(np.full(400, 1e-8))
            s.step(8)
            return s.positions

    every, held = run(), run(far_field_interval=4)
    moved = np.abs(every - x).max()
    assert moved > 1e-3
    assert 0 < np.abs(held - every).max() < 0.1 * moved
    with pytest.raises(InvalidArgumentError, match="far_field_interval"):
        run(far_field_interval=0)
    with two_charges(lib_path) as s, pytest.raises(InvalidArgumentError, match="far_field_interval"):
        s.set_far_field_interval(0)


def _slope_slide(lib_path, law, mu, theta=math.radians(20.0), h=1.0 / 120.0):
    """How far a point resting on a mesh plane tilted by `theta` slides in 1 s under `law`."""
    thickness = 0.01
    normal = np.array([-math.sin(theta), 0.0, math.cos(theta)])
    x = normal * thickness + np.array([[0.0, -1.0, 0.0], [0.0, 1.0, 0.0]])
    square = [(-9, -9), (9, -9), (9, 9), (-9, 9)]
    corners = np.array([[a * math.cos(theta), b, a * math.sin(theta)] for a, b in square])
    p = SimParams(time_step=h, coulomb=CoulombMethod.OFF)
    with Simulation(lib_path, x, [0.01, 0.01], np.zeros((0, 2)), [], p) as s:
        if law is not None:
            s.set_collider_friction_law(law)
        s.set_mesh_colliders(corners, [[0, 1, 2], [0, 2, 3]], [0, 2], [thickness], [mu])
        s.step(round(1.0 / h))
        return float(np.linalg.norm(s.positions[0] - x[0]))


def test_coulomb_collider_friction_reaches_the_library_and_is_checked(lib_path):
    """set_collider_friction_law(COULOMB): a point slides ½ g (sin θ − μ cos θ) t² down a 20°
    slope at μ = 0.2 at both steps and holds at μ = 0.5 > tan 20°; per step (the default) 1.5 is
    refused, under Coulomb it is a coefficient; an unknown law is refused."""
    theta = math.radians(20.0)
    expected = 0.5 * 9.81 * (math.sin(theta) - 0.2 * math.cos(theta))
    for h in (1.0 / 120.0, 1.0 / 480.0):
        assert _slope_slide(lib_path, FrictionLaw.COULOMB, 0.2, h=h) == pytest.approx(expected, rel=0.03)
    assert _slope_slide(lib_path, FrictionLaw.COULOMB, 0.5) < 1e-3
    assert _slope_slide(lib_path, FrictionLaw.COULOMB, 1.5) < 1e-3
    with pytest.raises(InvalidArgumentError, match="friction"):
        _slope_slide(lib_path, None, 1.5)
    assert _slope_slide(lib_path, None, 0.2) == _slope_slide(lib_path, FrictionLaw.PER_STEP, 0.2)
    with two_charges(lib_path) as s, pytest.raises(InvalidArgumentError, match="law"):
        s.set_collider_friction_law(2)


def test_contact_steps_are_the_contact_bound_of_a_spring_resting_on_a_sphere(lib_path):
    """contact_steps: a 0.1 m spring of 100 N/m between two 10 g points, one resting on a sphere
    of radius R: c = √(k l² / m) = 10 m/s, and over 1/24 s the bound asks for
    ⌈(1/24) c / (2.3 R)⌉ steps (4 at R = 0.05 m), asked by the vertex on the sphere alone; 1 with no
    sphere; a bad duration is refused."""
    x = np.array([[0.0, 0.0, 0.0], [0.1, 0.0, 0.0]])
    p = SimParams(gravity=(0.0, 0.0, 0.0), coulomb=CoulombMethod.OFF)
    with Simulation(lib_path, x, [0.01, 0.01], np.array([[0, 1]]), [100.0], p) as s:
        assert s.contact_steps(1.0 / 24.0) == 1
        s.set_sphere_colliders([[0.0, 0.0, -0.0505]], [0.05])
        assert s.contact_steps(1.0 / 24.0) == math.ceil(10.0 / 24.0 / (2.3 * 0.05)) == 4
        # per vertex: the one resting on the sphere asks, the other end of the spring does not
        assert s.contact_steps_per_vertex(1.0 / 24.0).tolist() == [4, 1]
        with pytest.raises(InvalidArgumentError, match="seconds"):
            s.contact_steps(0.0)


def test_spring_damping_decays_one_spring_as_the_damped_oscillator(lib_path):
    """set_spring_damping: two 1 kg masses on a 1 m spring of 100 N/m stretched by 10 cm, damped
    at β = 0.02 s, follow μ ë = −k e − β k ė (μ = 0.5 kg): at 0.5 s the extension is the damped
    oscillator's; a wrong length is refused by name and changes nothing."""
    k, mu, beta, stretch, t = 100.0, 0.5, 0.02, 0.1, 0.5
    w0, decay = math.sqrt(k / mu), beta * k / (2 * mu)
    wd = math.sqrt(w0 * w0 - decay * decay)
    exact = stretch * math.exp(-decay * t) * (math.cos(wd * t) + decay / wd * math.sin(wd * t))
    p = SimParams(
        gravity=(0.0, 0.0, 0.0), coulomb=CoulombMethod.OFF, integrator=Integrator.IMEX_LOW_DISSIPATION,
        time_step=1e-3, iterations=50,
    )
    rest = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    with Simulation(lib_path, rest, [1.0, 1.0], np.array([[0, 1]]), [k], p) as s:
        s.positions = np.array([[-0.05, 0.0, 0.0], [1.05, 0.0, 0.0]])
        s.set_spring_damping([beta])
        with pytest.raises(InvalidArgumentError, match="spring_damping"):
            s.set_spring_damping([beta, beta])
        s.step(500)
        x = s.positions
        assert abs(np.linalg.norm(x[1] - x[0]) - 1.0 - exact) < 1e-3 * stretch
