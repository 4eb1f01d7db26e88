//! Stage split of the IMEX step on the bake benchmark's scene (`tests/bench/bake_benchmark.py`),
//! without Blender: mean milliseconds per step for each stage.
//!
//! The scene: a square grid of about `--n` vertices, 2 m wide, horizontal, its top row pinned,
//! gravity, structural/bending springs 100/10 N/m, h = 1/120 s (24 fps × 5 substeps), the first
//! `--charged` fraction of the vertices (rows from the bottom) sharing the charge equally.
//!
//! - `--scene hanging` (the default, the benchmark's): the add-on's defaults, 1 kg for the whole
//!   cloth spread over the vertices by area, and `--charge` µC in all (default 10). It swings
//!   down and hangs, a 2 m cloth at every resolution. The charge barely shows in a flat sheet
//!   (100 µC fans the free edge out by 3 %: the springs resist stretching in the plane); DDEF's
//!   cost depends on where the charges are, not on their size.
//! - `--scene falling`: the benchmark's scene before 2026-11-24, 0.3 kg per vertex (Blender
//!   Cloth's default vertex mass) and 1 nC per vertex. Its weight (30 t at 100K vertices) is
//!   far beyond what 100 N/m springs hold: the cloth tears loose and falls freely, while the rows
//!   by the pins stretch into a thread hundreds of metres long. Kept because DDEF measurements
//!   in the README were taken on it (charges filling little of their box).
//!
//! Run: `cargo run --release -p cmsc-core --example bake_profile -- [--n 10000] [--steps 20]
//! [--method ddef|direct|p3m|off] [--iterations 6] [--plain] [--far-interval 1] [--charged 1] [--m 0] [--every 0]
//! [--snapshots DIR] [--scene hanging|falling] [--charge 10] [--substeps 5] [--tol 0] [--settling 0]`.
//! `--substeps 3 --tol 1e-3 --settling 2` are the add-on's defaults (h = 1/72 s, iterations to
//! the relative update 10⁻³, Settling 2/s); the others default to the fixed schedule before.
//! `--m` is the DDEF grid size (0 = adaptive, the add-on's default); `--far-interval K` holds
//! DDEF's far field for K steps (`SimParams::far_field_interval`). With `--every` > 0 it
//! also prints the mean Coulomb time of each window of that many steps (the cost changes as the
//! cloth moves) and the extent of the cloth, and with `--snapshots` it writes the positions at
//! the end of each window to `DIR/step_<k>.f64` (little-endian x, y, z per vertex), which
//! `ddef_bench --points` reads. The first step includes the factorization that pinning the top
//! row requires.

use std::time::{Duration, Instant};

use cmsc_core::shapes::grid;
use cmsc_core::{
    springs_from_triangles, Acceleration, FieldMethod, Real, SimParams, StepTimings, System, Vec3,
};

#[path = "common/args.rs"]
mod args;
#[path = "common/lumped.rs"]
mod lumped;
use args::arg;
use lumped::area_lumped;

fn main() {
    let n: u32 = arg("--n", 10_000);
    let steps: u32 = arg("--steps", 20);
    let method = match arg("--method", "ddef".to_string()).as_str() {
        "direct" => FieldMethod::Direct,
        "ddef" => FieldMethod::Ddef,
        "off" => FieldMethod::Off,
        "p3m" => FieldMethod::P3m,
        other => panic!("--method {other:?}: use ddef, direct, p3m or off"),
    };
    let iterations: u32 = arg("--iterations", cmsc_core::DEFAULT_ITERATIONS);
    // plain Liu 2013 iterations instead of the accelerated ones (the default before issue 19 was
    // 10 plain)
    let plain = std::env::args().any(|a| a == "--plain");
    let far_field_interval: u32 = arg("--far-interval", 1);
    let charged: f64 = arg("--charged", 1.0);
    let grid_points: u32 = arg("--m", 0);
    let every: u32 = arg("--every", 0);
    let snapshots =
        Some(arg("--snapshots", String::new())).filter(|d| !d.is_empty()).map(std::path::PathBuf::from);
    let scene = arg("--scene", "hanging".to_string());
    // the add-on's defaults since issue 29 are `--substeps 3 --tol 1e-3 --settling 2` (the
    // least of adaptive substeps, iterations to a tolerance, Settling 2/s)
    let substeps: u32 = arg("--substeps", 5);
    let tolerance: Real = arg("--tol", 0.0);
    let settling: Real = arg("--settling", 0.0);

    let side = (n as f64).sqrt().round() as u32;
    let mesh = grid(side, side, 2.0 / (side - 1) as f64);
    let nv = mesh.positions.len();
    let n_charged = (charged * nv as f64).round() as usize;
    let (masses, q) = match scene.as_str() {
        "hanging" => (area_lumped(&mesh, 1.0), arg("--charge", 10.0) * 1e-6 / n_charged.max(1) as Real),
        "falling" => (vec![0.3; nv], 1e-9),
        other => panic!("--scene {other:?}: use hanging or falling"),
    };
    let (ends, k) = springs_from_triangles(nv, &mesh.triangles).unwrap().with_stiffness(100.0, 10.0);
    let params = SimParams {
        time_step: 1.0 / (24.0 * substeps as Real),
        iterations,
        iteration_tolerance: tolerance,
        relative_damping: settling,
        acceleration: if plain { Acceleration::Plain } else { Acceleration::Anderson },
        coulomb: method,
        grid_points,
        far_field_interval,
        ..SimParams::default()
    };
    let t0 = Instant::now();
    let mut sys = System::new(&mesh.positions, &masses, &ends, &k, params).unwrap();
    let top: Vec<u32> = (0..nv as u32).filter(|&i| mesh.positions[i as usize].y > 2.0 - 1e-9).collect();
    sys.set_pins(&top).unwrap();
    sys.set_charges(&(0..nv).map(|i| if i < n_charged { q } else { 0.0 }).collect::<Vec<_>>()).unwrap();
    eprintln!(
        "{scene}: {nv} vertices, {} springs, {} pins; setup {:.1} ms",
        ends.len(),
        top.len(),
        t0.elapsed().as_secs_f64() * 1e3
    );
    let mut sum = StepTimings::default();
    let t0 = Instant::now();
    let mut window = Duration::ZERO;
    let mut iterations_run = 0u64;
    for s in 1..=steps {
        sys.step().unwrap();
        iterations_run += u64::from(sys.last_step_counts().iterations);
        sum += *sys.last_step_timings();
        window += sys.last_step_timings().coulomb;
        if every > 0 && s % every == 0 {
            let (lo, hi) = sys
                .positions()
                .iter()
                .fold((Vec3::repeat(Real::INFINITY), Vec3::repeat(Real::NEG_INFINITY)), |(lo, hi), p| {
                    (lo.inf(p), hi.sup(p))
                });
            println!(
                "steps {}..{s}: coulomb {:.1} ms/step; cloth spans {:.2} × {:.2} × {:.2} m",
                s + 1 - every,
                window.as_secs_f64() * 1e3 / every as f64,
                hi.x - lo.x,
                hi.y - lo.y,
                hi.z - lo.z
            );
            window = Duration::ZERO;
            if let Some(dir) = &snapshots {
                let bytes: Vec<u8> =
                    sys.positions().iter().flat_map(|p| p.iter().flat_map(|c| c.to_le_bytes())).collect();
                std::fs::create_dir_all(dir).unwrap();
                std::fs::write(dir.join(format!("step_{s}.f64")), bytes).unwrap();
            }
        }
    }
    let wall = t0.elapsed().as_secs_f64() * 1e3 / steps as f64;
    let ms = |d: Duration| d.as_secs_f64() * 1e3 / steps as f64;
    let iterations_run = iterations_run as f64 / steps as f64;
    println!(
        "{scene} {nv} {method:?} m={grid_points} far every {far_field_interval} K={iterations}{} h=1/{} tol {tolerance:e} \
         ({iterations_run:.1} iterations/step): {wall:.2} ms/step | factor {:.2} coulomb {:.2} external {:.2} springs {:.2} solve {:.2} finish {:.2}",
        if plain { " plain" } else { " accelerated" },
        24 * substeps,
        ms(sum.factorization),
        ms(sum.coulomb),
        ms(sum.external),
        ms(sum.springs),
        ms(sum.solve),
        ms(sum.finish)
    );
}
