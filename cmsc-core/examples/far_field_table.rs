//! The accuracy and the cost of multiple time stepping of DDEF's far field
//! ([`SimParams::far_field_interval`], issue 19): the whole field every `K` steps, its exact
//! near part alone in between, against the whole field every step (`K = 1`) and against the
//! exact direct sum every step (the yardstick: DDEF's own error).
//!
//! - `torus`: a torus of about `--n` vertices (R = 1 m, r = 0.3 m; the paper's Fig. 4 torus
//!   refined at the same totals: 145 kg, 870 µC, springs of 10 N/m, no gravity, no damping)
//!   pushed outwards by its own charge for `--seconds` at h = 1/120 s, the IMEX step (Eq. 12).
//!   Reported: total energy at the end relative to the start (Eq. 12 loses energy), its
//!   deviation from `K = 1` over the run (largest `|E_K − E_1| / |E_1(0)|`), and the position
//!   error at the end (RMS over the vertices / the torus's bounding-box diagonal).
//! - `cloth`: the bake benchmark's hanging cloth (`bake_profile`'s scene: `--n` vertices, 2 m,
//!   top row pinned, 1 kg, `--charge` µC) for `--steps` steps: the position error at the end
//!   (RMS and largest, over the vertices, / 2 m and / the RMS displacement from the start).
//!
//! Both print the mean Coulomb time and the whole step's time per step.
//!
//! Run: `cargo run --release -p cmsc-core --example far_field_table -- torus [--n 10000]
//! [--seconds 3] [--k 1,2,3,5,10]` or `... -- cloth [--n 100000] [--steps 60] [--charge 10]
//! [--k 1,5]`; `RAYON_NUM_THREADS` sets the threads.

use std::time::{Duration, Instant};

use cmsc_core::shapes::{self, TriMesh};
use cmsc_core::{springs_from_triangles, FieldMethod, Real, SimParams, System, Vec3};

#[path = "common/args.rs"]
mod args;
#[path = "common/lumped.rs"]
mod lumped;
use args::arg;
use lumped::area_lumped;

fn intervals(default: &str) -> Vec<u32> {
    arg("--k", default.to_string()).split(',').map(|k| k.parse().expect("--k: a list of intervals")).collect()
}

/// A run: positions at the end, total energy per step, Coulomb and whole-step time per step.
struct Run {
    x: Vec<Vec3>,
    energy: Vec<Real>,
    coulomb: Duration,
    step: Duration,
}

/// `energies`: whether to record them (the exact `O(n²)` Coulomb energy: not at 100K).
fn run(mut sys: System, steps: u32, energies: bool) -> Run {
    let total = |sys: &System| if energies { sys.energies().total } else { 0.0 };
    let mut energy = vec![total(&sys)];
    let (mut coulomb, t0) = (Duration::ZERO, Instant::now());
    for _ in 0..steps {
        sys.step().unwrap();
        coulomb += sys.last_step_timings().coulomb;
        energy.push(total(&sys));
    }
    Run { x: sys.positions().to_vec(), energy, coulomb: coulomb / steps, step: t0.elapsed() / steps }
}

fn rms(a: &[Vec3], b: &[Vec3]) -> Real {
    (a.iter().zip(b).map(|(p, q)| (p - q).norm_squared()).sum::<Real>() / a.len() as Real).sqrt()
}

fn largest(a: &[Vec3], b: &[Vec3]) -> Real {
    a.iter().zip(b).map(|(p, q)| (p - q).norm()).fold(0.0, Real::max)
}

fn diagonal(x: &[Vec3]) -> Real {
    let lo = x.iter().fold(Vec3::repeat(Real::INFINITY), |a, p| a.inf(p));
    let hi = x.iter().fold(Vec3::repeat(Real::NEG_INFINITY), |a, p| a.sup(p));
    (hi - lo).norm()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn system(mesh: &TriMesh, masses: &[Real], stiffness: (Real, Real), params: SimParams) -> System {
    let n = mesh.positions.len();
    let (ends, k) =
        springs_from_triangles(n, &mesh.triangles).unwrap().with_stiffness(stiffness.0, stiffness.1);
    let (ends, k): (Vec<_>, Vec<_>) = ends.into_iter().zip(k).filter(|(_, k)| *k > 0.0).unzip();
    System::new(&mesh.positions, masses, &ends, &k, params).unwrap()
}

fn torus() {
    let n: f64 = arg("--n", 10_000.0);
    let seconds: f64 = arg("--seconds", 3.0);
    let v = ((n / 3.3).sqrt()).round() as u32; // u ≈ 3.3 v keeps the triangles near-equilateral
    let mesh = shapes::torus((3.3 * v as f64).round() as u32, v, 1.0, 0.3);
    let nv = mesh.positions.len();
    let h = 1.0 / 120.0;
    let steps = (seconds / h).round() as u32;
    let scene = |coulomb, k| {
        let params = SimParams {
            time_step: h,
            gravity: Vec3::zeros(),
            coulomb,
            far_field_interval: k,
            ..SimParams::default()
        };
        let mut sys = system(&mesh, &vec![145.0 / nv as Real; nv], (10.0, 0.0), params);
        sys.set_charges(&vec![870e-6 / nv as Real; nv]).unwrap();
        sys
    };
    println!("torus: {nv} vertices, {steps} steps of h = 1/120 s, IMEX (Eq. 12), adaptive DDEF\n");
    let exact = run(scene(FieldMethod::Direct, 1), steps, true);
    let size = diagonal(&exact.x);
    let e0 = exact.energy[0].abs();
    println!("| field | K | E(T)/E(0) | max |E − E(K=1)|/|E(0)| | positions / diagonal vs K = 1 | vs direct | Coulomb ms/step | step ms/step |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let every = run(scene(FieldMethod::Ddef, 1), steps, true);
    let row = |name: &str, k: u32, r: &Run| {
        let dev = r.energy.iter().zip(&every.energy).map(|(a, b)| (a - b).abs()).fold(0.0, Real::max) / e0;
        println!(
            "| {name} | {k} | {:.4} | {dev:.2e} | {:.2e} | {:.2e} | {:.1} | {:.1} |",
            r.energy.last().unwrap() / r.energy[0],
            rms(&r.x, &every.x) / size,
            rms(&r.x, &exact.x) / size,
            ms(r.coulomb),
            ms(r.step)
        );
    };
    row("direct", 1, &exact);
    row("DDEF", 1, &every);
    for k in intervals("2,3,5,10").into_iter().filter(|&k| k > 1) {
        row("DDEF", k, &run(scene(FieldMethod::Ddef, k), steps, true));
    }
}

fn cloth() {
    let n: f64 = arg("--n", 100_000.0);
    let steps: u32 = arg("--steps", 60);
    let charge: Real = arg("--charge", 10.0);
    let side = n.sqrt().round() as u32;
    let mesh = shapes::grid(side, side, 2.0 / (side - 1) as Real);
    let nv = mesh.positions.len();
    let masses = area_lumped(&mesh, 1.0);
    let top: Vec<u32> = (0..nv as u32).filter(|&i| mesh.positions[i as usize].y > 2.0 - 1e-9).collect();
    let scene = |k| {
        let params = SimParams { coulomb: FieldMethod::Ddef, far_field_interval: k, ..SimParams::default() };
        let mut sys = system(&mesh, &masses, (100.0, 10.0), params);
        sys.set_pins(&top).unwrap();
        sys.set_charges(&vec![charge * 1e-6 / nv as Real; nv]).unwrap();
        sys
    };
    println!("cloth: {nv} vertices, {steps} steps of h = 1/120 s, {charge} µC, adaptive DDEF\n");
    let every = run(scene(1), steps, false);
    let moved = rms(&every.x, &mesh.positions);
    println!("| K | RMS / 2 m | largest / 2 m | RMS / RMS displacement | Coulomb ms/step | step ms/step |");
    println!("|---:|---:|---:|---:|---:|---:|");
    let row = |k: u32, r: &Run| {
        let e = rms(&r.x, &every.x);
        let worst = largest(&r.x, &every.x);
        println!(
            "| {k} | {:.2e} | {:.2e} | {:.2e} | {:.1} | {:.1} |",
            e / 2.0,
            worst / 2.0,
            e / moved,
            ms(r.coulomb),
            ms(r.step)
        );
    };
    row(1, &every);
    for k in intervals("5").into_iter().filter(|&k| k > 1) {
        row(k, &run(scene(k), steps, false));
    }
}

fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("cloth") => cloth(),
        Some("torus") | None => torus(),
        Some(other) => panic!("{other:?}: use torus or cloth"),
    }
}
