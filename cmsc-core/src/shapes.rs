//! Procedural meshes used by the examples, benchmarks and tests: the paper's torus, a cloth
//! grid, a UV sphere and a geodesic sphere. Plain data (positions in m and triangles), no physics.

use std::f64::consts::TAU;

use crate::math::{Real, Vec3};

/// A triangle mesh.
#[derive(Debug, Clone, PartialEq)]
pub struct TriMesh {
    /// Vertex positions (m).
    pub positions: Vec<Vec3>,
    /// Counter-clockwise triangles (outward normals).
    pub triangles: Vec<[u32; 3]>,
}

/// A torus around the `z` axis with `u` segments around the major circle (radius `major`, m)
/// and `v` around the tube (radius `minor`, m), each quad split into two triangles. The paper's
/// torus (§4, Fig. 4) is `torus(29, 5, 1.0, 0.3)`: 145 vertices.
pub fn torus(u: u32, v: u32, major: Real, minor: Real) -> TriMesh {
    let id = |i: u32, j: u32| (i % u) * v + (j % v);
    let mut positions = Vec::with_capacity((u * v) as usize);
    for i in 0..u {
        let theta = TAU * i as Real / u as Real;
        for j in 0..v {
            let phi = TAU * j as Real / v as Real;
            let ring = major + minor * phi.cos();
            positions.push(Vec3::new(ring * theta.cos(), ring * theta.sin(), minor * phi.sin()));
        }
    }
    let mut triangles = Vec::with_capacity(2 * (u * v) as usize);
    for i in 0..u {
        for j in 0..v {
            triangles.push([id(i, j), id(i + 1, j), id(i + 1, j + 1)]);
            triangles.push([id(i, j), id(i + 1, j + 1), id(i, j + 1)]);
        }
    }
    TriMesh { positions, triangles }
}

/// A flat `nx × ny` vertex grid in the `xy` plane at `z = 0`, `spacing` m apart, each quad split
/// into two triangles along alternating diagonals (as Liu 2013's cloth).
pub fn grid(nx: u32, ny: u32, spacing: Real) -> TriMesh {
    let id = |i: u32, j: u32| j * nx + i;
    let positions = (0..ny)
        .flat_map(|j| (0..nx).map(move |i| Vec3::new(i as Real * spacing, j as Real * spacing, 0.0)))
        .collect();
    let mut triangles = Vec::with_capacity(2 * ((nx - 1) * (ny - 1)) as usize);
    for j in 0..ny.saturating_sub(1) {
        for i in 0..nx.saturating_sub(1) {
            let (a, b, c, d) = (id(i, j), id(i + 1, j), id(i + 1, j + 1), id(i, j + 1));
            if (i + j) % 2 == 0 {
                triangles.extend([[a, b, c], [a, c, d]]);
            } else {
                triangles.extend([[a, b, d], [b, c, d]]);
            }
        }
    }
    TriMesh { positions, triangles }
}

/// A UV sphere of `radius` (m) with `rings` latitude bands and `segments` longitudes: two poles
/// plus `(rings − 1) × segments` vertices.
pub fn uv_sphere(rings: u32, segments: u32, radius: Real) -> TriMesh {
    let mut positions = vec![Vec3::new(0.0, 0.0, radius)];
    for r in 1..rings {
        let polar = std::f64::consts::PI * r as Real / rings as Real;
        for s in 0..segments {
            let az = TAU * s as Real / segments as Real;
            positions.push(Vec3::new(polar.sin() * az.cos(), polar.sin() * az.sin(), polar.cos()) * radius);
        }
    }
    positions.push(Vec3::new(0.0, 0.0, -radius));
    let south = positions.len() as u32 - 1;
    let ring = |r: u32, s: u32| 1 + (r - 1) * segments + s % segments;
    let mut triangles = Vec::new();
    for s in 0..segments {
        triangles.push([0, ring(1, s), ring(1, s + 1)]);
        triangles.push([south, ring(rings - 1, s + 1), ring(rings - 1, s)]);
    }
    for r in 1..rings - 1 {
        for s in 0..segments {
            let (a, b, c, d) = (ring(r, s), ring(r + 1, s), ring(r + 1, s + 1), ring(r, s + 1));
            triangles.extend([[a, b, c], [a, c, d]]);
        }
    }
    TriMesh { positions, triangles }
}

/// A geodesic sphere of `radius` (m): an icosahedron whose triangles are split in four
/// `subdivisions` times, new vertices pushed onto the sphere: `10 · 4^k + 2` nearly evenly spaced
/// vertices (642 at `k = 3`, the validation report's Fig. 5 and 12 sphere; same construction and
/// vertex order as `tests/validation/common.py`'s `icosphere_mesh`).
pub fn icosphere(subdivisions: u32, radius: Real) -> TriMesh {
    let t = (1.0 + 5f64.sqrt()) / 2.0;
    let corners = [
        [-1.0, t, 0.0],
        [1.0, t, 0.0],
        [-1.0, -t, 0.0],
        [1.0, -t, 0.0],
        [0.0, -1.0, t],
        [0.0, 1.0, t],
        [0.0, -1.0, -t],
        [0.0, 1.0, -t],
        [t, 0.0, -1.0],
        [t, 0.0, 1.0],
        [-t, 0.0, -1.0],
        [-t, 0.0, 1.0],
    ];
    let mut unit: Vec<Vec3> = corners.iter().map(|c| Vec3::from_column_slice(c).normalize()).collect();
    let mut triangles: Vec<[u32; 3]> = vec![
        [0, 11, 5],
        [0, 5, 1],
        [0, 1, 7],
        [0, 7, 10],
        [0, 10, 11],
        [1, 5, 9],
        [5, 11, 4],
        [11, 10, 2],
        [10, 7, 6],
        [7, 1, 8],
        [3, 9, 4],
        [3, 4, 2],
        [3, 2, 6],
        [3, 6, 8],
        [3, 8, 9],
        [4, 9, 5],
        [2, 4, 11],
        [6, 2, 10],
        [8, 6, 7],
        [9, 8, 1],
    ];
    for _ in 0..subdivisions {
        let mut mid = std::collections::HashMap::new();
        let mut midpoint = |a: u32, b: u32| -> u32 {
            *mid.entry((a.min(b), a.max(b))).or_insert_with(|| {
                unit.push((unit[a as usize] + unit[b as usize]).normalize());
                unit.len() as u32 - 1
            })
        };
        triangles = triangles
            .iter()
            .flat_map(|&[a, b, c]| {
                let (ab, bc, ca) = (midpoint(a, b), midpoint(b, c), midpoint(c, a));
                [[a, ab, ca], [b, bc, ab], [c, ca, bc], [ab, bc, ca]]
            })
            .collect();
    }
    TriMesh { positions: unit.iter().map(|p| p * radius).collect(), triangles }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::springs_from_triangles;

    #[test]
    fn closed_meshes_satisfy_euler() {
        for (mesh, chi) in [(torus(29, 5, 1.0, 0.3), 0), (uv_sphere(8, 12, 1.0), 2)] {
            let e = springs_from_triangles(mesh.positions.len(), &mesh.triangles).unwrap().structural.len();
            let (v, f) = (mesh.positions.len() as i64, mesh.triangles.len() as i64);
            assert_eq!(v - e as i64 + f, chi);
        }
        assert_eq!(torus(29, 5, 1.0, 0.3).positions.len(), 145);
        let ico = icosphere(3, 2.0);
        assert_eq!(ico.positions.len(), 642);
        let e = springs_from_triangles(642, &ico.triangles).unwrap().structural.len();
        assert_eq!(642 - e as i64 + ico.triangles.len() as i64, 2);
        assert!(ico.positions.iter().all(|p| (p.norm() - 2.0).abs() < 1e-12));
    }

    #[test]
    fn grid_counts() {
        let g = grid(81, 81, 0.01);
        assert_eq!(g.positions.len(), 6561);
        assert_eq!(g.triangles.len(), 2 * 80 * 80);
    }
}
