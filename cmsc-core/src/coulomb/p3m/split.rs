//! Ewald's split of the Coulomb kernel, `1/r = erf(α r)/r + erfc(α r)/r`: the smooth long-range
//! part goes to the mesh ([`super::fft`]), the rest is summed pair by pair within the cut-off
//! `r_c` ([`super::short`]). The pair sum adds the exact term of the other backends (charges
//! spread over balls of radius `a`, Eqs. (C1)–(C2) of [`crate::coulomb`]) and subtracts the
//! mesh's long-range one, so the forces keep the short-range form exactly where it matters
//! (near pairs: the cut-off is kept at least `a`, see [`super::params`]) and the two parts add
//! up to it up to `erfc(α r_c)` beyond the cut-off, where it is Coulomb's law.

use crate::math::Real;

/// `2/√π`.
const TWO_OVER_SQRT_PI: Real = std::f64::consts::FRAC_2_SQRT_PI;

/// Degree of the Chebyshev fits of the long-range kernels over `r² ∈ [0, r_c²]`: they are
/// entire functions of `t = α² r²` (`erf(√t)/√t` and its derivative's), and `α r_c ≤ 3.4`
/// here, so degree 12 fits them to `4·10⁻⁷` of their value at 0 (checked below), far below the
/// method's own error.
pub(super) const DEGREE: usize = 12;

/// `α`, `r_c` and the tables of the long-range kernels in `r²`.
#[derive(Debug, Clone)]
pub(super) struct Split {
    /// Splitting parameter `α` (1/m).
    pub alpha: Real,
    /// Cut-off `r_c` of the pair sum (m).
    pub r_c: Real,
    /// `2 / r_c²` (1/m²): `y = r² · to_unit − 1 ∈ [−1, 1]` is the fits' variable.
    pub to_unit: Real,
    /// Chebyshev coefficients in `y` of `L(r)` (field factor) and of `erf(α r)/r`.
    pub field: [Real; DEGREE + 1],
    pub potential: [Real; DEGREE + 1],
}

impl Split {
    /// The split with parameter `alpha` (1/m) and cut-off `r_c` (m).
    pub fn new(alpha: Real, r_c: Real) -> Split {
        let to_unit = 2.0 / (r_c * r_c);
        let mut s = Split { alpha, r_c, to_unit, field: [0.0; DEGREE + 1], potential: [0.0; DEGREE + 1] };
        s.field = chebyshev(|y| s.long_field((y + 1.0) / to_unit));
        s.potential = chebyshev(|y| s.long_potential((y + 1.0) / to_unit));
        s
    }

    /// The long-range potential kernel `G(r) = erf(α r)/r` (1/m) at `r² = r2`, `2α/√π` at 0.
    pub fn long_potential(&self, r2: Real) -> Real {
        let x = self.alpha * r2.sqrt();
        if x < 1e-4 {
            // erf(x)/x = 2/√π (1 − x²/3 + …)
            return TWO_OVER_SQRT_PI * self.alpha * (1.0 - x * x / 3.0);
        }
        libm::erf(x) / r2.sqrt()
    }

    /// The long-range field factor `L(r) = erf(α r)/r³ − (2α/√π) e^{−α² r²}/r²` (1/m³), with
    /// `E(r) = r L(r)`; `4α³/(3√π)` at 0.
    pub fn long_field(&self, r2: Real) -> Real {
        let a = self.alpha;
        let x2 = a * a * r2;
        if x2 < 1e-3 {
            // series: (2/√π) α³ (2/3 − 2x²/5 + x⁴/7)
            return TWO_OVER_SQRT_PI * a * a * a * (2.0 / 3.0 - 0.4 * x2 + x2 * x2 / 7.0);
        }
        let r = r2.sqrt();
        libm::erf(a * r) / (r2 * r) - TWO_OVER_SQRT_PI * a * (-x2).exp() / r2
    }
}

/// The Chebyshev interpolant of degree [`DEGREE`] of `f` on `[−1, 1]` (at the Chebyshev nodes).
fn chebyshev(f: impl Fn(Real) -> Real) -> [Real; DEGREE + 1] {
    let n = DEGREE + 1;
    let node = |j: usize| std::f64::consts::PI * (j as Real + 0.5) / n as Real;
    let values: Vec<Real> = (0..n).map(|j| f(node(j).cos())).collect();
    let mut c = [0.0; DEGREE + 1];
    for (k, c) in c.iter_mut().enumerate() {
        *c = 2.0 / n as Real * (0..n).map(|j| values[j] * (k as Real * node(j)).cos()).sum::<Real>();
    }
    c[0] *= 0.5;
    c
}

/// `Σ_k c_k T_k(y)` by Clenshaw's recurrence.
#[inline(always)]
pub(super) fn clenshaw(c: &[Real; DEGREE + 1], y: Real) -> Real {
    let (mut b1, mut b2) = (0.0, 0.0);
    for &ck in c[1..].iter().rev() {
        let b0 = ck + 2.0 * y * b1 - b2;
        b2 = b1;
        b1 = b0;
    }
    c[0] + y * b1 - b2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_kernels_match_their_definitions_and_tables() {
        // α r_c = 3.4, the widest range the method uses
        let s = Split::new(34.0, 0.1);
        for &r in &[1e-7, 1e-3, 0.004, 0.02, 0.05, 0.0699, 0.0999] {
            let r2: Real = r * r;
            let g = libm::erf(34.0 * r) / r;
            assert!((s.long_potential(r2) - g).abs() < 1e-9 * g, "r {r}");
            // L = −G'(r)/r, by central differences
            let d = 1e-7;
            let dg = (libm::erf(34.0 * (r + d)) / (r + d) - libm::erf(34.0 * (r - d)) / (r - d)) / (2.0 * d);
            if r > 1e-3 {
                assert!((s.long_field(r2) + dg / r).abs() < 1e-5 * s.long_field(r2), "r {r}");
            }
            let y = r2 * s.to_unit - 1.0;
            let fit = clenshaw(&s.field, y);
            assert!((fit - s.long_field(r2)).abs() < 5e-7 * s.long_field(0.0), "r {r}: {fit}");
            let fit = clenshaw(&s.potential, y);
            assert!((fit - s.long_potential(r2)).abs() < 5e-7 * s.long_potential(0.0), "r {r}: {fit}");
        }
    }
}
