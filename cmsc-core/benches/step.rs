//! One full IMEX step (springs implicit, direct Coulomb and gravity explicit) on the paper's
//! torus shape, at 10,000 vertices (`shapes::torus(200, 50, 1.0, 0.3)`) and, with
//! `CMSC_BENCH_LARGE=1`, 100,000 vertices (`torus(500, 200, 1.0, 0.3)`): structural springs at
//! 100 N/m, bending springs at 10 N/m, 1 kg in all, every vertex charged 0.1 µC, default
//! parameters (`h = 1/120 s`, 10 local/global iterations, Earth gravity, direct Coulomb sum).
//!
//! Every measured step starts from the same rest state (positions and velocities are reset
//! outside the timed region), so the numbers do not depend on how far the charged torus has
//! blown apart. After each size, the mean per-stage breakdown from `System::last_step_timings`
//! is printed to stderr.
//!
//! The direct sum is `O(n²)`: at 100K vertices one step is ~10¹⁰ pair interactions, seconds per
//! step, and criterion takes at least 10 samples (about two minutes on a 2-core machine), hence
//! the opt-in.
//!
//! Run: `cargo bench -p cmsc-core --bench step`, or
//! `CMSC_BENCH_LARGE=1 cargo bench -p cmsc-core --bench step` to include 100K
//! (append `-- --quick` for a fast pass).

use std::time::{Duration, Instant};

use cmsc_core::shapes::torus;
use cmsc_core::{springs_from_triangles, FieldMethod, SimParams, StepTimings, System, Vec3};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode};

const CHARGE: f64 = 1e-7;

/// Wall time and stage timers summed over the measured steps.
#[derive(Default)]
struct Tally {
    steps: u32,
    wall: Duration,
    stages: StepTimings,
}

impl Tally {
    fn add(&mut self, wall: Duration, t: &StepTimings) {
        self.steps += 1;
        self.wall += wall;
        self.stages += *t;
    }

    fn print(&self, label: &str) {
        let mean = |d: Duration| d.as_secs_f64() * 1e3 / self.steps as f64;
        let s = &self.stages;
        let other = self.wall.saturating_sub(s.total());
        eprintln!("\n[step] {label}: mean of {} steps, {:.1} ms per step", self.steps, mean(self.wall));
        eprintln!(
            "  factorization {:.3} | coulomb {:.1} | external {:.3} | springs {:.2} | \
             solve {:.2} | finish {:.3} | other {:.3}  (ms)\n",
            mean(s.factorization),
            mean(s.coulomb),
            mean(s.external),
            mean(s.springs),
            mean(s.solve),
            mean(s.finish),
            mean(other)
        );
    }
}

/// A charged torus of `u × v` vertices at rest, factored, with its rest state.
fn charged_torus(u: u32, v: u32) -> (System, Vec<Vec3>) {
    let mesh = torus(u, v, 1.0, 0.3);
    let n = mesh.positions.len();
    let (ends, stiffness) = springs_from_triangles(n, &mesh.triangles).unwrap().with_stiffness(100.0, 10.0);
    let params = SimParams { coulomb: FieldMethod::Direct, ..SimParams::default() };
    let t0 = Instant::now();
    let mut sys = System::new(&mesh.positions, &vec![1.0 / n as f64; n], &ends, &stiffness, params).unwrap();
    eprintln!(
        "[step] torus {u}x{v}: {n} vertices, {} springs; System::new (incl. factorization) {:.1} ms",
        ends.len(),
        t0.elapsed().as_secs_f64() * 1e3
    );
    sys.set_charges(&vec![CHARGE; n]).unwrap();
    (sys, mesh.positions)
}

fn imex_step(c: &mut Criterion) {
    let large = std::env::var("CMSC_BENCH_LARGE").is_ok_and(|v| v == "1");
    let mut sizes = vec![(200, 50, 10)];
    if large {
        sizes.push((500, 200, 30));
    } else {
        eprintln!("[step] 100K vertices skipped; set CMSC_BENCH_LARGE=1 to include it");
    }

    let mut group = c.benchmark_group("imex_step");
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);
    group.warm_up_time(Duration::from_secs(1));
    for (u, v, seconds) in sizes {
        let (mut sys, rest) = charged_torus(u, v);
        let still = vec![Vec3::zeros(); rest.len()];
        let mut tally = Tally::default();
        group.measurement_time(Duration::from_secs(seconds));
        group.bench_function(BenchmarkId::from_parameter(rest.len()), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    sys.set_positions(&rest).unwrap();
                    sys.set_velocities(&still).unwrap();
                    let t0 = Instant::now();
                    sys.step().unwrap();
                    let dt = t0.elapsed();
                    total += dt;
                    tally.add(dt, sys.last_step_timings());
                }
                total
            });
        });
        if tally.steps > 0 {
            tally.print(&format!("{} vertices", rest.len()));
        }
    }
    group.finish();
}

criterion_group!(benches, imex_step);
criterion_main!(benches);
