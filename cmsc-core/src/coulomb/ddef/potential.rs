//! DDEF's Coulomb potential energy, `U = ½ Σ_i q_i φ̂(x_i)`: the potential split into near and
//! far parts exactly as the field is ([`super::near`]), on the grid and near sets of the last
//! [`super::Ddef`] call.
//!
//! 1. The potential on the grid, from every charge: `φ(u_v) = Σ_j q_j φ_a(|u_v − x_j|)`
//!    ([`grid_potential`], `(m + 8) n` terms in `f64`).
//! 2. Per tet `τ` with near set `C_τ = ∪_{v ∈ τ} M_v` (as in [`super::near`]): the far potential
//!    at its vertices `φ̂'_v = φ(u_v) − Σ_{j ∈ C_τ} q_j φ_a(|u_v − x_j|)`, then per charge `i ∈ τ`
//!    `φ̂_i = Σ_v ψ_iv φ̂'_v + Σ_{j ∈ C_τ, j ≠ i} q_j φ_a(|x_i − x_j|)` ([`potentials`]).
//!
//! Far charges (`j ∉ C_τ`) thus enter by linear interpolation over `τ_i`, near ones exactly, each
//! once; this is the field's rule with the potential kernel in place of the field's. The field
//! leaves `M_v` out of the gather and subtracts `C_τ \ M_v` per tet; since `M_v ⊆ C_τ`, summing
//! all charges on the grid and subtracting all of `C_τ` gives the same `φ̂'_v` and needs no
//! masks. In `f64` the subtraction of a charge close to a grid point loses `10⁻¹⁶` of its term:
//! below `10⁻¹²` of the result unless a charge comes within `10⁻⁴` of the grid spacing, far
//! below DDEF's error. Pairs at `max(r², a²) < f32::MIN_POSITIVE` (coincident points with `a = 0`)
//! count zero, in both sums alike. Sums are kept per grid point and per tet and added in order,
//! so the result repeats exactly.

use rayon::prelude::*;

use super::super::kernel::{potential_sum_refined, Soa};
use super::csr::union_with_membership;
use super::near::NearField;
use crate::math::{Real, Vec3};

/// Refinements of the `f64` kernel's `1/r` estimate in every sum here, as in the near field
/// ([`super::near`]): one leaves `2·10⁻⁷` per term, far below DDEF's error, at about 0.7× the
/// cost of the three that reach round-off.
const NEWTON: usize = 1;

/// `φ(u) / k_c = Σ_j q_j φ_a(|u − x_j|)` (Eq. (C2) of [`crate::coulomb`]) at every grid point `u` (m), from all the
/// `sources` (m, C); `a2` is `a²` (m², the charge radius squared).
pub(super) fn grid_potential(world: &[Vec3], sources: &Soa, a2: Real) -> Vec<Real> {
    world.par_iter().map(|&u| potential_sum_refined::<NEWTON>(u, a2, sources)).collect()
}

/// Per-task buffers of one tet's near set `C_τ`.
#[derive(Default)]
struct Scratch {
    exact: Soa,
    /// The charge index of each entry of `exact` (ascending).
    ids: Vec<u32>,
}

/// `Σ_i q_i φ̂_i / k_c` over the charges of `near` (step 2 of the module docs), and the pair terms
/// summed; `phi_grid` is [`grid_potential`]'s output, ignored when `near.far_field` is false.
pub(super) fn potentials(near: &NearField, phi_grid: &[Real]) -> (Real, u64) {
    let (grid, loc) = (near.grid, near.loc);
    let (by_tet, occupied) = near.charges_by_tet();
    let per_tet: Vec<(Real, u64)> = occupied
        .par_iter()
        .map_init(Scratch::default, |s, &t| {
            let tv = grid.tri.tets[t as usize];
            let lists = tv.map(|v| loc.inv.row(v as usize));
            s.exact.clear();
            s.ids.clear();
            union_with_membership(lists, |j, _| {
                s.exact.push(near.x[j as usize], near.q[j as usize]);
                s.ids.push(j);
            });
            let c_tau = s.ids.len() as u64;
            s.exact.pad();
            let mut phi_vertex = [0.0; 4];
            if near.far_field {
                for (k, phi) in phi_vertex.iter_mut().enumerate() {
                    let v = tv[k] as usize;
                    *phi = phi_grid[v] - potential_sum_refined::<NEWTON>(near.world[v], near.a2, &s.exact);
                }
            }
            let charges = by_tet.row(t as usize);
            let mut sum = 0.0;
            for &i in charges {
                let psi = loc.bary[i as usize];
                let far: Real = (0..4).map(|k| phi_vertex[k] * psi[k]).sum();
                // i ∈ C_τ (its own near set holds τ's vertices): leave its self term out
                let slot = s.ids.binary_search(&i).expect("a charge is in its own tet's near set");
                let qi = std::mem::replace(&mut s.exact.q[slot], 0.0);
                let exact = potential_sum_refined::<NEWTON>(near.x[i as usize], near.a2, &s.exact);
                s.exact.q[slot] = qi;
                sum += near.q[i as usize] * (far + exact);
            }
            let targets = charges.len() as u64 + if near.far_field { 4 } else { 0 };
            (sum, targets * c_tau)
        })
        .collect();
    per_tet.iter().fold((0.0, 0), |(u, p), &(du, dp)| (u + du, p + dp))
}
