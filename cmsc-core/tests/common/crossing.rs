//! An edge–triangle intersection check for the contact tests, written independently of the
//! library's contact code.

use cmsc_core::{Real, Vec3};

/// Whether segment `p q` crosses triangle `a b c` (Möller–Trumbore, strict interior).
pub fn crosses(p: &Vec3, q: &Vec3, a: &Vec3, b: &Vec3, c: &Vec3) -> bool {
    let (dir, e1, e2) = (q - p, b - a, c - a);
    let h = dir.cross(&e2);
    let det = e1.dot(&h);
    if det.abs() < 1e-18 {
        return false;
    }
    let s = p - a;
    let u = s.dot(&h) / det;
    let qv = s.cross(&e1);
    let v = dir.dot(&qv) / det;
    let t = e2.dot(&qv) / det;
    u > 0.0 && v > 0.0 && u + v < 1.0 && t > 0.0 && t < 1.0
}

/// The first edge that passes through a triangle it does not share a vertex with.
pub fn first_crossing(
    x: &[Vec3],
    edges: &[[u32; 2]],
    triangles: &[[u32; 3]],
) -> Option<([u32; 2], [u32; 3])> {
    for e in edges {
        for t in triangles {
            if t.contains(&e[0]) || t.contains(&e[1]) {
                continue;
            }
            let [a, b, c] = t.map(|i| x[i as usize]);
            if crosses(&x[e[0] as usize], &x[e[1] as usize], &a, &b, &c) {
                return Some((*e, *t));
            }
        }
    }
    None
}

/// Whether any structural edge passes through a triangle it shares no vertex with at `x`: boxes
/// first, then [`first_crossing`] on the overlapping pairs.
pub fn any_crossing(x: &[Vec3], edges: &[[u32; 2]], triangles: &[[u32; 3]]) -> Option<([u32; 2], [u32; 3])> {
    let bounds = |pts: &[Vec3]| {
        pts.iter().fold((Vec3::repeat(Real::INFINITY), Vec3::repeat(Real::NEG_INFINITY)), |(lo, hi), p| {
            (lo.inf(p), hi.sup(p))
        })
    };
    let tri_boxes: Vec<_> = triangles.iter().map(|t| bounds(&t.map(|v| x[v as usize]))).collect();
    for e in edges {
        let (lo, hi) = bounds(&e.map(|v| x[v as usize]));
        for (t, (tlo, thi)) in triangles.iter().zip(&tri_boxes) {
            if (0..3).all(|a| lo[a] <= thi[a] && tlo[a] <= hi[a]) {
                if let Some(hit) = first_crossing(x, &[*e], &[*t]) {
                    return Some(hit);
                }
            }
        }
    }
    None
}
