"""The worker half of a bake (no bpy): inputs as arrays, PC2 out, cancel and divergence keep a
valid cache of the frames done."""

import numpy as np
import pytest

from sim import CoulombMethod, Integrator, SimParams
from sim.bake_job import BakeJob, charge_warning, run
from sim.pc2 import read_pc2


def job(lib_path, path, frames=6, params=None, group_charge=1e-7):
    x = np.array([[0, 0, 0], [0.1, 0, 0], [0, 0.1, 0], [0, 0, 0.1]], dtype=float)
    s = 3
    return BakeJob(
        library=lib_path,
        cache_paths=[str(path)],
        start_frame=1,
        rest_local=x,
        x0=x + [0, 0, 1.0],  # the object sits 1 m up: samples are written back in local space
        masses=np.full(4, 0.01),
        springs=np.array([[0, 1], [0, 2], [0, 3], [1, 2], [2, 3], [3, 1]]),
        stiffness=np.full(6, 20.0),
        params=params or SimParams(gravity=(0, 0, 0), time_step=1 / 72),
        pins=np.array([], dtype=int),
        group_weights=np.ones((1, 4)),
        world_to_local=(
            np.tile(np.diag([1.0, 1, 1, 1]), (frames, 1, 1))
            + np.pad(np.array([[0, 0, -1.0]]).T, ((0, 1), (3, 0)))[None]
        )[:, None],
        pin_world=np.zeros((frames + 1, 0, 3)),
        ext_world=np.zeros((frames + 1, 0, 3)),
        group_charge=np.full((frames, s, 1), group_charge),
        ext_charge=np.zeros((frames, s, 0)),
        field=np.zeros((frames, s, 3)),
    )


def test_run_writes_every_frame_in_object_space(lib_path, tmp_path):
    j = job(lib_path, tmp_path / "a.pc2")
    assert run(j) == 7 and j.error == ""
    assert j.coulomb_method == CoulombMethod.DIRECT  # AUTO (the default) on 4 vertices, read back
    _, _, samples = read_pc2(tmp_path / "a.pc2")
    assert samples.shape == (7, 4, 3)
    assert np.allclose(samples[0], j.rest_local)
    # like charges: the tetrahedron grows around its (local) centroid, which stays put
    spread = [np.linalg.norm(s - s.mean(0), axis=1).mean() for s in samples]
    assert spread[-1] > spread[0]
    assert np.allclose(samples[-1].mean(0), j.rest_local.mean(0), atol=1e-5)


def test_cancel_keeps_the_frames_done(lib_path, tmp_path):
    j = job(lib_path, tmp_path / "c.pc2")
    run(j, on_frame=lambda jb: jb.cancel.set() if jb.frames_done == 3 else None)
    assert j.frames_done == 3 and "cancelled at frame 4" in j.error
    assert read_pc2(tmp_path / "c.pc2")[2].shape[0] == 3


def test_divergence_names_the_frame_and_keeps_a_valid_cache(lib_path, tmp_path):
    p = SimParams(gravity=(0, 0, 0), integrator=Integrator.VERLET, time_step=0.5)
    j = job(lib_path, tmp_path / "d.pc2", frames=200, params=p, group_charge=1e-5)
    run(j)
    assert "diverged at frame" in j.error and "substeps" in j.error
    samples = read_pc2(tmp_path / "d.pc2")[2]
    assert samples.shape[0] == j.frames_done < 201
    assert np.isfinite(samples).all()


def test_step_frame_by_frame_equals_the_bake(lib_path, tmp_path):
    """What the live preview does (Setup.create_simulation(), then step_frame per frame) gives the bake's
    samples exactly; the bake reports its time split."""
    from sim.bake_job import step_frame, to_local

    j = job(lib_path, tmp_path / "b.pc2")
    j.group_charge[:, :, 0] = np.linspace(0.5e-7, 2e-7, j.frames)[:, None]  # changes per frame
    run(j)
    assert j.timings["simulate"] > 0 and j.timings["write"] > 0
    samples = read_pc2(tmp_path / "b.pc2")[2]
    with j.create_simulation() as sim:
        for f in range(j.frames):
            step_frame(sim, j, j.frame_inputs(f))
            assert np.array_equal(to_local(sim.positions, j.world_to_local[f, 0]).astype(np.float32), samples[f + 1])
    assert to_local(np.array([[1e39, 0, 0]]), np.eye(4)) is None


def test_a_bake_whose_charges_ask_for_more_steps_than_it_takes_is_told_so(lib_path, tmp_path):
    """The tetrahedron at 10 µC per vertex and fixed 3 substeps of 1/72 s. Vertex 0 sees its
    three neighbours 0.1 m off: the charge bound's stiffness is K = 2 k_c q (2.5 · 3 q / r³) on
    10 g, and each substep asks for ⌈h √(K/m)⌉ steps: 3 × 17 = 51 per frame from the first. The
    warning says so, and a charge past what 1,000 steps per frame resolve is told to be lowered."""
    k_c, q, m, h = SimParams().coulomb_constant, 1e-5, 0.01, 1 / 72
    per_substep = int(np.ceil(h * np.sqrt(2 * k_c * q * (2.5 * 3 * q / 0.1**3) / m)))
    assert per_substep == 17
    j = job(lib_path, tmp_path / "q.pc2", frames=1, group_charge=q)
    assert run(j) == 2 and j.steps == [3]
    text = charge_warning(j)
    assert text.startswith(f"from frame 2 the charges of part 1 ask for up to {3 * per_substep} steps"), text
    assert text.endswith(f"Turn on Adaptive Substeps or raise Substeps to {3 * per_substep}"), text
    calm = job(lib_path, tmp_path / "calm.pc2", frames=1)
    assert run(calm) == 2 and calm.charge_shortfall is None and charge_warning(calm) == ""
    strong = job(lib_path, tmp_path / "strong.pc2", frames=1, group_charge=30 * q)
    run(strong)
    assert strong.charge_shortfall[0] > 1000, strong.charge_shortfall
    lower = "Lower the charges or raise the Mass: more than 1000 steps per frame cannot be set"
    assert charge_warning(strong).endswith(lower), charge_warning(strong)


def test_a_charge_that_rises_within_a_frame_is_asked_at_every_substep(lib_path, tmp_path):
    """Fixed steps: the tetrahedron at 0.1 µC for two substeps and 10 µC at the third. The first
    two ask for one step each, the third for 17: the frame asked for 3 × 17 = 51 (before, only
    the first substep was asked, and the bake said nothing)."""
    j = job(lib_path, tmp_path / "rise.pc2", frames=1)
    j.group_charge[0, 2] = 1e-5
    run(j)
    assert j.charge_shortfall == (51, 2, (0,)), j.charge_shortfall


def test_the_advice_follows_max_substeps_as_the_bake_reads_it(lib_path, tmp_path):
    """Adaptive Substeps at 3 substeps: Max Substeps 10 gives each substep 3 steps (9 a frame),
    Max Substeps 5 one (3 a frame, as fixed steps, but Adaptive Substeps is on). Both are told
    what Max Substeps gives and to raise it to whole substeps' worth of what the charges asked
    (never to turn on Adaptive Substeps, which is on)."""
    for most, each in ((10, "9 (3 substeps × 3)"), (5, "3 (3 substeps × 1)")):
        allows = f"Max Substeps {most} allows {each}"
        j = job(lib_path, tmp_path / f"most{most}.pc2", frames=1, group_charge=1e-5)
        j.max_steps_per_frame = most
        run(j)
        asked, first, parts = j.charge_shortfall
        assert first == 2 and asked % 3 == 0 and asked > 9 and parts == (0,), j.charge_shortfall
        text = charge_warning(j)
        assert f"and {allows}:" in text and text.endswith(f"Raise Max Substeps to {asked}"), text
        assert "Turn on" not in text, text


def test_run_never_overwrites_an_existing_file(lib_path, tmp_path):
    (tmp_path / "e.pc2").write_bytes(b"someone else's")
    j = job(lib_path, tmp_path / "e.pc2")
    assert run(j) == 0
    assert "cannot write the cache" in j.error and "exists" in j.error
    assert (tmp_path / "e.pc2").read_bytes() == b"someone else's"


def test_a_cache_that_cannot_be_written_is_an_error_not_an_exception(lib_path, tmp_path):
    (tmp_path / "file").write_bytes(b"")
    for path in (tmp_path, tmp_path / "file" / "x.pc2", tmp_path / "missing" / "x.pc2"):
        j = job(lib_path, path)
        assert run(j) == 0 and j.error.startswith(f"cannot write the cache {path}: "), j.error


def two_objects(lib_path, tmp_path, apart=0.5, frames=6):
    """Two charged tetrahedra `apart` m from each other along x, joined into one bake."""
    from sim.bake_job import combine

    one = job(lib_path, tmp_path / "one.pc2", frames=frames)
    other = job(lib_path, tmp_path / "other.pc2", frames=frames)
    other.x0 = other.x0 + [apart, 0, 0]
    st = combine([one, other], one.params)
    return BakeJob(
        **vars(st),
        cache_paths=[str(tmp_path / "one.pc2"), str(tmp_path / "other.pc2")],
        start_frame=1,
        world_to_local=np.concatenate([one.world_to_local, other.world_to_local - np.pad(
            np.array([[apart, 0, 0]]).T, ((0, 1), (3, 0)))[None, None]], axis=1),
        pin_world=np.zeros((frames + 1, 0, 3)),
        ext_world=np.zeros((frames + 1, 0, 3)),
        group_charge=np.concatenate([one.group_charge, other.group_charge], axis=2),
        ext_charge=np.zeros((frames, 3, 0)),
        field=np.zeros((frames, 3, 3)),
    )


def test_the_charge_warning_names_the_objects_whose_charges_asked(lib_path, tmp_path):
    """Two tetrahedra baked together at fixed steps, "Other" at 10 µC per vertex and "One" at
    0.1 µC: the warning names Other (17 steps a substep) and not One (1), with fixed or adaptive
    steps capped by Max Substeps."""
    for most in (0, 6):
        (tmp_path / f"most{most}").mkdir()
        j = two_objects(lib_path, tmp_path / f"most{most}", frames=1)
        j.part_names = ["One", "Other"]
        j.group_charge[:, :, 1] = 1e-5
        j.max_steps_per_frame = most
        run(j)
        assert j.charge_shortfall == (51, 2, (1,)), j.charge_shortfall
        assert charge_warning(j).startswith("from frame 2 the charges of Other ask for up to 51"), charge_warning(j)


def test_objects_baked_together_push_each_other_and_keep_their_own_caches(lib_path, tmp_path):
    j = two_objects(lib_path, tmp_path)
    assert j.parts == [(0, 4), (4, 8)] and j.group_weights.shape == (2, 8)
    assert run(j) == 7 and j.error == ""
    _, _, one = read_pc2(tmp_path / "one.pc2")
    _, _, other = read_pc2(tmp_path / "other.pc2")
    assert one.shape == other.shape == (7, 4, 3)
    assert np.allclose(one[0], other[0]) and np.allclose(one[0], j.rest_local[:4])  # each in its own space
    # like charges: the two move apart along x, each in its own object space
    assert one[-1].mean(0)[0] < one[0].mean(0)[0] - 1e-4
    assert other[-1].mean(0)[0] > other[0].mean(0)[0] + 1e-4
    alone = job(lib_path, tmp_path / "alone.pc2")
    run(alone)
    assert np.allclose(read_pc2(tmp_path / "alone.pc2")[2][-1].mean(0), alone.rest_local.mean(0), atol=1e-5)


def test_a_joint_bake_that_cannot_write_one_cache_removes_the_others(lib_path, tmp_path):
    (tmp_path / "other.pc2").write_bytes(b"someone else's")
    j = two_objects(lib_path, tmp_path)
    assert run(j) == 0 and "other.pc2" in j.error
    assert not (tmp_path / "one.pc2").exists()
    assert (tmp_path / "other.pc2").read_bytes() == b"someone else's"


def test_every_bake_ends_with_one_outcome(lib_path, tmp_path):
    """`BakeJob.outcome` says how a bake ended: DONE with no error text, CANCELLED, DIVERGED,
    WRITE_FAILED, each with `error` saying it in words."""
    from sim.bake_job import Outcome

    done = job(lib_path, tmp_path / "done.pc2")
    run(done)
    assert done.outcome is Outcome.DONE and done.error == ""
    cancelled = job(lib_path, tmp_path / "cancelled.pc2")
    cancelled.cancel.set()
    run(cancelled)
    assert cancelled.outcome is Outcome.CANCELLED and cancelled.error.startswith("cancelled")
    p = SimParams(gravity=(0, 0, 0), integrator=Integrator.VERLET, time_step=0.5)
    diverged = job(lib_path, tmp_path / "diverged.pc2", frames=200, params=p, group_charge=1e-5)
    run(diverged)
    assert diverged.outcome is Outcome.DIVERGED and "diverged at frame" in diverged.error
    (tmp_path / "taken.pc2").write_bytes(b"someone else's")
    refused = job(lib_path, tmp_path / "taken.pc2")
    run(refused)
    assert refused.outcome is Outcome.WRITE_FAILED and "cannot write the cache" in refused.error


def passing_triangles(lib_path, path, adaptive):
    """Two 10 cm triangles 1 m apart carrying ±3 µC, free of gravity: they fall together and
    through each other (no self-collision). At fixed steps of 1/24 s a pair closes within its
    charge radius (2.5 cm) in one step and the explicit Coulomb kick there makes energy: the
    triangles fly apart with 2.2 J of kinetic energy from a scene that held 0.41 J. Adaptive
    Substeps shorten the steps while the charges are close, and the pair stays bound."""
    tri = np.array([[0, 0, 0], [0.1, 0, 0], [0, 0.1, 0]], dtype=float)
    x = np.vstack([tri - [0.5, 0, 0], tri + [0.5, 0.013, 0.007]])
    frames = 48
    return BakeJob(
        library=lib_path,
        cache_paths=[str(path)],
        start_frame=1,
        rest_local=x,
        x0=x,
        masses=np.full(6, 0.01),
        springs=np.array([[0, 1], [1, 2], [0, 2], [3, 4], [4, 5], [3, 5]]),
        stiffness=np.full(6, 100.0),
        params=SimParams(gravity=(0, 0, 0), time_step=1 / 24, coulomb=CoulombMethod.DIRECT),
        pins=np.array([], dtype=int),
        group_weights=np.repeat(np.eye(2), 3, axis=1),
        world_to_local=np.tile(np.eye(4), (frames, 1, 1, 1)),
        pin_world=np.zeros((frames + 1, 0, 3)),
        ext_world=np.zeros((frames + 1, 0, 3)),
        group_charge=np.tile([1e-6, -1e-6], (frames, 1, 1)),
        ext_charge=np.zeros((frames, 1, 0)),
        field=np.zeros((frames, 1, 3)),
        max_steps_per_frame=64 if adaptive else 0,
    )


def test_a_bake_that_makes_energy_from_nothing_is_reported_with_its_frames(lib_path, tmp_path):
    from sim.bake_job import Outcome

    j = passing_triangles(lib_path, tmp_path / "fixed.pc2", adaptive=False)
    assert run(j) == 49
    assert j.outcome is Outcome.GAINED_ENERGY, (j.outcome, j.error)
    assert "gained" in j.error and "from nothing" in j.error and "Adaptive Substeps" in j.error, j.error
    assert read_pc2(tmp_path / "fixed.pc2")[2].shape[0] == 49
    # the same scene with the steps the charges ask for keeps its energy in bounds: a success
    j = passing_triangles(lib_path, tmp_path / "adaptive.pc2", adaptive=True)
    assert run(j) == 49 and j.outcome is Outcome.DONE, j.error


def test_what_drives_a_scene_is_named_and_an_undriven_one_has_nothing(lib_path, tmp_path):
    from sim.bake_job import drives, energy_gain, gained_text

    j = passing_triangles(lib_path, tmp_path / "a.pc2", adaptive=False)
    assert drives(j) == ""
    j.field[3, 0] = [0, 0, 1.0]
    assert drives(j) == "a uniform field"
    j = passing_triangles(lib_path, tmp_path / "a.pc2", adaptive=False)
    j.group_charge[10, 0, 0] = 2e-6
    assert drives(j) == "charges that change"
    j.group_charge, j.group_weights = np.zeros((48, 1, 0)), np.zeros((0, 6))  # no charge groups
    assert drives(j) == ""
    # a gain is one past half the motion's energy, and only a gain
    start = {"kinetic": 0.0, "spring": 0.1, "coulomb": -0.3, "external": 5.0, "total": 4.8}
    assert energy_gain(start, {**start, "kinetic": 0.5, "total": 5.0}, 0.0) is None
    assert energy_gain(start, {**start, "kinetic": 0.5, "total": 5.3}, 0.0) == pytest.approx(0.5)
    assert energy_gain(start, {**start, "kinetic": 2.0, "total": 3.0}, 0.0) is None
    # what gravity released is motion too: a stiff cloth dropped on a sphere (issue 30) released
    # 4.27 J and ended 0.27 J up (the contacts' gain at the impact); past half of it is reported
    drop = {"kinetic": 0.0, "spring": 0.0, "coulomb": 0.0, "external": 6.3765, "total": 6.3765}
    held = {"kinetic": 0.0003, "spring": 4.5423, "coulomb": 0.0, "external": 2.1068, "total": 6.6493}
    assert energy_gain(drop, held, 0.0) is None
    assert energy_gain(drop, {**held, "spring": 6.8, "total": 8.9071}, 0.0) == pytest.approx(2.5306)
    # the words name the cause: the charges where the scene has Coulomb energy, else the contacts
    assert "how close the charges come" in gained_text(0.5, 48, start, {**start, "total": 5.3}, False)
    uncharged = gained_text(0.08, 48, drop, {**held, "spring": 6.8, "total": 8.9071}, False)
    assert "carries no charge" in uncharged and "how close the charges" not in uncharged, uncharged
    # the remedy is one the artist can still take: with Adaptive Substeps on, not to turn it on
    assert uncharged.endswith("Turn on Adaptive Substeps or raise Substeps"), uncharged
    adaptive = gained_text(0.08, 48, drop, {**held, "spring": 6.8, "total": 8.9071}, True)
    assert adaptive.endswith("Raise Substeps (the least steps per frame)"), adaptive
    # a scene at rest: rounding is no gain
    rest = {"kinetic": 0.0, "spring": 0.0, "coulomb": 0.0, "external": 0.0, "total": 0.0}
    assert energy_gain(rest, {**rest, "kinetic": 5e-27, "total": 6e-27}, 1e-9) is None
