//! The short-range form of the pair force (charges spread over balls of radius `a`,
//! `cmsc_core::coulomb` Eqs. (C1)–(C2)) in every CPU backend: two oppositely charged layers
//! pressed closer than `a` (two cloth layers in contact) against an independent term-by-term
//! reference; the energy a `System` reports is the potential of the force it applies; the
//! automatic radius is a quarter of the rest distance to the nearest neighbour, so the rest mesh
//! interacts by Coulomb's law exactly; the force stays bounded as layers meet; momentum is
//! exact. The GPU kernels run the same term (`tests/gpu.rs` compares them with the CPU sums).

mod common;

use cmsc_core::coulomb::{coulomb_energy, DirectSum, FieldSolver, P3m};
use cmsc_core::{
    shapes, springs_from_triangles, FieldMethod, Real, SimParams, Softening, System, Vec3,
    COULOMB_CONSTANT as KC,
};
use common::field::{forces, relative_l2};

/// Two 24 × 24 layers of spacing `l = 2 cm` carrying `+q` and `−q`, `gap` apart (m), the
/// second shifted by a third of a cell so that pairs meet at many distances below `a`.
fn layers(gap: Real) -> (Vec<Vec3>, Vec<Real>) {
    let sheet = shapes::grid(24, 24, 0.02).positions;
    let shift = Vec3::new(0.0066, 0.0033, gap);
    let x: Vec<Vec3> = sheet.iter().copied().chain(sheet.iter().map(|p| p + shift)).collect();
    let n = sheet.len();
    let q = (0..2 * n).map(|i| if i < n { 2e-8 } else { -2e-8 }).collect();
    (x, q)
}

/// The reference, written independently of the library's kernels: Gauss's law for a point
/// charge at distance `r` from the centre of a uniformly charged ball of radius `a`.
fn reference(x: &[Vec3], q: &[Real], a: Real) -> (Vec<Vec3>, Real) {
    let mut f = vec![Vec3::zeros(); x.len()];
    let mut u = 0.0;
    for i in 0..x.len() {
        for j in 0..x.len() {
            if i == j {
                continue;
            }
            let d = x[i] - x[j];
            let r = d.norm();
            let (field, phi) = if r >= a {
                (d / (r * r * r), 1.0 / r) // Coulomb: the enclosed charge is all of q_j
            } else {
                (d / (a * a * a), (3.0 * a * a - r * r) / (2.0 * a * a * a)) // q_j r³/a³ enclosed
            };
            f[i] += field * (KC * q[i] * q[j]);
            if i < j {
                u += KC * q[i] * q[j] * phi;
            }
        }
    }
    (f, u)
}

#[test]
fn every_backend_applies_the_ball_form_to_layers_in_contact() {
    let a = 0.01; // half the spacing: a larger radius than Softening::Auto's, more pairs inside
    for gap in [0.002, 0.006, 0.03] {
        let (x, q) = layers(gap);
        let (exact, exact_u) = reference(&x, &q, a);
        let direct = forces(&mut DirectSum::default(), &x, &q, a);
        let err = relative_l2(&direct, &exact);
        assert!(err < 1e-12, "gap {gap}: direct sum {err:e} from Gauss's law");
        let u = coulomb_energy(&x, &q, KC, a);
        assert!((u - exact_u).abs() < 1e-10 * exact_u.abs(), "gap {gap}: U {u} vs {exact_u}");
        // DDEF at its accuracy bar ([Paper] §4: ≈ 0.05 at m = 1K–10K), P3M at its tolerance
        let ddef = forces(&mut cmsc_core::coulomb::Ddef::new(1000), &x, &q, a);
        let err = relative_l2(&ddef, &exact);
        assert!(err < 0.05, "gap {gap}: DDEF {err:e}");
        let mut p3m = P3m::new().with_tolerance(1e-3).unwrap();
        let f = forces(&mut p3m, &x, &q, a);
        assert_eq!(p3m.method(), FieldMethod::P3m, "{:?}", p3m.fallback_reason());
        // the tolerance is P3M's estimate of the RMS error; the two layers' fields cancel, which
        // leaves up to 1.4× it here
        let err = relative_l2(&f, &exact);
        assert!(err < 2e-3, "gap {gap}: P3M {err:e}");
        let u = p3m.potential(&x, &q, KC, a).unwrap();
        assert!((u - exact_u).abs() < 1e-3 * exact_u.abs(), "gap {gap}: P3M U {u} vs {exact_u}");
        // momentum: the exact sum's forces cancel to round-off
        let total: Vec3 = direct.iter().sum();
        let scale: Real = direct.iter().map(|f| f.norm()).sum();
        assert!(total.norm() < 1e-12 * scale, "gap {gap}: net force {total:?}");
    }
}

#[test]
fn the_force_between_layers_stays_bounded_as_they_meet() {
    // the largest force on a vertex as the layers close from 6 mm to touching: bounded by the
    // value at a few millimetres (the bare law grows like 1/gap² under each aligned pair), with
    // the charge radius a System gives this mesh by default
    let sheet = shapes::grid(24, 24, 0.02);
    let n = sheet.positions.len();
    let (ends, k) = springs_from_triangles(n, &sheet.triangles).unwrap().with_stiffness(1.0, 0.1);
    let a =
        System::new(&sheet.positions, &vec![1e-3; n], &ends, &k, SimParams::default()).unwrap().softening();
    let peak = |gap: Real| -> Real {
        let (x, mut q) = layers(gap);
        // aligned pairs (no shift): the worst case for the bare law
        let n = x.len() / 2;
        let x: Vec<Vec3> = x[..n].iter().copied().chain(x[..n].iter().map(|p| p + Vec3::z() * gap)).collect();
        q.truncate(2 * n);
        forces(&mut DirectSum::default(), &x, &q, a).iter().map(|f| f.norm()).fold(0.0, Real::max)
    };
    let far = peak(0.006);
    for gap in [1e-3, 1e-4, 1e-6, 0.0] {
        let f = peak(gap);
        assert!(f.is_finite() && f < 1.5 * far, "gap {gap}: {f} N against {far} N at 6 mm");
    }
}

#[test]
fn auto_radius_is_a_quarter_of_the_nearest_neighbour_distance_and_the_energy_is_its_potential() {
    let mesh = shapes::grid(12, 12, 0.05);
    let n = mesh.positions.len();
    let (ends, k) = springs_from_triangles(n, &mesh.triangles).unwrap().with_stiffness(1.0, 0.1);
    let params = SimParams { coulomb: FieldMethod::Direct, gravity: Vec3::zeros(), ..SimParams::default() };
    assert_eq!(params.softening, Softening::Auto);
    let mut sys = System::new(&mesh.positions, &vec![0.01; n], &ends, &k, params).expect("valid system");
    assert!((sys.softening() - 0.0125).abs() < 1e-12, "a = {}", sys.softening());
    // fold the sheet so that opposite halves come within a of each other, then compare −∇U
    let q: Vec<Real> = (0..n).map(|i| if i % 12 < 6 { 1e-7 } else { -1e-7 }).collect();
    sys.set_charges(&q).unwrap();
    let folded: Vec<Vec3> = mesh
        .positions
        .iter()
        .map(|p| if p.x > 0.27 { Vec3::new(0.55 - p.x, p.y + 0.005, 0.004) } else { *p })
        .collect();
    sys.set_positions(&folded).unwrap();
    let mut f = vec![Vec3::zeros(); n];
    sys.coulomb_forces(&mut f).unwrap();
    let (exact, exact_u) = reference(&folded, &q, 0.0125);
    assert!(relative_l2(&f, &exact) < 1e-12);
    assert!((sys.energies().coulomb - exact_u).abs() < 1e-10 * exact_u.abs());
    let h = 1e-7;
    for i in [0, 7, 30, 77, 143] {
        for c in 0..3 {
            let (mut xp, mut xm) = (folded.clone(), folded.clone());
            xp[i][c] += h;
            xm[i][c] -= h;
            sys.set_positions(&xp).unwrap();
            let up = sys.energies().coulomb;
            sys.set_positions(&xm).unwrap();
            let um = sys.energies().coulomb;
            let g = (up - um) / (2.0 * h);
            assert!(
                (g + f[i][c]).abs() < 1e-5 * f[i].norm() + 1e-12,
                "vertex {i}, {c}: −∇U {} vs f {}",
                -g,
                f[i][c]
            );
        }
    }
}
