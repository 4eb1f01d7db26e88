//! DDEF, the domain-discretized electric field of [Paper](crate#references) §3.1, Alg. 1: an
//! `O(m n)` approximation of the `O(n²)` Coulomb sum.
//!
//! 1. `m` Halton points in the charges' padded bounding box ([`grid_box`]), plus its 8 corners;
//!    or, for the adaptive solver, most of them in the lattice cells around the charges
//!    ([`placement`], [`Placement::Following`]);
//! 2. their Delaunay tetrahedralization ([`delaunay`]), built once in a reference box and mapped
//!    affinely (a following grid stays fixed in world space and is rebuilt when the charges have
//!    moved), with the near set of every tet ([`grid`], [`neighborhood`]);
//! 3. per charge `i`: containing tet `τ_i`, barycentric `ψ_i`, near grid points `N_i` (the
//!    vertices of the tets around `τ_i`, see [`Neighborhood`]); inverse lists
//!    `M_j = {i : u_j ∈ N_i}` ([`locate`]);
//! 4. far field on the grid, Eq. (9): `ê(u_j) = Σ_{i ∉ M_j} q_i (u_j − x_i)/|u_j − x_i|³` —
//!    the `O(m n)` gather, in mixed precision with `M_j`'s charges zeroed ([`gather`]);
//! 5. field at charge `i`: interpolation of `ê` over `τ_i`, corrected for near charges ([`near`]).
//!
//! The potential energy `U = ½ Σ_i q_i φ̂(x_i)` splits the same way ([`potential`]): the
//! potential of every charge on the grid, interpolated over `τ_i` with `C_i`'s part removed, plus
//! `C_i`'s exact potential; it reuses steps 1–3 of the last force call at the same positions.
//!
//! [`solver`] runs these steps in order and keeps what lasts across calls; [`adaptive`] sizes
//! the grid for [`Ddef::adaptive`]. The steps share three leaf modules, which import none of
//! the others: [`csr`] (compressed sparse rows: one counting sort builds every many-to-many
//! list, and the merge of four sorted lists), [`morton`] (Z-order codes) and [`blocks`] (the
//! grid points in blocks for the gather); the pair kernels are [`super::kernel`]'s.
//!
//! ## The near-field rule (where the paper's text and pseudo-code disagree)
//!
//! Let `C_i = ∪_{v ∈ τ_i} M_v`, the charges left out of at least one vertex of `τ_i`. The
//! interpolated field `Σ_v ψ_v ê(u_v)` contains charge `j` with weight `Σ_{v ∈ τ_i, v ∉ N_j} ψ_v`:
//! all of it (`Σ ψ = 1`) when `j ∉ C_i`, part of it otherwise. For every `j ∈ C_i` we therefore
//! subtract exactly that partial interpolated contribution and add the exact Coulomb term
//! `q_j (x_i − x_j)/|x_i − x_j|³`. Every charge is thus counted exactly once: far charges through
//! the grid, near ones exactly; `i` itself is in `C_i` (its own `N_i` contains `τ_i`), its
//! partial weight is 0 and its exact self term is 0. `tests` check this against the direct sum
//! with the far field switched off and on.
//!
//! The mean force over the charged vertices is removed at the end, so internal forces sum to
//! zero and momentum is conserved exactly, as with the exact sum.
//!
//! Precision: the far field of step 4 is summed in `f32` and carried in `f64`, to about 10⁻⁵ of
//! `Σ_i |term_i|` ([`gather`]); the near field of step 5 and its corrections are `f64` sums
//! whose terms are each right to `6·10⁻⁷` ([`near`]). Both are three or more orders below the
//! method's own error (~10⁻²).

mod adaptive;
mod blocks;
mod csr;
mod delaunay;
mod gather;
mod grid;
mod grid_box;
mod locate;
mod morton;
mod near;
mod neighborhood;
mod placement;
mod potential;
mod solver;

pub use adaptive::{ADAPTIVE_MIN_GRID_POINTS, MAX_GRID_POINTS};
pub(crate) use csr::Csr;
pub use neighborhood::Neighborhood;
pub use placement::Placement;
pub use solver::{Ddef, DdefTimings};
