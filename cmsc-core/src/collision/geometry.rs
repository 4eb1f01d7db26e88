//! Triangle helpers shared by the mesh obstacles and self-collision (a leaf: it imports no
//! other collision module): unit normals, validation, and the closest point on a triangle by
//! parry's projection with its location (vertex, edge or face).

use parry3d_f64::math::Point;
use parry3d_f64::query::PointQueryWithLocation;
use parry3d_f64::shape::{Triangle, TrianglePointLocation};

use crate::error::{Error, Result};
use crate::math::Vec3;

/// Unit normal of a triangle, or `None` if its area is zero (relative to its longest edge).
pub(crate) fn triangle_normal(a: &Vec3, b: &Vec3, c: &Vec3) -> Option<Vec3> {
    let cross = (b - a).cross(&(c - a));
    let longest = (b - a).norm_squared().max((c - b).norm_squared()).max((a - c).norm_squared());
    // 1e-12: a sliver whose height is 10⁻¹² of its longest edge is degenerate in f64 normals
    (cross.norm() > 1e-12 * longest).then(|| cross.normalize())
}

/// Validates triangles (in range, three distinct corners, non-zero area) against `vertices`.
///
/// # Errors
/// [`Error::InvalidArgument`] (`name`, at the triangle) for an index out of range or a
/// degenerate triangle.
pub(crate) fn check_triangles(name: &'static str, triangles: &[[u32; 3]], vertices: &[Vec3]) -> Result<()> {
    let n = vertices.len();
    for (t, tri) in triangles.iter().enumerate() {
        if let Some(&i) = tri.iter().find(|&&i| i as usize >= n) {
            return Err(Error::invalid(name, Some(t), format!("vertex index {i} is out of range (n = {n})")));
        }
        let [a, b, c] = tri.map(|i| vertices[i as usize]);
        if tri[0] == tri[1] || tri[1] == tri[2] || tri[0] == tri[2] || triangle_normal(&a, &b, &c).is_none() {
            return Err(Error::invalid(name, Some(t), format!("{tri:?} is degenerate (zero area)")));
        }
    }
    Ok(())
}

/// Every edge of `triangles` once, `[i, j]` with `i < j`, in order.
pub(crate) fn edges_of(triangles: &[[u32; 3]]) -> Vec<[u32; 2]> {
    let mut edges: Vec<[u32; 2]> = triangles
        .iter()
        .flat_map(|t| [[t[0], t[1]], [t[1], t[2]], [t[2], t[0]]])
        .map(|[a, b]| [a.min(b), a.max(b)])
        .collect();
    edges.sort_unstable();
    edges.dedup();
    edges
}

/// The closest point to `p` on triangle `(a, b, c)` (its boundary and interior) and where it
/// lies: [`TrianglePointLocation::OnFace`] inside the face, `OnEdge` or `OnVertex` on its
/// boundary (parry's Voronoi-region projection, as Ericson, *Real-Time Collision Detection*,
/// §5.1.5).
pub(crate) fn closest_on_triangle(p: &Vec3, a: &Vec3, b: &Vec3, c: &Vec3) -> (Vec3, TrianglePointLocation) {
    let triangle = Triangle::new(Point::from(*a), Point::from(*b), Point::from(*c));
    let (projection, location) = triangle.project_local_point_and_get_location(&Point::from(*p), false);
    (projection.point.coords, location)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_point_regions() {
        let (a, b, c) = (Vec3::zeros(), Vec3::x(), Vec3::y());
        let (q, at) = closest_on_triangle(&Vec3::new(0.2, 0.2, 1.0), &a, &b, &c);
        assert!(
            matches!(at, TrianglePointLocation::OnFace(..)) && (q - Vec3::new(0.2, 0.2, 0.0)).norm() < 1e-15
        );
        let (q, at) = closest_on_triangle(&Vec3::new(-1.0, -1.0, 0.5), &a, &b, &c);
        assert!(matches!(at, TrianglePointLocation::OnVertex(0)) && q == a, "{at:?}");
        let (q, at) = closest_on_triangle(&Vec3::new(0.5, -1.0, 0.0), &a, &b, &c);
        assert!(
            matches!(at, TrianglePointLocation::OnEdge(..)) && (q - Vec3::new(0.5, 0.0, 0.0)).norm() < 1e-15
        );
    }

    #[test]
    fn slivers_and_bad_indices_are_refused() {
        let v = [Vec3::zeros(), Vec3::x(), Vec3::new(2.0, 0.0, 0.0), Vec3::y()];
        assert!(triangle_normal(&v[0], &v[1], &v[2]).is_none());
        assert!(check_triangles("t", &[[0, 1, 2]], &v).is_err());
        assert!(check_triangles("t", &[[0, 1, 4]], &v).is_err());
        assert!(check_triangles("t", &[[0, 1, 3]], &v).is_ok());
    }
}
