//! The crumpling cloth of issues 18 and 30, shared by `examples/crumple_cost.rs` and
//! `tests/contacts.rs` through `#[path]`: a 2 m, 41 × 41 cloth 0.9 m up (or finer, [`Cloth`]),
//! 1 kg in all, springs 100/10 N/m, Settling 2/s, whose halves (x < 0 and x > 0) carry
//! `±charge` (C) in all, exact Coulomb, steps of 1/120 s, above a 0.6 m sphere.

use cmsc_core::{shapes, springs_from_triangles, FieldMethod, FrictionLaw, Real, SimParams, System, Vec3};

/// What the scene has on: self-collision (at the [`Cloth`]'s distance), the sphere as a mesh
/// collider (contact distance 20 mm), and with `friction` the add-on's frictions for new
/// objects (Layer Friction 5/s, the Collision modifier's Friction 5: Coulomb's μ = 0.05), else
/// none.
#[derive(Clone, Copy)]
pub struct Contacts {
    pub self_collision: bool,
    pub sphere: bool,
    pub friction: bool,
}

/// The cloth's mesh and self-collision distance: `side × side` vertices over the 2 m square
/// and `distance` (m). A finer grid of the same springs is the same sheet (a spring lattice's
/// stretch stiffness does not depend on its spacing).
#[derive(Clone, Copy)]
pub struct Cloth {
    pub side: u32,
    pub distance: Real,
}

impl Cloth {
    /// The issues' cloth: 41 × 41 vertices (5 cm apart), 15 mm (the add-on's default).
    pub const ISSUES: Cloth = Cloth { side: 41, distance: 0.015 };
}

/// The system of `cloth` (iteration tolerance `tolerance`), the cloth's structural edges and
/// triangles.
pub fn crumple(
    Cloth { side, distance }: Cloth,
    charge: Real,
    tolerance: Real,
    contacts: Contacts,
) -> (System, Vec<[u32; 2]>, Vec<[u32; 3]>) {
    let spacing = 2.0 / (side - 1) as Real;
    let mut mesh = shapes::grid(side, side, spacing);
    mesh.positions.iter_mut().for_each(|p| *p += Vec3::new(-1.0, -1.0, 0.9));
    let n = mesh.positions.len();
    let springs = springs_from_triangles(n, &mesh.triangles).unwrap();
    let (ends, k) = springs.with_stiffness(100.0, 10.0);
    let params = SimParams {
        time_step: 1.0 / 120.0,
        coulomb: FieldMethod::Direct,
        gravity: Vec3::new(0.0, 0.0, -9.81),
        relative_damping: 2.0,
        iteration_tolerance: tolerance,
        ..SimParams::default()
    };
    let mut sys = System::new(&mesh.positions, &vec![1.0 / n as Real; n], &ends, &k, params).unwrap();
    let half = n as Real / 2.0;
    let q: Vec<Real> =
        mesh.positions.iter().map(|p| if p.x < 0.0 { charge / half } else { -charge / half }).collect();
    sys.set_charges(&q).unwrap();
    if contacts.self_collision {
        sys.set_self_collision(&mesh.triangles, &vec![distance; n]).unwrap();
        if contacts.friction {
            sys.set_self_collision_friction(&vec![5.0; n]).unwrap();
        }
    }
    if contacts.sphere {
        let ball = shapes::uv_sphere(16, 32, 0.6);
        let last = ball.triangles.len() as u32;
        let mu = if contacts.friction { 0.05 } else { 0.0 };
        sys.set_friction_law(FrictionLaw::Coulomb).unwrap();
        sys.set_mesh_colliders(&ball.positions, &ball.triangles, &[0, last], &[0.02], &[mu]).unwrap();
    }
    (sys, springs.structural, mesh.triangles)
}
