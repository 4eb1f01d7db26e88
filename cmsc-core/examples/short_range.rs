//! What the short-range form of the pair force (charges spread over balls of radius `a`,
//! `cmsc_core::coulomb` Eqs. (C1)–(C2)) changes on scenes without contact: the paper's torus
//! (§4, Fig. 4: 145 vertices, R = 1 m, r = 0.3 m, k = 10 N/m, 6 µC and 1 kg per vertex, 15 s,
//! h = 1/120 s) and two charged spheres (2 × 482 vertices, radius 0.4 m, 2 m apart, +2 µC and
//! −2 µC in all, 3 s), each run twice: with [`Softening::Auto`] (`a` = a quarter of the rest
//! distance to the nearest neighbour) and with `a = 10⁻³ ×` the mean spring rest length, the size of
//! the Plummer softening cmsc used before (the two laws agree to `1.5·10⁻⁶` of a mesh
//! neighbour's force at that length, so the second run stands for the former law).
//!
//! Prints, per scene: the largest relative difference of a vertex's Coulomb force at the start
//! (also against the former Plummer-softened law itself, summed here term by term),
//! the largest distance between the two runs' vertices over the run (relative to the scene's
//! size), and each run's total-energy drift `max |E(t) − E(0)| / |E(0)|`.
//!
//! Run with `cargo run --release -p cmsc-core --example short_range`.

use cmsc_core::{shapes, springs_from_triangles, FieldMethod, Real, SimParams, Softening, System, Vec3};

#[path = "common/two_spheres.rs"]
mod two_spheres;

struct Scene {
    name: &'static str,
    mesh: shapes::TriMesh,
    k: (Real, Real),
    mass: Real,
    charge: Vec<Real>,
    seconds: Real,
}

fn system(s: &Scene, softening: Option<Real>) -> System {
    let n = s.mesh.positions.len();
    let (ends, k) = springs_from_triangles(n, &s.mesh.triangles).unwrap().with_stiffness(s.k.0, s.k.1);
    let (ends, k): (Vec<_>, Vec<_>) = ends.into_iter().zip(k).filter(|(_, k)| *k > 0.0).unzip();
    let mut params = SimParams {
        time_step: 1.0 / 120.0,
        gravity: Vec3::zeros(),
        coulomb: FieldMethod::Direct,
        ..SimParams::default()
    };
    if let Some(a) = softening {
        params.softening = Softening::Length(a);
    }
    let mut sys = System::new(&s.mesh.positions, &vec![s.mass; n], &ends, &k, params).unwrap();
    sys.set_charges(&s.charge).unwrap();
    sys
}

fn main() {
    let torus = shapes::torus(29, 5, 1.0, 0.3);
    let two = two_spheres::two_spheres();
    let half = two.positions.len() / 2;
    let scenes = [
        Scene {
            name: "paper torus",
            charge: vec![6e-6; 145],
            mesh: torus,
            k: (10.0, 0.0),
            mass: 1.0,
            seconds: 15.0,
        },
        Scene {
            name: "two spheres ±2 µC",
            charge: (0..2 * half).map(|i| if i < half { 2e-6 } else { -2e-6 } / half as Real).collect(),
            mesh: two,
            k: (50.0, 5.0),
            mass: 1.0 / half as Real,
            seconds: 3.0,
        },
    ];
    for s in &scenes {
        let mut new = system(s, None);
        let n = s.mesh.positions.len();
        let (ends, _) = springs_from_triangles(n, &s.mesh.triangles).unwrap().with_stiffness(1.0, 1.0);
        let mean: Real = ends
            .iter()
            .map(|&[i, j]| (s.mesh.positions[i as usize] - s.mesh.positions[j as usize]).norm())
            .sum::<Real>()
            / ends.len() as Real;
        let mut old = system(s, Some(1e-3 * mean));
        let (mut fa, mut fb) = (vec![Vec3::zeros(); n], vec![Vec3::zeros(); n]);
        new.coulomb_forces(&mut fa).unwrap();
        old.coulomb_forces(&mut fb).unwrap();
        let force_diff = fa.iter().zip(&fb).map(|(a, b)| (a - b).norm() / b.norm()).fold(0.0, Real::max);
        // the former law itself, Plummer softening r² + ε² with ε = 10⁻³ × mean rest length
        let eps2 = (1e-3 * mean) * (1e-3 * mean);
        let x0 = &s.mesh.positions;
        let plummer_diff = (0..n)
            .map(|i| {
                let mut f = Vec3::zeros();
                for j in (0..n).filter(|&j| j != i) {
                    let d = x0[i] - x0[j];
                    f += d
                        * (cmsc_core::COULOMB_CONSTANT * s.charge[i] * s.charge[j]
                            / (d.norm_squared() + eps2).powf(1.5));
                }
                (fa[i] - f).norm() / f.norm()
            })
            .fold(0.0, Real::max);
        let size = s.mesh.positions.iter().map(|p| p.norm()).fold(0.0, Real::max);
        let (e0a, e0b) = (new.energies().total, old.energies().total);
        let (mut drift_a, mut drift_b, mut apart): (Real, Real, Real) = (0.0, 0.0, 0.0);
        let mut closest: Real = Real::INFINITY;
        for _ in 0..(s.seconds * 120.0).round() as u32 {
            new.step().unwrap();
            old.step().unwrap();
            drift_a = drift_a.max(((new.energies().total - e0a) / e0a).abs());
            drift_b = drift_b.max(((old.energies().total - e0b) / e0b).abs());
            apart = apart.max(
                new.positions().iter().zip(old.positions()).map(|(a, b)| (a - b).norm()).fold(0.0, Real::max),
            );
            // the closest approach of two vertices that are not spring neighbours: below a the
            // two laws differ
            let x = new.positions();
            for i in 0..n {
                for j in i + 1..n {
                    if !ends.contains(&[i as u32, j as u32]) {
                        closest = closest.min((x[i] - x[j]).norm());
                    }
                }
            }
        }
        println!(
            "{}: n = {n}, a = {:.4} m (before {:.2e} m); start: max relative force difference {force_diff:.2e} (against the Plummer law itself {plummer_diff:.2e}); \
             over {} s: largest vertex distance between the runs {:.2e} of the size, energy drift {drift_a:.2e} \
             (a) vs {drift_b:.2e} (before), closest non-neighbour approach {closest:.4} m",
            s.name,
            new.softening(),
            old.softening(),
            s.seconds,
            apart / size,
        );
    }
}
