//! Alg. 1, line 5: the field at every charge, tet by tet — the interpolated far field, corrected
//! for the charges near the tet, plus their exact field.
//!
//! All charges in a tet `τ` share `C_τ = ∪_{v ∈ τ} M_v`, so per tet: the far field at `τ`'s 4
//! vertices with every `j ∈ C_τ` removed (`ê'_v = ê(u_v) − Σ_{j ∈ C_τ, v ∉ N_j} f(u_v, x_j)`,
//! the part of `j` that `ê(u_v)` still holds), then per charge `i ∈ τ`: `Σ_v ψ_iv ê'_v` plus
//! the exact sum over `C_τ` (`i` itself is in `C_τ` and contributes 0).
//!
//! `C_τ` is a merge of the 4 sorted lists `M_v` ([`super::csr`]), which also tells for each `j`
//! which of them hold it (`v ∈ N_j ⇔ j ∈ M_v`). Every sum then runs on the SIMD kernel of the
//! direct method ([`crate::coulomb::kernel`]), in `f64` with one refinement of `1/r` (each term
//! to `6·10⁻⁷` of itself, whatever the distance): the exact near sums over `C_τ`, and the 4
//! corrections as sums over `C_τ` with `q_j` zeroed where `j ∈ M_v`. (The corrections were
//! also tried on the `f32` kernel of the gather, in a frame centred on the tet: no faster here,
//! the per-tet work of building a second frame ate the kernel's gain.)

use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

use super::super::kernel::{field_sum_refined, Soa};
use super::csr::{union_with_membership, Csr};
use super::grid::UnitGrid;
use super::locate::Location;
use crate::math::{Real, Vec3};

/// Refinements of the `f64` kernel's `1/r` estimate in the exact near sums: one leaves a relative
/// error of `2·10⁻⁷` per term (far below DDEF's ~10⁻²) at 0.7–0.8× the cost of three
/// (`examples/ddef_bench.rs`, near stage at n = 100K).
const NEWTON: usize = 1;

/// The inputs of step 5.
pub(super) struct NearField<'a> {
    pub grid: &'a UnitGrid,
    pub loc: &'a Location,
    /// Grid points (m, world frame).
    pub world: &'a [Vec3],
    /// The far field on the grid, `ê / k_c` (step 4).
    pub e_grid: &'a [Vec3],
    /// The charges (m, C).
    pub x: &'a [Vec3],
    pub q: &'a [Real],
    /// The charge radius squared `a²` (m², Eq. (C1) of [`crate::coulomb`]).
    pub a2: Real,
    /// False for the "far field ignored" comparison: no interpolation, no corrections.
    pub far_field: bool,
}

/// Per-task buffers of one tet's near set `C_τ`.
#[derive(Default)]
struct Scratch {
    /// `C_τ` as sources.
    exact: Soa,
    /// Its charges with those of `M_{v_k}` zeroed, for each vertex `k` of the tet.
    masked: [Vec<Real>; 4],
}

impl NearField<'_> {
    /// The charges grouped by the tetrahedron they lie in (row `t`: the charges of tet `t`), and
    /// the tetrahedra that hold any, in order: what the field and the potential both walk.
    pub(super) fn charges_by_tet(&self) -> (Csr, Vec<u32>) {
        let n_tets = self.grid.tri.tets.len();
        let mut by_tet = Csr::default();
        by_tet.group(n_tets, || self.loc.tet.iter().enumerate().map(|(i, &t)| (t, i as u32)));
        let offsets = &by_tet.offsets;
        let occupied =
            (0..n_tets as u32).filter(|&t| offsets[t as usize + 1] > offsets[t as usize]).collect();
        (by_tet, occupied)
    }

    /// The field per charge divided by `k_c`, split in its two parts, and the number of pair
    /// terms summed (`Σ_τ (n_τ + 4) |C_τ|`, without the 4 corrections when the far field is
    /// off). `far` is the interpolated field of the charges outside `C_τ` (the corrected corner
    /// fields `ê'_v` over `ψ_i`; zero when the far field is off), `near` the exact field of those
    /// in `C_τ`: their sum is DDEF's field. Multiple time stepping holds `far` across sub-steps
    /// and sums `near` again at the new positions (see [`super::Ddef`]).
    pub fn fields(&self) -> Fields {
        let (grid, loc) = (self.grid, self.loc);
        let n = self.x.len();
        let pairs = AtomicU64::new(0);
        let (by_tet, occupied) = self.charges_by_tet();
        let per_tet: Vec<(u32, Vec3, Vec3)> = occupied
            .par_iter()
            .map_init(Scratch::default, |s, &t| {
                let tv = grid.tri.tets[t as usize];
                let lists = tv.map(|v| loc.inv.row(v as usize));
                s.exact.clear();
                s.masked.iter_mut().for_each(Vec::clear);
                union_with_membership(lists, |j, bits| {
                    let j = j as usize;
                    s.exact.push(self.x[j], self.q[j]);
                    for (k, masked) in s.masked.iter_mut().enumerate() {
                        masked.push(if bits & (1 << k) == 0 { self.q[j] } else { 0.0 });
                    }
                });
                let near = s.exact.q.len() as u64;
                s.exact.pad();
                let charges = by_tet.row(t as usize);
                let targets = charges.len() as u64 + if self.far_field { 4 } else { 0 };
                pairs.fetch_add(targets * near, Ordering::Relaxed);
                let mut e_vertex = [Vec3::zeros(); 4];
                if self.far_field {
                    for (k, e) in e_vertex.iter_mut().enumerate() {
                        // ê(u_v) already lacks the j ∈ M_v; remove the other j ∈ C_τ
                        let u = self.world[tv[k] as usize];
                        s.masked[k].resize(s.exact.q.len(), 0.0);
                        std::mem::swap(&mut s.exact.q, &mut s.masked[k]);
                        let part = field_sum_refined::<NEWTON>(u, self.a2, &s.exact);
                        std::mem::swap(&mut s.exact.q, &mut s.masked[k]);
                        *e = self.e_grid[tv[k] as usize] - part;
                    }
                }
                charges
                    .iter()
                    .map(|&i| {
                        let psi = loc.bary[i as usize];
                        let far: Vec3 = (0..4).map(|k| e_vertex[k] * psi[k]).sum();
                        (i, far, field_sum_refined::<NEWTON>(self.x[i as usize], self.a2, &s.exact))
                    })
                    .collect::<Vec<_>>()
            })
            .flatten_iter()
            .collect();
        let mut fields = Fields { far: vec![Vec3::zeros(); n], near: vec![Vec3::zeros(); n], pairs: 0 };
        for (i, far, near) in per_tet {
            fields.far[i as usize] = far;
            fields.near[i as usize] = near;
        }
        fields.pairs = pairs.into_inner();
        fields
    }
}

/// The field at every charge divided by `k_c`, as [`NearField::fields`] splits it.
pub(super) struct Fields {
    /// The interpolated field of the charges outside each charge's `C_τ`.
    pub far: Vec<Vec3>,
    /// The exact field of the charges in `C_τ`.
    pub near: Vec<Vec3>,
    /// Pair terms summed.
    pub pairs: u64,
}
