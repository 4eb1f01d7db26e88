//! Step economy on the paper's scenes (issue 29's quality aim): each scene baked at the
//! add-on's defaults — [`System::advance`] by 1/24 s frames, 3 to 32 steps per frame, 6
//! Anderson-accelerated iterations stopping at the relative update 10⁻³, the paper's IMEX step
//! (Eq. 12), Settling (relative damping) 2/s — against a converged bake of the same scene
//! (`--ref-steps` fixed steps per frame, 20 by default, of 30 iterations). Per scene: steps per
//! frame (mean and most), iterations per step, and the RMS vertex distance at frames 30 and 60
//! relative to the reference's bounding-box diagonal (the object's size). Also the paper's torus
//! stepped at h = 0.15 s, fixed and through `advance`, for divergence.
//!
//! Scenes (no gravity, direct Coulomb, as in the paper):
//! - **two spheres**: 2 × 482 vertices, radius 0.4 m, centres 2 m apart, +6 µC and −6 µC in all,
//!   1 kg each, springs 50/5 N/m (`examples/short_range.rs`, 3× its charge, so that they close
//!   about a third of the gap in 2.5 s without touching);
//! - **Fig. 5 sphere**: the validation report's icosphere of 642 vertices, radius 1 m, 145 kg
//!   and 145 × 8 µC, springs 0.5 N/m (`tests/low_dissipation.rs`): it bursts outwards;
//! - **paper torus**: 145 vertices, R = 1 m, r = 0.3 m, 6 µC and 1 kg per vertex, 10 N/m.
//!
//! Run: `RAYON_NUM_THREADS=2 cargo run --release -p cmsc-core --example economy_scenes --
//! [--frames 60] [--ref-steps 20]`.

use cmsc_core::{shapes, springs_from_triangles, FieldMethod, Real, SimParams, System, Vec3};

#[path = "common/args.rs"]
mod args;
#[path = "common/two_spheres.rs"]
mod two_spheres;
use args::arg;

const FRAME: Real = 1.0 / 24.0;

struct Scene {
    name: &'static str,
    mesh: shapes::TriMesh,
    k: (Real, Real),
    mass: Vec<Real>,
    charge: Vec<Real>,
}

fn system(s: &Scene, h: Real, iterations: u32, tolerance: Real) -> System {
    let n = s.mesh.positions.len();
    let (ends, k) = springs_from_triangles(n, &s.mesh.triangles).unwrap().with_stiffness(s.k.0, s.k.1);
    let (ends, k): (Vec<_>, Vec<_>) = ends.into_iter().zip(k).filter(|(_, k)| *k > 0.0).unzip();
    let params = SimParams {
        time_step: h,
        iterations,
        iteration_tolerance: tolerance,
        relative_damping: 2.0,
        gravity: Vec3::zeros(),
        coulomb: FieldMethod::Direct,
        ..SimParams::default()
    };
    let mut sys = System::new(&s.mesh.positions, &s.mass, &ends, &k, params).unwrap();
    sys.set_charges(&s.charge).unwrap();
    sys
}

fn two_spheres() -> Scene {
    let mesh = two_spheres::two_spheres();
    let half = mesh.positions.len() / 2;
    Scene {
        name: "two spheres ±6 µC",
        charge: (0..2 * half).map(|i| if i < half { 6e-6 } else { -6e-6 } / half as Real).collect(),
        mass: vec![1.0 / half as Real; 2 * half],
        mesh,
        k: (50.0, 5.0),
    }
}

fn fig5_sphere() -> Scene {
    let mesh = shapes::icosphere(3, 1.0);
    let n = mesh.positions.len();
    Scene {
        name: "Fig. 5 sphere 8 µC",
        charge: vec![145.0 * 8e-6 / n as Real; n],
        mass: vec![145.0 / n as Real; n],
        mesh,
        k: (0.5, 0.0),
    }
}

fn paper_torus() -> Scene {
    let mesh = shapes::torus(29, 5, 1.0, 0.3);
    Scene { name: "paper torus", charge: vec![6e-6; 145], mass: vec![1.0; 145], mesh, k: (10.0, 0.0) }
}

fn rms_over_size(x: &[Vec3], reference: &[Vec3]) -> Real {
    let (lo, hi) = reference
        .iter()
        .fold((Vec3::repeat(Real::MAX), Vec3::repeat(Real::MIN)), |(lo, hi), p| (lo.inf(p), hi.sup(p)));
    let rms =
        (x.iter().zip(reference).map(|(a, b)| (a - b).norm_squared()).sum::<Real>() / x.len() as Real).sqrt();
    rms / (hi - lo).norm()
}

fn main() {
    let frames: u32 = arg("--frames", 60);
    let ref_steps: u32 = arg("--ref-steps", 20);
    let checkpoints: Vec<u32> = [30, 60].into_iter().filter(|&f| f <= frames).collect();
    println!(
        "| scene | n | moved (of size) | steps/frame mean (most) | iterations/step | error at frame {} | converged reference |",
        checkpoints.iter().map(|f| f.to_string()).collect::<Vec<_>>().join(", ")
    );
    println!("|---|---:|---:|---|---:|---|---|");
    for scene in [two_spheres(), fig5_sphere(), paper_torus()] {
        let mut reference = system(&scene, FRAME / ref_steps as Real, 30, 0.0);
        let mut adaptive = system(&scene, FRAME / 3.0, 6, 1e-3);
        let (mut steps, mut most, mut iterations) = (0u64, 0u32, 0u64);
        let mut errors = Vec::new();
        for frame in 1..=frames {
            reference.step_n(ref_steps).unwrap();
            let taken = adaptive.advance(FRAME, 3, 32).unwrap();
            steps += taken as u64;
            most = most.max(taken);
            iterations += adaptive.last_call_counts().iterations;
            if checkpoints.contains(&frame) {
                errors.push(rms_over_size(adaptive.positions(), reference.positions()));
            }
        }
        println!(
            "| {} | {} | {:.1} % | {:.1} ({most}) | {:.1} | {} | {ref_steps} steps/frame × 30 iterations |",
            scene.name,
            scene.mesh.positions.len(),
            100.0 * rms_over_size(&scene.mesh.positions, reference.positions()),
            steps as Real / frames as Real,
            iterations as Real / steps as Real,
            errors.iter().map(|e| format!("{:.2} %", 100.0 * e)).collect::<Vec<_>>().join(", "),
        );
    }
    // the paper's torus at h = 0.15 s (Fig. 4's largest step): 100 steps (15 s)
    let torus = paper_torus();
    let mut fixed = system(&torus, 0.15, 6, 0.0);
    let fixed_ok = (0..100).all(|_| fixed.step().is_ok());
    let mut adaptive = system(&torus, 0.15, 6, 1e-3);
    let mut total = 0u64;
    let adaptive_ok = (0..100).all(|_| adaptive.advance(0.15, 1, 32).map(|k| total += k as u64).is_ok());
    let size = |s: &System| s.positions().iter().map(|p| p.norm()).fold(0.0, Real::max);
    println!(
        "\npaper torus, 15 s: fixed h = 0.15 s {} (largest |x| {:.2} m); advance(0.15 s, 1..32) {} \
         ({:.1} steps per 0.15 s, largest |x| {:.2} m)",
        if fixed_ok { "bounded" } else { "diverged" },
        size(&fixed),
        if adaptive_ok { "bounded" } else { "diverged" },
        total as Real / 100.0,
        size(&adaptive)
    );
}
