//! Masses as the add-on lumps them, shared by the examples by `#[path]`.

use cmsc_core::shapes::TriMesh;
use cmsc_core::Real;

/// `total` kg over the vertices in proportion to their share of the area (a third of each
/// incident triangle), as the add-on lumps an object's mass (`blender_addon/sim/mesh.py`).
pub fn area_lumped(mesh: &TriMesh, total: Real) -> Vec<Real> {
    let x = &mesh.positions;
    let mut share = vec![0.0; x.len()];
    for t in &mesh.triangles {
        let [a, b, c] = t.map(|i| x[i as usize]);
        let third = (b - a).cross(&(c - a)).norm() / 6.0;
        for &i in t {
            share[i as usize] += third;
        }
    }
    let sum: Real = share.iter().sum();
    share.iter().map(|s| total * s / sum).collect()
}
