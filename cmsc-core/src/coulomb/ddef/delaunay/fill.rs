//! Bowyer–Watson, the second half of inserting a point: the cavity's tets die and the cone from
//! the point over the cavity's boundary faces fills it (each new tet has the orientation of the
//! old tet behind its face). New tets reuse the dead slots; their faces through the point are
//! paired up through a hash table on the opposite edge.

use super::cavity::Cavity;
use super::mesh::{Mesh, NONE};
use super::TetError;

/// An entry of the edge table: a new tet's face through the new point, waiting for the other
/// new tet on the same edge.
#[derive(Debug, Clone, Copy, Default)]
struct EdgeEntry {
    /// The insertion (`iter`) that wrote the entry; an older stamp marks a free entry.
    stamp: u32,
    /// The new tet, or [`NONE`] once its partner has been found.
    tet: u32,
    /// The face's slot in `tet` (the index of the vertex opposite it).
    face: u32,
    /// The edge `(min, max)` of point indices, packed in 64 bits.
    key: u64,
}

/// The free slots and the edge table, kept across insertions.
pub(super) struct Fill {
    /// Open-addressing table (linear probing); its length is a power of two, at least 6× the
    /// boundary faces of a cavity.
    table: Vec<EdgeEntry>,
    /// Dead tet slots, reused last-freed first.
    free: Vec<u32>,
}

impl Default for Fill {
    fn default() -> Self {
        Fill { table: vec![EdgeEntry::default(); 1024], free: Vec::new() }
    }
}

/// The two indices in `0..4` other than `k` and `m`.
fn other_two(k: usize, m: usize) -> [usize; 2] {
    let mut o = (0..4).filter(|&j| j != k && j != m);
    [o.next().unwrap_or(0), o.next().unwrap_or(0)]
}

impl Fill {
    /// Replaces the tets of `cavity` (of the `iter`-th insertion, `iter ≥ 1`) by the cone from
    /// the new point over its boundary faces, with adjacency; `mesh.last` becomes the last new
    /// tet.
    ///
    /// # Errors
    /// If an edge is shared by more than two new faces (a non-manifold cavity, only a bug).
    pub fn cone(&mut self, mesh: &mut Mesh, cavity: &Cavity, iter: u32) -> Result<(), TetError> {
        let Mesh { tets, nbs, last } = mesh;
        if 6 * cavity.boundary.len() > self.table.len() {
            self.table = vec![EdgeEntry::default(); (12 * cavity.boundary.len()).next_power_of_two()];
        }
        let mask = self.table.len() - 1;
        for &t in &cavity.tets {
            tets[t as usize] = [NONE; 4];
            self.free.push(t);
        }
        for b in &cavity.boundary {
            let s = self.free.pop().unwrap_or_else(|| {
                tets.push([NONE; 4]);
                nbs.push([NONE; 4]);
                (tets.len() - 1) as u32
            });
            tets[s as usize] = b.verts;
            nbs[s as usize] = [NONE; 4];
            nbs[s as usize][b.k] = b.out;
            if b.out != NONE {
                nbs[b.out as usize][b.back] = s;
            }
            // New tets share the faces (p, edge): pair them through a hash table on the edge
            // (entries live while their stamp is `iter`); an unmatched edge is a new hull face.
            for m in (0..4).filter(|&m| m != b.k) {
                let [j1, j2] = other_two(b.k, m);
                let (x, y) = (b.verts[j1] as u64, b.verts[j2] as u64);
                let key = x.min(y) << 32 | x.max(y);
                let mut h = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize & mask;
                loop {
                    let e = &mut self.table[h];
                    if e.stamp != iter {
                        *e = EdgeEntry { stamp: iter, tet: s, face: m as u32, key };
                        break;
                    }
                    if e.key == key {
                        if e.tet == NONE {
                            return Err(TetError::NonManifoldCavity);
                        }
                        nbs[s as usize][m] = e.tet;
                        nbs[e.tet as usize][e.face as usize] = s;
                        e.tet = NONE;
                        break;
                    }
                    h = (h + 1) & mask;
                }
            }
            *last = s;
        }
        Ok(())
    }
}
