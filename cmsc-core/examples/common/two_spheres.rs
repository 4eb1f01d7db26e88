//! Two spheres of 482 vertices (radius 0.4 m) with centres 2 m apart on the x axis, as one mesh:
//! the two-spheres scene of `short_range` and `economy_scenes`, shared by `#[path]`.

use cmsc_core::{shapes, Vec3};

/// The mesh; the first half of its vertices is the sphere at x = −1 m.
pub fn two_spheres() -> shapes::TriMesh {
    let ball = shapes::uv_sphere(16, 32, 0.4);
    let half = ball.positions.len();
    shapes::TriMesh {
        positions: ball
            .positions
            .iter()
            .map(|p| p - Vec3::x())
            .chain(ball.positions.iter().map(|p| p + Vec3::x()))
            .collect(),
        triangles: ball
            .triangles
            .iter()
            .copied()
            .chain(ball.triangles.iter().map(|t| t.map(|v| v + half as u32)))
            .collect(),
    }
}
