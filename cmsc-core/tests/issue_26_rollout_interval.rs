//! Issue 26: a rollout of the gradient ran with `model.params.far_field_interval` overwritten
//! to 1 while the DDEF backend kept the interval K it had been told: it sized its adaptive grid
//! for a gather run once every K steps (a larger grid than the rollout's every-step gather
//! wants) and copied its held far part on every call. The stepper now has a rollout mode that
//! tells the backend interval 1 itself, so a rollout is the same whatever interval the system
//! steps with.

use cmsc_core::{shapes, springs_from_triangles, ChargeGroups, FieldMethod, SimParams, System, Vec3};

#[test]
fn a_rollout_at_interval_k_sizes_ddef_as_a_system_made_at_interval_1() {
    let mesh = shapes::torus(200, 50, 1.0, 0.3);
    let n = mesh.positions.len();
    let springs = springs_from_triangles(n, &mesh.triangles).unwrap();
    let (ends, k) = springs.with_stiffness(10.0, 0.0);
    let groups = ChargeGroups::new(&vec![1.0; n], 1, n).unwrap();
    let target: Vec<Vec3> = mesh.positions.iter().map(|p| p * 1.05).collect();
    let system = |far_field_interval| {
        let params = SimParams {
            time_step: 0.02,
            gravity: Vec3::zeros(),
            coulomb: FieldMethod::Ddef,
            grid_points: 0, // adaptive: the grid size follows the gather's share of the cost
            far_field_interval,
            ..SimParams::default()
        };
        let mut sys = System::new(&mesh.positions, &vec![0.01; n], &ends, &k, params).unwrap();
        sys.set_charges(&vec![1e-9; n]).unwrap();
        sys
    };
    let (mut at_1, mut at_k) = (system(1), system(8));
    let a = at_1.rollout_gradient(6, &groups, &[2e-6], &target).unwrap();
    let b = at_k.rollout_gradient(6, &groups, &[2e-6], &target).unwrap();
    let (m_1, m_k) = (at_1.field_grid_size(), at_k.field_grid_size());
    println!("grid size after the rollout: {m_1:?} (made at interval 1), {m_k:?} (interval 8)");
    assert!(m_1.is_some_and(|m| m > 0));
    assert_eq!(m_k, m_1, "the rollout must size the grid for interval 1");
    assert_eq!((b.loss, &b.grad_charges), (a.loss, &a.grad_charges));
    // and the system steps at its own interval again afterwards
    assert_eq!(at_k.params().far_field_interval, 8);
    at_k.step_n(2).unwrap();
    assert!(at_k.last_step_counts().far_field_held);
}
