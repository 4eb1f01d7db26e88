//! Charge assignment and interpolation with cardinal B-splines of order `p` (Hockney & Eastwood
//! §5-6; the "P-th order charge assignment" of [Deserno & Holm 1998](super::P3m#references)): a
//! charge at grid coordinate `u` (in cells) covers the `p` grid points per axis with
//! `|u − m| < p/2`, with weights `W(u − m)`, the centred B-spline of order `p`; the product over
//! the three axes spreads it onto `p³` points. The same weights interpolate the grid's field
//! back, so that a pair interacts through `Σ_{m,n} W(u_i − m) K(m − n) W(u_j − n)`, symmetric in
//! `i, j`: with an odd field kernel `K` Newton's third law holds pair by pair and no charge feels
//! itself.

use rayon::prelude::*;

use super::grid::Grid;
use crate::math::{Real, Vec3};

/// Largest spline order supported (fixed-size weight arrays): twice the largest order the
/// method uses, for the kernel deconvolution's `M_{2p}`.
pub(super) const MAX_ORDER: usize = 12;

/// The first grid point a charge at `u` covers and its `p` weights `W(u − m)`,
/// `m = first..first + p`: the cardinal B-spline recursion `M_k(x) = (x M_{k−1}(x) + (k − x)
/// M_{k−1}(x − 1)) / (k − 1)` from `M_2`, evaluated at `s + j` with `s` the fractional part of
/// `u − p/2` (Essmann et al. 1995, Eq. 4.1).
#[inline]
pub(super) fn weights(u: Real, p: usize) -> (i64, [Real; MAX_ORDER]) {
    let shifted = u - 0.5 * p as Real;
    let floor = shifted.floor();
    let s = shifted - floor;
    let m = bspline_at(s, p);
    let mut w = [0.0; MAX_ORDER];
    for k in 0..p {
        w[k] = m[p - 1 - k];
    }
    (floor as i64 + 1, w)
}

/// `M_p(s + j)` for `j = 0..p`, `s ∈ [0, 1)` (`p >= 1`; `M_1` is the unit box).
#[inline]
pub(super) fn bspline_at(s: Real, p: usize) -> [Real; MAX_ORDER] {
    let mut m = [0.0; MAX_ORDER];
    m[0] = 1.0;
    for k in 2..=p {
        let inv = 1.0 / (k - 1) as Real;
        // M_k(s + j) from M_{k−1}(s + j) and M_{k−1}(s + j − 1); descending j keeps inputs intact
        for j in (0..k).rev() {
            let x = s + j as Real;
            let here = if j < k - 1 { m[j] } else { 0.0 };
            let below = if j > 0 { m[j - 1] } else { 0.0 };
            m[j] = (x * here + (k as Real - x) * below) * inv;
        }
    }
    m
}

/// A pointer that threads may write through at indices they own exclusively.
pub(super) struct Shared<T>(pub *mut T);
impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Shared<T> {}
impl<T> Shared<T> {
    /// The pointer (a method, so that closures capture the whole `Shared`, not its field).
    pub fn ptr(&self) -> *mut T {
        self.0
    }
}
// SAFETY: only used where the callers write disjoint indices (documented at each use).
unsafe impl<T> Send for Shared<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Shared<T> {}

/// Spreads the charges `q` at grid coordinates `u` onto `rho` (the grid's `nx × ny × nz` points,
/// `x` fastest), overwriting it. Parallel over slabs of `slab ≥ p` planes along the grid's
/// longest axis: even slabs first, then odd ones, so that no two threads touch one plane.
/// `order` lists the charges sorted by slab, `starts[s]..starts[s + 1]` those of slab `s`.
pub(super) fn spread(grid: &Grid, u: &[Vec3], q: &[Real], order: &[u32], starts: &[usize], rho: &mut [f32]) {
    rho.fill(0.0);
    let p = grid.order;
    let [nx, ny, _] = grid.n;
    let out = Shared(rho.as_mut_ptr());
    let slabs = starts.len() - 1;
    for parity in 0..2 {
        (parity..slabs).into_par_iter().step_by(2).for_each(|s| {
            for &i in &order[starts[s]..starts[s + 1]] {
                let i = i as usize;
                let (fx, wx) = weights(u[i].x, p);
                let (fy, wy) = weights(u[i].y, p);
                let (fz, wz) = weights(u[i].z, p);
                for (c, &wzc) in wz[..p].iter().enumerate() {
                    let z = fz as usize + c;
                    for (b, &wyb) in wy[..p].iter().enumerate() {
                        let row = (z * ny + fy as usize + b) * nx + fx as usize;
                        let w = (q[i] * wzc * wyb) as f32;
                        for (a, &wa) in wx[..p].iter().enumerate() {
                            // SAFETY: the grid covers every charge's p³ points (Grid::fit pads
                            // by the spline's reach); slabs of the same parity are at least p
                            // planes apart along the slab axis, so no two threads write one point.
                            unsafe { *out.ptr().add(row + a) += w * wa as f32 };
                        }
                    }
                }
            }
        });
    }
}

/// The field interpolated at grid coordinates `u` from the grid's field `e` (three
/// components per point, interleaved, points `x` fastest): `Σ_m W(u − m) e_m`, summed in `f64`.
pub(super) fn interpolate_field(grid: &Grid, u: &[Vec3], e: &[f32], out: &mut [Vec3]) {
    let p = grid.order;
    let [nx, ny, _] = grid.n;
    out.par_iter_mut().zip(u.par_iter()).with_min_len(256).for_each(|(o, u)| {
        let (fx, wx) = weights(u.x, p);
        let (fy, wy) = weights(u.y, p);
        let (fz, wz) = weights(u.z, p);
        let mut acc = Vec3::zeros();
        for (c, &wzc) in wz[..p].iter().enumerate() {
            let z = fz as usize + c;
            for (b, &wyb) in wy[..p].iter().enumerate() {
                let row = (z * ny + fy as usize + b) * nx + fx as usize;
                let (mut sx, mut sy, mut sz) = (0.0f32, 0.0f32, 0.0f32);
                for (a, &wa) in wx[..p].iter().enumerate() {
                    let v = &e[3 * (row + a)..3 * (row + a) + 3];
                    let wa = wa as f32;
                    sx += wa * v[0];
                    sy += wa * v[1];
                    sz += wa * v[2];
                }
                let w = wzc * wyb;
                acc += Vec3::new(sx as Real, sy as Real, sz as Real) * w;
            }
        }
        *o = acc;
    });
}

/// The potential interpolated at grid coordinates `u` from the grid's potential `phi`.
pub(super) fn interpolate_potential(grid: &Grid, u: &[Vec3], phi: &[f32], out: &mut [Real]) {
    let p = grid.order;
    let [nx, ny, _] = grid.n;
    out.par_iter_mut().zip(u.par_iter()).with_min_len(256).for_each(|(o, u)| {
        let (fx, wx) = weights(u.x, p);
        let (fy, wy) = weights(u.y, p);
        let (fz, wz) = weights(u.z, p);
        let mut acc = 0.0;
        for (c, &wzc) in wz[..p].iter().enumerate() {
            let z = fz as usize + c;
            for (b, &wyb) in wy[..p].iter().enumerate() {
                let row = (z * ny + fy as usize + b) * nx + fx as usize;
                let s: Real = wx[..p].iter().enumerate().map(|(a, &wa)| wa * phi[row + a] as Real).sum();
                acc += wzc * wyb * s;
            }
        }
        *o = acc;
    });
}

/// The mesh's interaction of a unit charge at each grid coordinate `u` with itself,
/// `Σ_{a,b} W(u − a) W(u − b) K(a − b)`, from the effective kernel `k` at offsets
/// `δ ∈ [−(p − 1), p − 1]³` (`x` fastest): per axis the weights' autocorrelation
/// `A(δ) = Σ_a w_a w_{a+δ}`, then `Σ_δ K(δ) A_x A_y A_z`, `(2p − 1)³` terms per charge.
pub(super) fn self_interaction(grid: &Grid, u: &[Vec3], k: &[f32], out: &mut [Real]) {
    let p = grid.order;
    let w = 2 * p - 1;
    let auto = |u: Real| {
        let (_, wt) = weights(u, p);
        let mut a = [0.0; 2 * MAX_ORDER];
        for (d, ad) in a[..w].iter_mut().enumerate() {
            let delta = d as i64 - (p as i64 - 1);
            *ad = (0..p as i64)
                .filter(|&i| (0..p as i64).contains(&(i + delta)))
                .map(|i| wt[i as usize] * wt[(i + delta) as usize])
                .sum();
        }
        a
    };
    out.par_iter_mut().zip(u.par_iter()).with_min_len(256).for_each(|(o, u)| {
        let (ax, ay, az) = (auto(u.x), auto(u.y), auto(u.z));
        let mut acc = 0.0;
        for (c, &azc) in az[..w].iter().enumerate() {
            for (b, &ayb) in ay[..w].iter().enumerate() {
                let row = &k[(c * w + b) * w..(c * w + b + 1) * w];
                let s: Real = row.iter().zip(&ax[..w]).map(|(&kv, &a)| kv as Real * a).sum();
                acc += azc * ayb * s;
            }
        }
        *o = acc;
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_partition_unity_and_reproduce_linear_functions() {
        for p in 2..=MAX_ORDER {
            for &u in &[3.0, 3.25, 3.5, 3.999, 7.1] {
                let (first, w) = weights(u, p);
                let sum: Real = w[..p].iter().sum();
                assert!((sum - 1.0).abs() < 1e-14, "p {p}, u {u}: sum {sum}");
                // B-splines of order >= 2 reproduce linear functions: Σ W(u − m) m = u
                let mean: Real = (0..p).map(|k| w[k] * (first + k as i64) as Real).sum();
                assert!((mean - u).abs() < 1e-12, "p {p}, u {u}: mean {mean}");
                assert!(w[..p].iter().all(|&w| w >= 0.0));
                for k in 0..p {
                    let d = (u - (first + k as i64) as Real).abs();
                    assert!(d < 0.5 * p as Real + 1e-12, "p {p}, u {u}: point {k} at {d}");
                }
            }
        }
    }
}
