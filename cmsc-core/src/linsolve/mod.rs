//! The global step's linear solver: `(M + h²L) x = b` with pinned vertices eliminated.
//!
//! `L = L_s ⊗ I₃` ([Liu 2013](crate#references) Eq. (12)), so only the `n × n` scalar matrix
//! `A = M + h² L_s` is formed and factored; the three coordinates are three right-hand-side
//! columns of one solve. Pinned vertices are not unknowns: with free set `F` and pinned set `P`,
//! `A_FF x_F = b_F − A_FP x_P`, and `A_FP` only holds the `−h² k_s` entries of springs that join
//! a free vertex to a pinned one ([`GlobalSolver::solve_with`] adds `h² k_s x_p` to `b`).
//! A spring that damps its strain rate weighs `(h² + h β_s) k_s` in place of `h² k_s`
//! ([`crate::springs`]' module docs); the formulas below write `h² k_s` for either.
//!
//! The phases are split as in faer: the symbolic analysis (AMD ordering, elimination tree) is
//! redone only when the pattern changes (pins or springs); the numeric Cholesky whenever masses,
//! stiffness or `h` change; each iteration only solves. The solve runs sequentially
//! (`Par::Seq`): on this project's 2-core machine faer's parallel sparse solve was 9–20× slower,
//! and solving the three columns on three threads was 1.1–1.4× slower than one 3-column solve
//! (the solve streams the factor from memory; each thread would stream it again). For the same
//! reason a hand-written solve with the three columns interleaved (one `Vec3` per row, one cache
//! line per update instead of three) was no faster than faer's: 212 vs 218 ms for 10 solves at
//! 100K vertices, where the factor holds 9.4M entries (112 MB read per triangular pass). The
//! ordering is AMD: a geometric nested dissection (recursive coordinate bisection, the vertices
//! with an edge across the cut as separator) gave 8.8M entries against AMD's 9.1M on that grid
//! (bending springs included) and a solve no faster (27.7 vs 27.4 ms).
//!
//! The factor is simplicial (one sparse column per unknown), not supernodal. Spring meshes are
//! surfaces: their factors have small supernodes, and a solve, which runs K times per step, was
//! 1.2–1.7× faster simplicial (grid meshes, 10K and 100K vertices: 1.29 vs 1.56 ms and 22.8 vs
//! 38.8 ms per 3-column solve), while the factorization, paid once per change of masses,
//! stiffness or `h`, was ~4× slower (1.5 vs 0.35 s at 100K).

use faer::dyn_stack::{MemBuffer, MemStack, StackReq};
use faer::linalg::cholesky::llt::factor::{LltError::NonPositivePivot, LltRegularization};
use faer::sparse::linalg::cholesky::{
    factorize_symbolic_cholesky, CholeskySymbolicParams, LltRef, SymbolicCholesky, SymmetricOrdering,
};
use faer::sparse::linalg::SupernodalThreshold;
use faer::sparse::{SparseColMat, Triplet};
use faer::{Conj, Mat, Par, Side};

use crate::error::{Error, Result};
use crate::math::{Real, Vec3};
use crate::springs::Springs;

const PINNED: u32 = u32::MAX;

/// Largest accepted ratio `h² Σ_{s ∋ i} k_s / m_i` of a vertex's implicit spring stiffness to its
/// mass (with strain-rate damping `Σ_{s ∋ i} (h² + h β_s) k_s / m_i`). The condition number of
/// `M + h²L` grows like this ratio, and a Cholesky solve loses about `log10(ratio)` of f64's 16
/// digits: at 1e12 four digits remain; from ~1e16 `m_i` vanishes
/// from `m_i + h² k` in rounding and the matrix is numerically singular (found by fuzzing).
pub const MAX_STIFFNESS_MASS_RATIO: Real = 1e12;

/// Checks that `M + h²L` is well enough conditioned to factor and solve in f64.
///
/// # Errors
/// [`Error::InvalidArgument`] naming the first vertex whose `h² Σ k_s / m_i` exceeds
/// [`MAX_STIFFNESS_MASS_RATIO`], with the remedy.
pub fn check_conditioning(mass: &[Real], springs: &Springs, h: Real) -> Result<()> {
    let mut k_sum = vec![0.0; mass.len()];
    let mut w_sum = vec![0.0; mass.len()];
    for (s, (&[a, b], &k)) in springs.ends().iter().zip(springs.stiffness()).enumerate() {
        let w = springs.implicit_weight(s, h);
        for v in [a as usize, b as usize] {
            k_sum[v] += k;
            w_sum[v] += w;
        }
    }
    for (i, ((&m, &k), &w)) in mass.iter().zip(&k_sum).zip(&w_sum).enumerate() {
        let ratio = w / m;
        if ratio > MAX_STIFFNESS_MASS_RATIO || ratio.is_nan() {
            let (what, lower) = if springs.damped() {
                ("(h² + h β) k / m", "the stiffness or the springs' damping")
            } else {
                ("h² k / m", "the stiffness")
            };
            return Err(Error::invalid(
                "stiffness",
                Some(i),
                format!(
                    "{what} = {ratio:.3e} at vertex {i} (h = {h} s, spring stiffness {k:.3e} N/m, mass {m:.3e} kg) \
                     exceeds {MAX_STIFFNESS_MASS_RATIO:e}: M + h²L is numerically singular; lower {lower} \
                     or the time step, or raise the mass"
                ),
            ));
        }
    }
    Ok(())
}

/// Prefactored `A_FF = M_FF + h² L_FF` and the free/pinned bookkeeping.
pub struct GlobalSolver {
    /// Free-unknown index of each vertex, or [`PINNED`].
    free_of: Vec<u32>,
    /// Vertex index of each free unknown.
    free: Vec<u32>,
    /// `(free row, pinned vertex, h² k_s)` for each spring between a free and a pinned vertex.
    coupling: Vec<(u32, u32, Real)>,
    symbolic: Option<SymbolicCholesky<u32>>,
    /// Values of the Cholesky factor `L` (faer's layout for `symbolic`).
    factor: Vec<Real>,
    scratch: MemBuffer,
    rhs: Mat<Real>,
}

impl GlobalSolver {
    /// Assembles and factors `M_FF + h² L_FF`.
    ///
    /// # Arguments
    /// * `mass` — `m_i` per vertex (kg), all `> 0`.
    /// * `springs` — validated springs (stiffness N/m).
    /// * `pinned` — `true` for vertices held at targets.
    /// * `h` — time step (s).
    ///
    /// # Errors
    /// [`Error::Factorization`] if assembly, the symbolic analysis or the scratch allocation
    /// fails (out of memory); [`Error::InvalidArgument`] naming `stiffness` if the numeric
    /// factorization meets a non-positive pivot: `M + h²L` is positive definite in exact
    /// arithmetic, so rounding lost it and the springs are too stiff for the masses
    /// ([`check_conditioning`] rejects most such inputs before they get here).
    ///
    /// # Panics
    /// If `mass` and `pinned` differ in length.
    pub fn new(mass: &[Real], springs: &Springs, pinned: &[bool], h: Real) -> Result<Self> {
        assert_eq!(mass.len(), pinned.len());
        let mut free_of = vec![PINNED; mass.len()];
        let mut free = Vec::with_capacity(mass.len());
        for (i, _) in pinned.iter().enumerate().filter(|(_, &p)| !p) {
            free_of[i] = free.len() as u32;
            free.push(i as u32);
        }
        let n_free = free.len();
        let mut solver = GlobalSolver {
            free_of,
            free,
            coupling: Vec::new(),
            symbolic: None,
            factor: Vec::new(),
            scratch: MemBuffer::new(StackReq::EMPTY),
            rhs: Mat::zeros(n_free, 3),
        };
        solver.refactor(mass, springs, h)?;
        Ok(solver)
    }

    /// Number of stored entries of the Cholesky factor `L` (its values take 8 bytes each, its
    /// row indices 4).
    pub fn factor_len(&self) -> usize {
        self.factor.len()
    }

    /// Recomputes the numeric factorization for new masses, stiffnesses or `h` with the same
    /// springs and pins; the symbolic analysis is reused.
    ///
    /// # Errors
    /// As [`GlobalSolver::new`].
    pub fn refactor(&mut self, mass: &[Real], springs: &Springs, h: Real) -> Result<()> {
        let n_free = self.free.len();
        if n_free == 0 {
            return Ok(());
        }
        // Lower triangle (row >= col) of A_FF; faer sums duplicate entries.
        let mut entries = Vec::with_capacity(n_free + 3 * springs.len());
        for (j, &v) in self.free.iter().enumerate() {
            entries.push(Triplet::new(j as u32, j as u32, mass[v as usize]));
        }
        self.coupling.clear();
        for (s, &[a, b]) in springs.ends().iter().enumerate() {
            let (fa, fb) = (self.free_of[a as usize], self.free_of[b as usize]);
            let w = springs.implicit_weight(s, h);
            match (fa != PINNED, fb != PINNED) {
                (true, true) => {
                    entries.push(Triplet::new(fa, fa, w));
                    entries.push(Triplet::new(fb, fb, w));
                    entries.push(Triplet::new(fa.max(fb), fa.min(fb), -w));
                }
                (true, false) => {
                    entries.push(Triplet::new(fa, fa, w));
                    self.coupling.push((fa, b, w));
                }
                (false, true) => {
                    entries.push(Triplet::new(fb, fb, w));
                    self.coupling.push((fb, a, w));
                }
                (false, false) => {}
            }
        }
        let a = SparseColMat::<u32, Real>::try_new_from_triplets(n_free, n_free, &entries)
            .map_err(|e| Error::Factorization(format!("assembly: {e:?}")))?;
        if self.symbolic.is_none() {
            let symbolic = factorize_symbolic_cholesky(
                a.symbolic(),
                Side::Lower,
                SymmetricOrdering::Amd,
                CholeskySymbolicParams {
                    supernodal_flop_ratio_threshold: SupernodalThreshold::FORCE_SIMPLICIAL,
                    ..Default::default()
                },
            )
            .map_err(|e| Error::Factorization(format!("symbolic analysis: {e:?}")))?;
            let req = symbolic
                .factorize_numeric_llt_scratch::<Real>(Par::Seq, Default::default())
                .or(symbolic.solve_in_place_scratch::<Real>(3, Par::Seq));
            self.scratch = MemBuffer::try_new(req)
                .map_err(|e| Error::Factorization(format!("scratch allocation: {e:?}")))?;
            self.factor = vec![0.0; symbolic.len_val()];
            self.symbolic = Some(symbolic);
        }
        let symbolic = self.symbolic.as_ref().expect("symbolic analysis was just computed");
        symbolic
            .factorize_numeric_llt(
                &mut self.factor,
                a.as_ref(),
                Side::Lower,
                LltRegularization::default(),
                Par::Seq,
                MemStack::new(&mut self.scratch),
                Default::default(),
            )
            .map_err(|NonPositivePivot { index }| {
                // The only numeric failure is a non-positive pivot, and M + h²L is SPD in exact
                // arithmetic: rounding lost it, i.e. the input is too stiff for its masses. The
                // pivot's index is 1-based (faer's `k + 1`) in the AMD ordering: its forward
                // permutation maps it back to the free row, and `free` to the vertex.
                let k = index - 1;
                let row = symbolic.perm().map_or(k, |p| p.arrays().0[k] as usize);
                Error::Singular { vertex: self.free[row] as usize }
            })?;
        Ok(())
    }

    /// Solves the global step `A_FF x_F = b_F − A_FP x_P` for the free vertices: fills the
    /// right-hand side with `b(i)` for every free vertex `i`, adds the pinned vertices' coupling
    /// `h² k_s x_p` (read from the pinned entries of `x`), solves with the prefactored Cholesky
    /// factor, and writes the solution into the free entries of `x`. Pinned entries of `x` are
    /// read, never written.
    ///
    /// # Panics
    /// If `x` is shorter than the system.
    pub fn solve_with(&mut self, b: impl Fn(usize) -> Vec3, x: &mut [Vec3]) {
        for (row, &vtx) in self.free.iter().enumerate() {
            let bv = b(vtx as usize);
            for c in 0..3 {
                self.rhs[(row, c)] = bv[c];
            }
        }
        let Some(symbolic) = self.symbolic.as_ref() else {
            return; // every vertex is pinned
        };
        for &(row, p, w) in &self.coupling {
            let xp = x[p as usize];
            for c in 0..3 {
                self.rhs[(row as usize, c)] += w * xp[c];
            }
        }
        LltRef::new(symbolic, &self.factor).solve_in_place_with_conj(
            Conj::No,
            self.rhs.as_mut(),
            Par::Seq,
            MemStack::new(&mut self.scratch),
        );
        for (j, &v) in self.free.iter().enumerate() {
            x[v as usize] = Vec3::new(self.rhs[(j, 0)], self.rhs[(j, 1)], self.rhs[(j, 2)]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A free vertex with no mass and no spring has a zero pivot wherever the fill-reducing
    /// ordering puts it: the error names that vertex, not its place in the ordering.
    #[test]
    fn a_singular_pivot_names_its_vertex() {
        let x0: Vec<Vec3> = (0..6).map(|i| Vec3::new(i as f64, (i * i) as f64, 0.0)).collect();
        let springs = Springs::new(&x0, &[[0, 1], [1, 2], [2, 3], [0, 5], [1, 5]], &[3.0; 5]).unwrap();
        for lonely in [4, 2] {
            let mut mass = [1.0; 6];
            mass[lonely] = 0.0;
            let mut springs = springs.clone();
            if lonely == 2 {
                springs.set_stiffness(&[3.0, 0.0, 0.0, 3.0, 3.0]).unwrap();
            }
            let pinned = [false, false, false, false, false, true];
            let e = GlobalSolver::new(&mass, &springs, &pinned, 0.1).err();
            assert_eq!(e, Some(Error::Singular { vertex: lonely }));
        }
    }

    /// A chain 0–1–2–3 with vertex 0 pinned: the solve must satisfy the full system's free rows
    /// `m_i x_i + h² Σ_s k_s (x_i − x_j) = b_i` with `x_0` at its target.
    #[test]
    fn solve_satisfies_free_rows_with_pins_eliminated() {
        let x0: Vec<Vec3> = (0..4).map(|i| Vec3::new(i as f64, 0.0, 0.0)).collect();
        let springs = Springs::new(&x0, &[[0, 1], [1, 2], [2, 3], [3, 1]], &[3.0, 5.0, 7.0, 2.0]).unwrap();
        let mass = [1.0, 2.0, 0.5, 1.5];
        let pinned = [true, false, false, false];
        let h = 0.1;
        let mut solver = GlobalSolver::new(&mass, &springs, &pinned, h).unwrap();
        let b =
            [Vec3::zeros(), Vec3::new(1.0, 2.0, 3.0), Vec3::new(-1.0, 0.5, 0.0), Vec3::new(0.3, 0.2, 0.1)];
        let mut x = vec![Vec3::zeros(); 4];
        x[0] = Vec3::new(0.5, -1.0, 2.0);
        solver.solve_with(|i| b[i], &mut x);
        for i in 1..4 {
            let mut lhs = x[i] * mass[i];
            for (&[a, b2], &k) in springs.ends().iter().zip(springs.stiffness()) {
                let (a, b2) = (a as usize, b2 as usize);
                if a == i {
                    lhs += (x[a] - x[b2]) * (h * h * k);
                } else if b2 == i {
                    lhs += (x[b2] - x[a]) * (h * h * k);
                }
            }
            assert!((lhs - b[i]).norm() < 1e-12, "row {i}: {lhs:?} vs {:?}", b[i]);
        }
    }
}
