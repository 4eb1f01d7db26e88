//! The springs' strain-rate damping (`cmsc_core::springs`' module docs): the damped step is the
//! exact implicit step with the damping force (Newton's method on the same equation, for the
//! implicit Euler step and the implicit midpoint), one spring decays as the damped oscillator
//! of the textbook in every integrator, a rigid motion is not damped, and bad input and the
//! gradient are refused, changing nothing.

mod common;

use cmsc_core::{Acceleration, ChargeGroups, Error, FieldMethod, Integrator, Real, SimParams, System, Vec3};
use common::newton::{newton_damped, problem, rest_positions, Problem};

/// The damping time of the convergence checks (s): at the cloth's 10 cm springs of 200 N/m and
/// 10–30 g vertices, `β k / (m/h)` is of order one, so damping is as strong as the springs.
const BETA: Real = 0.02;

fn system(p: &Problem, integrator: Integrator, iterations: u32, beta: Real) -> System {
    let params = SimParams {
        time_step: p.h,
        iterations,
        gravity: p.g,
        coulomb: FieldMethod::Off,
        integrator,
        ..SimParams::default()
    };
    let mut sys = System::new(&rest_positions(), &p.mass, &p.ends, &p.k, params).unwrap();
    sys.set_positions(&p.x0).unwrap();
    sys.set_velocities(&p.v0).unwrap();
    sys.set_pins(&p.pinned).unwrap();
    sys.set_spring_damping(&vec![beta; p.ends.len()]).unwrap();
    sys
}

/// Max distance of `x` from `exact`, relative to the largest displacement of the step.
fn relative_error(p: &Problem, exact: &[Vec3], x: &[Vec3]) -> Real {
    let scale = exact.iter().zip(&p.x0).map(|(a, b)| (a - b).norm()).fold(0.0, Real::max);
    x.iter().zip(exact).map(|(a, b)| (a - b).norm()).fold(0.0, Real::max) / scale
}

#[test]
fn the_damped_implicit_euler_step_converges_to_newtons() {
    let p = problem(0.02);
    let y: Vec<Vec3> = p.x0.iter().zip(&p.v0).map(|(x, v)| x + v * p.h).collect();
    let exact = newton_damped(&p, &y, p.h, p.g, BETA);
    let undamped = newton_damped(&p, &y, p.h, p.g, 0.0);
    let moved = relative_error(&p, &exact, &undamped);
    eprintln!("damping moves Newton's step by {moved:.3e} of the step");
    assert!(moved > 0.05, "the damping should change the step ({moved:e})");
    for acceleration in [Acceleration::Plain, Acceleration::Anderson] {
        let mut previous = Real::INFINITY;
        for iterations in [3, 10, 30, 100, 300, 1000, 3000] {
            let mut sys = system(&p, Integrator::Imex, iterations, BETA);
            sys.set_acceleration(acceleration);
            sys.step().unwrap();
            let err = relative_error(&p, &exact, sys.positions());
            eprintln!("{acceleration:?}: {iterations:>5} iterations: error / step {err:.3e}");
            assert!(err <= previous * 1.0001 || err < 1e-12, "error grew from {previous} to {err}");
            previous = err;
        }
        assert!(previous < 1e-9, "{acceleration:?} did not converge: {previous}");
    }
}

#[test]
fn the_damped_implicit_midpoint_converges_to_newtons() {
    let p = problem(0.004);
    let he = 0.5 * p.h;
    let y: Vec<Vec3> = p.x0.iter().zip(&p.v0).map(|(x, v)| x + (v + p.g * he) * he).collect();
    let z = newton_damped(&p, &y, he, Vec3::zeros(), BETA);
    let exact: Vec<Vec3> = z.iter().zip(&p.x0).map(|(z, x)| z * 2.0 - x).collect();
    let mut sys = system(&p, Integrator::ImexLowDissipation, 300, BETA);
    sys.step().unwrap();
    assert_eq!(sys.last_step_counts().substeps, 1, "the step was halved");
    let err = relative_error(&p, &exact, sys.positions());
    eprintln!("implicit midpoint, 300 iterations: error / step {err:.3e}");
    assert!(err < 1e-9, "{err:e}");
}

/// Two 1 kg masses on a 1 m spring of 100 N/m, stretched by 10 cm and let go: the extension
/// obeys `μ ë = −k e − β k ė` with `μ = 0.5 kg`, `ω₀ = √(k/μ) = 14.1 rad/s` and, at
/// `β = 0.02 s`, `ζ ω₀ = β k / (2μ) = 2 /s` (`ζ = 0.14`).
#[test]
fn one_damped_spring_decays_as_the_damped_oscillator() {
    let (k, mu, beta, stretch) = (100.0, 0.5, 0.02, 0.1);
    let w0: Real = (k / mu as Real).sqrt();
    let decay = beta * k / (2.0 * mu);
    let wd = (w0 * w0 - decay * decay).sqrt();
    let exact = |t: Real| stretch * (-decay * t).exp() * ((wd * t).cos() + decay / wd * (wd * t).sin());
    let rest = [Vec3::zeros(), Vec3::new(1.0, 0.0, 0.0)];
    let run = |integrator, h: Real, beta: Real| {
        let params = SimParams {
            time_step: h,
            iterations: 50,
            gravity: Vec3::zeros(),
            coulomb: FieldMethod::Off,
            integrator,
            ..SimParams::default()
        };
        let mut sys = System::new(&rest, &[1.0, 1.0], &[[0, 1]], &[k], params).unwrap();
        sys.set_positions(&[Vec3::new(-0.05, 0.0, 0.0), Vec3::new(1.05, 0.0, 0.0)]).unwrap();
        sys.set_spring_damping(&[beta]).unwrap();
        let steps = (0.05 / h).round() as u32;
        (1..=10)
            .map(|i| {
                sys.step_n(steps).unwrap();
                let x = sys.positions();
                (i as Real * 0.05, (x[1] - x[0]).norm() - 1.0)
            })
            .collect::<Vec<_>>()
    };
    // (integrator, h, tolerance relative to the stretch): implicit Euler's own damping,
    // `h ω₀² / 2 = 0.01 /s` at h = 0.1 ms, is 0.5 % of the amplitude by 0.5 s
    for (integrator, h, tolerance) in [
        (Integrator::ImexLowDissipation, 1e-3, 2e-3),
        (Integrator::Verlet, 1e-4, 2e-3),
        (Integrator::Imex, 1e-4, 1e-2),
    ] {
        let worst = run(integrator, h, beta)
            .iter()
            .map(|&(t, e)| (e - exact(t)).abs() / stretch)
            .fold(0.0, Real::max);
        eprintln!("{integrator:?} at h = {h} s: largest error {worst:.2e} of the stretch");
        assert!(worst < tolerance, "{integrator:?}: {worst:e}");
    }
    // without damping the midpoint keeps swinging at the full stretch (the decay is the damping's)
    let free = run(Integrator::ImexLowDissipation, 1e-3, 0.0);
    let amplitude = free.iter().map(|&(_, e)| e.abs()).fold(0.0, Real::max);
    assert!(amplitude > 0.9 * stretch && exact(0.5).abs() < 0.4 * stretch, "{amplitude}");
}

/// A free cloth moving and spinning as a rigid body keeps its motion with strong damping (the
/// damping acts on stretching alone), while the same cloth stretched and let go loses most of its
/// vibration; the low-dissipation integrator, so that only the damping takes energy away.
#[test]
fn damping_spares_a_rigid_motion_and_stills_a_stretch() {
    let mesh = cmsc_core::shapes::grid(9, 9, 0.05);
    let n = mesh.positions.len();
    let (ends, k) =
        cmsc_core::springs_from_triangles(n, &mesh.triangles).unwrap().with_stiffness(200.0, 20.0);
    let centre = mesh.positions.iter().sum::<Vec3>() / n as Real;
    let params = SimParams {
        time_step: 1.0 / 120.0,
        gravity: Vec3::zeros(),
        coulomb: FieldMethod::Off,
        integrator: Integrator::ImexLowDissipation,
        ..SimParams::default()
    };
    let kinetic = |sys: &System| sys.energies().kinetic;
    let run = |x0: &[Vec3], v0: &[Vec3], beta: Real| {
        let mut sys = System::new(&mesh.positions, &vec![0.01; n], &ends, &k, params.clone()).unwrap();
        sys.set_positions(x0).unwrap();
        sys.set_velocities(v0).unwrap();
        sys.set_spring_damping(&vec![beta; ends.len()]).unwrap();
        sys.step_n(120).unwrap();
        sys
    };
    // a rigid motion: 0.3 m/s along x and 2 rad/s about z through the centre
    let spin: Vec<Vec3> = mesh
        .positions
        .iter()
        .map(|p| Vec3::new(0.3, 0.0, 0.0) + Vec3::z().cross(&(p - centre)) * 2.0)
        .collect();
    let (free, damped) = (run(&mesh.positions, &spin, 0.0), run(&mesh.positions, &spin, 0.05));
    let (k_free, k_damped) = (kinetic(&free), kinetic(&damped));
    let momentum = |sys: &System| sys.velocities().iter().sum::<Vec3>() * 0.01;
    eprintln!("rigid motion after 1 s: kinetic {k_free:.6e} J free, {k_damped:.6e} J damped");
    assert!((k_damped - k_free).abs() < 1e-3 * k_free, "{k_damped} vs {k_free}");
    let drift = (momentum(&damped) - momentum(&free)).norm();
    eprintln!("linear momentum: {:.6e} free, damped differs by {drift:.2e}", momentum(&free).norm());
    // pair forces keep it; what is left is the solve's rounding (its matrix is stiffer damped)
    assert!(drift < 1e-9 * momentum(&free).norm(), "linear momentum changed");
    // a stretch: 10 % along x, at rest
    let stretched: Vec<Vec3> =
        mesh.positions.iter().map(|p| Vec3::new(centre.x + 1.1 * (p.x - centre.x), p.y, p.z)).collect();
    let still = vec![Vec3::zeros(); n];
    let (free, damped) = (run(&stretched, &still, 0.0), run(&stretched, &still, 0.05));
    let vibration = |sys: &System| {
        let e = sys.energies();
        e.kinetic + e.spring
    };
    let (e_free, e_damped) = (vibration(&free), vibration(&damped));
    eprintln!("stretch after 1 s: {e_free:.4e} J free, {e_damped:.4e} J damped");
    assert!(e_damped < 0.05 * e_free, "{e_damped} vs {e_free}");
}

#[test]
fn bad_damping_is_refused_and_changes_nothing_and_the_gradient_says_it_cannot() {
    let p = problem(0.01);
    let mut sys = system(&p, Integrator::Imex, 10, 0.0);
    let mut same = system(&p, Integrator::Imex, 10, 0.0);
    let s = p.ends.len();
    for (bad, needle) in [
        (vec![0.01; s - 1], "values for"),
        (vec![-0.01; s], "finite value >= 0"),
        (vec![Real::NAN; s], "finite value >= 0"),
    ] {
        match sys.set_spring_damping(&bad) {
            Err(Error::InvalidArgument { name, reason: message, .. }) => {
                assert_eq!(name, "spring_damping");
                assert!(message.contains(needle), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
    sys.step().unwrap();
    same.step().unwrap();
    assert_eq!(sys.positions(), same.positions(), "a refused damping changed the step");

    sys.set_spring_damping(&vec![0.01; s]).unwrap();
    let groups = ChargeGroups::new(&vec![1.0; p.x0.len()], 1, p.x0.len()).unwrap();
    let target = sys.positions().to_vec();
    match sys.rollout_gradient(2, &groups, &[1e-9], &target) {
        Err(Error::InvalidArgument { name, reason: message, .. }) => {
            assert_eq!(name, "spring_damping");
            assert!(message.contains("not implemented"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // zeros turn it off again: the gradient runs
    sys.set_spring_damping(&vec![0.0; s]).unwrap();
    assert!(sys.springs().damping().is_empty());
    sys.rollout_gradient(2, &groups, &[1e-9], &target).unwrap();
}

#[test]
fn a_damping_too_strong_to_factor_is_refused_naming_the_damping() {
    let p = problem(0.01);
    let mut sys = system(&p, Integrator::Imex, 10, 0.0);
    // (h² + h β) k / m beyond 1e12 at 10–30 g and 200 N/m: β = 1e10 s
    match sys.set_spring_damping(&vec![1e10; p.ends.len()]) {
        Err(Error::InvalidArgument { name, reason, .. }) => {
            assert_eq!(name, "stiffness");
            assert!(reason.contains("(h² + h β) k / m") && reason.contains("damping"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(sys.springs().damping().is_empty(), "the refused damping was kept");
    sys.step().unwrap();
}
