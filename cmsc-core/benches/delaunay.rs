//! Building DDEF's grid for m = 1,000 and 10,000 Halton points plus the 8 box corners: the
//! Delaunay tetrahedralization with the near set of every tet and the gather's blocks, the
//! `tetrahedralize` stage of `DdefTimings`. A fixed-m solver pays it once (and again when the
//! charges' box changes shape); an adaptive one whenever its grid is rebuilt.
//!
//! Each iteration builds a fresh `Ddef` on nine charges (a unit cube's corners and centre, so
//! the grid's box is a cube) and adds up the stage's own timer, leaving out the call's other
//! stages, which cost microseconds here.
//!
//! Run: `cargo bench -p cmsc-core --bench delaunay`

use std::time::Duration;

use cmsc_core::coulomb::{Ddef, FieldSolver};
use cmsc_core::{Real, Vec3, COULOMB_CONSTANT};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

fn grid_build(c: &mut Criterion) {
    let mut group = c.benchmark_group("ddef_grid");
    group.sample_size(10).measurement_time(Duration::from_secs(10));
    let mut x: Vec<Vec3> =
        (0..8).map(|c| Vec3::new((c & 1) as Real, ((c >> 1) & 1) as Real, ((c >> 2) & 1) as Real)).collect();
    x.push(Vec3::repeat(0.5));
    let q: Vec<Real> = (0..x.len()).map(|i| if i % 2 == 0 { 1e-6 } else { -1e-6 }).collect();
    let mut out = vec![Vec3::zeros(); x.len()];
    for m in [1_000u32, 10_000] {
        group.bench_function(BenchmarkId::new("tetrahedralize", m), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let mut ddef = Ddef::new(m);
                    ddef.forces(&x, &q, COULOMB_CONSTANT, 0.0, &mut out).unwrap();
                    total += Duration::from_secs_f64(ddef.timings().tetrahedralize);
                }
                total
            })
        });
    }
    group.finish();
}

criterion_group!(benches, grid_build);
criterion_main!(benches);
