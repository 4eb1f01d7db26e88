//! `cmsc_set_spring_damping` through the C ABI: one damped spring decays as the textbook's damped
//! oscillator, bad input is refused by name and changes nothing, and the gradient refuses
//! springs that damp.

mod common;

use std::ptr;

use cmsc::CmscStatus::*;
use cmsc::*;
use common::{create, last_error, params, positions};

/// Two 1 kg masses on a 1 m spring of 100 N/m, stretched by 10 cm, at rest, no gravity or charge,
/// stepped by `integrator`.
fn stretched_spring(integrator: CmscIntegrator) -> *mut CmscSim {
    let mut p = params();
    p.gravity = [0.0; 3];
    p.time_step = 1e-3;
    p.iterations = 50;
    p.integrator = integrator as u32;
    let sim = create(&[0.0, 0.0, 0.0, 1.0, 0.0, 0.0], &[1.0, 1.0], &[0, 1], &[100.0], &p);
    let x = [-0.05, 0.0, 0.0, 1.05, 0.0, 0.0];
    // SAFETY: live handle, 2 positions.
    assert_eq!(unsafe { cmsc_set_positions(sim, x.as_ptr(), 2) }, CMSC_OK, "{}", last_error());
    sim
}

fn extension(sim: *const CmscSim) -> f64 {
    let x = positions(sim, 2);
    ((x[3] - x[0]).powi(2) + (x[4] - x[1]).powi(2) + (x[5] - x[2]).powi(2)).sqrt() - 1.0
}

#[test]
fn a_damped_spring_decays_as_the_damped_oscillator() {
    // μ = 0.5 kg, ω₀ = √(k/μ), decay rate β k / (2μ) = 2 /s at β = 0.02 s
    let (k, mu, beta, stretch, t) = (100.0_f64, 0.5, 0.02, 0.1, 0.5);
    let w0 = (k / mu).sqrt();
    let decay = beta * k / (2.0 * mu);
    let wd = (w0 * w0 - decay * decay).sqrt();
    let exact = stretch * (-decay * t).exp() * ((wd * t).cos() + decay / wd * (wd * t).sin());
    let sim = stretched_spring(CmscIntegrator::CMSC_INTEGRATOR_IMEX_LOW_DISSIPATION);
    // SAFETY: live handle, one value for one spring.
    unsafe {
        assert_eq!(cmsc_set_spring_damping(sim, [beta].as_ptr(), 1), CMSC_OK, "{}", last_error());
        assert_eq!(cmsc_step(sim, 500), CMSC_OK, "{}", last_error());
    }
    let e = extension(sim);
    assert!(
        (e - exact).abs() < 1e-3 * stretch,
        "extension {e} m at 0.5 s, the damped oscillator's {exact} m"
    );
    // n = 0 turns it off: the spring swings on with the energy it has left
    let mut before = CmscEnergies { kinetic: 0.0, spring: 0.0, coulomb: 0.0, external: 0.0, total: 0.0 };
    let mut after = before;
    // SAFETY: live handle; NULL with n = 0; outputs writable.
    unsafe {
        assert_eq!(cmsc_set_spring_damping(sim, ptr::null(), 0), CMSC_OK, "{}", last_error());
        assert_eq!(cmsc_energies(sim, &mut before), CMSC_OK);
        assert_eq!(cmsc_step(sim, 500), CMSC_OK, "{}", last_error());
        assert_eq!(cmsc_energies(sim, &mut after), CMSC_OK);
        cmsc_destroy(sim);
    }
    assert!(
        (after.total - before.total).abs() < 1e-3 * before.total,
        "{} J -> {} J",
        before.total,
        after.total
    );
    let undamped = 0.5 * k * stretch * stretch;
    assert!(before.total < 0.2 * undamped, "the damping should have taken most of the {undamped} J");
}

#[test]
fn bad_damping_is_refused_by_name_and_changes_nothing() {
    let imex = || stretched_spring(CmscIntegrator::CMSC_INTEGRATOR_IMEX);
    let (damped, reference) = (imex(), imex());
    // SAFETY: live handles; each array valid for the n given.
    unsafe {
        assert_eq!(cmsc_set_spring_damping(damped, [0.01].as_ptr(), 1), CMSC_OK);
        assert_eq!(cmsc_set_spring_damping(reference, [0.01].as_ptr(), 1), CMSC_OK);
        for (values, n, needle) in [
            (&[0.01, 0.01][..], 2, "spring_damping"),
            (&[-0.01][..], 1, "spring_damping"),
            (&[f64::INFINITY][..], 1, "spring_damping"),
        ] {
            assert_eq!(cmsc_set_spring_damping(damped, values.as_ptr(), n), CMSC_INVALID_ARGUMENT);
            assert!(last_error().contains(needle), "{}", last_error());
        }
        assert_eq!(cmsc_set_spring_damping(damped, ptr::null(), 1), CMSC_INVALID_ARGUMENT);
        assert!(last_error().contains("seconds"), "{}", last_error());
        assert_eq!(cmsc_set_spring_damping(ptr::null_mut(), [0.01].as_ptr(), 1), CMSC_INVALID_ARGUMENT);
        assert_eq!(cmsc_step(damped, 50), CMSC_OK);
        assert_eq!(cmsc_step(reference, 50), CMSC_OK);
    }
    assert_eq!(positions(damped, 2), positions(reference, 2), "a refused call changed the damping");

    // the gradient refuses springs that damp, naming the setting
    let (w, q, target) = ([1.0; 2], [1e-9], positions(damped, 2));
    let (mut loss, mut grad) = (0.0, [0.0]);
    // SAFETY: live handle; arrays sized 1 × 2, 1, 6; outputs writable.
    let st = unsafe {
        cmsc_rollout_gradient(
            damped,
            3,
            w.as_ptr(),
            1,
            q.as_ptr(),
            target.as_ptr(),
            &mut loss,
            grad.as_mut_ptr(),
            ptr::null_mut(),
        )
    };
    assert_eq!(st, CMSC_INVALID_ARGUMENT);
    assert!(last_error().contains("spring_damping"), "{}", last_error());
    // SAFETY: live handles, destroyed once.
    unsafe {
        cmsc_destroy(damped);
        cmsc_destroy(reference);
    }
}
