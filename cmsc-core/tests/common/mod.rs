//! Scenes shared by the integration tests.
#![allow(dead_code)] // each test binary uses a subset

pub mod crossing;
pub mod field;
pub mod newton;

use cmsc_core::{shapes, springs_from_triangles, FieldMethod, Integrator, Real, SimParams, System, Vec3};

/// The paper's torus (§4, Fig. 4): 29 × 5 = 145 vertices, R = 1 m, r = 0.3 m, structural
/// springs of 10 N/m, 6 µC on every vertex, no damping, no gravity.
pub fn paper_torus(mass: f64, h: f64, integrator: Integrator) -> System {
    let mesh = shapes::torus(29, 5, 1.0, 0.3);
    let springs = springs_from_triangles(mesh.positions.len(), &mesh.triangles).unwrap();
    let (ends, k) = springs.with_stiffness(10.0, 0.0);
    let (ends, k): (Vec<_>, Vec<_>) = ends.into_iter().zip(k).filter(|(_, k)| *k > 0.0).unzip();
    let params = SimParams {
        time_step: h,
        iterations: 10,
        gravity: Vec3::zeros(),
        coulomb: FieldMethod::Direct,
        integrator,
        ..SimParams::default()
    };
    let n = mesh.positions.len();
    let mut sys = System::new(&mesh.positions, &vec![mass; n], &ends, &k, params).unwrap();
    sys.set_charges(&vec![6e-6; n]).unwrap();
    sys
}

/// The validation report's Fig. 5 sphere: an icosphere of 642 vertices and radius 1 m carrying
/// the paper torus's total mass (145 kg) and charge (145 × q), structural springs of 0.5 N/m.
pub fn fig5_sphere(q: f64, h: f64) -> System {
    let mesh = shapes::icosphere(3, 1.0);
    let n = mesh.positions.len();
    let springs = springs_from_triangles(n, &mesh.triangles).unwrap();
    let (ends, k) = springs.with_stiffness(0.5, 0.0);
    let (ends, k): (Vec<_>, Vec<_>) = ends.into_iter().zip(k).filter(|(_, k)| *k > 0.0).unzip();
    let params = SimParams {
        time_step: h,
        gravity: Vec3::zeros(),
        coulomb: FieldMethod::Direct,
        integrator: Integrator::ImexLowDissipation,
        ..SimParams::default()
    };
    let mut sys = System::new(&mesh.positions, &vec![145.0 / n as f64; n], &ends, &k, params).unwrap();
    sys.set_charges(&vec![145.0 * q / n as f64; n]).unwrap();
    sys
}

/// Total momentum `Σ m_i v_i` (kg·m/s).
pub fn momentum(sys: &System) -> Vec3 {
    sys.velocities().iter().zip(sys.masses()).map(|(v, m)| v * *m).sum()
}

/// Largest distance of any vertex from the origin (m).
pub fn extent(sys: &System) -> f64 {
    sys.positions().iter().map(|p| p.norm()).fold(0.0, f64::max)
}

/// Sheet `upper` moved by `shift` (m) over sheet `lower`, as one mesh: vertices (the lower
/// sheet's first), triangles.
pub fn stacked(lower: &shapes::TriMesh, upper: &shapes::TriMesh, shift: Vec3) -> (Vec<Vec3>, Vec<[u32; 3]>) {
    let x = lower.positions.iter().copied().chain(upper.positions.iter().map(|p| p + shift)).collect();
    (x, joined_triangles(lower, upper))
}

/// The triangles of `first` and then of `second`, as one mesh whose vertices are `first`'s and
/// then `second`'s.
pub fn joined_triangles(first: &shapes::TriMesh, second: &shapes::TriMesh) -> Vec<[u32; 3]> {
    let n = first.positions.len() as u32;
    first.triangles.iter().copied().chain(second.triangles.iter().map(|t| t.map(|v| v + n))).collect()
}

/// Two `side × side` sheets of spacing `l`, `gap` apart along `z` (the upper one shifted by a
/// third of a cell), as one mesh: vertices, triangles.
pub fn two_sheets(side: u32, l: Real, gap: Real) -> (Vec<Vec3>, Vec<[u32; 3]>) {
    let sheet = shapes::grid(side, side, l);
    stacked(&sheet, &sheet, Vec3::new(l / 3.0, l / 3.0, gap))
}
