//! Stage split of the IMEX step on the bake benchmark's scene (`tests/bench/bake_benchmark.py`):
//! a square grid of about N vertices 2 m wide, top row pinned, gravity, every vertex charged
//! 1 nC, 0.3 kg per vertex, structural/bending springs 100/10 N/m, h = 1/120 s (24 fps × 5
//! substeps). Prints mean milliseconds per step for each stage.
//!
//! Run: `cargo run --release -p cmsc-core --example bake_profile -- [N] [steps] [method] [iterations] [charged] [m] [every] [dir]`
//! with method `direct` (default), `ddef` or `off`; defaults N = 10000, 20 steps, 10 iterations,
//! `charged` = 1, the fraction of the vertices (the first rows) that carry the charge, and the
//! DDEF grid size `m` = 1000 (0 = adaptive).
//! With `every` > 0 it also prints the mean Coulomb time of each window of that many steps (the
//! cost changes as the cloth falls and curls), and with `dir` it writes the positions at the end
//! of each window to `dir/step_<k>.f64` (little-endian x, y, z per vertex), which
//! `ddef_bench --points` reads.
//! The first step includes the factorization that pinning the top row requires.

use std::time::Instant;

use cmsc_core::shapes::grid;
use cmsc_core::{springs_from_triangles, FieldMethod, SimParams, StepTimings, System};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: u32 = args.get(1).map_or(10_000, |s| s.parse().unwrap());
    let steps: u32 = args.get(2).map_or(20, |s| s.parse().unwrap());
    let method = match args.get(3).map_or("direct", |s| s.as_str()) {
        "direct" => FieldMethod::Direct,
        "ddef" => FieldMethod::Ddef,
        "off" => FieldMethod::Off,
        other => panic!("method {other:?}: use direct, ddef or off"),
    };
    let iterations: u32 = args.get(4).map_or(10, |s| s.parse().unwrap());
    let charged: f64 = args.get(5).map_or(1.0, |s| s.parse().unwrap());
    let grid_points: u32 = args.get(6).map_or(1000, |s| s.parse().unwrap());
    let every: u32 = args.get(7).map_or(0, |s| s.parse().unwrap());
    let snapshots = args.get(8).map(std::path::PathBuf::from);
    let side = (n as f64).sqrt().round() as u32;
    let mesh = grid(side, side, 2.0 / (side - 1) as f64);
    let nv = mesh.positions.len();
    let (ends, k) = springs_from_triangles(nv, &mesh.triangles).unwrap().with_stiffness(100.0, 10.0);
    let params = SimParams {
        time_step: 1.0 / 120.0,
        iterations,
        coulomb: method,
        grid_points,
        ..SimParams::default()
    };
    let t0 = Instant::now();
    let mut sys = System::new(&mesh.positions, &vec![0.3; nv], &ends, &k, params).unwrap();
    let top: Vec<u32> = (0..nv as u32).filter(|&i| mesh.positions[i as usize].y > 2.0 - 1e-9).collect();
    sys.set_pins(&top).unwrap();
    let n_charged = (charged * nv as f64).round() as usize;
    sys.set_charges(&(0..nv).map(|i| if i < n_charged { 1e-9 } else { 0.0 }).collect::<Vec<_>>()).unwrap();
    eprintln!(
        "{nv} vertices, {} springs, {} pins; setup {:.1} ms",
        ends.len(),
        top.len(),
        t0.elapsed().as_secs_f64() * 1e3
    );
    let mut sum = StepTimings::default();
    let t0 = Instant::now();
    let mut window = std::time::Duration::ZERO;
    for s in 1..=steps {
        sys.step().unwrap();
        sum += *sys.last_step_timings();
        window += sys.last_step_timings().coulomb;
        if every > 0 && s % every == 0 {
            println!(
                "steps {}..{s}: coulomb {:.1} ms/step",
                s + 1 - every,
                window.as_secs_f64() * 1e3 / every as f64
            );
            window = std::time::Duration::ZERO;
            if let Some(dir) = &snapshots {
                let bytes: Vec<u8> =
                    sys.positions().iter().flat_map(|p| p.iter().flat_map(|c| c.to_le_bytes())).collect();
                std::fs::create_dir_all(dir).unwrap();
                std::fs::write(dir.join(format!("step_{s}.f64")), bytes).unwrap();
            }
        }
    }
    let wall = t0.elapsed().as_secs_f64() * 1e3 / steps as f64;
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3 / steps as f64;
    println!(
        "{nv} {method:?} m={grid_points} K={iterations}: {wall:.2} ms/step | factor {:.2} coulomb {:.2} external {:.2} springs {:.2} solve {:.2} finish {:.2}",
        ms(sum.factorization),
        ms(sum.coulomb),
        ms(sum.external),
        ms(sum.springs),
        ms(sum.solve),
        ms(sum.finish)
    );
}
