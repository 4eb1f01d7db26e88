//! The cloth landing of issue 30, shared by `examples/landing_energy.rs` and `tests/advance.rs`
//! through `#[path]`: a 2 m, `side` × `side` cloth of 1 kg (springs `stiffness`/10 N/m,
//! Settling 2/s) 5 cm above a mesh sphere of radius `radius` (m; a UV sphere of 32 × 64, contact
//! distance 2 cm, Coulomb friction `mu`) and 5 cm off its centre, gravity on, steps of `h` (s),
//! iterations to 1e-3.

use cmsc_core::{shapes, springs_from_triangles, FieldMethod, FrictionLaw, Real, SimParams, System, Vec3};

/// The system and its number of structural springs (the first of its springs).
pub fn landing(side: u32, radius: Real, stiffness: Real, mu: Real, h: Real) -> (System, usize) {
    let spacing = 2.0 / (side - 1) as Real;
    let mut mesh = shapes::grid(side, side, spacing);
    mesh.positions.iter_mut().for_each(|p| *p += Vec3::new(-1.0 + 0.05, -1.0, radius + 0.05));
    let n = mesh.positions.len();
    let springs = springs_from_triangles(n, &mesh.triangles).unwrap();
    let (ends, k) = springs.with_stiffness(stiffness, 10.0);
    let params = SimParams {
        time_step: h,
        coulomb: FieldMethod::Direct,
        gravity: Vec3::new(0.0, 0.0, -9.81),
        relative_damping: 2.0,
        iteration_tolerance: 1e-3,
        ..SimParams::default()
    };
    let mut sys = System::new(&mesh.positions, &vec![1.0 / n as Real; n], &ends, &k, params).unwrap();
    sys.set_friction_law(FrictionLaw::Coulomb).unwrap();
    let ball = shapes::uv_sphere(32, 64, radius);
    let last = ball.triangles.len() as u32;
    sys.set_mesh_colliders(&ball.positions, &ball.triangles, &[0, last], &[0.02], &[mu]).unwrap();
    (sys, springs.structural.len())
}
