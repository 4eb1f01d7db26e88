//! Throughput of the exact all-pairs Coulomb sum, `DirectSum::forces`, at n = 10,000 and
//! n = 65,536 points spread evenly over a 1 m sphere (a Fibonacci lattice), charges alternating
//! ±1 µC, softening 0.1 mm.
//!
//! Throughput is reported in pair interactions (`n²` per call), so criterion's `Melem/s` is
//! millions of pairs per second. The 64K case costs several seconds per call (~7 s on the
//! 2-core development machine), so both sizes run criterion's minimum of 10 flat samples of one
//! call each; the file takes about 1.5 minutes there, and criterion's warning that it could not
//! complete 10 samples in 20 s is expected for 64K.
//!
//! The `p3m` group times `P3m::forces` (default tolerance 10⁻²) on the same points at n = 10,000
//! and 100,000, the mesh kept from a first call (a simulation step's cost), throughput in
//! charges per call; `examples/p3m_bench.rs` gives its errors and stage times beside DDEF.
//!
//! Run: `cargo bench -p cmsc-core --bench coulomb` (append `-- --quick` for a fast pass).

use std::f64::consts::PI;
use std::hint::black_box;
use std::time::Duration;

use cmsc_core::coulomb::{DirectSum, P3m};
use cmsc_core::{FieldSolver, Vec3, COULOMB_CONSTANT};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput};

const SOFTENING: f64 = 1e-4;

/// `n` points evenly spread over the unit sphere (golden-angle spiral).
fn fibonacci_sphere(n: usize) -> Vec<Vec3> {
    let golden = PI * (3.0 - 5f64.sqrt());
    (0..n)
        .map(|i| {
            let z = 1.0 - 2.0 * (i as f64 + 0.5) / n as f64;
            let r = (1.0 - z * z).sqrt();
            let phi = golden * i as f64;
            Vec3::new(r * phi.cos(), r * phi.sin(), z)
        })
        .collect()
}

fn direct_sum(c: &mut Criterion) {
    let mut group = c.benchmark_group("direct_sum");
    group.sample_size(10);
    group.sampling_mode(SamplingMode::Flat);
    group.warm_up_time(Duration::from_secs(1));
    for (n, seconds) in [(10_000, 5), (65_536, 20)] {
        let x = fibonacci_sphere(n);
        let q: Vec<f64> = (0..n).map(|i| if i % 2 == 0 { 1e-6 } else { -1e-6 }).collect();
        let mut out = vec![Vec3::zeros(); n];
        let mut solver = DirectSum::default();
        group.measurement_time(Duration::from_secs(seconds));
        group.throughput(Throughput::Elements((n * n) as u64));
        group.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter(|| {
                solver.forces(black_box(&x), &q, COULOMB_CONSTANT, SOFTENING, &mut out).unwrap();
            });
        });
    }
    group.finish();
}

fn p3m(c: &mut Criterion) {
    let mut group = c.benchmark_group("p3m");
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    for n in [10_000, 100_000] {
        let x = fibonacci_sphere(n);
        let q: Vec<f64> = (0..n).map(|i| if i % 2 == 0 { 1e-6 } else { -1e-6 }).collect();
        let mut out = vec![Vec3::zeros(); n];
        let mut solver = P3m::new();
        solver.forces(&x, &q, COULOMB_CONSTANT, SOFTENING, &mut out).unwrap(); // chooses the mesh
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter(|| {
                solver.forces(black_box(&x), &q, COULOMB_CONSTANT, SOFTENING, &mut out).unwrap();
            });
        });
    }
    group.finish();
}

criterion_group!(benches, direct_sum, p3m);
criterion_main!(benches);
