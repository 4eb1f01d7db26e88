//! The table of issue 20: the paper's IMEX step (Eq. 12) against the low-dissipation IMEX
//! ([`Integrator::ImexLowDissipation`]) on
//!
//! - the paper's torus (§4, Fig. 4: 145 vertices, k = 10 N/m, q = 6 µC, 15 s) at 1 kg and
//!   0.01 kg per vertex and h = 0.015, 0.03, 0.15 s: mean relative energy error against velocity
//!   Verlet at h = 0.0001 s (samples every 0.15 s, as `tests/torus.rs`; at 0.01 kg Verlet at
//!   0.0005 s is no reference: its energy drifts 77-fold), positions at t = 6 s
//!   against that reference (RMS over the vertices / the torus's bounding-box diagonal), Coulomb
//!   force and potential evaluations per step, wall time per step;
//! - the validation report's Fig. 5 sphere (icosphere of 642 vertices, radius 1 m, k = 0.5 N/m,
//!   145 kg and 145 × 8 µC in all, 15 s) at h = 0.01 … 0.2 s: whether it stays within 100 m,
//!   the mean relative energy error over the last 5 s against Verlet at h = 0.0025 s, and the
//!   cost per step.
//!
//! - the cost of the safeguard's Coulomb potential with DDEF forces (the exact sum, a fallback).
//!
//! Run with `cargo run --release -p cmsc-core --example lowdiss_table [torus|sphere|potential]`
//! (a few minutes on two cores; `RAYON_NUM_THREADS` sets the threads; `MASSES`, `HS`, `HREF`
//! override the torus's masses, step sizes and reference step as comma-separated lists).

use std::time::Instant;

use cmsc_core::{shapes, springs_from_triangles, FieldMethod, Integrator, SimParams, System, Vec3};

/// A mesh with structural springs of stiffness `k` (N/m), mass `m` (kg) and charge `q` (C) per
/// vertex, no gravity, direct Coulomb.
fn scene(mesh: &shapes::TriMesh, k: f64, m: f64, q: f64, h: f64, integrator: Integrator) -> System {
    let n = mesh.positions.len();
    let springs = springs_from_triangles(n, &mesh.triangles).unwrap();
    let (ends, stiffness) = springs.with_stiffness(k, 0.0);
    let (ends, stiffness): (Vec<_>, Vec<_>) =
        ends.into_iter().zip(stiffness).filter(|(_, k)| *k > 0.0).unzip();
    let params = SimParams {
        time_step: h,
        iterations: 10,
        gravity: Vec3::zeros(),
        coulomb: FieldMethod::Direct,
        integrator,
        ..SimParams::default()
    };
    let mut sys = System::new(&mesh.positions, &vec![m; n], &ends, &stiffness, params).unwrap();
    sys.set_charges(&vec![q; n]).unwrap();
    sys
}

/// One run: total energy every `sample` s, positions at `snapshot` s, whether and when a vertex
/// left the ball of radius `limit` around the start's centroid, and the cost.
struct Run {
    energy: Vec<f64>,
    snapshot: Vec<Vec3>,
    left: Option<f64>,
    forces_per_step: f64,
    potentials_per_step: f64,
    ms_per_step: f64,
}

fn run(mut sys: System, h: f64, duration: f64, sample: f64, snapshot: f64, limit: f64) -> Run {
    let n = sys.n_vertices() as f64;
    let centre = sys.positions().iter().sum::<Vec3>() / n;
    let (every, at) = ((sample / h).round() as u64, (snapshot / h).round() as u64);
    let steps = (duration / h).round() as u64;
    let mut out = Run {
        energy: vec![sys.energies().total],
        snapshot: vec![],
        left: None,
        forces_per_step: 0.0,
        potentials_per_step: 0.0,
        ms_per_step: 0.0,
    };
    let (mut forces, mut potentials, mut done) = (0u64, 0u64, 0u64);
    let t0 = Instant::now();
    for k in 1..=steps {
        if sys.step().is_err() || sys.positions().iter().any(|p| (p - centre).norm() > limit) {
            out.left = Some(k as f64 * h);
            break;
        }
        let c = sys.last_step_counts();
        forces += c.coulomb_forces as u64;
        potentials += c.coulomb_potentials as u64;
        done += 1;
        if k % every == 0 {
            out.energy.push(sys.energies().total);
        }
        if k == at {
            out.snapshot = sys.positions().to_vec();
        }
    }
    out.ms_per_step = t0.elapsed().as_secs_f64() * 1e3 / done.max(1) as f64;
    out.forces_per_step = forces as f64 / done.max(1) as f64;
    out.potentials_per_step = potentials as f64 / done.max(1) as f64;
    out
}

/// Mean of `|E − E_ref| / |E_ref|` over the samples from index `from`.
fn mean_error(e: &[f64], reference: &[f64], from: usize) -> f64 {
    let pairs: Vec<f64> = e.iter().zip(reference).skip(from).map(|(a, b)| ((a - b) / b).abs()).collect();
    pairs.iter().sum::<f64>() / pairs.len() as f64
}

fn rms(a: &[Vec3], b: &[Vec3]) -> f64 {
    (a.iter().zip(b).map(|(a, b)| (a - b).norm_squared()).sum::<f64>() / a.len() as f64).sqrt()
}

fn size(x: &[Vec3]) -> f64 {
    let (lo, hi) = x.iter().fold((x[0], x[0]), |(lo, hi), p| (lo.inf(p), hi.sup(p)));
    (hi - lo).norm()
}

const INTEGRATORS: [(Integrator, &str); 2] =
    [(Integrator::Imex, "IMEX (Eq. 12)"), (Integrator::ImexLowDissipation, "IMEX low-dissipation")];

fn torus_table() {
    let mesh = shapes::torus(29, 5, 1.0, 0.3);
    let d = size(&mesh.positions);
    println!("## Paper torus (145 vertices, k = 10 N/m, q = 6 µC, 15 s; reference: Verlet h = 0.0001 s)\n");
    println!("| mass/vertex | h (s) | integrator | mean energy error | positions at 6 s (RMS/size) | Coulomb forces/step | potentials/step | ms/step |");
    println!("|---|---|---|---|---|---|---|---|");
    for mass in list("MASSES", &[1.0, 0.01]) {
        let h_ref = list("HREF", &[0.0001])[0];
        let reference =
            run(scene(&mesh, 10.0, mass, 6e-6, h_ref, Integrator::Verlet), h_ref, 15.0, 0.15, 6.0, 1e3);
        let e = &reference.energy;
        let drift = e.iter().map(|x| (x / e[0] - 1.0).abs()).fold(0.0, f64::max);
        eprintln!("reference {mass} kg, h = {h_ref}: left {:?}, energy drift {drift:.2e}", reference.left);
        for h in list("HS", &[0.015, 0.03, 0.15]) {
            for (integrator, name) in INTEGRATORS {
                let r = run(scene(&mesh, 10.0, mass, 6e-6, h, integrator), h, 15.0, 0.15, 6.0, 20.0);
                let (err, pos) = match r.left {
                    None => (
                        format!("{:.4}", mean_error(&r.energy, &reference.energy, 0)),
                        format!("{:.3}", rms(&r.snapshot, &reference.snapshot) / d),
                    ),
                    Some(t) => (format!("left 20 m at {t:.2} s"), "-".into()),
                };
                println!(
                    "| {mass} kg | {h} | {name} | {err} | {pos} | {:.2} | {:.2} | {:.2} |",
                    r.forces_per_step, r.potentials_per_step, r.ms_per_step
                );
            }
        }
    }
}

fn sphere_table() {
    let mesh = shapes::icosphere(3, 1.0);
    let n = mesh.positions.len() as f64;
    let (m, q) = (145.0 / n, 145.0 * 8e-6 / n);
    println!("\n## Fig. 5 sphere (642 vertices, k = 0.5 N/m, 145 kg and 145 × 8 µC in all, 15 s; reference: Verlet h = 0.0025 s)\n");
    println!("| h (s) | integrator | within 100 m | mean energy error, last 5 s | Coulomb forces/step | potentials/step | ms/step |");
    println!("|---|---|---|---|---|---|---|");
    let h_ref = 0.0025;
    let reference = run(scene(&mesh, 0.5, m, q, h_ref, Integrator::Verlet), h_ref, 15.0, h_ref, 15.0, 100.0);
    assert!(reference.left.is_none(), "the reference left the ball");
    for h in [0.01, 0.02, 0.05, 0.1, 0.15, 0.2] {
        for (integrator, name) in INTEGRATORS {
            let r = run(scene(&mesh, 0.5, m, q, h, integrator), h, 15.0, h, 15.0, 100.0);
            let (inside, err) = match r.left {
                None => {
                    // every step of the run against the reference at the same time, t >= 10 s
                    let errors: Vec<f64> = (0..r.energy.len())
                        .filter(|&k| k as f64 * h >= 10.0 - 1e-9)
                        .map(|k| {
                            let e_ref = reference.energy[(k as f64 * h / h_ref).round() as usize];
                            ((r.energy[k] - e_ref) / e_ref).abs()
                        })
                        .collect();
                    ("yes".to_string(), format!("{:.4}", errors.iter().sum::<f64>() / errors.len() as f64))
                }
                Some(t) => (format!("no, left at {t:.2} s"), "-".into()),
            };
            println!(
                "| {h} | {name} | {inside} | {err} | {:.2} | {:.2} | {:.2} |",
                r.forces_per_step, r.potentials_per_step, r.ms_per_step
            );
        }
    }
}

/// The safeguard's Coulomb potential with DDEF forces: the backend's `potential` is the exact
/// pairwise sum (a fallback), timed against one DDEF and one direct force evaluation on torus
/// point sets.
fn potential_cost() {
    use cmsc_core::coulomb::{coulomb_energy, Ddef, DirectSum, FieldSolver};
    println!("\n## Coulomb potential for the safeguard with DDEF (exact sum, the fallback) vs one force evaluation\n");
    println!("| n | DDEF forces (ms) | direct forces (ms) | exact potential (ms) |");
    println!("|---|---|---|---|");
    for (u, v) in [(100, 20), (250, 40), (500, 40)] {
        let x = shapes::torus(u, v, 1.0, 0.3).positions;
        let q = vec![1e-6; x.len()];
        let mut out = vec![Vec3::zeros(); x.len()];
        let time = |f: &mut dyn FnMut()| {
            f(); // warm-up (DDEF builds its grid)
            let t0 = Instant::now();
            f();
            t0.elapsed().as_secs_f64() * 1e3
        };
        let mut ddef = Ddef::adaptive();
        let t_ddef = time(&mut || ddef.forces(&x, &q, cmsc_core::COULOMB_CONSTANT, 1e-6, &mut out).unwrap());
        let mut direct = DirectSum::default();
        let t_direct =
            time(&mut || direct.forces(&x, &q, cmsc_core::COULOMB_CONSTANT, 1e-6, &mut out).unwrap());
        let t_potential = time(&mut || {
            std::hint::black_box(coulomb_energy(&x, &q, cmsc_core::COULOMB_CONSTANT, 1e-6));
        });
        println!("| {} | {t_ddef:.1} | {t_direct:.1} | {t_potential:.1} |", x.len());
    }
}

/// A comma-separated list of numbers from the environment variable `name`, or `default`.
fn list(name: &str, default: &[f64]) -> Vec<f64> {
    std::env::var(name)
        .map_or(default.to_vec(), |v| v.split(',').map(|x| x.trim().parse().unwrap()).collect())
}

fn main() {
    println!("threads: {}\n", rayon::current_num_threads());
    // `lowdiss_table torus` or `lowdiss_table sphere` prints one table
    let which = std::env::args().nth(1).unwrap_or_default();
    if which.is_empty() || which == "torus" {
        torus_table();
    }
    if which.is_empty() || which == "sphere" {
        sphere_table();
    }
    if which == "potential" || which.is_empty() {
        potential_cost();
    }
}
