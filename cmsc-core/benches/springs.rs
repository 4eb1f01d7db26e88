//! Cost of Liu 2013's local/global spring solver on hanging cloth, for comparison with
//! Liu 2013's table (5 ms per iteration on an 81×81 cloth of 6,561 vertices, 20.3 ms on a
//! ~28K-vertex mesh; 113 ms / 442 ms prefactorization).
//!
//! Meshes: `shapes::grid(81, 81, 0.01)` (6,561 vertices) and `grid(169, 169, 0.01)` (28,561),
//! structural springs at 100 N/m and bending springs at 10 N/m, total mass 1 kg, two corners
//! pinned, `h = 1/120 s`. Measured:
//!
//! - `iteration/step_1it`, `iteration/step_10it`: a whole [`System::step`] with 1 and 10
//!   local/global iterations, no Coulomb, no gravity (the cloth stays at rest, which costs the
//!   same as moving). One iteration is `(step_10it − step_1it) / 9`.
//! - `iteration/local`: the local step alone (`local_step` + `gather_jd`).
//! - `iteration/solve`: the global step alone (right-hand side + prefactored solve).
//! - `factorization/new`: `GlobalSolver::new` (assembly, AMD/symbolic analysis and numeric
//!   Cholesky); `factorization/refactor`: the numeric Cholesky only.
//!
//! After the iteration group, a per-mesh summary (derived per-iteration time and the stage
//! split from `System::last_step_timings`) is printed to stderr.
//!
//! Run: `cargo bench -p cmsc-core --bench springs` (append `-- --quick` for a fast pass).

use std::hint::black_box;
use std::time::{Duration, Instant};

use cmsc_core::shapes::grid;
use cmsc_core::springs::{gather_jd, local_step};
use cmsc_core::{
    springs_from_triangles, FieldMethod, GlobalSolver, SimParams, Springs, StepTimings, System, Vec3,
};
use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion, SamplingMode};

const STRUCTURAL_K: f64 = 100.0;
const BENDING_K: f64 = 10.0;
const SPACING: f64 = 0.01;

/// A square cloth with its springs, masses and two pinned corners.
struct Cloth {
    label: String,
    positions: Vec<Vec3>,
    ends: Vec<[u32; 2]>,
    stiffness: Vec<f64>,
    mass: Vec<f64>,
    pins: Vec<u32>,
}

impl Cloth {
    fn new(side: u32) -> Self {
        let mesh = grid(side, side, SPACING);
        let n = mesh.positions.len();
        let (ends, stiffness) =
            springs_from_triangles(n, &mesh.triangles).unwrap().with_stiffness(STRUCTURAL_K, BENDING_K);
        Cloth {
            label: format!("{side}x{side}"),
            positions: mesh.positions,
            ends,
            stiffness,
            mass: vec![1.0 / n as f64; n],
            // the two corners of the last row, as a cloth hung from a rod
            pins: vec![(side - 1) * side, side * side - 1],
        }
    }

    fn n(&self) -> usize {
        self.positions.len()
    }

    fn pinned(&self) -> Vec<bool> {
        let mut pinned = vec![false; self.n()];
        for &p in &self.pins {
            pinned[p as usize] = true;
        }
        pinned
    }

    fn springs(&self) -> Springs {
        Springs::new(&self.positions, &self.ends, &self.stiffness).unwrap()
    }

    /// A system with springs only (no Coulomb, no gravity), already factored and stepped once.
    fn system(&self, iterations: u32) -> System {
        let params = SimParams {
            iterations,
            coulomb: FieldMethod::Off,
            gravity: Vec3::zeros(),
            ..SimParams::default()
        };
        let mut sys = System::new(&self.positions, &self.mass, &self.ends, &self.stiffness, params).unwrap();
        sys.set_pins(&self.pins).unwrap();
        sys.step().unwrap(); // pins changed: the first step re-analyses and refactors
        sys
    }
}

/// Wall time and stage timers summed over the measured steps of one benchmark.
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

    /// Mean of `d` per step, in ms.
    fn per_step_ms(&self, d: Duration) -> f64 {
        ms(d) / self.steps as f64
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Benchmarks `sys.step()` and records every measured step into `tally`.
fn bench_step(
    group: &mut BenchmarkGroup<'_, WallTime>,
    id: BenchmarkId,
    sys: &mut System,
    tally: &mut Tally,
) {
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let t0 = Instant::now();
                sys.step().unwrap();
                let dt = t0.elapsed();
                total += dt;
                tally.add(dt, sys.last_step_timings());
            }
            total
        });
    });
}

fn iteration(c: &mut Criterion) {
    let mut group = c.benchmark_group("iteration");
    // flat sampling: a 10-iteration step on the 28K cloth takes ~0.1 s
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(40);
    group.measurement_time(Duration::from_secs(5));
    for side in [81, 169] {
        let cloth = Cloth::new(side);
        let label = &cloth.label;

        let (mut one, mut ten) = (Tally::default(), Tally::default());
        let mut sys = cloth.system(1);
        bench_step(&mut group, BenchmarkId::new("step_1it", label), &mut sys, &mut one);
        let mut sys = cloth.system(10);
        bench_step(&mut group, BenchmarkId::new("step_10it", label), &mut sys, &mut ten);

        let springs = cloth.springs();
        let x: Vec<Vec3> = cloth.positions.iter().map(|p| p * 1.01).collect();
        let mut d = vec![Vec3::zeros(); springs.len()];
        let mut jd = vec![Vec3::zeros(); cloth.n()];
        group.bench_function(BenchmarkId::new("local", label), |b| {
            b.iter(|| {
                local_step(&springs, black_box(&x), &mut d);
                gather_jd(&springs, &d, &mut jd);
            });
        });

        let h = SimParams::default().time_step;
        let mut solver = GlobalSolver::new(&cloth.mass, &springs, &cloth.pinned(), h).unwrap();
        let mut x = cloth.positions.clone();
        group.bench_function(BenchmarkId::new("solve", label), |b| {
            b.iter(|| {
                // b = M x_rest, as the integrator's M y term (the J d and force terms add O(n))
                solver.solve_with(|v| cloth.positions[v] * cloth.mass[v], black_box(&mut x));
            });
        });

        if one.steps > 0 && ten.steps > 0 {
            let (t1, t10) = (one.per_step_ms(one.wall), ten.per_step_ms(ten.wall));
            let local = ten.per_step_ms(ten.stages.springs) / 10.0;
            let solve = ten.per_step_ms(ten.stages.solve) / 10.0;
            eprintln!("\n[springs] {label} cloth: {} vertices, {} springs", cloth.n(), springs.len());
            eprintln!("  step, 1 iteration:   {t1:8.3} ms (mean of {} steps)", one.steps);
            eprintln!("  step, 10 iterations: {t10:8.3} ms (mean of {} steps)", ten.steps);
            eprintln!("  one iteration = (10-it − 1-it) / 9: {:8.3} ms", (t10 - t1) / 9.0);
            eprintln!(
                "  one iteration from stage timers: local {local:.3} ms + solve {solve:.3} ms \
                 = {:.3} ms\n",
                local + solve
            );
        }
    }
    group.finish();
}

fn factorization(c: &mut Criterion) {
    let mut group = c.benchmark_group("factorization");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(4));
    let h = SimParams::default().time_step;
    for side in [81, 169] {
        let cloth = Cloth::new(side);
        let springs = cloth.springs();
        let pinned = cloth.pinned();
        group.bench_function(BenchmarkId::new("new", &cloth.label), |b| {
            b.iter(|| GlobalSolver::new(&cloth.mass, &springs, &pinned, black_box(h)).unwrap());
        });
        let mut solver = GlobalSolver::new(&cloth.mass, &springs, &pinned, h).unwrap();
        group.bench_function(BenchmarkId::new("refactor", &cloth.label), |b| {
            b.iter(|| solver.refactor(&cloth.mass, &springs, black_box(h)).unwrap());
        });
    }
    group.finish();
}

criterion_group!(benches, iteration, factorization);
criterion_main!(benches);
