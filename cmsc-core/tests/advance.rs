//! `System::advance` (issue 29): the step count follows the charges (rises with their strength,
//! falls back when they fade), a fixed count equals as many `step`s, inputs set between calls
//! are ramped linearly over the steps, bad arguments change nothing; and the iteration
//! tolerance stops early on a calm cloth within its accuracy of a converged step.

mod common;

use cmsc_core::shapes::grid;
use cmsc_core::{
    springs_from_triangles, AskedSteps, Error, FieldMethod, SimParams, StepBounds, System, Vec3,
    MAX_ADVANCE_STEPS,
};

const SIDE: u32 = 12;
const FRAME: f64 = 1.0 / 24.0;

/// A horizontal `SIDE × SIDE` cloth 1 m wide, 10 g per vertex, structural/bending springs of
/// 100/10 N/m, its top row pinned, gravity, exact Coulomb, no charges yet.
fn cloth(iterations: u32) -> (System, Vec<u32>) {
    let mesh = grid(SIDE, SIDE, 1.0 / (SIDE - 1) as f64);
    let n = mesh.positions.len();
    let (ends, k) = springs_from_triangles(n, &mesh.triangles).unwrap().with_stiffness(100.0, 10.0);
    let params = SimParams { iterations, coulomb: FieldMethod::Direct, ..SimParams::default() };
    let mut sys = System::new(&mesh.positions, &vec![0.01; n], &ends, &k, params).unwrap();
    let top: Vec<u32> = (0..n as u32).filter(|&i| mesh.positions[i as usize].y > 1.0 - 1e-9).collect();
    sys.set_pins(&top).unwrap();
    (sys, top)
}

fn charge(sys: &mut System, per_vertex: f64) {
    let n = sys.n_vertices();
    sys.set_charges(&vec![per_vertex; n]).unwrap();
}

#[test]
fn steps_rise_with_the_charge_and_fall_back_when_it_fades() {
    let (mut sys, _) = cloth(6);
    // the charge bound alone (the motion the charges cause would also ask for steps)
    sys.set_step_bounds(StepBounds { motion: f64::INFINITY, ..StepBounds::default() }).unwrap();
    charge(&mut sys, 1e-9);
    let weak = sys.advance(FRAME, 1, 256).unwrap();
    assert_eq!(sys.advance(FRAME, 1, 256).unwrap(), weak, "same charges, same steps");
    charge(&mut sys, 5e-7);
    let strong = sys.advance(FRAME, 1, 256).unwrap();
    assert!(strong >= 4 * weak, "0.5 µC per vertex: {strong} steps, 1 nC: {weak}");
    charge(&mut sys, 1e-8);
    // this call ramps from the strong charges: still resolved for them
    assert!(sys.advance(FRAME, 1, 256).unwrap() >= strong / 2);
    let faded = sys.advance(FRAME, 1, 256).unwrap();
    assert!(faded < strong / 2, "faded to 10 nC: {faded} steps, at 0.5 µC: {strong}");
    // min_steps is the least, max_steps the most
    assert_eq!(sys.advance(FRAME, 3, 256).unwrap(), 3);
    charge(&mut sys, 5e-7);
    sys.advance(FRAME, 1, 1).unwrap();
    assert_eq!(sys.advance(FRAME, 1, 2).unwrap(), 2);
    assert_eq!(sys.advance(FRAME, 3, 5).unwrap(), 5, "3 · 2 passes 5: k = max_steps");
}

#[test]
fn a_calm_cloth_takes_min_steps_and_a_swinging_one_more() {
    let (mut sys, _) = cloth(6);
    assert_eq!(sys.advance(FRAME, 1, 64).unwrap(), 1, "at rest");
    let mut most = 0;
    for _ in 0..12 {
        most = most.max(sys.advance(FRAME, 1, 64).unwrap());
    }
    assert!(most >= 4, "a cloth falling from horizontal swings: {most} steps at most");
}

#[test]
fn a_fixed_count_equals_as_many_steps() {
    let k = 4;
    let (mut a, _) = stepped_once(2e-7, k);
    let (mut b, _) = stepped_once(2e-7, k);
    a.set_params(SimParams { time_step: 1.0 / 120.0, ..a.params().clone() }).unwrap();
    let h = a.params().time_step;
    for _ in 0..3 {
        assert_eq!(a.advance(FRAME, k, k).unwrap(), k);
        b.step_n(k).unwrap();
    }
    let gap = a.positions().iter().zip(b.positions()).map(|(p, q)| (p - q).norm()).fold(0.0, f64::max);
    assert!(gap == 0.0, "advance(k, k) vs k steps: {gap} m apart");
    assert!(a.velocities() == b.velocities());
    assert_eq!(a.step_count(), b.step_count());
    assert_eq!(a.params().time_step, h, "time_step is still the step of `step`");
    assert_eq!(a.last_call_counts().steps, k);
    assert_eq!(a.last_call_counts().iterations, u64::from(k) * 6);
}

/// `a + (b − a) s` as `advance` ramps (exactly `b` at `s = 1`).
fn lerp(a: f64, b: f64, s: f64) -> f64 {
    if s == 1.0 {
        b
    } else {
        a + (b - a) * s
    }
}

/// A cloth charged with `q0` after one step of 1/120 s; its steps are `FRAME / k` from then on
/// unless `advance` chooses.
fn stepped_once(q0: f64, k: u32) -> (System, Vec<u32>) {
    let (mut sys, pins) = cloth(6);
    charge(&mut sys, q0);
    sys.step().unwrap();
    sys.set_params(SimParams { time_step: FRAME / k as f64, ..sys.params().clone() }).unwrap();
    (sys, pins)
}

#[test]
fn pin_targets_charges_and_field_are_ramped_linearly() {
    let k = 4;
    let (q0, q1) = (1e-8, 4e-7);
    let (e0, e1) = (Vec3::zeros(), Vec3::new(0.0, 0.0, 2e4));
    let (mut a, pins) = stepped_once(q0, k);
    let (mut b, _) = stepped_once(q0, k);
    let (mut c, _) = stepped_once(q0, k);
    let start: Vec<Vec3> = pins.iter().map(|&i| a.positions()[i as usize]).collect();
    let targets: Vec<Vec3> = start.iter().map(|p| p + Vec3::new(0.2, 0.0, 0.1)).collect();
    for sys in [&mut a, &mut c] {
        sys.set_pin_targets(&targets).unwrap();
        charge(sys, q1);
        sys.set_uniform_field(e1).unwrap();
    }
    assert_eq!(a.advance(FRAME, k, k).unwrap(), k);
    for j in 0..k {
        let s = (j + 1) as f64 / k as f64;
        let t: Vec<Vec3> =
            start.iter().zip(&targets).map(|(p, t)| p.zip_map(t, |p, t| lerp(p, t, s))).collect();
        b.set_pin_targets(&t).unwrap();
        charge(&mut b, lerp(q0, q1, s));
        b.set_uniform_field(e0.zip_map(&e1, |x, y| lerp(x, y, s))).unwrap();
        b.step().unwrap();
    }
    let gap = a.positions().iter().zip(b.positions()).map(|(p, q)| (p - q).norm()).fold(0.0, f64::max);
    assert!(gap < 1e-12, "advance vs hand-ramped steps: {gap} m apart");
    for (&i, t) in pins.iter().zip(&targets) {
        assert_eq!(a.positions()[i as usize], *t, "the pins end on the targets set");
    }
    // the inputs jumping to their new values at the first step move the cloth differently
    c.step_n(k).unwrap();
    let jump = a.positions().iter().zip(c.positions()).map(|(p, q)| (p - q).norm()).fold(0.0, f64::max);
    assert!(jump > 1e-4, "ramped and jumped inputs differ: {jump} m");
}

#[test]
fn bad_arguments_change_nothing() {
    let (mut sys, _) = cloth(6);
    charge(&mut sys, 1e-7);
    sys.advance(FRAME, 1, 8).unwrap();
    let (x, v, t, steps, params) = (
        sys.positions().to_vec(),
        sys.velocities().to_vec(),
        sys.time(),
        sys.step_count(),
        sys.params().clone(),
    );
    for (seconds, min, max, name) in [
        (0.0, 1, 8, "seconds"),
        (-FRAME, 1, 8, "seconds"),
        (f64::NAN, 1, 8, "seconds"),
        (f64::INFINITY, 1, 8, "seconds"),
        (FRAME, 0, 8, "min_steps"),
        (FRAME, 9, 8, "min_steps"),
        (FRAME, 1, MAX_ADVANCE_STEPS + 1, "max_steps"),
    ] {
        match sys.advance(seconds, min, max) {
            Err(Error::InvalidArgument { name: got, .. }) => {
                assert_eq!(got, name, "({seconds}, {min}, {max})")
            }
            other => panic!("({seconds}, {min}, {max}): {other:?}"),
        }
        assert_eq!((sys.positions(), sys.velocities()), (&x[..], &v[..]));
        assert_eq!((sys.time(), sys.step_count(), sys.params()), (t, steps, &params));
    }
    assert!(sys.set_iteration_tolerance(-1e-3).is_err());
    assert!(sys.set_iteration_tolerance(f64::NAN).is_err());
    assert_eq!(sys.params().iteration_tolerance, 0.0);
}

/// Distance between two position sets relative to the step's displacement from `x_t`.
fn relative_gap(a: &[Vec3], b: &[Vec3], x_t: &[Vec3]) -> f64 {
    let gap: f64 = a.iter().zip(b).map(|(p, q)| (p - q).norm_squared()).sum();
    let step: f64 = b.iter().zip(x_t).map(|(p, q)| (p - q).norm_squared()).sum();
    (gap / step).sqrt()
}

#[test]
fn a_tolerance_stops_early_on_a_calm_cloth_within_its_accuracy() {
    let tolerance = 1e-3;
    let calm = || {
        let (mut sys, _) = cloth(30);
        sys.set_relative_damping(5.0).unwrap();
        sys.step_n(240).unwrap(); // 2 s: it hangs, nearly still
        sys
    };
    let (mut converged, mut early) = (calm(), calm());
    assert_eq!(early.last_call_counts().iterations, 240 * 30, "no tolerance: every iteration");
    let x_t = early.positions().to_vec();
    converged.step().unwrap();
    early.set_iteration_tolerance(tolerance).unwrap();
    early.step().unwrap();
    let taken = early.last_step_counts().iterations;
    assert!(taken < 30, "{taken} iterations on a calm cloth");
    let gap = relative_gap(early.positions(), converged.positions(), &x_t);
    assert!(gap < 10.0 * tolerance, "{gap} from the 30-iteration step ({taken} iterations)");
    assert!(gap > 0.0, "stopped early, so not the same step");
}

#[test]
fn a_diverging_call_is_redone_with_more_steps() {
    // no bounds: the first try takes min_steps, and 100 µC per vertex throws the cloth apart in
    // one step of a frame
    let bounds = StepBounds { charge: f64::INFINITY, motion: f64::INFINITY, contact: f64::INFINITY };
    let (mut once, _) = cloth(6);
    once.set_step_bounds(bounds).unwrap();
    charge(&mut once, 1e-4);
    let (x, steps) = (once.positions().to_vec(), once.step_count());
    match once.advance(FRAME, 1, 1) {
        Err(Error::Diverged { .. }) => {}
        other => panic!("one step of a frame at 100 µC: {other:?}"),
    }
    assert_eq!((once.positions(), once.step_count()), (&x[..], steps), "the call's start kept");
    assert_eq!(once.params().time_step, 1.0 / 120.0);
    let k = once.advance(FRAME, 1, 256).unwrap();
    assert!(k > 1, "redone with {k} steps");
    assert!(once.last_call_counts().retries >= 1);
    assert_eq!(once.step_count(), steps + u64::from(k), "only the kept try's steps count");
}

/// A 3 m square plate (two triangles) under the cloth at height `z`, contact distance 5 mm.
fn plate(z: f64) -> Vec<Vec3> {
    [(-1.0, -1.0), (2.0, -1.0), (2.0, 2.0), (-1.0, 2.0)].iter().map(|&(x, y)| Vec3::new(x, y, z)).collect()
}

fn with_plate(sys: &mut System) {
    let plate = plate(-0.02);
    sys.set_mesh_colliders(&plate, &[[0, 1, 2], [0, 2, 3]], &[0, 2], &[0.005], &[0.2]).unwrap();
}

#[test]
fn a_moving_obstacle_is_ramped_like_the_other_inputs() {
    // the plate rises 0.1 m during one frame and lifts the cloth: `advance` moves it a quarter
    // of the way in each of its 4 steps, as four hand-made moves do
    let k = 4;
    let (mut a, _) = stepped_once(1e-8, k);
    let (mut b, _) = stepped_once(1e-8, k);
    let (mut c, _) = stepped_once(1e-8, k);
    for sys in [&mut a, &mut b, &mut c] {
        with_plate(sys);
    }
    let (from, to) = (plate(-0.02), plate(0.08));
    a.move_mesh_colliders(&to).unwrap();
    c.move_mesh_colliders(&to).unwrap();
    assert_eq!(a.advance(FRAME, k, k).unwrap(), k);
    for j in 0..k {
        let s = (j + 1) as f64 / k as f64;
        let at: Vec<Vec3> = from.iter().zip(&to).map(|(p, q)| p.zip_map(q, |p, q| lerp(p, q, s))).collect();
        b.move_mesh_colliders(&at).unwrap();
        b.step().unwrap();
    }
    let gap = a.positions().iter().zip(b.positions()).map(|(p, q)| (p - q).norm()).fold(0.0, f64::max);
    assert!(gap < 1e-12, "advance vs hand-ramped obstacle: {gap} m apart");
    let lifted = a.positions().iter().map(|p| p.z).fold(f64::MIN, f64::max);
    assert!(lifted > 0.08, "the plate lifted the cloth: highest vertex at {lifted} m");
    // the whole move in the first step throws the cloth instead
    c.step_n(k).unwrap();
    let jump = a.positions().iter().zip(c.positions()).map(|(p, q)| (p - q).norm()).fold(0.0, f64::max);
    assert!(jump > 1e-3, "ramped and jumped obstacle differ: {jump} m");
}

#[test]
fn a_call_whose_steps_the_safeguard_halved_is_followed_by_twice_the_steps() {
    // The Fig. 5 sphere with the low-dissipation integrator at 0.2 s per call: the energy
    // safeguard halves steps at the re-collapse (t ≈ 8.8 s). With the step bounds off, only that
    // carries over: the call after one whose step was halved takes 2 steps, then falls back to 1.
    let unbounded = StepBounds { charge: f64::INFINITY, motion: f64::INFINITY, contact: f64::INFINITY };
    let mut single = common::fig5_sphere(8e-6, 0.2);
    let mut adaptive = common::fig5_sphere(8e-6, 0.2);
    adaptive.set_step_bounds(unbounded).unwrap();
    let mut first_halved = None;
    for call in 0..75 {
        assert_eq!(single.advance(0.2, 1, 1).unwrap(), 1);
        assert_eq!(adaptive.advance(0.2, 1, 32).unwrap(), 1, "call {call} before any halving");
        let counts = single.last_step_counts();
        if counts.attempts > counts.substeps {
            first_halved = Some(call);
            break;
        }
    }
    let call = first_halved.expect("the safeguard halves a step within 15 s");
    assert_eq!(single.positions(), adaptive.positions(), "the same steps until call {call}");
    assert_eq!(adaptive.advance(0.2, 1, 32).unwrap(), 2, "the call after the halving");
    let later: Vec<u32> = (0..20).map(|_| adaptive.advance(0.2, 1, 32).unwrap()).collect();
    assert!(later.contains(&1), "falls back to one step per call: {later:?}");
}

#[path = "../examples/common/landing.rs"]
mod landing;

/// The landing of `landing.rs` (a 2 m cloth of 1,681 vertices dropped onto a mesh sphere of
/// radius `radius`, μ = 0.05) over `frames` frames of `advance` at the add-on's defaults (3–32
/// steps, iterations to 1e-3) with `bounds`: the highest total energy above the start (J), and
/// the steps of each frame.
fn landing_peak(radius: f64, stiffness: f64, bounds: StepBounds, frames: u32) -> (f64, Vec<u32>) {
    damped_landing_peak(radius, stiffness, 0.0, bounds, frames)
}

/// [`landing_peak`] with the springs damping their strain rate at `spring_damping` (s).
fn damped_landing_peak(
    radius: f64,
    stiffness: f64,
    spring_damping: f64,
    bounds: StepBounds,
    frames: u32,
) -> (f64, Vec<u32>) {
    let (mut sys, _) = landing::landing(41, radius, stiffness, 0.05, FRAME);
    sys.set_spring_damping(&vec![spring_damping; sys.springs().len()]).unwrap();
    sys.set_step_bounds(bounds).unwrap();
    let start = sys.energies().total;
    let mut peak = f64::NEG_INFINITY;
    let steps = (0..frames)
        .map(|_| {
            let k = sys.advance(FRAME, 3, 32).unwrap();
            peak = peak.max(sys.energies().total - start);
            k
        })
        .collect();
    (peak, steps)
}

#[test]
fn a_cloth_landing_on_a_sphere_gains_no_energy_at_the_steps_the_contact_bound_takes() {
    // At the steps the other bounds leave it (3 per frame at the impact, more once the cloth
    // swings), the contacts stretch the cloth's springs where it lands and it gains energy from
    // nothing: a 3,000 N/m cloth on the 0.6 m sphere 18.8 J (20 % strain), a 1,000 N/m one on a
    // 0.3 m sphere 2.7 J. The contact bound keeps c h / R ≤ 2.3 while it touches the sphere: 12
    // and 24 steps per frame.
    let off = StepBounds { contact: f64::INFINITY, ..StepBounds::default() };
    for (radius, stiffness, steps) in [(0.6, 3000.0, 12), (0.3, 1000.0, 24)] {
        let (stretched, plain) = landing_peak(radius, stiffness, off, 12);
        assert!(stretched > 1.0, "{stiffness} N/m on {radius} m: without the contact bound it gained only {stretched} J ({plain:?} steps)");
        let (peak, taken) = landing_peak(radius, stiffness, StepBounds::default(), 12);
        assert!(peak < 0.05, "{stiffness} N/m on {radius} m: gained {peak} J at {taken:?} steps");
        assert_eq!(taken[..2], [3, 3], "falling free, it takes the least steps");
        assert!(
            taken[2..].iter().all(|&k| k == steps),
            "{stiffness} N/m on {radius} m, touching the sphere: {taken:?}"
        );
    }
    // the default cloth on the 0.6 m sphere (c h / R = 1.75 at 3 steps) gains nothing and the
    // bound asks for no step more
    let (soft, soft_steps) = landing_peak(0.6, 100.0, StepBounds::default(), 12);
    assert!(soft < 0.0, "{soft} J");
    assert_eq!(soft_steps, landing_peak(0.6, 100.0, off, 12).1);
}

#[test]
fn a_damped_cloth_landing_takes_the_steps_its_damping_asks_and_gains_nothing() {
    // Springs that damp their strain rate act within a step of length h as springs of stiffness
    // k (1 + β/h): the default cloth (76 m/s) with β = 0.1 s lands on the 0.6 m sphere as a far
    // stiffer one. At the 3 steps the undamped cloth takes there it gains energy from nothing;
    // the bound solves h² c² + h β c² = (2.3 R)² for h: 3.2 ms, 14 steps per frame (the
    // undamped cloth's bound asks for 3).
    let off = StepBounds { contact: f64::INFINITY, ..StepBounds::default() };
    let (stretched, plain) = damped_landing_peak(0.6, 100.0, 0.1, off, 12);
    assert!(stretched > 0.5, "without the contact bound it gained only {stretched} J ({plain:?} steps)");
    let (peak, taken) = damped_landing_peak(0.6, 100.0, 0.1, StepBounds::default(), 12);
    eprintln!("β = 0.1 s: {stretched:.3} J gained at {plain:?} steps, {peak:.3} J at {taken:?}");
    assert!(peak < 0.0, "gained {peak} J at {taken:?} steps");
    let (c, r, beta): (f64, f64, f64) = (75.99, 0.6, 0.1);
    let h = 2.0 * (2.3 * r).powi(2)
        / (beta * c * c + ((beta * c * c).powi(2) + 4.0 * (c * 2.3 * r).powi(2)).sqrt());
    // advance takes 3 · 2^j steps: 24 for the 14 asked
    let asked = (FRAME / h).ceil() as u32;
    assert!(taken[2..].iter().all(|&k| k == 3 * asked.div_ceil(3).next_power_of_two()), "{taken:?}");
}

#[test]
fn contact_steps_name_the_steps_the_contact_bound_asks_at_fixed_steps() {
    // The landing at the add-on's fixed 3 steps per frame, where the 3,000 N/m cloth gains
    // 18.8 J on the 0.6 m sphere. Before each frame `contact_steps` says what the contact bound
    // asks: nothing more while the cloth falls free, and ⌈(1/24 s) c / (2.3 R)⌉ = 12 once it
    // touches the sphere (c = 390 m/s, the sphere's triangles R = 0.59–0.60 m): the steps
    // `advance` takes there. The default cloth (76 m/s) asks for 3 at most, and with the bound
    // off nothing asks.
    let asked = |stiffness: f64, bounds: StepBounds| -> Vec<u32> {
        let (mut sys, _) = landing::landing(41, 0.6, stiffness, 0.05, FRAME / 3.0);
        sys.set_step_bounds(bounds).unwrap();
        (0..12)
            .map(|_| {
                let k = sys.contact_steps(FRAME).unwrap();
                // per vertex: the same largest, asked only by vertices that can reach the sphere
                // (radius 0.6 m, contact distance 2 cm) at their speed within the frame
                let each = sys.contact_steps_per_vertex(FRAME).unwrap();
                assert_eq!(each.iter().copied().max(), Some(k));
                let (x, v) = (sys.positions(), sys.velocities());
                let reach = |i: usize| 0.62 + 0.01 + v[i].norm() * FRAME;
                assert!((0..x.len()).all(|i| each[i] == 1 || x[i].norm() < reach(i)), "asked far off");
                sys.step_n(3).unwrap();
                k
            })
            .collect()
    };
    let (sys, _) = landing::landing(41, 0.6, 3000.0, 0.05, FRAME / 3.0);
    let c = sys.wave_speeds().into_iter().fold(0.0, f64::max);
    assert!((c / 390.0 - 1.0).abs() < 0.01, "{c} m/s");
    let touching = [0.600, 0.590].map(|r| (FRAME * c / (StepBounds::default().contact * r)).ceil() as u32);
    let stiff = asked(3000.0, StepBounds::default());
    assert_eq!(stiff[..2], [1, 1], "falling free: {stiff:?}");
    assert!(stiff[2..].iter().all(|k| (touching[0]..=touching[1]).contains(k)), "{touching:?}: {stiff:?}");
    let soft = asked(100.0, StepBounds::default());
    assert!(soft.iter().all(|&k| k <= 3) && soft.contains(&3), "{soft:?}");
    let off = StepBounds { contact: f64::INFINITY, ..StepBounds::default() };
    assert!(asked(3000.0, off).iter().all(|&k| k == 1));
    assert!(sys.contact_steps(0.0).is_err() && sys.contact_steps(f64::NAN).is_err());
    assert!(sys.contact_steps_per_vertex(0.0).is_err());
}

#[test]
fn asked_steps_name_what_the_charge_bound_asks_and_survive_the_cap() {
    // Two 10 g vertices 0.1 m apart on one spring, 10 µC each, at rest: the charge bound's
    // stiffness is K = 2 k_c q (2.5 q / r³) (the neighbour sum scaled by NEIGHBOUR_SUM_FACTOR),
    // so it asks for ⌈T √(K/m) / c_q⌉ steps over a frame: 28. At rest the motion bound asks for
    // nothing, and with no obstacle neither does the contact bound.
    let positions = [Vec3::zeros(), Vec3::new(0.1, 0.0, 0.0)];
    let params = SimParams { coulomb: FieldMethod::Direct, gravity: Vec3::zeros(), ..SimParams::default() };
    let k_c = params.coulomb_constant;
    let pair = || System::new(&positions, &[0.01, 0.01], &[[0, 1]], &[100.0], params.clone()).unwrap();
    let mut sys = pair();
    let q = 1e-5;
    sys.set_charges(&[q, q]).unwrap();
    let asks = |q: f64| {
        let stiffness = 2.0 * k_c * q * (2.5 * q / 0.1_f64.powi(3));
        (FRAME * (stiffness / 0.01).sqrt() / StepBounds::default().charge).ceil() as u32
    };
    let expected = asks(q);
    assert_eq!(expected, 28);
    let asked = sys.asked_steps(FRAME).unwrap();
    assert_eq!(asked, AskedSteps { charge: expected, motion: 1, contact: 1 });
    assert_eq!(sys.charge_steps(FRAME).unwrap(), expected);
    assert_eq!(sys.charge_steps_per_vertex(FRAME).unwrap(), [expected, expected]);
    assert_eq!(asked.most(), expected);
    // capped at 8, the call records what was asked; uncapped it takes at least as many
    assert_eq!(sys.advance(FRAME, 1, 8).unwrap(), 8);
    let capped = sys.last_call_counts();
    assert_eq!((capped.steps, capped.asked.charge), (8, expected));
    assert!(capped.asked.motion == 1 && capped.asked.contact == 1, "{capped:?}");
    // the pair now moves apart: the motion bound asks too, and advance takes what both ask
    let now = sys.asked_steps(FRAME).unwrap();
    assert!(now.motion > 1, "{now:?}");
    let taken = sys.advance(FRAME, 1, MAX_ADVANCE_STEPS).unwrap();
    assert_eq!(sys.last_call_counts().asked, now);
    assert!(taken >= now.most() && taken < 2 * now.most(), "{taken} steps for {now:?}");
    // fixed steps ask for nothing in their counts
    sys.step_n(2).unwrap();
    assert_eq!(sys.last_call_counts().asked, AskedSteps::default());
    assert!(sys.asked_steps(0.0).is_err() && sys.asked_steps(f64::INFINITY).is_err());
    assert!(sys.charge_steps(-1.0).is_err() && sys.charge_steps(f64::NAN).is_err());
    // a call that diverges at its cap records what was asked too: at 100 µC one step of a frame
    // throws the pair apart
    let mut thrown = pair();
    thrown.set_charges(&[10.0 * q, 10.0 * q]).unwrap();
    assert!(matches!(thrown.advance(FRAME, 1, 1), Err(Error::Diverged { .. })));
    assert_eq!(thrown.last_call_counts().asked.charge, asks(10.0 * q));
}
