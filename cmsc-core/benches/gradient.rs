//! The cost of a gradient: `System::rollout_gradient` (forward with the tape, then the reverse
//! pass) against the plain forward rollout `System::step_n` of the same steps, on the paper's
//! torus shape at 1,000 and 4,000 vertices (`torus(40, 25)`, `torus(80, 50)`): structural springs
//! 100 N/m, bending 10 N/m, 1 kg in all, one charge group of 0.1 µC per vertex, direct Coulomb,
//! default parameters (`h = 1/120 s`, 10 iterations), 20 steps.
//!
//! The reverse pass replays each step's iterations (K solves), runs K adjoint solves, and the
//! exact `O(n²)` Coulomb vector–Jacobian product; expect a few times the forward cost.
//!
//! Measured (`-- --quick`, 2 threads, a 2-core VM with its usual noise, one run each): forward
//! with gradient 1.11 s against 0.125 s forward at 1,000 vertices and 7.78 s against 1.16 s at
//! 4,000 (6.7×), after the vector–Jacobian product's pair sums became a SIMD kernel
//! (`coulomb::kernel::vjp_sum`); before, 1.20 s against 0.095 s and 9.00 s against 1.12 s
//! (8.0×). The gradients are the same to round-off (`coulomb_vjp_is_the_pair_by_pair_sum`).
//!
//! Run: `cargo bench -p cmsc-core --bench gradient` (append `-- --quick` for a fast pass).

use cmsc_core::shapes::torus;
use cmsc_core::{springs_from_triangles, ChargeGroups, FieldMethod, SimParams, System, Vec3};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode};

const STEPS: u32 = 20;

fn scene(u: u32, v: u32) -> System {
    let mesh = torus(u, v, 1.0, 0.3);
    let n = mesh.positions.len();
    let springs = springs_from_triangles(n, &mesh.triangles).unwrap();
    let (ends, k) = springs.with_stiffness(100.0, 10.0);
    let params = SimParams { coulomb: FieldMethod::Direct, ..SimParams::default() };
    System::new(&mesh.positions, &vec![1.0 / n as f64; n], &ends, &k, params).unwrap()
}

fn gradient(c: &mut Criterion) {
    let mut group = c.benchmark_group("rollout_20_steps");
    group.sampling_mode(SamplingMode::Flat).sample_size(10);
    for (u, v) in [(40, 25), (80, 50)] {
        let mut sys = scene(u, v);
        let n = sys.n_vertices();
        let groups = ChargeGroups::new(&vec![1.0; n], 1, n).unwrap();
        let target: Vec<Vec3> = sys.positions().iter().map(|p| p * 1.01).collect();
        let (x0, v0) = (sys.positions().to_vec(), sys.velocities().to_vec());
        sys.set_charges(&vec![1e-7; n]).unwrap();
        group.bench_function(BenchmarkId::new("forward", n), |b| {
            b.iter(|| {
                sys.set_positions(&x0).unwrap();
                sys.set_velocities(&v0).unwrap();
                sys.step_n(STEPS).unwrap();
            })
        });
        group.bench_function(BenchmarkId::new("forward_and_gradient", n), |b| {
            b.iter(|| sys.rollout_gradient(STEPS, &groups, &[1e-7], &target).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, gradient);
criterion_main!(benches);
