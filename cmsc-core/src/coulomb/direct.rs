//! The exact all-pairs Coulomb sum, [Paper](crate#references) Eq. (8) with charges spread over
//! balls of radius `a` ([`super`], Eqs. (C1)–(C2)): the reference every approximation is
//! measured against, written to be a serious baseline.
//!
//! Layout: positions and charges are copied once per call into structure-of-arrays buffers
//! padded with zero charges ([`Soa`]), so the inner loop is branch-free over fixed-width
//! chunks that LLVM turns into SIMD (the `r = 0` guard is a select). Targets are split across
//! rayon threads in blocks. On x86-64 CPUs with AVX2+FMA (detected at run time, so one binary
//! runs everywhere) the pair kernel is [`super::kernel`]'s AVX2 one, which avoids the per-pair
//! square root and division.

use rayon::prelude::*;

use super::kernel::{field_sum, inv_r, Soa};
use super::{Charged, FieldMethod, FieldSolver};
use crate::error::Result;
use crate::math::{Real, Vec3};

/// Targets per rayon task: large enough to amortise scheduling, small enough to balance.
const TARGET_BLOCK: usize = 64;

/// The exact `O(n²)` sum with reusable structure-of-arrays scratch.
///
/// Only charged vertices (`q ≠ 0`) take part: an uncharged one neither exerts nor feels a force,
/// so a mesh with `c` charged vertices costs `O(c²)` (an artist's rig often charges only a few
/// vertex groups).
#[derive(Debug, Default)]
pub struct DirectSum {
    soa: Soa,
    charged: Charged,
    /// Forces on the charged vertices.
    forces: Vec<Vec3>,
}

fn block(targets: &[Vec3], q: &[Real], scale: Real, a2: Real, s: &Soa, out: &mut [Vec3]) {
    for ((o, &p), &qi) in out.iter_mut().zip(targets).zip(q) {
        *o = field_sum(p, a2, s) * (scale * qi);
    }
}

impl FieldSolver for DirectSum {
    fn method(&self) -> FieldMethod {
        FieldMethod::Direct
    }

    fn forces(&mut self, x: &[Vec3], q: &[Real], k_c: Real, a: Real, out: &mut [Vec3]) -> Result<()> {
        assert!(x.len() == q.len() && q.len() == out.len());
        out.fill(Vec3::zeros());
        let c = &mut self.charged;
        c.gather(x, q);
        if c.index.len() < 2 {
            return Ok(()); // no pair, no force
        }
        self.forces.resize(c.index.len(), Vec3::zeros());
        self.soa.load(&c.x, &c.q);
        let soa = &self.soa;
        self.forces
            .par_chunks_mut(TARGET_BLOCK)
            .zip(c.x.par_chunks(TARGET_BLOCK).zip(c.q.par_chunks(TARGET_BLOCK)))
            .for_each(|(o, (xt, qt))| block(xt, qt, k_c, a * a, soa, o));
        for (&i, &f) in c.index.iter().zip(&self.forces) {
            out[i as usize] = f;
        }
        Ok(())
    }
}

impl DirectSum {
    /// The exact force (N) on the vertices listed in `targets` only, from all charges: an
    /// `O(k n)` reference for spot-checking approximations on systems too large for the full
    /// `O(n²)` sum. `out[t]` is the force on vertex `targets[t]`.
    ///
    /// # Panics
    /// If `x` and `q` differ in length, `out.len() != targets.len()`, or a target is out of range.
    pub fn forces_on(
        &mut self,
        x: &[Vec3],
        q: &[Real],
        k_c: Real,
        a: Real,
        targets: &[usize],
        out: &mut [Vec3],
    ) {
        assert!(x.len() == q.len() && out.len() == targets.len());
        self.soa.load(x, q);
        let soa = &self.soa;
        out.par_iter_mut().zip(targets.par_iter()).for_each(|(o, &i)| {
            *o = field_sum(x[i], a * a, soa) * (k_c * q[i]);
        });
    }
}

/// Pairwise Coulomb energy `U = Σ_{i<j} k_c q_i q_j φ_a(|x_i − x_j|)` (J), [`super`] Eq. (C2):
/// the potential of the force of Eq. (C1) (exact sum over the charged vertices, parallel over
/// `i`), with `a` the charge radius (m).
///
/// # Panics
/// If `x` and `q` differ in length.
pub fn coulomb_energy(x: &[Vec3], q: &[Real], k_c: Real, a: Real) -> Real {
    assert_eq!(x.len(), q.len());
    let a2 = a * a;
    let (x, q): (Vec<Vec3>, Vec<Real>) =
        x.iter().zip(q).filter(|(_, &q)| q != 0.0).map(|(x, q)| (*x, *q)).unzip();
    // the same bits on any number of threads: the low-dissipation safeguard acts on it
    let sum = crate::math::ordered_sum(x.len(), |i| {
        let mut e = 0.0;
        for j in i + 1..x.len() {
            e += q[j] * inv_r((x[i] - x[j]).norm_squared(), a2);
        }
        e * q[i]
    });
    k_c * sum
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::COULOMB_CONSTANT as KC;

    fn forces(x: &[Vec3], q: &[Real], a: Real) -> Vec<Vec3> {
        let mut out = vec![Vec3::zeros(); x.len()];
        DirectSum::default().forces(x, q, KC, a, &mut out).unwrap();
        out
    }

    #[test]
    fn two_charges_obey_coulombs_law() {
        // 1 µC and −2 µC at 0.5 m attract with k q1 q2 / r² = 0.0719 N.
        let x = [Vec3::new(0.1, 0.2, 0.3), Vec3::new(0.1, 0.2, 0.8)];
        let q = [1e-6, -2e-6];
        let f = forces(&x, &q, 0.0);
        let expected = KC * 1e-6 * 2e-6 / 0.25;
        assert!((f[0].z - expected).abs() < 1e-12 * expected, "{f:?}");
        assert!((f[1].z + expected).abs() < 1e-12 * expected);
        assert_eq!((f[0].x, f[0].y), (0.0, 0.0));
    }

    #[test]
    fn matches_naive_sum_on_random_cloud_with_padding() {
        // 37 points: not a multiple of LANES nor TARGET_BLOCK.
        let mut s = 12345u64;
        let mut rnd = || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        };
        let x: Vec<Vec3> = (0..37).map(|_| Vec3::new(rnd(), rnd(), rnd())).collect();
        let q: Vec<Real> = (0..37).map(|_| rnd() * 1e-6).collect();
        let a = 0.1; // several pairs closer than a: both branches of Eq. (C1)
        let f = forces(&x, &q, a);
        for i in 0..x.len() {
            let mut e = Vec3::zeros();
            for j in 0..x.len() {
                if i != j {
                    let r = x[i] - x[j];
                    e += r * (KC * q[i] * q[j] / r.norm().max(a).powi(3));
                }
            }
            assert!((f[i] - e).norm() <= 1e-12 * e.norm(), "vertex {i}");
        }
    }

    #[test]
    fn uncharged_vertices_neither_exert_nor_feel_a_force() {
        let x: Vec<Vec3> = (0..20).map(|i| Vec3::new(i as Real * 0.1, (i % 3) as Real * 0.2, 0.0)).collect();
        let q: Vec<Real> = (0..20).map(|i| if i % 4 == 1 { 1e-6 * (i as Real - 8.0) } else { 0.0 }).collect();
        let f = forces(&x, &q, 1e-3);
        let charged: Vec<usize> = (0..20).filter(|&i| q[i] != 0.0).collect();
        let (cx, cq): (Vec<Vec3>, Vec<Real>) = charged.iter().map(|&i| (x[i], q[i])).unzip();
        let alone = forces(&cx, &cq, 1e-3);
        for (i, fi) in f.iter().enumerate() {
            match charged.iter().position(|&c| c == i) {
                Some(k) => assert!((fi - alone[k]).norm() <= 1e-15 * alone[k].norm(), "vertex {i}"),
                None => assert_eq!(*fi, Vec3::zeros(), "vertex {i}"),
            }
        }
        assert!(alone.iter().all(|f| f.norm() > 0.0));
    }

    #[test]
    fn coincident_charges_give_finite_forces() {
        let x = [Vec3::zeros(), Vec3::zeros(), Vec3::new(1.0, 0.0, 0.0)];
        let q = [1e-6; 3];
        for a in [0.0, 1e-3] {
            let f = forces(&x, &q, a);
            assert!(f.iter().all(crate::math::is_finite3), "a {a}: {f:?}");
            // the coincident pair exerts nothing on each other; both feel vertex 2 equally
            assert!((f[0] - f[1]).norm() < 1e-12);
            assert!(coulomb_energy(&x, &q, KC, a).is_finite());
        }
    }

    /// Central differences of [`coulomb_energy`] against minus the forces, to `tol` of `|f_i|`.
    fn check_gradient(x: &[Vec3], q: &[Real], a: Real, dh: Real, tol: Real) {
        let f = forces(x, q, a);
        for i in 0..x.len() {
            for c in 0..3 {
                let (mut xp, mut xm) = (x.to_vec(), x.to_vec());
                xp[i][c] += dh;
                xm[i][c] -= dh;
                let g = (coulomb_energy(&xp, q, KC, a) - coulomb_energy(&xm, q, KC, a)) / (2.0 * dh);
                assert!((g + f[i][c]).abs() < tol * f[i].norm(), "a {a}, ({i},{c}): {g} vs {}", f[i][c]);
            }
        }
    }

    #[test]
    fn energy_gradient_is_minus_force() {
        let x = [Vec3::new(0.0, 0.0, 0.0), Vec3::new(0.3, 0.1, 0.0), Vec3::new(-0.2, 0.4, 0.5)];
        check_gradient(&x, &[2e-6, -1e-6, 3e-6], 0.05, 1e-7, 1e-5);
    }

    #[test]
    fn energy_gradient_is_minus_force_inside_the_charge_radius() {
        // a = 0.5 m: every pair is inside the ball, the branch Eqs. (C1)–(C2) add
        let x = [Vec3::new(0.0, 0.0, 0.0), Vec3::new(0.1, 0.05, 0.0), Vec3::new(-0.05, 0.2, 0.15)];
        check_gradient(&x, &[2e-6, -1e-6, 3e-6], 0.5, 1e-6, 1e-6);
    }

    #[test]
    fn pair_force_is_coulomb_beyond_a_continuous_at_a_and_bounded_below() {
        // 1 µC and −1 µC at distance r along x, a = 10 mm: |f| = k q² r / max(r, a)³
        let (q, a) = ([1e-6, -1e-6], 0.01);
        let f_at = |r: Real| forces(&[Vec3::zeros(), Vec3::new(r, 0.0, 0.0)], &q, a)[0].x;
        let u_at = |r: Real| coulomb_energy(&[Vec3::zeros(), Vec3::new(r, 0.0, 0.0)], &q, KC, a);
        let coulomb = |r: Real| KC * 1e-12 / (r * r);
        for r in [a, 1.0001 * a, 2.0 * a, 1.0] {
            assert!(
                (f_at(r) - coulomb(r)).abs() <= 1e-12 * coulomb(r),
                "r {r}: {} vs {}",
                f_at(r),
                coulomb(r)
            );
            assert!((u_at(r) + KC * 1e-12 / r).abs() <= 1e-12 * KC * 1e-12 / r, "r {r}");
        }
        // continuous at a from below, bounded by k q²/a² and linear in r inside
        let max = coulomb(a);
        assert!((f_at(a * (1.0 - 1e-9)) - max).abs() <= 1e-8 * max);
        for r in [0.0, 1e-9, 1e-6, 1e-3, 0.5 * a, 0.999 * a] {
            let f = f_at(r);
            assert!(f.is_finite() && f >= 0.0 && f <= max * (1.0 + 1e-12), "r {r}: {f}");
            assert!((f - max * r / a).abs() <= 1e-12 * max, "r {r}: {f} vs {}", max * r / a);
        }
        // the potential is bounded too: −3 k q² / (2a) at contact
        assert!((u_at(0.0) + 1.5 * KC * 1e-12 / a).abs() <= 1e-12 * KC * 1e-12 / a);
    }

    #[test]
    fn forces_inside_the_charge_radius_sum_to_zero() {
        // a dense cluster (every pair within a) and a few outside: Σ f = 0 to round-off
        let mut s = 99u64;
        let mut rnd = || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        };
        let x: Vec<Vec3> =
            (0..50).map(|i| Vec3::new(rnd(), rnd(), rnd()) * if i < 40 { 0.01 } else { 1.0 }).collect();
        let q: Vec<Real> = (0..50).map(|_| rnd() * 1e-6).collect();
        let f = forces(&x, &q, 0.05);
        let total: Vec3 = f.iter().sum();
        let scale: Real = f.iter().map(|f| f.norm()).sum();
        assert!(total.norm() <= 1e-13 * scale, "{total:?} of {scale}");
    }
}
