//! DDEF vs the exact direct sum in the same run, on torus-surface point sets of n ≈ 10K and
//! 64K with m = 1000 and 3000 grid points (the grid is built once, outside the timed loop, as
//! in a simulation where it is cached across steps). Stage splits and accuracy at other sizes
//! (up to 1M): `cargo run --release -p cmsc-core --example ddef_bench -- --large`.
//!
//! Run: `cargo bench -p cmsc-core --bench ddef`

use std::time::Duration;

use cmsc_core::coulomb::{Ddef, DirectSum, FieldSolver};
use cmsc_core::{shapes, Real, Vec3, COULOMB_CONSTANT};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

fn torus_points(n: usize) -> Vec<Vec3> {
    let v = ((n as f64 / 5.0).sqrt()).round() as u32;
    shapes::torus(5 * v, v, 1.0, 0.3).positions
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("coulomb_methods");
    group.sample_size(10).measurement_time(Duration::from_secs(20));
    for n in [10_000, 64_000] {
        let x = torus_points(n);
        let q: Vec<Real> = (0..x.len()).map(|i| if i % 5 == 0 { -1e-6 } else { 1e-6 }).collect();
        let mut out = vec![Vec3::zeros(); x.len()];
        let eps = 1e-6;
        let mut direct = DirectSum::default();
        group.bench_function(BenchmarkId::new("direct", x.len()), |b| {
            b.iter(|| direct.forces(&x, &q, COULOMB_CONSTANT, eps, &mut out).unwrap())
        });
        for m in [1000u32, 3000] {
            let mut ddef = Ddef::new(m);
            ddef.forces(&x, &q, COULOMB_CONSTANT, eps, &mut out).unwrap(); // build the grid
            group.bench_function(BenchmarkId::new(format!("ddef_m{m}"), x.len()), |b| {
                b.iter(|| ddef.forces(&x, &q, COULOMB_CONSTANT, eps, &mut out).unwrap())
            });
            let t = ddef.timings();
            eprintln!(
                "ddef n = {} m = {m}: locate {:.1} ms, gather {:.1} ms, near {:.1} ms",
                x.len(),
                t.locate * 1e3,
                t.gather * 1e3,
                t.near * 1e3
            );
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
