//! P3M against DDEF and the direct sum in the same run: time per call and relative RMS force
//! error against the exact sum, on two point sets at each `n`:
//!
//! - `torus`: the torus surface of `ddef_bench` and `tests/bench/fmm3d_compare.py` (R = 1 m,
//!   r = 0.3 m, a `5v × v` grid), −1 µC on every fifth vertex and +1 µC elsewhere;
//! - `cloth`: the bake benchmark's 2 m square cloth (`bake_profile`'s grid) caught mid-swing, a
//!   gentle wave of 5 cm across it, 10 µC shared by all vertices (one sign);
//! - `apart` (not by default): two such tori of `n/2` points, `--gap` metres (default 5)
//!   between their centres along the box's diagonal: a sparse scene.
//!
//! The error is `sqrt(Σ |F − F_exact|² / Σ |F_exact|²)` over the targets where the exact force
//! was computed: every vertex up to `--full` (default 20,000) charges, else `--samples` (2,000)
//! evenly spaced vertices, with the direct sum's full time extrapolated (`n / samples` × the
//! sampled time). DDEF is the adaptive grid, timed once its size has settled; P3M is timed on
//! its first call (choosing the parameters and transforming the kernels) and on a second call
//! at positions moved by a hundredth of a millimetre (a step: the mesh is kept).
//!
//! Run: `cargo run --release -p cmsc-core --example p3m_bench [-- --n 10000,100000,1000000]
//! [--shapes torus,cloth] [--tolerances 1e-2,1e-3] [--samples 2000] [--full 20000] [--ddef 1]`
//! (`--ddef 0` skips DDEF); `RAYON_NUM_THREADS` sets the threads.

use std::time::Instant;

use cmsc_core::coulomb::{Ddef, DirectSum, FieldSolver, P3m};
use cmsc_core::{shapes, Real, Vec3, COULOMB_CONSTANT as KC};

#[path = "common/args.rs"]
mod args;
use args::arg;

fn list<T: std::str::FromStr>(name: &str, default: &str) -> Vec<T> {
    arg(name, default.to_string())
        .split(',')
        .map(|v| v.parse().unwrap_or_else(|_| panic!("{name}: a comma-separated list")))
        .collect()
}

fn scene(shape: &str, n: usize) -> (Vec<Vec3>, Vec<Real>) {
    match shape {
        "torus" => {
            let v = ((n as f64 / 5.0).sqrt()).round() as u32;
            let x = shapes::torus(5 * v, v, 1.0, 0.3).positions;
            let q = (0..x.len()).map(|i| if i % 5 == 0 { -1e-6 } else { 1e-6 }).collect();
            (x, q)
        }
        "cloth" => {
            let side = (n as f64).sqrt().round() as u32;
            let x: Vec<Vec3> = shapes::grid(side, side, 2.0 / (side - 1) as Real)
                .positions
                .iter()
                .map(|p| {
                    let w =
                        0.05 * (1.5 * std::f64::consts::PI * p.x).sin() * (std::f64::consts::PI * p.y).cos();
                    Vec3::new(p.x, p.y, w)
                })
                .collect();
            let q = vec![10e-6 / x.len() as Real; x.len()];
            (x, q)
        }
        "apart" => {
            // two tori of n/2 points, their centres `--gap` metres apart along the diagonal
            let (one, q) = scene("torus", n / 2);
            let offset = Vec3::repeat(arg("--gap", 5.0) / 3f64.sqrt());
            let x =
                one.iter().map(|p| p - offset * 0.5).chain(one.iter().map(|p| p + offset * 0.5)).collect();
            (x, [q.clone(), q].concat())
        }
        other => panic!("--shapes: {other:?} is neither torus, cloth nor apart"),
    }
}

fn error(f: &[Vec3], targets: &[usize], exact: &[Vec3]) -> Real {
    let num: Real = targets.iter().zip(exact).map(|(&i, e)| (f[i] - e).norm_squared()).sum();
    let den: Real = exact.iter().map(|e| e.norm_squared()).sum();
    (num / den).sqrt()
}

fn main() {
    let sizes: Vec<usize> = list("--n", "10000,100000,1000000");
    let shape_names: Vec<String> = list("--shapes", "torus,cloth");
    let tolerances: Vec<Real> = list("--tolerances", "1e-2,1e-3");
    let samples: usize = arg("--samples", 2000);
    let full: usize = arg("--full", 20_000);
    let with_ddef = arg("--ddef", 1) != 0;
    let eps = 1e-6;
    println!("threads: {}", rayon::current_num_threads());
    println!("| shape | n | method | time | first call | rel. RMS error | vs direct | vs DDEF | stages (spread / FFT / interp. / short) | α h r_c p, mesh |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for shape in &shape_names {
        for &n in &sizes {
            let (x, q) = scene(shape, n);
            let n = x.len();
            let sampled = n > full;
            let targets: Vec<usize> =
                if sampled { (0..samples).map(|k| k * (n / samples)).collect() } else { (0..n).collect() };
            let mut exact = vec![Vec3::zeros(); targets.len()];
            let t = Instant::now();
            DirectSum::default().forces_on(&x, &q, KC, eps, &targets, &mut exact);
            let direct_s = t.elapsed().as_secs_f64() * n as f64 / targets.len() as f64;
            println!(
                "| {shape} | {n} | direct | {:.3} s{} | | 0 | 1× | | | |",
                direct_s,
                if sampled { " (extrapolated)" } else { "" }
            );
            // positions of "the next step": every vertex moved by 10 µm
            let moved: Vec<Vec3> = x
                .iter()
                .enumerate()
                .map(|(i, p)| p + Vec3::repeat(1e-5 * ((i % 7) as Real - 3.0) / 3.0))
                .collect();
            let mut out = vec![Vec3::zeros(); n];
            let mut ddef_s = None;
            if with_ddef {
                let mut ddef = Ddef::adaptive();
                let t = Instant::now();
                ddef.forces(&x, &q, KC, eps, &mut out).unwrap();
                let first = t.elapsed().as_secs_f64();
                for _ in 0..8 {
                    if ddef.grid_points() == ddef.timings().grid_points {
                        break;
                    }
                    ddef.forces(&x, &q, KC, eps, &mut out).unwrap();
                }
                let t = Instant::now();
                ddef.forces(&moved, &q, KC, eps, &mut out).unwrap();
                let s = t.elapsed().as_secs_f64();
                ddef_s = Some(s);
                let mut exact_moved = vec![Vec3::zeros(); targets.len()];
                DirectSum::default().forces_on(&moved, &q, KC, eps, &targets, &mut exact_moved);
                println!(
                    "| {shape} | {n} | DDEF (adaptive, m = {}) | {:.3} s | {:.3} s | {:.2e} | {:.1}× | 1× | | |",
                    ddef.timings().grid_points,
                    s,
                    first,
                    error(&out, &targets, &exact_moved),
                    direct_s / s
                );
            }
            for &tolerance in &tolerances {
                let mut p3m = P3m::new().with_tolerance(tolerance).unwrap();
                let t = Instant::now();
                p3m.forces(&x, &q, KC, eps, &mut out).unwrap();
                let first = t.elapsed().as_secs_f64();
                let first_err = error(&out, &targets, &exact);
                let t = Instant::now();
                p3m.forces(&moved, &q, KC, eps, &mut out).unwrap();
                let s = t.elapsed().as_secs_f64();
                let st = p3m.timings();
                let mut exact_moved = vec![Vec3::zeros(); targets.len()];
                DirectSum::default().forces_on(&moved, &q, KC, eps, &targets, &mut exact_moved);
                let err = error(&out, &targets, &exact_moved);
                println!(
                    "| {shape} | {n} | P3M {tolerance:.0e}{} | {:.3} s | {:.3} s ({:.2e}) | {:.2e} | {:.1}× | {} | {:.1} / {:.1} / {:.1} / {:.1} ms | {:.1} {:.4} {:.4} {}, {:?} of {:?} |",
                    if st.fell_back { " (fell back to DDEF)" } else { "" },
                    s,
                    first,
                    first_err,
                    err,
                    direct_s / s,
                    ddef_s.map_or("-".into(), |d| format!("{:.2}×", d / s)),
                    st.spread * 1e3,
                    st.fft * 1e3,
                    st.interpolate * 1e3,
                    st.short * 1e3,
                    st.alpha,
                    st.h,
                    st.r_c,
                    st.order,
                    st.mesh,
                    st.fft_mesh,
                );
            }
        }
    }
}
