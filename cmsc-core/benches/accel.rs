//! One IMEX step of the swinging 10K-vertex hanging cloth (`examples/accel_table.rs`'s scene:
//! 2 m grid, top row pinned, springs 100/10 N/m, 1 kg, h = 1/120 s, Coulomb off), with the
//! default number of iterations accelerated ([`Acceleration::Anderson`]) against 10 plain
//! Liu 2013 iterations, the accuracy the default is chosen to match. Every measured step starts
//! from the same swinging state (reset outside the timed region).
//!
//! Run: `cargo bench -p cmsc-core --bench accel` (append `-- --quick` for a fast pass).

use std::time::{Duration, Instant};

use cmsc_core::shapes::grid;
use cmsc_core::{
    springs_from_triangles, Acceleration, FieldMethod, SimParams, System, Vec3, DEFAULT_ITERATIONS,
};
use criterion::{criterion_group, criterion_main, Criterion};

/// The cloth after 30 plain steps (0.25 s): the system and its swinging state.
fn swinging_cloth() -> (System, Vec<Vec3>, Vec<Vec3>) {
    let side = 100;
    let mesh = grid(side, side, 2.0 / (side - 1) as f64);
    let n = mesh.positions.len();
    let masses = vec![1.0 / n as f64; n];
    let (ends, k) = springs_from_triangles(n, &mesh.triangles).unwrap().with_stiffness(100.0, 10.0);
    let params = SimParams {
        time_step: 1.0 / 120.0,
        iterations: 10,
        acceleration: Acceleration::Plain,
        coulomb: FieldMethod::Off,
        ..SimParams::default()
    };
    let mut sys = System::new(&mesh.positions, &masses, &ends, &k, params).unwrap();
    let top: Vec<u32> = (0..n as u32).filter(|&i| mesh.positions[i as usize].y > 2.0 - 1e-9).collect();
    sys.set_pins(&top).unwrap();
    sys.step_n(30).unwrap();
    let (x, v) = (sys.positions().to_vec(), sys.velocities().to_vec());
    (sys, x, v)
}

fn bench(c: &mut Criterion) {
    let (mut sys, x, v) = swinging_cloth();
    let mut group = c.benchmark_group("cloth_10k_step");
    group.sample_size(30);
    for (label, iterations, acceleration) in [
        ("plain_10", 10, Acceleration::Plain),
        ("anderson_default", DEFAULT_ITERATIONS, Acceleration::Anderson),
    ] {
        sys.set_params(SimParams { iterations, ..sys.params().clone() }).unwrap();
        sys.set_acceleration(acceleration);
        group.bench_function(label, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    sys.set_positions(&x).unwrap();
                    sys.set_velocities(&v).unwrap();
                    let t0 = Instant::now();
                    sys.step().unwrap();
                    total += t0.elapsed();
                }
                total
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
