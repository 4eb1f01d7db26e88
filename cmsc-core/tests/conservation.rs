//! Coulomb's law and the conservation laws the integrators must respect.

mod common;

use cmsc_core::{
    shapes, springs_from_triangles, FieldMethod, Integrator, SimParams, Softening, System, Vec3,
    COULOMB_CONSTANT,
};

fn free_params(integrator: Integrator, h: f64) -> SimParams {
    SimParams {
        time_step: h,
        gravity: Vec3::zeros(),
        coulomb: FieldMethod::Direct,
        integrator,
        ..SimParams::default()
    }
}

#[test]
fn two_charges_feel_coulombs_law() {
    let x = [Vec3::new(0.0, 0.0, 0.0), Vec3::new(0.3, 0.4, 0.0)]; // 0.5 m apart
    let params = SimParams { softening: Softening::Length(0.0), ..free_params(Integrator::Imex, 0.01) };
    let mut sys = System::new(&x, &[1.0, 2.0], &[], &[], params).unwrap();
    sys.set_charges(&[3e-6, -5e-6]).unwrap();
    let mut f = [Vec3::zeros(); 2];
    sys.coulomb_forces(&mut f).unwrap();
    let magnitude = COULOMB_CONSTANT * 3e-6 * 5e-6 / 0.25;
    let toward_1 = (x[1] - x[0]).normalize();
    assert!((f[0] - toward_1 * magnitude).norm() < 1e-13 * magnitude, "{f:?}");
    assert!((f[0] + f[1]).norm() < 1e-15 * magnitude);

    // the automatic softening changes the law by ~1.5 (ε/r)² only
    sys.set_params(free_params(Integrator::Imex, 0.01)).unwrap();
    sys.coulomb_forces(&mut f).unwrap();
    assert!((f[0].norm() / magnitude - 1.0).abs() < 1e-5);
}

#[test]
fn like_charges_repel_and_accelerate_as_newton_says() {
    // after one tiny Verlet step from rest, v = a h with a = F / m
    let x = [Vec3::zeros(), Vec3::new(1.0, 0.0, 0.0)];
    let h = 1e-6;
    let params = SimParams { softening: Softening::Length(0.0), ..free_params(Integrator::Verlet, h) };
    let mut sys = System::new(&x, &[2.0, 0.5], &[], &[], params).unwrap();
    sys.set_charges(&[1e-5, 1e-5]).unwrap();
    sys.step().unwrap();
    let f = COULOMB_CONSTANT * 1e-10;
    assert!((sys.velocities()[0].x + f / 2.0 * h).abs() < 1e-9 * f * h);
    assert!((sys.velocities()[1].x - f / 0.5 * h).abs() < 1e-9 * f * h);
}

/// A charged, spring-connected sphere with mixed charges and masses and an initial spin.
fn charged_sphere(integrator: Integrator, h: f64) -> System {
    let mesh = shapes::uv_sphere(6, 10, 0.5);
    let n = mesh.positions.len();
    let (ends, k) = springs_from_triangles(n, &mesh.triangles).unwrap().with_stiffness(40.0, 4.0);
    let mass: Vec<f64> = (0..n).map(|i| 0.01 + 0.002 * (i % 5) as f64).collect();
    let mut sys = System::new(&mesh.positions, &mass, &ends, &k, free_params(integrator, h)).unwrap();
    let q: Vec<f64> = (0..n).map(|i| if i % 3 == 0 { -2e-7 } else { 3e-7 }).collect();
    sys.set_charges(&q).unwrap();
    let v: Vec<Vec3> = mesh.positions.iter().map(|p| Vec3::new(-p.y, p.x, 0.3 * p.z)).collect();
    sys.set_velocities(&v).unwrap();
    sys
}

#[test]
fn momentum_is_conserved_without_external_forces() {
    for (integrator, h) in [(Integrator::Imex, 0.02), (Integrator::Verlet, 0.001)] {
        let mut sys = charged_sphere(integrator, h);
        let p0 = common::momentum(&sys);
        let scale: f64 = sys.velocities().iter().zip(sys.masses()).map(|(v, m)| m * v.norm()).sum();
        for _ in 0..200 {
            sys.step().unwrap();
            // round-off of the Cholesky solve only. The springs conserve momentum by structure
            // (1ᵀL = 0, 1ᵀJd = 0 whatever their sign or scale: `implicit_euler` catches those);
            // what this catches is a force that breaks Newton's third law (a Coulomb pair, a
            // damping that is not relative) or a velocity update that is not (x − x_t)/h
            let dp = (common::momentum(&sys) - p0).norm();
            assert!(dp < 1e-10 * scale, "{integrator:?}: momentum changed by {dp}");
        }
    }
}

#[test]
fn verlet_conserves_energy_at_small_steps() {
    let mut sys = charged_sphere(Integrator::Verlet, 2e-4);
    let e0 = sys.energies().total;
    let mut worst: f64 = 0.0;
    for _ in 0..2000 {
        sys.step().unwrap();
        worst = worst.max((sys.energies().total - e0).abs());
    }
    let scale = sys.energies().kinetic.abs() + sys.energies().coulomb.abs();
    assert!(worst < 1e-4 * scale, "energy drift {worst} vs scale {scale}");
}

#[test]
fn uniform_field_accelerates_the_centre_of_mass() {
    // Internal forces cancel, so the centre of mass accelerates by Q E / M exactly.
    let e = Vec3::new(0.0, 200.0, 0.0);
    for (integrator, h) in [(Integrator::Imex, 0.01), (Integrator::Verlet, 0.001)] {
        let mut sys = charged_sphere(integrator, h);
        sys.set_velocities(&vec![Vec3::zeros(); sys.n_vertices()]).unwrap();
        sys.set_uniform_field(e).unwrap();
        let q_total: f64 = sys.charges().iter().sum();
        let m_total: f64 = sys.masses().iter().sum();
        let steps = 50;
        sys.step_n(steps).unwrap();
        let v_cm = common::momentum(&sys) / m_total;
        let expected = e * (q_total / m_total) * (steps as f64 * h);
        assert!(
            (v_cm - expected).norm() < 1e-8 * expected.norm(),
            "{integrator:?}: {v_cm:?} vs {expected:?}"
        );
    }
}
