//! Continuous self-collision (issue 30): motion that crosses a layer within one step, near a
//! triangle's edge, where the vertex ends out of reach of the triangle it passed through. The
//! sides at the start and end of the step and the closest points at the end do not see such a
//! crossing; the swept (continuous) vertex–triangle and edge–edge tests do. Crossings are
//! counted by an exact segment–triangle test between every edge and every triangle of the other
//! layer, after every step.

mod common;

use cmsc_core::{shapes, springs_from_triangles, FieldMethod, Real, SimParams, System, Vec3};
use common::crossing::{any_crossing, crosses};
use common::{joined_triangles, stacked};

/// Two layers as one mesh: the system, its structural edges and triangles, and the number of
/// vertices of the lower layer (the first ones).
struct Layers {
    sys: System,
    edges: Vec<[u32; 2]>,
    triangles: Vec<[u32; 3]>,
    n_lower: usize,
}

/// Sheet `upper` at `shift` over sheet `lower` (pinned), springs on both, 1 g per vertex,
/// self-collision at distance `d` (m), every vertex of the upper sheet moving at `v` (m/s);
/// gravity `g` (m/s²), no Coulomb, step `h` (s).
fn layers(
    lower: &shapes::TriMesh,
    upper: &shapes::TriMesh,
    shift: Vec3,
    d: Real,
    v: Vec3,
    g: Vec3,
    h: Real,
) -> Layers {
    let (x, triangles) = stacked(lower, upper, shift);
    let n = x.len();
    let n_lower = lower.positions.len();
    let springs = springs_from_triangles(n, &triangles).unwrap();
    let (ends, k) = springs.with_stiffness(50.0, 1.0);
    let params = SimParams { time_step: h, gravity: g, coulomb: FieldMethod::Off, ..SimParams::default() };
    let mut sys = System::new(&x, &vec![1e-3; n], &ends, &k, params).unwrap();
    sys.set_pins(&(0..n_lower as u32).collect::<Vec<_>>()).unwrap();
    sys.set_self_collision(&triangles, &vec![d; n]).unwrap();
    let vel: Vec<Vec3> = (0..n).map(|i| if i < n_lower { Vec3::zeros() } else { v }).collect();
    sys.set_velocities(&vel).unwrap();
    Layers { sys, edges: springs.structural, triangles, n_lower }
}

/// Steps `layers` `steps` times; the first step after which an edge of one layer passes through
/// a triangle of the other, with the pair. The lower layer is pinned (its triangles still): a
/// vertex of the upper one whose straight path over the step passes through a lower triangle
/// counts too (as the edge `[v, v]`): that is a crossing even where the vertex ends beyond the
/// border, out of the lower layer's way.
fn first_crossing_step(layers: &mut Layers, steps: usize) -> Option<(usize, [u32; 2], [u32; 3])> {
    let Layers { sys, edges, triangles, n_lower } = layers;
    let lower = |v: u32| (v as usize) < *n_lower;
    let (lower_edges, upper_edges): (Vec<[u32; 2]>, Vec<[u32; 2]>) = edges.iter().partition(|e| lower(e[0]));
    let (lower_tris, upper_tris): (Vec<[u32; 3]>, Vec<[u32; 3]>) =
        triangles.iter().partition(|t| lower(t[0]));
    assert_eq!(any_crossing(sys.positions(), &upper_edges, &lower_tris), None);
    for step in 0..steps {
        let before = sys.positions().to_vec();
        sys.step().unwrap_or_else(|e| panic!("step {step}: {e}"));
        let x = sys.positions();
        let hit =
            any_crossing(x, &upper_edges, &lower_tris).or_else(|| any_crossing(x, &lower_edges, &upper_tris));
        if let Some((e, t)) = hit {
            return Some((step, e, t));
        }
        for v in *n_lower..x.len() {
            let path = |t: &&[u32; 3]| {
                let [a, b, c] = t.map(|k| x[k as usize]);
                crosses(&before[v], &x[v], &a, &b, &c)
            };
            if let Some(t) = lower_tris.iter().find(path) {
                return Some((step, [v as u32; 2], *t));
            }
        }
    }
    None
}

/// A small sheet (2 × 2 vertices, 1 cm) 1 cm above a pinned 5 × 5 sheet of 10 cm cells, 1.5 cm
/// inside its border, moving at 4 m/s outward and 4 m/s down (h = 1/120 s: 3.3 cm each way in
/// one step): it meets the plane 0.5–1.5 cm inside the border, through the border triangles,
/// and ends 0.8–1.8 cm beyond the border and 2.3 cm below the plane, 2.4 cm or more from every
/// triangle, over 4 times the contact distance (5 mm). The end state shows no side change
/// under any triangle and no pair of edges whose closest points are interior: only the swept
/// test sees the crossing. With it the small sheet is put back above the plane (and then
/// falls past the border, around it).
#[test]
fn a_fast_sheet_crossing_near_a_border_in_one_step_stays_on_its_side() {
    let (lower, upper) = (shapes::grid(5, 5, 0.1), shapes::grid(2, 2, 0.01));
    let (d, h) = (0.005, 1.0 / 120.0);
    let shift = Vec3::new(0.375, 0.15, 0.01);
    let mut scene = layers(&lower, &upper, shift, d, Vec3::new(4.0, 0.0, -4.0), Vec3::zeros(), h);
    let crossing = first_crossing_step(&mut scene, 10);
    assert_eq!(crossing, None, "(step, edge or vertex path, triangle) of the first crossing");
}

/// Two 21 × 21 sheets, 1 m across (5 cm cells), the upper one lying on the lower one at the
/// contact distance (a quarter of the cell) and sliding at `speed` (m/s) along `x` and
/// 0.2 m/s down, under gravity, frictionless, h = 1/120 s, 60 steps (0.5 s): the upper sheet
/// slides off the border of the lower (pinned) one and over it; no edge of one sheet passes
/// through a triangle of the other at any step.
fn sliding_layers(speed: Real) -> Option<(usize, [u32; 2], [u32; 3])> {
    let (side, l) = (21, 0.05);
    let d = l / 4.0;
    let sheet = shapes::grid(side, side, l);
    let shift = Vec3::new(l / 3.0, l / 3.0, d);
    let g = Vec3::new(0.0, 0.0, -9.81);
    let mut scene = layers(&sheet, &sheet, shift, d, Vec3::new(speed, 0.0, -0.2), g, 1.0 / 120.0);
    first_crossing_step(&mut scene, 60)
}

#[test]
fn frictionless_layers_sliding_at_1_to_3_m_per_s_never_pass_through_each_other() {
    for speed in [1.0, 2.0, 3.0] {
        let crossing = sliding_layers(speed);
        assert_eq!(crossing, None, "{speed} m/s: (step, edge, triangle) of the first crossing");
    }
}

/// The first step after which an edge passes through a triangle, with the pair.
type Crossing = Option<(usize, [u32; 2], [u32; 3])>;

/// A thin plate thrown edge-first through a hanging cloth: the cloth 1 m square (21 × 21, 5 cm
/// cells) hangs in the `x z` plane from its pinned top row; the plate, 20 × 20 cm (5 × 5, 5 cm
/// cells, stiff springs, as heavy as the cloth per vertex), lies flat (`x y`) at mid-height with
/// its leading edge 4 cm in front of the cloth and flies at `speed` m/s along `y`, into it.
/// Both are one mesh with self-collision at 1.25 cm, under gravity, h = 1/120 s, 30 steps
/// (0.25 s). Returns the first step after which an edge of one passes through a triangle of
/// the other, and how far (m) the plate's centre ended beyond the cloth's plane.
fn plate_through_hanging_cloth(speed: Real) -> (Crossing, Real) {
    let (cloth, plate) = (shapes::grid(21, 21, 0.05), shapes::grid(5, 5, 0.05));
    // the cloth in the x z plane (y = 0), the top row at z = 1 m; the plate flat at z = 0.5 m
    let x: Vec<Vec3> = cloth
        .positions
        .iter()
        .map(|p| Vec3::new(p.x, 0.0, p.y))
        .chain(plate.positions.iter().map(|p| Vec3::new(p.x + 0.4, p.y - 0.24, 0.5 + 0.0125)))
        .collect();
    let n_cloth = cloth.positions.len();
    let triangles = joined_triangles(&cloth, &plate);
    let n = x.len();
    let springs = springs_from_triangles(n, &triangles).unwrap();
    let (ends, mut k) = springs.with_stiffness(50.0, 1.0);
    for (s, e) in ends.iter().enumerate() {
        if e[0] as usize >= n_cloth {
            k[s] = 5e4; // the plate: stiff
        }
    }
    let g = Vec3::new(0.0, 0.0, -9.81);
    let params =
        SimParams { time_step: 1.0 / 120.0, gravity: g, coulomb: FieldMethod::Off, ..SimParams::default() };
    let mut sys = System::new(&x, &vec![1e-3; n], &ends, &k, params).unwrap();
    let top: Vec<u32> = (0..n_cloth as u32).filter(|&i| x[i as usize].z > 1.0 - 1e-9).collect();
    sys.set_pins(&top).unwrap();
    sys.set_self_collision(&triangles, &vec![0.0125; n]).unwrap();
    let vel: Vec<Vec3> =
        (0..n).map(|i| if i < n_cloth { Vec3::zeros() } else { Vec3::new(0.0, speed, 0.0) }).collect();
    sys.set_velocities(&vel).unwrap();
    let mut scene = Layers { sys, edges: springs.structural, triangles, n_lower: n_cloth };
    let (cloth_edges, plate_edges): (Vec<[u32; 2]>, Vec<[u32; 2]>) =
        scene.edges.iter().partition(|e| (e[0] as usize) < n_cloth);
    let (cloth_tris, plate_tris): (Vec<[u32; 3]>, Vec<[u32; 3]>) =
        scene.triangles.iter().partition(|t| (t[0] as usize) < n_cloth);
    let mut first = None;
    for step in 0..30 {
        scene.sys.step().unwrap_or_else(|e| panic!("{speed} m/s, step {step}: {e}"));
        let x = scene.sys.positions();
        let hit =
            any_crossing(x, &plate_edges, &cloth_tris).or_else(|| any_crossing(x, &cloth_edges, &plate_tris));
        if let Some((e, t)) = hit {
            first = Some((step, e, t));
            break;
        }
    }
    let x = scene.sys.positions();
    // the cloth's points around the plate's path, against the plate's centre
    let centre = x[n_cloth..].iter().sum::<Vec3>() / (n - n_cloth) as Real;
    let near: Vec<&Vec3> = x[..n_cloth]
        .iter()
        .filter(|p| (p.x - centre.x).abs() < 0.06 && (p.z - centre.z).abs() < 0.06)
        .collect();
    let cloth_y = near.iter().map(|p| p.y).fold(Real::NEG_INFINITY, Real::max);
    (first, centre.y - cloth_y)
}

#[test]
fn a_thin_plate_thrown_through_a_hanging_cloth_carries_it_instead() {
    for speed in [6.0, 12.0] {
        let (crossing, beyond) = plate_through_hanging_cloth(speed);
        assert_eq!(crossing, None, "{speed} m/s: (step, edge, triangle) of the first crossing");
        // it pushed the cloth ahead of it: its centre is still behind the cloth there
        assert!(beyond < 0.0, "{speed} m/s: the plate's centre is {beyond} m beyond the cloth");
    }
}
