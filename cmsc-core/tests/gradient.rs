//! Gradients of a rollout (paper §3.2, Eqs. (13)–(17)) against central finite differences, and
//! the paper's parameter-estimation experiments (§4.2.2–4.2.3, Figs. 6, 10).

mod common;

use cmsc_core::{
    fit, shapes, springs_from_triangles, Acceleration, ChargeGroups, Error, FieldMethod, FitOptions,
    Integrator, SimParams, System, Vec3,
};

/// A 12 × 4 torus (48 vertices) with structural and bending springs, two overlapping charge
/// groups, one pinned vertex, an external charge, a uniform field, gravity and damping: every
/// term the reverse pass differentiates.
fn scene(h: f64, iterations: u32, coulomb: FieldMethod) -> (System, ChargeGroups) {
    scene_damped(h, Solve::Plain(iterations), coulomb, 0.0)
}

/// How the scene's steps solve their implicit equation.
#[derive(Clone, Copy, Debug)]
enum Solve {
    /// `K` plain iterations (the adjoint replays them).
    Plain(u32),
    /// Anderson-accelerated iterations to a relative update of 1e-12 (the adjoint
    /// differentiates the converged step).
    Converged,
}

/// [`scene`] with relative damping at `rate` (1/s).
fn scene_damped(h: f64, solve: Solve, coulomb: FieldMethod, rate: f64) -> (System, ChargeGroups) {
    let mesh = shapes::torus(12, 4, 1.0, 0.3);
    let n = mesh.positions.len();
    let springs = springs_from_triangles(n, &mesh.triangles).unwrap();
    let (ends, k) = springs.with_stiffness(8.0, 1.5);
    let (iterations, acceleration, iteration_tolerance) = match solve {
        Solve::Plain(k) => (k, Acceleration::Plain, 0.0),
        Solve::Converged => (200, Acceleration::Anderson, 1e-12),
    };
    let params = SimParams {
        time_step: h,
        iterations,
        acceleration,
        iteration_tolerance,
        damping: 0.02,
        relative_damping: rate,
        gravity: Vec3::new(0.0, 0.0, -2.0),
        coulomb,
        ..SimParams::default()
    };
    let mut sys = System::new(&mesh.positions, &vec![0.02; n], &ends, &k, params).unwrap();
    sys.set_pins(&[0]).unwrap();
    sys.set_external_charges(&[Vec3::new(0.0, 0.0, 1.2)], &[-4e-6]).unwrap();
    sys.set_uniform_field(Vec3::new(3e3, 0.0, 1e3)).unwrap();
    let mut w = vec![0.0; 2 * n];
    for (i, p) in mesh.positions.iter().enumerate() {
        w[i] = 0.5 * (1.0 + p.x); // group 0 grows towards +x
        w[n + i] = if p.z > 0.0 { 1.0 } else { 0.25 }; // group 1: the upper half, weighted
    }
    (sys, ChargeGroups::new(&w, 2, n).unwrap())
}

fn target_for(sys: &System) -> Vec<Vec3> {
    // a shape near the start, so the loss and its gradient are not dominated by one vertex
    sys.positions().iter().map(|p| p * 1.05 + Vec3::new(0.02, -0.01, 0.03)).collect()
}

fn loss(sys: &mut System, steps: u32, groups: &ChargeGroups, q: &[f64], target: &[Vec3]) -> f64 {
    sys.rollout_gradient(steps, groups, q, target).unwrap().loss
}

/// `max |analytic − fd| / max |fd|` over the charge gradient, and the same for the stiffness scale.
fn gradient_errors(h: f64, solve: Solve, steps: u32, q: [f64; 2], rate: f64) -> (f64, f64) {
    let (mut sys, groups) = scene_damped(h, solve, FieldMethod::Direct, rate);
    let target = target_for(&sys);
    let before = sys.positions().to_vec();
    let g = sys.rollout_gradient(steps, &groups, &q, &target).unwrap();
    assert_eq!(sys.positions(), &before[..], "the rollout must restore the state");
    assert_eq!(sys.step_count(), 0);
    let mut fd_q = [0.0; 2];
    for gi in 0..2 {
        let dq = 1e-4 * q[gi].abs();
        let (mut qp, mut qm) = (q, q);
        qp[gi] += dq;
        qm[gi] -= dq;
        fd_q[gi] = (loss(&mut sys, steps, &groups, &qp, &target)
            - loss(&mut sys, steps, &groups, &qm, &target))
            / (2.0 * dq);
    }
    let scale = fd_q.iter().fold(0.0, |m: f64, v| m.max(v.abs()));
    let worst_q = g.grad_charges.iter().zip(&fd_q).map(|(a, f)| (a - f).abs() / scale).fold(0.0, f64::max);
    let k0 = sys.springs().stiffness().to_vec();
    let ds = 1e-5;
    let mut at = |s: f64| {
        sys.set_stiffness(&k0.iter().map(|k| k * s).collect::<Vec<_>>()).unwrap();
        loss(&mut sys, steps, &groups, &q, &target)
    };
    let fd_s = (at(1.0 + ds) - at(1.0 - ds)) / (2.0 * ds);
    let err_s = (g.grad_stiffness_scale - fd_s).abs() / fd_s.abs();
    println!(
        "h = {h}, {solve:?}, T = {steps}, Q = {q:?}: dL/dQ = {:?} (fd {fd_q:?}), dL/dσ = {:.6e} (fd {fd_s:.6e}); \
         rel. errors {worst_q:.2e}, {err_s:.2e}",
        g.grad_charges, g.grad_stiffness_scale
    );
    (worst_q, err_s)
}

#[test]
fn gradients_match_central_differences() {
    for (h, iterations, steps, q) in [
        (0.01, 10, 20, [2e-6, 3e-6]),
        (0.05, 3, 15, [-1e-6, 4e-6]),
        (0.2, 20, 10, [5e-6, 1e-6]),
        (0.03, 1, 25, [3e-6, -2e-6]),
    ] {
        let (eq, es) = gradient_errors(h, Solve::Plain(iterations), steps, q, 0.0);
        assert!(eq <= 1e-4, "charge gradient off by {eq:.2e} at h = {h}, K = {iterations}");
        assert!(es <= 1e-4, "stiffness gradient off by {es:.2e} at h = {h}, K = {iterations}");
    }
}

/// The relative damping (the add-on's default settling) is differentiated exactly too.
#[test]
fn gradients_with_relative_damping_match_central_differences() {
    for (h, iterations, steps, q) in [(0.01, 10, 20, [2e-6, 3e-6]), (0.2, 20, 10, [5e-6, 1e-6])] {
        let (eq, es) = gradient_errors(h, Solve::Plain(iterations), steps, q, 1.5);
        assert!(eq <= 1e-4, "charge gradient off by {eq:.2e} at h = {h}, K = {iterations}");
        assert!(es <= 1e-4, "stiffness gradient off by {es:.2e} at h = {h}, K = {iterations}");
    }
}

/// Accelerated steps are differentiated as converged implicit steps (implicit function
/// theorem, `cmsc_core::gradient`'s module docs): where the iterations do converge, that is the
/// derivative of the steps the rollout ran, with and without relative damping.
#[test]
fn gradients_of_converged_accelerated_steps_match_central_differences() {
    for (h, steps, q, rate) in
        [(0.01, 20, [2e-6, 3e-6], 0.0), (0.2, 10, [5e-6, 1e-6], 0.0), (0.05, 15, [-1e-6, 4e-6], 1.5)]
    {
        let (eq, es) = gradient_errors(h, Solve::Converged, steps, q, rate);
        assert!(eq <= 1e-4, "charge gradient off by {eq:.2e} at h = {h}, damping rate {rate}");
        assert!(es <= 1e-4, "stiffness gradient off by {es:.2e} at h = {h}, damping rate {rate}");
    }
}

/// DDEF forward passes use the exact Coulomb derivative (module docs of `cmsc_core::gradient`):
/// the gradient then differs from the exact-forward one by about the DDEF force error.
#[test]
fn ddef_forward_gradient_is_close_to_exact() {
    let mesh = shapes::torus(40, 10, 1.0, 0.3);
    let n = mesh.positions.len();
    let springs = springs_from_triangles(n, &mesh.triangles).unwrap();
    let (ends, k) = springs.with_stiffness(10.0, 0.0);
    let groups = ChargeGroups::new(
        &mesh.positions.iter().map(|p| if p.x > 0.0 { 1.0 } else { 0.5 }).collect::<Vec<_>>(),
        1,
        n,
    )
    .unwrap();
    let target: Vec<Vec3> = mesh.positions.iter().map(|p| p * 1.1).collect();
    let system = |coulomb, far_field_interval| {
        let params = SimParams {
            time_step: 0.05,
            gravity: Vec3::zeros(),
            coulomb,
            grid_points: 300,
            far_field_interval,
            ..SimParams::default()
        };
        System::new(&mesh.positions, &vec![0.01; n], &ends, &k, params).unwrap()
    };
    let grad = |coulomb| system(coulomb, 1).rollout_gradient(10, &groups, &[2e-6], &target).unwrap();
    let (exact, ddef) = (grad(FieldMethod::Direct), grad(FieldMethod::Ddef));
    // the rollout evaluates the whole field every step whatever the far-field interval, and
    // leaves the interval as it was
    let mut held = system(FieldMethod::Ddef, 4);
    let g = held.rollout_gradient(10, &groups, &[2e-6], &target).unwrap();
    assert_eq!((g.loss, &g.grad_charges), (ddef.loss, &ddef.grad_charges));
    assert_eq!(held.params().far_field_interval, 4);
    let rel = |a: f64, b: f64| (a - b).abs() / b.abs();
    let (eg, el) = (rel(ddef.grad_charges[0], exact.grad_charges[0]), rel(ddef.loss, exact.loss));
    println!(
        "n = {n}, m = 300: dL/dQ DDEF {:.6e} vs exact {:.6e} (rel. {eg:.2e}); loss rel. {el:.2e}",
        ddef.grad_charges[0], exact.grad_charges[0]
    );
    assert!(eg < 0.03 && el < 0.03, "DDEF gradient {eg:.3e}, loss {el:.3e}");
    assert!(eg > 0.0, "the DDEF forward pass must actually differ from the exact one");
}

/// The rollout refuses what it cannot differentiate, names why, and leaves the system as it was.
#[test]
fn rollout_refuses_verlet_contacts_and_bad_arrays() {
    let (mut sys, groups) = scene(0.05, 5, FieldMethod::Direct);
    let target = target_for(&sys);
    let x0 = sys.positions().to_vec();
    let q0 = sys.charges().to_vec();
    let reason = |e: Error| e.to_string();
    assert!(reason(sys.rollout_gradient(5, &groups, &[1e-6], &target).unwrap_err()).contains("group_charges"));
    assert!(reason(sys.rollout_gradient(5, &groups, &[1e-6, f64::NAN], &target).unwrap_err()).contains("NaN"));
    assert!(
        reason(sys.rollout_gradient(5, &groups, &[1e-6, 1e-6], &target[1..]).unwrap_err()).contains("target")
    );
    let wrong_n = ChargeGroups::new(&[1.0; 10], 2, 5).unwrap();
    assert!(
        reason(sys.rollout_gradient(5, &wrong_n, &[1e-6, 1e-6], &target).unwrap_err()).contains("5 weights")
    );
    assert!(ChargeGroups::new(&[1.0; 10], 3, 5).is_err());
    assert!(ChargeGroups::new(&[f64::INFINITY; 5], 1, 5).is_err());
    // a ground plane the torus falls onto within the rollout
    let mut p = sys.params().clone();
    p.ground_height = Some(x0.iter().map(|x| x.z).fold(f64::INFINITY, f64::min) - 0.01);
    sys.set_params(p.clone()).unwrap();
    let e = reason(sys.rollout_gradient(40, &groups, &[1e-6, 1e-6], &target).unwrap_err());
    assert!(e.contains("collider") && e.contains("contacts are not supported"), "{e}");
    p.ground_height = None;
    p.integrator = Integrator::Verlet;
    sys.set_params(p).unwrap();
    assert!(reason(sys.rollout_gradient(5, &groups, &[1e-6, 1e-6], &target).unwrap_err()).contains("IMEX"));
    assert_eq!(sys.positions(), &x0[..]);
    assert_eq!(sys.charges(), &q0[..]);
    assert_eq!(sys.step_count(), 0);
}

/// A divergent rollout reports the step and restores the state and the charges.
#[test]
fn diverging_rollout_restores_the_system() {
    let (mut sys, groups) = scene(0.05, 5, FieldMethod::Direct);
    sys.set_charges(&vec![1e-7; sys.n_vertices()]).unwrap();
    let (x0, q0) = (sys.positions().to_vec(), sys.charges().to_vec());
    let target = target_for(&sys);
    // 1e160 C per group: k_c q² overflows f64, the first step's forces are infinite
    let e = sys.rollout_gradient(50, &groups, &[1e160, 1e160], &target).unwrap_err();
    assert!(matches!(e, Error::Diverged { .. }), "{e}");
    assert_eq!(sys.positions(), &x0[..]);
    assert_eq!(sys.charges(), &q0[..]);
    assert_eq!(sys.time(), 0.0);
}

/// A target made by the same simulation with known charges: the fit must find them.
#[test]
fn fit_recovers_charges_that_made_the_target() {
    let (mut sys, groups) = scene(0.05, 10, FieldMethod::Direct);
    let truth = [3e-6, 5e-6];
    let target = sys.rollout_gradient(30, &groups, &truth, &target_for(&sys)).unwrap().final_positions;
    let report = fit(&mut sys, 30, &groups, &[1e-6, 1e-6], &target, &FitOptions::default()).unwrap();
    println!("fit: {report:?}");
    for (q, t) in report.charges.iter().zip(truth) {
        assert!((q - t).abs() < 1e-4 * t, "fitted {:?}, truth {truth:?}", report.charges);
    }
    assert!(report.loss < 1e-10 * report.initial_loss);
    // bounds hold: with the second group capped below its true value it ends on the bound
    let options = FitOptions { charge_bounds: Some(vec![(0.0, 1e-5), (0.0, 4e-6)]), ..FitOptions::default() };
    let bounded = fit(&mut sys, 30, &groups, &[1e-6, 1e-6], &target, &options).unwrap();
    assert!((bounded.charges[1] - 4e-6).abs() < 1e-12, "{:?}", bounded.charges);
    assert!(bounded.loss > report.loss);
}

/// Paper §4.2.2, Fig. 10: estimate the spring constant of a cloth hanging under gravity from
/// the true 50 N/m, starting at 20 N/m.
#[test]
fn fig10_spring_constant_from_20_to_50() {
    let mesh = shapes::grid(10, 10, 0.1);
    let n = mesh.positions.len();
    let springs = springs_from_triangles(n, &mesh.triangles).unwrap();
    let (ends, _) = springs.with_stiffness(1.0, 0.0);
    let make = |k: f64| {
        let params = SimParams { time_step: 1.0 / 30.0, iterations: 10, ..SimParams::default() };
        let mut sys =
            System::new(&mesh.positions, &vec![0.005; n], &ends, &vec![k; ends.len()], params).unwrap();
        sys.set_pins(&[0, 9]).unwrap(); // two corners of one edge
        sys
    };
    let groups = ChargeGroups::new(&vec![1.0; n], 1, n).unwrap();
    let steps = 45; // 1.5 s
    let target =
        make(50.0).rollout_gradient(steps, &groups, &[0.0], &mesh.positions).unwrap().final_positions;
    let mut sys = make(20.0);
    let options = FitOptions { fit_charges: false, fit_stiffness: true, ..FitOptions::default() };
    let report = fit(&mut sys, steps, &groups, &[0.0], &target, &options).unwrap();
    let k = 20.0 * report.stiffness_scale;
    println!(
        "Fig. 10: k from 20 N/m to {k:.6} N/m (truth 50) in {} iterations, {} rollouts; loss {:.3e} -> {:.3e}",
        report.history.len(),
        report.evaluations,
        report.initial_loss,
        report.loss
    );
    assert!((k - 50.0).abs() < 1e-3, "recovered {k} N/m");
    assert_eq!(sys.springs().stiffness()[0], 20.0, "the fit leaves the system's stiffness as it was");
}

/// Paper §4.2.3, Figs. 6 and 14: estimate the charge of a charged mesh whose target shape was
/// made by a small-step velocity Verlet run (the paper's reference), with IMEX at a small and a
/// large step. The paper's differentiable Verlet (JAX MD) fails at the large step; here the
/// Verlet forward pass itself leaves the scene at that step, so there is nothing to
/// differentiate.
#[test]
fn charge_estimation_against_verlet_target_at_small_and_large_steps() {
    let truth = 2e-6;
    let duration = 1.8;
    let make = |h: f64, integrator| {
        let mut sys = common::paper_torus(0.2, h, integrator);
        let mut p = sys.params().clone();
        p.iterations = 20;
        sys.set_params(p).unwrap();
        sys
    };
    let n = make(0.01, Integrator::Verlet).n_vertices();
    let groups = ChargeGroups::new(&vec![1.0; n], 1, n).unwrap();
    let mut reference = make(0.0009, Integrator::Verlet);
    reference.set_charges(&vec![truth; n]).unwrap();
    reference.step_n((duration / 0.0009_f64).round() as u32).unwrap();
    let target = reference.positions().to_vec();
    let size = |x: &[Vec3]| x.iter().map(|p| p.norm()).fold(0.0, f64::max);
    println!("Verlet reference (h = 0.0009 s, {duration} s): extent {:.4} m (rest 1.3 m)", size(&target));
    for (h, tolerance) in [(0.009, 0.12), (0.18, 0.35)] {
        let mut sys = make(h, Integrator::Imex);
        let steps = (duration / h).round() as u32;
        // a uniform charge's sign is unobservable (forces go as q²): fit its magnitude
        let options = FitOptions { charge_bounds: Some(vec![(0.0, 1e-4)]), ..FitOptions::default() };
        let report = fit(&mut sys, steps, &groups, &[0.7e-6], &target, &options).unwrap();
        let q = report.charges[0];
        println!(
            "IMEX h = {h}: q = {:.4} µC (truth 2, start 0.7), loss {:.3e} -> {:.3e}, {} iterations, {} rollouts",
            q * 1e6,
            report.initial_loss,
            report.loss,
            report.history.len(),
            report.evaluations
        );
        assert!((q - truth).abs() < tolerance * truth, "h = {h}: fitted {q}");
        assert!(report.loss < report.initial_loss / 15.0, "h = {h}: the fit did not converge");
    }
    let mut verlet = make(0.18, Integrator::Verlet);
    verlet.set_charges(&vec![truth; n]).unwrap();
    let blown = (0..10).any(|_| verlet.step().is_err() || size(verlet.positions()) > 20.0);
    println!(
        "Verlet h = 0.18: forward pass {}",
        if blown { "left a 20 m box or diverged" } else { "stayed bounded" }
    );
    assert!(blown, "velocity Verlet was expected to be unstable at h = 0.18 s on this mesh");
}
