//! Compressed sparse rows, the layout of every many-to-many relation of DDEF: the near set of
//! each tet (Alg. 1, line 3: the grid points `N_i` near a charge in tet `τ`), each grid point's
//! closed one-ring, each grid point's inverse list `M_j = {i : u_j ∈ N_i}` (line 3) and the
//! charges of each tet (line 5).
//!
//! A relation given as `(row, value)` pairs is grouped by one counting sort, [`Csr::group`]
//! (two passes over the pairs, `O(pairs + rows)`, stable: each row keeps the order the pairs
//! came in); one built in parallel, a chunk of rows per task, is joined by [`Csr::join`]. The
//! rows of the near sets and of `M_j` are ascending, and DDEF merges four of them at a time
//! with [`union_with_membership`], which also says which of the four hold each value: the
//! near set of a tet is the union of its vertices' one-rings, and the charges near a tet `τ`
//! are `C_τ = ∪_{v ∈ τ} M_v`, where `v ∈ N_j ⇔ j ∈ M_v`.

/// Rows of `u32` values: row `r` is `items[offsets[r]..offsets[r + 1]]`.
#[derive(Debug, Default)]
pub(crate) struct Csr {
    /// Start of each row in `items`, then `items.len()`: one more than the rows.
    pub offsets: Vec<u32>,
    /// The rows, concatenated.
    pub items: Vec<u32>,
}

impl Csr {
    /// Row `r`.
    #[inline]
    pub fn row(&self, r: usize) -> &[u32] {
        &self.items[self.offsets[r] as usize..self.offsets[r + 1] as usize]
    }

    /// Regroups `pairs()` by row into `rows` rows (reusing the buffers), by counting sort: row
    /// `r` holds the values of the pairs `(r, value)` in the order `pairs()` yields them.
    /// `pairs` is called twice, once to count and once to place, and must yield the same pairs.
    ///
    /// # Panics
    /// If a row is `>= rows`.
    pub fn group<I: Iterator<Item = (u32, u32)>>(&mut self, rows: usize, pairs: impl Fn() -> I) {
        self.offsets.clear();
        self.offsets.resize(rows + 1, 0);
        pairs().for_each(|(r, _)| self.offsets[r as usize + 1] += 1);
        for r in 0..rows {
            self.offsets[r + 1] += self.offsets[r];
        }
        self.items.resize(self.offsets[rows] as usize, 0);
        let mut fill = self.offsets.clone();
        pairs().for_each(|(r, value)| {
            self.items[fill[r as usize] as usize] = value;
            fill[r as usize] += 1;
        });
    }

    /// Joins rows built a chunk at a time, in order: each chunk is `(lengths of its rows, their
    /// concatenation)`.
    pub fn join(chunks: Vec<(Vec<u32>, Vec<u32>)>) -> Self {
        let mut offsets = Vec::with_capacity(chunks.iter().map(|c| c.0.len()).sum::<usize>() + 1);
        offsets.push(0u32);
        let mut items = Vec::with_capacity(chunks.iter().map(|c| c.1.len()).sum());
        for (lens, part) in chunks {
            for len in lens {
                offsets.push(offsets.last().unwrap() + len);
            }
            items.extend_from_slice(&part);
        }
        Csr { offsets, items }
    }
}

/// Calls `visit(j, bits)` once for each `j` in the union of the 4 ascending `lists`, in
/// ascending order, where bit `k` of `bits` says that `lists[k]` holds `j`.
pub(super) fn union_with_membership(lists: [&[u32]; 4], mut visit: impl FnMut(u32, u8)) {
    let head = |k: usize, h: usize| lists[k].get(h).copied().unwrap_or(u32::MAX);
    let mut at = [0usize; 4];
    let mut next = [head(0, 0), head(1, 0), head(2, 0), head(3, 0)];
    loop {
        let j = next[0].min(next[1]).min(next[2].min(next[3]));
        if j == u32::MAX {
            return;
        }
        let mut bits = 0u8;
        for k in 0..4 {
            if next[k] == j {
                bits |= 1 << k;
                at[k] += 1;
                next[k] = head(k, at[k]);
            }
        }
        visit(j, bits);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_is_a_stable_counting_sort_and_join_concatenates() {
        let pairs = [(2, 10), (0, 11), (2, 12), (3, 13), (0, 14)];
        let mut csr = Csr { offsets: vec![9; 9], items: vec![7; 20] }; // stale buffers are reused
        csr.group(5, || pairs.iter().copied());
        assert_eq!(csr.offsets, [0, 2, 2, 4, 5, 5]);
        assert_eq!(
            [csr.row(0), csr.row(1), csr.row(2), csr.row(3), csr.row(4)],
            [&[11, 14][..], &[], &[10, 12], &[13], &[]]
        );
        let joined =
            Csr::join(vec![(vec![2, 0], vec![11, 14]), (vec![], vec![]), (vec![2, 1, 0], vec![10, 12, 13])]);
        assert_eq!((joined.offsets, joined.items), (csr.offsets, csr.items));
    }

    #[test]
    fn union_visits_each_index_once_with_the_lists_that_hold_it() {
        let lists: [&[u32]; 4] = [&[1, 4, 9], &[], &[0, 4, 7, 9], &[4, 12]];
        let mut seen = vec![];
        union_with_membership(lists, |j, bits| seen.push((j, bits)));
        assert_eq!(seen, [(0, 0b0100), (1, 0b0001), (4, 0b1101), (7, 0b0100), (9, 0b0101), (12, 0b1000)]);
    }
}
