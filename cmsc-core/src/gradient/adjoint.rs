//! Vector–Jacobian products of the pieces of one IMEX step: what the reverse pass multiplies
//! adjoints by. Each function adds its contribution to the output buffers.

use rayon::prelude::*;

use crate::coulomb::{inv_r3, vjp_sum, Soa};
use crate::fields::ExternalField;
use crate::math::{Mat3, Real, Vec3};
use crate::springs::Springs;

/// Where a force's vector–Jacobian product goes: `(∂F/∂x)ᵀ f̄` is added to `x_bar` (one per
/// vertex) and `(∂F/∂q)ᵀ f̄` to `q_bar` (one per vertex charge).
pub struct Adjoints<'a> {
    /// `x̄`, the adjoint of the positions the force was evaluated at.
    pub x_bar: &'a mut [Vec3],
    /// `q̄`, the adjoint of the vertex charges.
    pub q_bar: &'a mut [Real],
}

/// `∂F/∂x` and `∂F/∂q` of the vertex–vertex Coulomb forces ([Paper](crate#references)
/// Eq. (8), with the charge radius `a` of Eq. (C1) of [`crate::coulomb`]) applied to the
/// adjoint `f̄`: adds `(∂F/∂x)ᵀ f̄` to `out.x_bar` and `(∂F/∂q)ᵀ f̄` to `out.q_bar`.
///
/// With `r = x_i − x_j`, `s² = max(|r|², a²)` and `w = s⁻³`, the force's pair blocks are
/// `G_ij = k_c q_i q_j (w I − 3 w r rᵀ / s²)` beyond `a` and `k_c q_i q_j w I` inside it (`w`
/// is then constant), symmetric in `i, j`, so that `x̄_i = Σ_j G_ij (f̄_i − f̄_j)` and
/// `q̄_i = k_c Σ_j q_j w r·(f̄_i − f̄_j)`. Exact, `O(n²)`; the pair sums run in the Coulomb
/// kernels' SIMD loop `vjp_sum`, over positions, charges and adjoints as arrays of each component.
pub fn coulomb_vjp(x: &[Vec3], q: &[Real], k_c: Real, a: Real, f_bar: &[Vec3], out: Adjoints<'_>) {
    let a2 = a * a;
    let (mut sources, mut adjoints) = (Soa::default(), Soa::default());
    sources.load(x, q);
    adjoints.load(f_bar, &[]);
    out.x_bar.par_iter_mut().zip(out.q_bar.par_iter_mut()).enumerate().for_each(|(i, (xb, qb))| {
        let (acc_x, acc_q) = vjp_sum(x[i], f_bar[i], a2, &sources, &adjoints);
        *xb += acc_x * (k_c * q[i]);
        *qb += k_c * acc_q;
    });
}

/// The same products for the external point charges and the uniform field of `ext`
/// (`f_i = q_i (E + k_c Σ_e Q_e r_ie w_ie)`, external charges held fixed).
pub fn external_vjp(
    ext: &ExternalField,
    x: &[Vec3],
    q: &[Real],
    k_c: Real,
    a: Real,
    f_bar: &[Vec3],
    out: Adjoints<'_>,
) {
    let a2 = a * a;
    out.x_bar.par_iter_mut().zip(out.q_bar.par_iter_mut()).enumerate().for_each(|(i, (xb, qb))| {
        let fi = f_bar[i];
        let mut e = ext.uniform;
        let mut jac_t_f = Vec3::zeros();
        for c in &ext.charges {
            let r = x[i] - c.position;
            let r2 = r.norm_squared();
            let w = inv_r3(r2, a2);
            if w == 0.0 {
                continue;
            }
            e += r * (k_c * c.charge * w);
            let radial = if r2 > a2 { 3.0 * w * r.dot(&fi) / r2 } else { 0.0 };
            jac_t_f += (fi * w - r * radial) * (k_c * c.charge);
        }
        *xb += jac_t_f * q[i];
        *qb += e.dot(&fi);
    });
}

/// Adjoint of Liu 2013's local step `d_s = l_s p / |p|` (`p = x_a − x_b`): with
/// `∂d_s/∂p = (l_s / |p|)(I − p̂ p̂ᵀ)`, writes `g_i = Σ_{s ∋ i} ± (∂d_s/∂p)ᵀ d̄_s` into `g`.
/// A spring whose ends coincide kept its previous direction, which does not depend on `x`.
pub fn local_step_vjp(
    springs: &Springs,
    x: &[Vec3],
    d_bar: &[Vec3],
    per_spring: &mut [Vec3],
    g: &mut [Vec3],
) {
    let rest = springs.rest_lengths();
    per_spring.par_iter_mut().enumerate().for_each(|(s, e)| {
        let [a, b] = springs.ends()[s];
        let p = x[a as usize] - x[b as usize];
        let len = p.norm();
        *e = if len > 0.0 {
            let u = p / len;
            (d_bar[s] - u * u.dot(&d_bar[s])) * (rest[s] / len)
        } else {
            Vec3::zeros()
        };
    });
    g.par_iter_mut().enumerate().for_each(|(i, gi)| {
        *gi = springs.incident(i).iter().map(|&(s, sign)| per_spring[s as usize] * sign).sum();
    });
}

/// One spring's Hessian `∂²E/∂p²` (a `3 × 3` block, N/m) at `p = x_a − x_b`: with
/// `E = (k/2)(|p| − l)²`, `k (I − (l/|p|)(I − p̂ p̂ᵀ))`, i.e. `k (I − ∂d/∂p)` with the local step's
/// derivative `∂d/∂p` ([Liu 2013](crate#references) §4; `L − J ∂d/∂x` of Eq. (17) is their sum
/// over springs); `k I` for a spring whose ends coincide (its direction is then held).
///
/// A compressed spring (`|p| < l`) has negative stiffness `k (1 − l/|p|)` across its direction;
/// with `projected` that term is dropped (`l/|p|` capped at 1), the usual projection of each
/// spring's Hessian to positive semi-definite.
pub fn spring_hessian_block(p: Vec3, rest: Real, k: Real, projected: bool) -> Mat3 {
    let len = p.norm();
    if len == 0.0 {
        return Mat3::identity() * k;
    }
    let u = p / len;
    let ratio = if projected { (rest / len).min(1.0) } else { rest / len };
    (Mat3::identity() - (Mat3::identity() - u * u.transpose()) * ratio) * k
}

/// `Jᵀ λ` per spring, `k_s (λ_a − λ_b)` ([Liu 2013](crate#references) Eq. (12) transposed).
pub fn jt(springs: &Springs, lambda: &[Vec3], out: &mut [Vec3]) {
    let k = springs.stiffness();
    out.par_iter_mut().enumerate().for_each(|(s, o)| {
        let [a, b] = springs.ends()[s];
        *o = (lambda[a as usize] - lambda[b as usize]) * k[s];
    });
}

/// `λ · ∂(J d − L x)/∂σ` for a global stiffness scale `σ` at `σ = 1`:
/// `Σ_s k_s (λ_a − λ_b)·(d_s − (x_a − x_b))`, the derivative of the global step's residual.
pub fn stiffness_scale_dot(springs: &Springs, lambda: &[Vec3], d: &[Vec3], x: &[Vec3]) -> Real {
    let k = springs.stiffness();
    (0..springs.len())
        .into_par_iter()
        .map(|s| {
            let [a, b] = springs.ends()[s];
            let (a, b) = (a as usize, b as usize);
            k[s] * (lambda[a] - lambda[b]).dot(&(d[s] - (x[a] - x[b])))
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coulomb::{DirectSum, FieldSolver};
    use crate::fields::PointCharge;

    fn points() -> (Vec<Vec3>, Vec<Real>, Vec<Vec3>) {
        let x = vec![
            Vec3::new(0.0, 0.0, 0.0),
            Vec3::new(0.3, 0.1, -0.2),
            Vec3::new(-0.2, 0.4, 0.1),
            Vec3::new(0.1, -0.3, 0.5),
        ];
        let q = vec![1e-6, -2e-6, 1.5e-6, 0.5e-6];
        let f_bar = vec![
            Vec3::new(0.3, -0.1, 0.2),
            Vec3::new(-0.5, 0.2, 0.1),
            Vec3::new(0.1, 0.1, -0.4),
            Vec3::new(0.2, -0.3, 0.3),
        ];
        (x, q, f_bar)
    }

    /// `f̄ · F(x, q)` differentiated by central differences must equal the products.
    fn check_against_fd(
        force: impl Fn(&[Vec3], &[Real]) -> Vec<Vec3>,
        vjp: impl Fn(&[Vec3], &[Real], &[Vec3], &mut [Vec3], &mut [Real]),
    ) {
        let (x, q, f_bar) = points();
        let objective =
            |x: &[Vec3], q: &[Real]| -> Real { force(x, q).iter().zip(&f_bar).map(|(f, b)| f.dot(b)).sum() };
        let mut x_bar = vec![Vec3::zeros(); 4];
        let mut q_bar = vec![0.0; 4];
        vjp(&x, &q, &f_bar, &mut x_bar, &mut q_bar);
        for i in 0..4 {
            for c in 0..3 {
                let h = 1e-6;
                let (mut xp, mut xm) = (x.clone(), x.clone());
                xp[i][c] += h;
                xm[i][c] -= h;
                let fd = (objective(&xp, &q) - objective(&xm, &q)) / (2.0 * h);
                assert!(
                    (fd - x_bar[i][c]).abs() <= 1e-6 * x_bar[i].norm().max(1e-3),
                    "x {i},{c}: {fd} vs {}",
                    x_bar[i][c]
                );
            }
            let h = 1e-12;
            let (mut qp, mut qm) = (q.clone(), q.clone());
            qp[i] += h;
            qm[i] -= h;
            let fd = (objective(&x, &qp) - objective(&x, &qm)) / (2.0 * h);
            assert!((fd - q_bar[i]).abs() <= 1e-6 * q_bar[i].abs(), "q {i}: {fd} vs {}", q_bar[i]);
        }
    }

    #[test]
    fn coulomb_vjp_matches_finite_differences() {
        // a = 0.5 m puts two of the six pairs inside the charge radius (Eq. (C1)'s inner branch)
        for eps in [0.05, 0.5] {
            let k_c = crate::COULOMB_CONSTANT;
            check_against_fd(
                |x, q| {
                    let mut f = vec![Vec3::zeros(); x.len()];
                    DirectSum::default().forces(x, q, k_c, eps, &mut f).unwrap();
                    f
                },
                |x, q, fb, x_bar, q_bar| coulomb_vjp(x, q, k_c, eps, fb, Adjoints { x_bar, q_bar }),
            );
        }
    }

    /// The SIMD pair sums against the pair-by-pair loop they replaced (skipping `j = i`, zero
    /// charges and, at `a = 0`, coincident points), on 45 points with a coincident pair and
    /// uncharged vertices, inside and beyond the charge radius.
    #[test]
    fn coulomb_vjp_is_the_pair_by_pair_sum() {
        let n = 45;
        let mut x: Vec<Vec3> = (0..n)
            .map(|i| {
                let t = i as Real;
                Vec3::new((1.3 * t).sin(), (0.7 * t).cos(), (0.31 * t).sin() * 0.5)
            })
            .collect();
        x[7] = x[3]; // coincident
        let q: Vec<Real> =
            (0..n).map(|i| if i % 5 == 0 { 0.0 } else { ((i as Real) * 0.9).sin() * 1e-6 }).collect();
        let f_bar: Vec<Vec3> =
            (0..n).map(|i| Vec3::new((i as Real).cos(), 0.5, (2.0 * i as Real).sin())).collect();
        let k_c = crate::COULOMB_CONSTANT;
        for a in [0.0, 0.05, 0.4] {
            let (mut x_bar, mut q_bar) = (vec![Vec3::zeros(); n], vec![0.0; n]);
            coulomb_vjp(&x, &q, k_c, a, &f_bar, Adjoints { x_bar: &mut x_bar, q_bar: &mut q_bar });
            for i in 0..n {
                let (mut want_x, mut want_q) = (Vec3::zeros(), 0.0);
                for j in (0..n).filter(|&j| j != i && q[j] != 0.0) {
                    let r = x[i] - x[j];
                    let r2 = r.norm_squared();
                    let w = inv_r3(r2, a * a);
                    if w == 0.0 {
                        continue;
                    }
                    let df = f_bar[i] - f_bar[j];
                    let radial = if r2 > a * a { 3.0 * w * r.dot(&df) / r2 } else { 0.0 };
                    want_x += (df * w - r * radial) * q[j];
                    want_q += q[j] * w * r.dot(&df);
                }
                let (want_x, want_q) = (want_x * (k_c * q[i]), want_q * k_c);
                assert!((x_bar[i] - want_x).norm() <= 1e-12 * want_x.norm() + 1e-300, "a = {a}, x̄ {i}");
                assert!((q_bar[i] - want_q).abs() <= 1e-12 * want_q.abs() + 1e-300, "a = {a}, q̄ {i}");
                assert!(x_bar[i].iter().all(|c| c.is_finite()) && q_bar[i].is_finite());
            }
        }
    }

    #[test]
    fn spring_hessian_block_matches_finite_differences_of_the_force() {
        // f_a = −k (|p| − l) p/|p| = −∂E/∂p, so ∂²E/∂p² = −∂f_a/∂p
        let force = |p: Vec3, l: Real, k: Real| -p * (k * (p.norm() - l) / p.norm());
        let (l, k) = (0.5, 40.0);
        for (p, compressed) in [(Vec3::new(0.4, 0.3, 0.2), false), (Vec3::new(0.2, -0.1, 0.25), true)] {
            let block = spring_hessian_block(p, l, k, false);
            let e = 1e-6;
            for j in 0..3 {
                let mut dp = Vec3::zeros();
                dp[j] = e;
                let fd = -(force(p + dp, l, k) - force(p - dp, l, k)) / (2.0 * e);
                for i in 0..3 {
                    assert!(
                        (fd[i] - block[(i, j)]).abs() <= 1e-6 * k,
                        "({i}, {j}): {} vs {}",
                        fd[i],
                        block[(i, j)]
                    );
                }
            }
            let projected = spring_hessian_block(p, l, k, true);
            let min_eigen = |m: Mat3| m.symmetric_eigenvalues().min();
            if compressed {
                assert!(min_eigen(block) < 0.0 && min_eigen(projected) >= -1e-9, "projected to PSD");
            } else {
                assert_eq!(block, projected, "a stretched spring is PSD already");
            }
        }
    }

    #[test]
    fn external_vjp_matches_finite_differences() {
        // a = 0.9 m puts two of the eight vertex–charge pairs inside the charge radius
        for eps in [0.01, 0.9] {
            external_vjp_matches_finite_differences_at(eps);
        }
    }

    fn external_vjp_matches_finite_differences_at(eps: Real) {
        let k_c = crate::COULOMB_CONSTANT;
        let ext = ExternalField {
            charges: vec![
                PointCharge { position: Vec3::new(1.0, 0.5, 0.0), charge: -3e-6 },
                PointCharge { position: Vec3::new(-0.5, 0.0, 1.0), charge: 2e-6 },
            ],
            uniform: Vec3::new(1e3, -2e3, 5e2),
        };
        check_against_fd(
            |x, q| {
                let mut f = vec![Vec3::zeros(); x.len()];
                ext.add_forces(x, q, k_c, eps, &mut f);
                f
            },
            |x, q, fb, x_bar, q_bar| external_vjp(&ext, x, q, k_c, eps, fb, Adjoints { x_bar, q_bar }),
        );
    }
}
