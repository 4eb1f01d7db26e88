//! Self-collision on a charged cloth closing on itself (issue 18): a 2 m, 41 × 41 cloth whose
//! halves carry ±40 µC falls freely (or, with `both`, onto a 0.6 m sphere collider) at
//! h = 1/120 s; prints the time per step, the largest move in a step and the closest pair of
//! opposite charges. Modes: `none`, `self` (self-collision), `collider`, `both`.
//!
//! What it shows (2-core VM): until the halves meet, self-collision costs about 3 plain steps
//! (0.02 vs 0.006 s/step). Where they meet, the attraction presses the layers together harder
//! than the contact passes resolve at this step: pairs of opposite charges end steps a few mm
//! apart, the explicit Coulomb kick there moves vertices metres, and the step time grows with
//! the swept boxes (seconds per step) until the runaway guard stops the run. Without
//! self-collision the halves pass through each other and the run stays bounded.
//!
//! Issue 30 (charges spread over balls of radius a = 2.5 cm, contacts projected by mass to a
//! tolerance), measured on the shared 2-core VM, 2 threads, `both`, against the code before:
//! the first 45 steps (before the halves meet) cost 31 ms/step with self-collision against
//! 11.6 ms plain (`self` vs `none`: 2.7×; before, 28 vs 15 ms). Where the halves meet (step
//! ~48) the run is still violent: the largest move per step stays at 0.5–1.5 m from step 50 on
//! (before: 1.7, 3.3, 17.8, 41, 64 m at steps 52–57) and opposite charges end steps 0.1–1 mm
//! apart, but the step time still climbs to seconds by step 57–60 (2.5–11 s; before 2.8–6.5 s):
//! at ±40 µC on 1 kg the halves meet at tens of m/s, more than a step's linearised contact
//! tests follow. The run does not reach its end at this charge; that remains open.
//!
//! Run: `cargo run --release -p cmsc-core --example crumple_cost [-- STEPS MODE CHARGE_µC]`

use std::time::Instant;

use cmsc_core::{shapes, springs_from_triangles, FieldMethod, SimParams, System, Vec3};

fn main() {
    let steps: u32 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(240);
    let mode = std::env::args().nth(2).unwrap_or_else(|| "both".into());
    let charge = std::env::args().nth(3).and_then(|a| a.parse::<f64>().ok()).unwrap_or(40.0) * 1e-6;
    let side = 41;
    let spacing = 2.0 / (side - 1) as f64;
    let mut mesh = shapes::grid(side, side, spacing);
    mesh.positions.iter_mut().for_each(|p| *p += Vec3::new(-1.0, -1.0, 0.9));
    let n = mesh.positions.len();
    let springs = springs_from_triangles(n, &mesh.triangles).unwrap();
    let (ends, k) = springs.with_stiffness(100.0, 10.0);
    let params = SimParams {
        time_step: 1.0 / 120.0,
        coulomb: FieldMethod::Direct,
        gravity: Vec3::new(0.0, 0.0, -9.81),
        relative_damping: 2.0,
        ..SimParams::default()
    };
    let mut sys = System::new(&mesh.positions, &vec![1.0 / n as f64; n], &ends, &k, params).unwrap();
    let half = n as f64 / 2.0;
    let q: Vec<f64> =
        mesh.positions.iter().map(|p| if p.x < 0.0 { charge / half } else { -charge / half }).collect();
    sys.set_charges(&q).unwrap();
    if mode == "self" || mode == "both" {
        sys.set_self_collision(&mesh.triangles, &vec![0.015; n]).unwrap();
    }
    let ball = shapes::uv_sphere(16, 32, 0.6);
    let last = ball.triangles.len() as u32;
    if mode == "collider" || mode == "both" {
        sys.set_mesh_colliders(&ball.positions, &ball.triangles, &[0, last], &[0.02], &[0.0]).unwrap();
    }
    println!("n = {n}, threads: {}", rayon::current_num_threads());
    let mut total = 0.0;
    for s in 0..steps {
        let before = sys.positions().to_vec();
        let t0 = Instant::now();
        if let Err(e) = sys.step() {
            println!("step {s}: {e}");
            break;
        }
        let dt = t0.elapsed().as_secs_f64();
        total += dt;
        let moved = sys.positions().iter().zip(&before).map(|(a, b)| (a - b).norm()).fold(0.0, f64::max);
        let lowest = sys.positions().iter().map(|p| p.z).fold(f64::INFINITY, f64::min);
        let x = sys.positions();
        let q = &q;
        let closest = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| q[i] * q[j] < 0.0 && i < j).map(move |j| (i, j)))
            .map(|(i, j)| (x[i] - x[j]).norm())
            .fold(f64::INFINITY, f64::min);
        if s % 20 == 0 || dt > 0.1 || s > 40 {
            println!("step {s:4}: {dt:.4} s, largest move {moved:.4} m, lowest z {lowest:.3}, closest +/- {closest:.2e}");
        }
    }
    println!("total {total:.2} s over {steps} steps");
}
