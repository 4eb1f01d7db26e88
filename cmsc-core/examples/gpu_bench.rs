//! The GPU Coulomb backends against the CPU (issue 7), on torus-surface point sets of n = 100K
//! and 1M (`--n` for others; every vertex charged, one in five negative):
//!
//! - CPU direct sum (timed on 2,000 sampled targets, scaled to n) and GPU direct sum: time per
//!   evaluation, pair terms per second, and the share of the FP32 peak at the conventional 20
//!   flops per pair term (`--peak-tflops`, default 67 = H100 SXM; 51 for the H100 PCIe);
//!   relative L2 difference to the CPU sum on 2,000 sampled targets;
//! - CPU DDEF and GPU DDEF with m = 1000 (`--m`; one-ring near sets, `--face` for face
//!   neighbours): time of a steady-state call (grid cached), GPU DDEF's stages (gather with its
//!   copies vs the CPU stages), the speed-up, and their relative L2 difference;
//! - a full IMEX step (10 local/global iterations, the field by Auto, or `--step-method
//!   ddef-gpu`, `direct-gpu` or `p3m`) on a torus mesh of about 1M vertices
//!   (`--step-vertices`), in steps per second with the stage split.
//!
//! Run: `LD_LIBRARY_PATH=<dir of libnvrtc.so.12> cargo run --release -p cmsc-core --example
//! gpu_bench [-- --n 100000,1000000] [--m 1000] [--face] [--peak-tflops 67] [--cpu-max 3000000]
//! [--step-vertices 1000000] [--steps 3] [--step-method auto]`. CPU DDEF is skipped above
//! `--cpu-max` vertices, the IMEX step with `--step-vertices 0`. Exits with status 2 and the
//! reason when no CUDA device is usable.

#[path = "common/args.rs"]
mod args;
#[path = "common/torus_field.rs"]
mod torus_field;

use std::io::Write;
use std::time::Instant;

use args::arg;
use cmsc_core::coulomb::{gpu, Ddef, FieldSolver, Neighborhood};
use cmsc_core::COULOMB_CONSTANT as KC;
use cmsc_core::{springs_from_triangles, FieldMethod, Real, SimParams, StepTimings, System, Vec3};
use torus_field::{charges, relative_l2, torus, Sampled};

/// Flops per pair term by the usual n-body convention (as in GPU Gems 3, ch. 31).
const FLOPS_PER_PAIR: f64 = 20.0;

/// Seconds of the second of two calls (the first allocates, compiles or builds the grid).
fn timed(solver: &mut dyn FieldSolver, x: &[Vec3], q: &[Real], eps: Real, out: &mut [Vec3]) -> f64 {
    solver.forces(x, q, KC, eps, out).unwrap_or_else(|e| panic!("{e}"));
    let t = Instant::now();
    solver.forces(x, q, KC, eps, out).unwrap_or_else(|e| panic!("{e}"));
    t.elapsed().as_secs_f64()
}

fn main() {
    let info = match gpu::device() {
        Ok(info) => info,
        Err(e) => {
            eprintln!(
                "gpu_bench: no usable CUDA device: {e}\nRun it on a machine with an NVIDIA GPU and \
                 its driver, with libnvrtc.so.12 on LD_LIBRARY_PATH."
            );
            std::process::exit(2);
        }
    };
    let sizes: Vec<usize> = arg("--n", "100000,1000000".to_string())
        .split(',')
        .map(|v| v.parse().expect("--n takes a comma-separated list"))
        .collect();
    let m: u32 = arg("--m", 1000);
    let near = if std::env::args().any(|a| a == "--face") { Neighborhood::Face } else { Neighborhood::Ring };
    let peak = arg("--peak-tflops", 67.0) * 1e12;
    let cpu_max: usize = arg("--cpu-max", 3_000_000);
    println!(
        "device: {} (compute {}.{}, {} SMs, kernels for compute_{}), CUDA driver {}.{}, NVRTC {}.{}; \
         CPU threads: {}; DDEF m = {m}, {near:?} near sets",
        info.name,
        info.compute_capability.0,
        info.compute_capability.1,
        info.multiprocessors,
        info.arch,
        info.driver_version / 1000,
        info.driver_version % 1000 / 10,
        info.nvrtc_version.0,
        info.nvrtc_version.1,
        rayon::current_num_threads()
    );
    println!(
        "| n | CPU direct | GPU direct | pair terms/s | FP32 peak | vs CPU direct | CPU DDEF | GPU DDEF | \
         gather (GPU) | locate + near (CPU) | DDEF speed-up | GPU vs CPU DDEF |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for &n in &sizes {
        let x = torus(n).positions;
        let n = x.len();
        let q = charges(n);
        let eps = 1e-6;
        let mut out = vec![Vec3::zeros(); n];

        let mut direct = gpu::DirectGpu::new().unwrap_or_else(|e| panic!("{e}"));
        let direct_s = timed(&mut direct, &x, &q, eps, &mut out);
        let pairs_per_s = (n as f64) * (n as f64) / direct_s;
        let sampled = Sampled::new(&x, &q, eps);
        let (cpu_direct_s, direct_err) = (sampled.all_seconds, sampled.error(&out));

        let mut ddef_gpu = gpu::ddef_solver(m, near).unwrap_or_else(|e| panic!("{e}"));
        let mut from_gpu = vec![Vec3::zeros(); n];
        let gpu_ddef_s = timed(&mut ddef_gpu, &x, &q, eps, &mut from_gpu);
        let stages = ddef_gpu.timings();
        let (cpu_ddef, speedup, ddef_err) = if n <= cpu_max {
            let mut cpu = Ddef::new(m).with_neighborhood(near);
            let cpu_s = timed(&mut cpu, &x, &q, eps, &mut out);
            (
                format!("{cpu_s:.3} s"),
                format!("{:.1}×", cpu_s / gpu_ddef_s),
                format!("{:.1e}", relative_l2(&from_gpu, &out)),
            )
        } else {
            ("skipped".into(), "–".into(), "–".into())
        };
        println!(
            "| {n} | {cpu_direct_s:.3} s | {direct_s:.4} s | {pairs_per_s:.3e} | {:.0} % | {direct_err:.1e} | {cpu_ddef} | {gpu_ddef_s:.3} s | \
             {:.1} ms ({:.2e} terms/s) | {:.1} ms | {speedup} | {ddef_err} |",
            100.0 * pairs_per_s * FLOPS_PER_PAIR / peak,
            stages.gather * 1e3,
            (m as f64 + 8.0) * n as f64 / stages.gather,
            (stages.grid + stages.locate + stages.near) * 1e3,
        );
        std::io::stdout().flush().ok();
    }
    match arg("--step-vertices", 1_000_000) {
        0 => {}
        n => {
            let method = match arg("--step-method", "auto".to_string()).as_str() {
                "auto" => FieldMethod::Auto,
                "ddef-gpu" => FieldMethod::DdefGpu,
                "direct-gpu" => FieldMethod::DirectGpu,
                "p3m" => FieldMethod::P3m,
                other => panic!("--step-method takes ddef-gpu, direct-gpu, p3m or auto, not {other}"),
            };
            imex_step(n, arg("--steps", 3), m, near, method)
        }
    }
}

/// Times full IMEX steps with `method` on a torus mesh of about `n` vertices.
fn imex_step(n: usize, steps: u32, m: u32, near: Neighborhood, method: FieldMethod) {
    let mesh = torus(n);
    let n = mesh.positions.len();
    let springs = springs_from_triangles(n, &mesh.triangles).unwrap();
    let k = vec![100.0; springs.structural.len()];
    let params = SimParams {
        coulomb: method,
        grid_points: m,
        ddef_near: near,
        gravity: Vec3::zeros(),
        ..SimParams::default()
    };
    let t = Instant::now();
    let mut sys = System::new(&mesh.positions, &vec![1e-3; n], &springs.structural, &k, params)
        .unwrap_or_else(|e| panic!("{e}"));
    // the 1 µC per vertex of the field tables would tear the mesh apart (the step stops with
    // runaway forces); the charge of tests/gpu.rs's stepping test (16 µC in all) moves it smoothly
    let q: Vec<Real> = charges(n).iter().map(|c| c * 16.0 / n as Real).collect();
    sys.set_charges(&q).unwrap();
    sys.step().unwrap_or_else(|e| panic!("{e}")); // builds the DDEF grid or chooses P3M's mesh
    let setup = t.elapsed().as_secs_f64();
    let mut total = StepTimings::default();
    let t = Instant::now();
    for _ in 0..steps {
        sys.step().unwrap_or_else(|e| panic!("{e}"));
        total += *sys.last_step_timings();
    }
    let per_step = t.elapsed().as_secs_f64() / steps as f64;
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3 / steps as f64;
    println!(
        "\nIMEX step, {n} vertices, {} springs, {:?} (m = {m} for DDEF): {:.2} steps/s ({:.1} ms/step; \
         Coulomb {:.1} ms, springs {:.1} ms, solve {:.1} ms, other {:.1} ms); setup and first step {setup:.1} s",
        springs.structural.len(),
        sys.field_method(),
        1.0 / per_step,
        per_step * 1e3,
        ms(total.coulomb),
        ms(total.springs),
        ms(total.solve),
        ms(total.factorization + total.external + total.finish),
    );
}
