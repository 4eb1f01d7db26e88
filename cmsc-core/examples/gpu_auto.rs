//! The crossovers behind `FieldMethod::Auto` on a machine with a CUDA GPU
//! (`AUTO_GPU_MIN_VERTICES`, `AUTO_GPU_P3M_MIN_VERTICES`, `AUTO_GPU_DDEF_MIN_VERTICES`): for
//! torus-surface point sets of n = 1K–1M (every vertex charged, one in five negative), the time
//! of one field evaluation with each method Auto chooses among (CPU direct, CPU P3M, GPU direct,
//! GPU DDEF with `--m` grid points, 0 = the adaptive grid, the default), and each one's relative
//! L2 error against the exact sum on 2,000 sampled targets.
//!
//! A time is the fastest of three calls after a first one (which compiles the kernels, builds
//! DDEF's grid or chooses P3M's parameters). CPU direct is timed in full up to `--cpu-direct-max`
//! vertices (default 50K) and above that on the 2,000 sampled targets, scaled to n.
//!
//! It first prints the cost of the process's first GPU use (the CUDA context, NVRTC compiling
//! the direct-sum kernel and a first call on 1,000 charges), which a bake pays once.
//!
//! Run: `LD_LIBRARY_PATH=<dir of libnvrtc.so.12> cargo run --release -p cmsc-core --example
//! gpu_auto [-- --n 1000,2000,...] [--m 0] [--cpu-direct-max 50000] [--skip-ddef]`. Exits with status 2
//! and the reason when no CUDA device is usable.

#[path = "common/args.rs"]
mod args;
#[path = "common/torus_field.rs"]
mod torus_field;

use std::io::Write;
use std::time::Instant;

use args::arg;
use cmsc_core::coulomb::{gpu, make_solver, DirectSum, FieldSolver, Neighborhood};
use cmsc_core::COULOMB_CONSTANT as KC;
use cmsc_core::{FieldMethod, Real, Vec3};
use torus_field::{charges, torus, Sampled};

/// The fastest of three calls after a first one, in seconds.
fn timed(solver: &mut dyn FieldSolver, x: &[Vec3], q: &[Real], eps: Real, out: &mut [Vec3]) -> f64 {
    solver.forces(x, q, KC, eps, out).unwrap_or_else(|e| panic!("{e}"));
    (0..3)
        .map(|_| {
            let t = Instant::now();
            solver.forces(x, q, KC, eps, out).unwrap_or_else(|e| panic!("{e}"));
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let t = Instant::now();
    let info = match gpu::device() {
        Ok(info) => info,
        Err(e) => {
            eprintln!("gpu_auto: no usable CUDA device: {e}");
            std::process::exit(2);
        }
    };
    let x: Vec<Vec3> = (0..1000).map(|i| Vec3::new(i as Real * 1e-3, (i % 7) as Real * 1e-3, 0.0)).collect();
    let mut first = gpu::DirectGpu::new().unwrap_or_else(|e| panic!("{e}"));
    first.forces(&x, &vec![1e-6; x.len()], KC, 1e-6, &mut vec![Vec3::zeros(); x.len()]).unwrap();
    println!(
        "first GPU use (context, NVRTC, a first call on 1,000 charges): {:.3} s",
        t.elapsed().as_secs_f64()
    );
    let skip_ddef = std::env::args().any(|a| a == "--skip-ddef");
    let m: u32 = arg("--m", 0);
    let sizes: Vec<usize> =
        arg("--n", "1000,2000,5000,10000,20000,50000,100000,200000,500000,1000000".to_string())
            .split(',')
            .map(|v| v.parse().expect("--n takes a comma-separated list"))
            .collect();
    let cpu_direct_max: usize = arg("--cpu-direct-max", 50_000);
    println!(
        "device: {} ({} SMs); CPU threads: {}",
        info.name,
        info.multiprocessors,
        rayon::current_num_threads()
    );
    println!(
        "| n | CPU direct | CPU P3M (error) | GPU direct (error) | GPU DDEF m = {m} (error) | Auto picks |"
    );
    println!("|---|---|---|---|---|---|");
    for &n in &sizes {
        let x = torus(n).positions;
        let n = x.len();
        let q = charges(n);
        let eps = 1e-6;
        let sampled = Sampled::new(&x, &q, eps);
        let mut out = vec![Vec3::zeros(); n];
        let cpu_direct = if n <= cpu_direct_max {
            format!("{:.2e} s", timed(&mut DirectSum::default(), &x, &q, eps, &mut out))
        } else {
            format!("{:.2e} s (sampled)", sampled.all_seconds)
        };
        let mut cell = |method: FieldMethod| {
            let mut solver = make_solver(method, n, m, Neighborhood::Ring).unwrap_or_else(|e| panic!("{e}"));
            let s = timed(solver.as_mut(), &x, &q, eps, &mut out);
            format!("{s:.2e} s ({:.1e})", sampled.error(&out))
        };
        println!(
            "| {n} | {cpu_direct} | {} | {} | {} | {:?} |",
            cell(FieldMethod::P3m),
            cell(FieldMethod::DirectGpu),
            if skip_ddef { "skipped".into() } else { cell(FieldMethod::DdefGpu) },
            FieldMethod::Auto.resolve(n)
        );
        std::io::stdout().flush().ok();
    }
}
