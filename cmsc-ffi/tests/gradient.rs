//! cmsc_rollout_gradient and cmsc_fit_charges through the C ABI: the same numbers as the core,
//! bad arguments named, the simulation left as it was.

mod common;

use std::ptr;

use cmsc::CmscStatus::*;
use cmsc::*;
use common::{last_error, params, positions, square};

const N: usize = 4;
/// Two groups on the square: vertices 0–1 and 2–3 (weights 1), vertex 3 also half in group 0.
const WEIGHTS: [f64; 2 * N] = [1.0, 1.0, 0.0, 0.5, 0.0, 0.0, 1.0, 1.0];

fn sim() -> *mut CmscSim {
    let mut p = params();
    p.gravity = [0.0; 3];
    p.time_step = 0.02;
    square(&p)
}

fn target() -> Vec<f64> {
    [0.0, 0.0, 0.0, 0.12, 0.0, 0.0, 0.12, 0.12, 0.0, 0.0, 0.12, 0.0].to_vec()
}

fn rollout(sim: *mut CmscSim, q: [f64; 2], grad_scale: *mut f64) -> (CmscStatus, f64, [f64; 2]) {
    let (mut loss, mut grad) = (f64::NAN, [f64::NAN; 2]);
    let t = target();
    // SAFETY: live handle; arrays sized n_groups × n, n_groups, 3n; outputs writable.
    let st = unsafe {
        cmsc_rollout_gradient(
            sim,
            20,
            WEIGHTS.as_ptr(),
            2,
            q.as_ptr(),
            t.as_ptr(),
            &mut loss,
            grad.as_mut_ptr(),
            grad_scale,
        )
    };
    (st, loss, grad)
}

#[test]
fn rollout_gradient_matches_finite_differences_and_restores_the_state() {
    let sim = sim();
    let before = positions(sim, N);
    let q = [2e-7, -1e-7];
    let mut g_scale = f64::NAN;
    let (st, loss, grad) = rollout(sim, q, &mut g_scale);
    assert_eq!(st, CMSC_OK, "{}", last_error());
    assert_eq!(last_error(), "");
    assert!(loss > 0.0 && g_scale.is_finite());
    assert_eq!(positions(sim, N), before, "the state must be restored");
    for g in 0..2 {
        let dq = 1e-4 * q[g].abs();
        let (mut qp, mut qm) = (q, q);
        qp[g] += dq;
        qm[g] -= dq;
        let fd = (rollout(sim, qp, ptr::null_mut()).1 - rollout(sim, qm, ptr::null_mut()).1) / (2.0 * dq);
        assert!((grad[g] - fd).abs() <= 1e-4 * fd.abs(), "group {g}: {} vs {fd}", grad[g]);
    }
    // SAFETY: live handle.
    unsafe { cmsc_destroy(sim) };
}

#[test]
fn fit_charges_recovers_the_charges_that_made_the_target() {
    let sim = sim();
    let truth = [3e-7, 1.5e-7];
    // the target: where the truth's rollout ends (read through a rollout against any target)
    let mut p = params();
    p.gravity = [0.0; 3];
    p.time_step = 0.02;
    let reference = square(&p);
    let q: Vec<f64> = (0..N).map(|i| WEIGHTS[i] * truth[0] + WEIGHTS[N + i] * truth[1]).collect();
    // SAFETY: live handle, N charges.
    assert_eq!(unsafe { cmsc_set_charges(reference, q.as_ptr(), N) }, CMSC_OK);
    // SAFETY: live handle.
    assert_eq!(unsafe { cmsc_step(reference, 20) }, CMSC_OK);
    let target = positions(reference, N);
    let mut charges = [1e-7, 1e-7];
    let mut loss = f64::NAN;
    // SAFETY: live handle; arrays as documented.
    let st = unsafe {
        cmsc_fit_charges(sim, 20, WEIGHTS.as_ptr(), 2, charges.as_mut_ptr(), target.as_ptr(), 100, &mut loss)
    };
    assert_eq!(st, CMSC_OK, "{}", last_error());
    for g in 0..2 {
        assert!((charges[g] - truth[g]).abs() < 1e-3 * truth[g], "fitted {charges:?}, truth {truth:?}");
    }
    assert!(loss < 1e-14, "loss {loss}");
    // SAFETY: live handles.
    unsafe {
        cmsc_destroy(sim);
        cmsc_destroy(reference);
    }
}

#[test]
fn bad_arguments_are_named_and_change_nothing() {
    let sim = sim();
    let before = positions(sim, N);
    let t = target();
    let q = [1e-7, 1e-7];
    let (mut loss, mut grad) = (0.0, [0.0; 2]);
    // SAFETY (all calls): live handle; each call breaks exactly one argument, the rest valid.
    unsafe {
        let st = cmsc_rollout_gradient(
            sim,
            5,
            ptr::null(),
            2,
            q.as_ptr(),
            t.as_ptr(),
            &mut loss,
            grad.as_mut_ptr(),
            ptr::null_mut(),
        );
        assert_eq!(
            (st, last_error().contains("group_weights")),
            (CMSC_INVALID_ARGUMENT, true),
            "{}",
            last_error()
        );
        let st = cmsc_rollout_gradient(
            sim,
            5,
            WEIGHTS.as_ptr(),
            0,
            q.as_ptr(),
            t.as_ptr(),
            &mut loss,
            grad.as_mut_ptr(),
            ptr::null_mut(),
        );
        assert_eq!(
            (st, last_error().contains("n_groups")),
            (CMSC_INVALID_ARGUMENT, true),
            "{}",
            last_error()
        );
        let st = cmsc_rollout_gradient(
            sim,
            5,
            WEIGHTS.as_ptr(),
            2,
            q.as_ptr(),
            t.as_ptr(),
            ptr::null_mut(),
            grad.as_mut_ptr(),
            ptr::null_mut(),
        );
        assert_eq!(
            (st, last_error().contains("out_loss")),
            (CMSC_INVALID_ARGUMENT, true),
            "{}",
            last_error()
        );
        let bad_t = [f64::NAN; 3 * N];
        let st = cmsc_rollout_gradient(
            sim,
            5,
            WEIGHTS.as_ptr(),
            2,
            q.as_ptr(),
            bad_t.as_ptr(),
            &mut loss,
            grad.as_mut_ptr(),
            ptr::null_mut(),
        );
        assert_eq!((st, last_error().contains("target")), (CMSC_INVALID_ARGUMENT, true), "{}", last_error());
        let huge = [1e160, 1e160];
        let st = cmsc_rollout_gradient(
            sim,
            5,
            WEIGHTS.as_ptr(),
            2,
            huge.as_ptr(),
            t.as_ptr(),
            &mut loss,
            grad.as_mut_ptr(),
            ptr::null_mut(),
        );
        assert_eq!(st, CMSC_DIVERGED, "{}", last_error());
        let mut charges = [f64::NAN, 1e-7];
        let st =
            cmsc_fit_charges(sim, 5, WEIGHTS.as_ptr(), 2, charges.as_mut_ptr(), t.as_ptr(), 10, &mut loss);
        assert_eq!(
            (st, last_error().contains("group_charges")),
            (CMSC_INVALID_ARGUMENT, true),
            "{}",
            last_error()
        );
        assert!(charges[0].is_nan() && charges[1] == 1e-7, "charges must be unchanged on error");
        assert_eq!(
            cmsc_fit_charges(
                ptr::null_mut(),
                5,
                WEIGHTS.as_ptr(),
                2,
                charges.as_mut_ptr(),
                t.as_ptr(),
                10,
                &mut loss
            ),
            CMSC_INVALID_ARGUMENT
        );
    }
    assert_eq!(positions(sim, N), before);
    // SAFETY: live handle.
    unsafe { cmsc_destroy(sim) };
}

/// Blender's Suzanne (subdivided once, triangulated, welded: `cmsc-core/tests/data`) as a
/// charged shell: positions, unit-free spring pairs along the triangle edges, and the two
/// groups' weights (upper and lower half).
fn suzanne() -> (Vec<f64>, Vec<u32>, Vec<f64>) {
    let text = include_str!("../../cmsc-core/tests/data/suzanne.obj");
    let mut x = Vec::new();
    let mut edges = std::collections::BTreeSet::new();
    for line in text.lines() {
        let mut tokens = line.split_whitespace();
        match tokens.next() {
            Some("v") => x.extend(tokens.map(|t| t.parse::<f64>().unwrap())),
            Some("f") => {
                let v: Vec<u32> = tokens.map(|t| t.parse::<u32>().unwrap() - 1).collect();
                for k in 0..v.len() {
                    let (a, b) = (v[k], v[(k + 1) % v.len()]);
                    edges.insert((a.min(b), a.max(b)));
                }
            }
            _ => {}
        }
    }
    let n = x.len() / 3;
    let springs = edges.into_iter().flat_map(|(a, b)| [a, b]).collect();
    let upper = (0..n).map(|i| if x[3 * i + 2] > 0.0 { 1.0 } else { 0.0 });
    let weights = upper.clone().chain(upper.map(|w| 1.0 - w)).collect();
    (x, springs, weights)
}

/// Issue 29: a fit to a motion stepped at the defaults (Anderson-accelerated iterations, with
/// and without an iteration tolerance) recovers the charges that made it within 1 %, at a large
/// and a small step. Before, the rollout ran plain iterations whatever the steps ran, and the
/// fit missed by 36.6 % at h = 0.18 s.
#[test]
fn a_fit_to_steps_at_the_defaults_recovers_their_charges() {
    let (x, springs, weights) = suzanne();
    let (n, n_springs) = (x.len() / 3, springs.len() / 2);
    let (m, k) = (vec![1e-3; n], vec![20.0; n_springs]);
    let truth = [6.0e-9, 3.0e-9];
    let q: Vec<f64> = (0..n).map(|i| weights[i] * truth[0] + weights[n + i] * truth[1]).collect();
    let mut failures = Vec::new();
    for (h, steps, tolerance) in [(0.18, 8, 0.0), (0.01, 30, 0.0), (0.18, 8, 1e-3), (0.01, 30, 1e-3)] {
        let mut p = params();
        p.gravity = [0.0; 3];
        p.time_step = h;
        let make = || {
            let sim = common::create(&x, &m, &springs, &k, &p);
            // SAFETY: live handle.
            assert_eq!(unsafe { cmsc_set_iteration_tolerance(sim, tolerance) }, CMSC_OK);
            sim
        };
        let reference = make();
        // SAFETY: live handle, n charges.
        assert_eq!(unsafe { cmsc_set_charges(reference, q.as_ptr(), n) }, CMSC_OK);
        let target = common::step_read_destroy(reference, steps, n);
        let moved = common::distance(&target, &x);
        assert!(moved > 0.02, "the charges must move the mesh: {moved} m");
        let sim = make();
        let mut charges = [4.2e-9, 4.5e-9];
        let mut loss = f64::NAN;
        // SAFETY: live handle; arrays as documented.
        let st = unsafe {
            cmsc_fit_charges(
                sim,
                steps,
                weights.as_ptr(),
                2,
                charges.as_mut_ptr(),
                target.as_ptr(),
                12,
                &mut loss,
            )
        };
        assert_eq!(st, CMSC_OK, "{}", last_error());
        let miss = (0..2).map(|g| (charges[g] / truth[g] - 1.0).abs()).fold(0.0, f64::max);
        eprintln!("h = {h}, tolerance {tolerance}: moved {moved:.3} m, fitted {charges:?}, miss {miss:.2e}");
        if miss >= 1e-2 {
            failures.push(format!("h = {h}, tolerance {tolerance}: fitted {charges:?}, truth {truth:?}"));
        }
        // SAFETY: a live handle, destroyed once.
        unsafe { cmsc_destroy(sim) };
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
