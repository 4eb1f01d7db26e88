//! Accuracy and time of one IMEX step against the number of local/global iterations, plain
//! (Liu 2013) and Anderson-accelerated ([`Acceleration`]): the table behind
//! [`cmsc_core::DEFAULT_ITERATIONS`] (issue 19).
//!
//! The scene is `bake_profile`'s hanging cloth (the bake benchmark's): a square grid of about
//! `--n` vertices (default 10K), 2 m wide, horizontal, top row pinned, gravity, structural/bending
//! springs 100/10 N/m, 1 kg spread by area, h = 1/120 s, Coulomb off (the springs are what is
//! measured). It swings down for `--settle` steps (default 30, 0.25 s) with 10 plain iterations;
//! from that swinging state `(x_t, v_t)` every row takes one step. The reference `x*` is the
//! converged implicit step: `--reference` (default 2000) accelerated iterations, checked against
//! as many plain ones ×3 (the distance between the two is printed). Columns: the error
//! `max_i |x_i − x*_i|` relative to the step's largest displacement `max_i |x*_i − x_{t,i}|`, the
//! same in rms over the vertices, and the best of `--repeats` (default 5) wall-clock times of the
//! whole step, interleaved (plain and accelerated at each K back to back). Last, the smallest
//! accelerated K at least as accurate (max and rms) as 10 plain iterations, and its time.
//!
//! Run: `cargo run --release -p cmsc-core --example accel_table -- [--n 10000] [--max 20]`.

use std::time::Instant;

use cmsc_core::shapes::grid;
use cmsc_core::{springs_from_triangles, Acceleration, FieldMethod, Real, SimParams, System, Vec3};

#[path = "common/args.rs"]
mod args;
#[path = "common/lumped.rs"]
mod lumped;
use args::arg;
use lumped::area_lumped;

fn max_dist(a: &[Vec3], b: &[Vec3]) -> Real {
    a.iter().zip(b).map(|(p, q)| (p - q).norm()).fold(0.0, Real::max)
}

/// One step from `(x, v)` with `iterations` and `acceleration`: the positions and the seconds.
fn one_step(
    sys: &mut System,
    x: &[Vec3],
    v: &[Vec3],
    iterations: u32,
    acc: Acceleration,
) -> (Vec<Vec3>, f64) {
    sys.set_params(SimParams { iterations, ..sys.params().clone() }).unwrap();
    sys.set_acceleration(acc);
    sys.set_positions(x).unwrap();
    sys.set_velocities(v).unwrap();
    let t0 = Instant::now();
    sys.step().unwrap();
    (sys.positions().to_vec(), t0.elapsed().as_secs_f64())
}

fn rms_dist(a: &[Vec3], b: &[Vec3]) -> Real {
    (a.iter().zip(b).map(|(p, q)| (p - q).norm_squared()).sum::<Real>() / a.len() as Real).sqrt()
}

fn main() {
    let n: u32 = arg("--n", 10_000);
    let max_k: u32 = arg("--max", 20);
    let settle: u32 = arg("--settle", 30);
    let reference: u32 = arg("--reference", 2000);
    let repeats: u32 = arg("--repeats", 5);

    let side = (n as f64).sqrt().round() as u32;
    let mesh = grid(side, side, 2.0 / (side - 1) as f64);
    let nv = mesh.positions.len();
    let masses = area_lumped(&mesh, 1.0);
    let (ends, k) = springs_from_triangles(nv, &mesh.triangles).unwrap().with_stiffness(100.0, 10.0);
    let params = SimParams {
        time_step: 1.0 / 120.0,
        iterations: 10,
        acceleration: Acceleration::Plain,
        coulomb: FieldMethod::Off,
        ..SimParams::default()
    };
    let mut sys = System::new(&mesh.positions, &masses, &ends, &k, params).unwrap();
    let top: Vec<u32> = (0..nv as u32).filter(|&i| mesh.positions[i as usize].y > 2.0 - 1e-9).collect();
    sys.set_pins(&top).unwrap();
    sys.step_n(settle).unwrap();
    let (x, v) = (sys.positions().to_vec(), sys.velocities().to_vec());
    let speed = v.iter().map(|v| v.norm()).fold(0.0, Real::max);
    let (x_ref, t_ref) = one_step(&mut sys, &x, &v, reference, Acceleration::Anderson);
    let (x_plain_ref, t_plain) = one_step(&mut sys, &x, &v, 3 * reference, Acceleration::Plain);
    let scale = max_dist(&x_ref, &x);
    let threads = rayon::current_num_threads();
    println!(
        "hanging cloth: {nv} vertices, {} springs, {} pins; after {settle} steps the fastest vertex moves at \
         {speed:.3} m/s; the step moves a vertex up to {scale:.3e} m",
        ends.len(),
        top.len()
    );
    println!(
        "reference: {reference} accelerated iterations ({t_ref:.2} s) vs {} plain ({t_plain:.2} s): they differ \
         by {:.2e} of the step; rayon threads: {threads}",
        3 * reference,
        max_dist(&x_ref, &x_plain_ref) / scale
    );
    let rms_scale = rms_dist(&x_ref, &x);
    println!(
        "\n| K | plain error | plain rms | plain ms | accelerated error | accelerated rms | accelerated ms |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    let mut rows = Vec::new();
    for k in 1..=max_k {
        let (mut e, mut r, mut t) = ([0.0; 2], [0.0; 2], [f64::INFINITY; 2]);
        for _ in 0..repeats {
            for (j, acc) in [Acceleration::Plain, Acceleration::Anderson].into_iter().enumerate() {
                let (xk, secs) = one_step(&mut sys, &x, &v, k, acc);
                e[j] = max_dist(&xk, &x_ref) / scale;
                r[j] = rms_dist(&xk, &x_ref) / rms_scale;
                t[j] = t[j].min(secs);
            }
        }
        println!(
            "| {k} | {:.3e} | {:.3e} | {:.2} | {:.3e} | {:.3e} | {:.2} |",
            e[0],
            r[0],
            t[0] * 1e3,
            e[1],
            r[1],
            t[1] * 1e3
        );
        rows.push((e, r, t));
    }
    if let Some(r10) = rows.get(9) {
        let (e10, rms10, t10) = (r10.0[0], r10.1[0], r10.2[0]);
        match rows.iter().position(|(e, r, _)| e[1] <= e10 && r[1] <= rms10) {
            Some(i) => println!(
                "\n{} accelerated iterations are at least as accurate as 10 plain ones: {:.2} vs {:.2} ms per \
                 step ({:.0} %)",
                i + 1,
                rows[i].2[1] * 1e3,
                t10 * 1e3,
                100.0 * rows[i].2[1] / t10
            ),
            None => println!("\nno accelerated K up to {max_k} is as accurate as 10 plain iterations"),
        }
    }
}
