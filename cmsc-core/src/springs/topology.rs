//! Springs derived from a triangle mesh: structural (edges) and bending.

use std::collections::HashMap;

use crate::error::{Error, Result};

/// The springs of a triangle mesh, before stiffnesses are chosen.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MeshSprings {
    /// One spring per unique mesh edge, as `(min, max)` vertex pairs, sorted.
    pub structural: Vec<[u32; 2]>,
    /// For every interior edge shared by exactly two triangles, a spring between the two
    /// vertices opposite that edge (the cloth bending model of Baraff–Witkin-style mass-spring
    /// cloth; Kauppila §1.1). Pairs that are already structural edges (e.g. on a tetrahedron) or
    /// that repeat are dropped, so every pair appears once in the union.
    pub bending: Vec<[u32; 2]>,
}

impl MeshSprings {
    /// Concatenates structural then bending springs with their stiffnesses (N/m), in the
    /// `(ends, stiffness)` form [`crate::System::new`] takes.
    pub fn with_stiffness(&self, structural_k: f64, bending_k: f64) -> (Vec<[u32; 2]>, Vec<f64>) {
        let ends: Vec<[u32; 2]> = self.structural.iter().chain(&self.bending).copied().collect();
        let stiffness = std::iter::repeat_n(structural_k, self.structural.len())
            .chain(std::iter::repeat_n(bending_k, self.bending.len()))
            .collect();
        (ends, stiffness)
    }
}

fn key(a: u32, b: u32) -> [u32; 2] {
    if a < b {
        [a, b]
    } else {
        [b, a]
    }
}

/// Derives structural and bending springs from triangles.
///
/// Edges used by more than two triangles (non-manifold) get a structural spring but no bending
/// spring, since "the opposite vertex" is ambiguous there.
///
/// # Errors
/// [`Error::InvalidArgument`] when a triangle references a vertex `>= n_vertices` or repeats a
/// vertex (a degenerate triangle has no well-defined edges).
pub fn springs_from_triangles(n_vertices: usize, triangles: &[[u32; 3]]) -> Result<MeshSprings> {
    // edge -> opposite vertices of the triangles using it (at most 2 kept, count tracked)
    let mut edges: HashMap<[u32; 2], (u32, [u32; 2])> = HashMap::with_capacity(triangles.len() * 2);
    for (t, &[a, b, c]) in triangles.iter().enumerate() {
        if [a, b, c].iter().any(|&v| v as usize >= n_vertices) {
            return Err(Error::invalid(
                "triangles",
                Some(t),
                format!("vertex index out of range for {n_vertices} vertices"),
            ));
        }
        if a == b || b == c || a == c {
            return Err(Error::invalid("triangles", Some(t), "repeats a vertex"));
        }
        for (u, v, opposite) in [(a, b, c), (b, c, a), (c, a, b)] {
            let entry = edges.entry(key(u, v)).or_insert((0, [0, 0]));
            if entry.0 < 2 {
                entry.1[entry.0 as usize] = opposite;
            }
            entry.0 += 1;
        }
    }
    let mut structural: Vec<[u32; 2]> = edges.keys().copied().collect();
    structural.sort_unstable();
    let mut bending: Vec<[u32; 2]> = edges
        .values()
        .filter(|(count, opp)| *count == 2 && opp[0] != opp[1])
        .map(|(_, opp)| key(opp[0], opp[1]))
        .filter(|pair| !edges.contains_key(pair))
        .collect();
    bending.sort_unstable();
    bending.dedup();
    Ok(MeshSprings { structural, bending })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quad_has_five_edges_and_one_bending_spring() {
        // 0---1
        // | / |
        // 2---3   triangles (0,2,1) and (1,2,3) share edge 1-2; opposite vertices 0 and 3.
        let s = springs_from_triangles(4, &[[0, 2, 1], [1, 2, 3]]).unwrap();
        assert_eq!(s.structural, vec![[0, 1], [0, 2], [1, 2], [1, 3], [2, 3]]);
        assert_eq!(s.bending, vec![[0, 3]]);
    }

    #[test]
    fn tetrahedron_bending_pairs_are_all_edges_so_none_are_added() {
        let tris = [[0, 1, 2], [0, 3, 1], [1, 3, 2], [2, 3, 0]];
        let s = springs_from_triangles(4, &tris).unwrap();
        assert_eq!(s.structural.len(), 6);
        assert!(s.bending.is_empty());
    }

    #[test]
    fn closed_grid_torus_counts() {
        // a u×v torus grid triangulated into 2uv triangles has 3uv edges (Euler: V − E + F = 0)
        // and one bending spring per edge.
        let (u, v) = (7u32, 5u32);
        let id = |i: u32, j: u32| (i % u) * v + (j % v);
        let mut tris = vec![];
        for i in 0..u {
            for j in 0..v {
                tris.push([id(i, j), id(i + 1, j), id(i + 1, j + 1)]);
                tris.push([id(i, j), id(i + 1, j + 1), id(i, j + 1)]);
            }
        }
        let s = springs_from_triangles((u * v) as usize, &tris).unwrap();
        assert_eq!(s.structural.len(), (3 * u * v) as usize);
        assert_eq!(s.bending.len(), (3 * u * v) as usize);
    }

    #[test]
    fn bad_triangles_are_rejected() {
        assert!(matches!(
            springs_from_triangles(3, &[[0, 1, 3]]),
            Err(Error::InvalidArgument { index: Some(0), .. })
        ));
        assert!(springs_from_triangles(3, &[[0, 1, 1]]).is_err());
    }
}
