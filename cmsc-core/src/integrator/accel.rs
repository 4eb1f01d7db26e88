//! Anderson acceleration of Liu 2013's local/global iterations, with the energy-decrease
//! safeguard of [Peng 2018](crate#references), wrapped around any one-iteration map `x ↦ G(x)`.
//!
//! # The iteration (Peng 2018 Alg. 2, symbols as there)
//! One plain local/global iteration is a map `G` whose fixed points are the implicit-Euler steps
//! and which never raises the local/global objective `E` ([Liu 2013](crate#references) Eq. (8)
//! with the explicit forces, see [`objective`]). With residuals `fᵏ = G(xᵏ) − xᵏ` and the
//! differences `ΔFⱼ = fʲ⁺¹ − fʲ`, `ΔGⱼ = G(xʲ⁺¹) − G(xʲ)` of the last `m` iterates,
//!
//! ```text
//! θ    = argmin_θ |fᵏ − ΔF θ|²                 (normal equations, m × m)
//! xᵏ⁺¹ = G(xᵏ) − ΔG θ                          (Anderson)
//! if E(xᵏ⁺¹) ≥ E(xᵏ):  xᵏ⁺¹ = G(xᵏ), history cleared   (safeguard: the plain step)
//! ```
//!
//! Each iteration costs one `G` (one local step, one prefactored solve) plus `O(m n)` for the
//! history; `E(xᵏ⁺¹)` comes with the local step at `xᵏ⁺¹` (Peng 2018 §4), so a rejected point
//! costs one extra `G`, counted in the iteration budget. A fixed point of `G` (`f = 0`) is left unchanged, so the
//! step converges to the same implicit-Euler solution as the plain iterations
//! (`tests/implicit_euler.rs`), and the safeguard keeps the objective decreasing from one
//! accepted iterate to the next as in the plain method. After the last `G` the accelerated point
//! is kept only if it lowers `E` below the last accepted iterate's; otherwise the step ends on
//! `G` of that iterate, the plain result.
//!
//! # Why Anderson, not Chebyshev (measured, issue 19)
//! `examples/accel_table.rs`: one step of a swinging 10K-vertex hanging cloth (2-core VM,
//! 2 rayon threads), error = distance to the converged step relative to the step's largest
//! displacement. After 30 steps, 10 plain iterations leave 1.97e-2 (max) / 3.45e-3 (rms);
//! Anderson with `m = 5` leaves 1.92e-2 / 3.34e-3 after 5 and 1.45e-2 / 1.71e-3 after 10, and
//! keeps decreasing with K. From the states after 10, 60 and 120 steps, 6 Anderson iterations
//! are as accurate as 10 plain ones (5 after 30 steps), hence [`crate::DEFAULT_ITERATIONS`].
//! Chebyshev semi-iteration ([Wang 2015](crate#references)) was tried first, with `ρ` from a
//! Gershgorin bound on the iteration's spectrum (`h²θ ≈ 900` on this cloth, `ρ ≈ 0.998`) and the
//! variants `γ ∈ {0.9, 1, 2/(2 − β)}`, `ρ ∈ {0.99, 0.998, bound}`, `S ∈ 1..=4`: none was monotone
//! in K (e.g. 1.62e-2 at K = 5 but 2.37e-2 at K = 12, worse than plain), and at K = 5 its rms
//! error (4.6e-3) was worse than 10 plain iterations'. Its fixed weights assume a linear
//! iteration; the cloth's is far from linear in the first iterations, where few-iteration steps
//! spend all their time.

use rayon::prelude::*;

use crate::math::{ordered_blocks, ordered_sum, Real, Vec3};

/// Default history window `m` (Peng 2018 uses 5–6). On the 10K cloth a first comparison (against
/// a less converged reference than the table's) put `m` = 3, 5 and 8 within a few per cent of
/// each other at every K ≤ 20; 5 costs 5 vectors of history (`ΔF`, `ΔG`), 2.4 MB at 10K vertices.
pub const ANDERSON_WINDOW: usize = 5;

/// Tikhonov regularisation of the `m × m` normal equations, relative to their largest diagonal
/// entry: keeps the Cholesky solve defined when residual differences become collinear (near
/// convergence) and is far below the data otherwise (1e-10 and 1e-12 gave identical tables).
const GRAM_REGULARISATION: Real = 1e-12;

/// Vertices per rayon task in the history updates: a fork costs a few µs, a vertex a few ns
/// (as `springs::local`'s threshold).
const PAR_MIN_LEN: usize = 4096;

/// Anderson acceleration state: the history of the last `m` iterates and its scratch. Owned by
/// the stepper and reused across steps; the history is cleared at the start of each [`Anderson::run`].
#[derive(Debug, Clone)]
pub struct Anderson {
    window: usize,
    /// `ΔFⱼ`, `ΔGⱼ`, a ring of `window` columns of `n` vectors each.
    df: Vec<Vec<Vec3>>,
    dg: Vec<Vec<Vec3>>,
    /// `fᵏ⁻¹` and `G(xᵏ⁻¹)` of the last accepted iterate, and `G(xᵏ)`.
    f_prev: Vec<Vec3>,
    g_prev: Vec<Vec3>,
    g: Vec<Vec3>,
    /// `ΔFᵀΔF` and `ΔFᵀ fᵏ` (ring order), kept up to date one column per iteration.
    gram: Vec<Real>,
    rhs: Vec<Real>,
}

impl Default for Anderson {
    /// An accelerator with the library's window, [`ANDERSON_WINDOW`].
    fn default() -> Self {
        Anderson::new(ANDERSON_WINDOW)
    }
}

impl Anderson {
    /// Acceleration with a window of `window ≥ 1` previous iterates ([`ANDERSON_WINDOW`]).
    ///
    /// # Panics
    /// If `window` is 0.
    pub fn new(window: usize) -> Self {
        assert!(window > 0, "Anderson window must be at least 1");
        Anderson {
            window,
            df: vec![Vec::new(); window],
            dg: vec![Vec::new(); window],
            f_prev: Vec::new(),
            g_prev: Vec::new(),
            g: Vec::new(),
            gram: vec![0.0; window * window],
            rhs: vec![0.0; window],
        }
    }

    fn resize(&mut self, n: usize) {
        if self.g.len() != n {
            let z = || vec![Vec3::zeros(); n];
            self.df.iter_mut().chain(self.dg.iter_mut()).for_each(|c| *c = z());
            (self.f_prev, self.g_prev, self.g) = (z(), z(), z());
        }
    }

    /// Runs at most `iterations` evaluations of `plain` from `x` (holding `x⁰`, pinned entries
    /// at their targets), Anderson-accelerated with the safeguard on the objective `E`, leaving
    /// the result in `x`. Returns how many evaluations of `plain` it made (a safeguard fallback
    /// spends one of the `iterations`).
    ///
    /// After every accepted iterate `xᵏ` and its plain image `G(xᵏ)`, `converged(xᵏ, G(xᵏ))`
    /// may end the run early: `x` is then `G(xᵏ)`, the plain step from the last accepted
    /// iterate (so the objective still decreased). `|_, _| false` runs all `iterations`.
    ///
    /// `plain(x)` must overwrite the free entries of `x` with one plain iteration `G(x)`, leave
    /// the `pinned` entries alone and return `E` at the `x` it was given (the IMEX step gets the
    /// spring part from the lengths its local step computes anyway); `energy(x)` is `E` alone,
    /// called once at the end ([`objective`] for the IMEX step). Neither this function nor
    /// `plain` writes pinned entries, so they stay exactly at their targets. Any integrator whose
    /// inner solve is a local/global iteration (the IMEX step, an implicit-midpoint variant at
    /// `h/2`, …) can reuse this with its own `plain` and `energy`.
    pub fn run(
        &mut self,
        iterations: usize,
        pinned: &[bool],
        x: &mut [Vec3],
        mut plain: impl FnMut(&mut [Vec3]) -> Real,
        mut energy: impl FnMut(&[Vec3]) -> Real,
        mut converged: impl FnMut(&[Vec3], &[Vec3]) -> bool,
    ) -> usize {
        self.resize(x.len());
        let m = self.window;
        let (mut cols, mut newest) = (0, m - 1); // history length; ring slot of the newest column
        let mut e_accepted = Real::INFINITY;
        let mut evaluations = 0; // of G, the budget
        while evaluations < iterations {
            self.g.copy_from_slice(x);
            let mut e = plain(&mut self.g);
            evaluations += 1;
            if evaluations > 1 && e >= e_accepted {
                // Safeguard: the accelerated point did not lower E; go back to G of the last
                // accepted iterate, the plain step, and go on from there (one more G).
                x.copy_from_slice(&self.g_prev);
                if evaluations == iterations {
                    return evaluations; // no budget left: end on the plain step
                }
                self.g.copy_from_slice(x);
                e = plain(&mut self.g);
                evaluations += 1;
                cols = 0;
            }
            e_accepted = e;
            if converged(x, &self.g) {
                x.copy_from_slice(&self.g); // pinned entries of `g` are `x`'s
                return evaluations;
            }
            let record = evaluations > 1;
            if record {
                newest = (newest + 1) % m;
                cols = (cols + 1).min(m);
            }
            // f = G(x) − x; ΔF = f − f_prev, ΔG = G(x) − G_prev in the newest slot; f_prev = f
            let (g, g_prev) = (&self.g, &self.g_prev);
            let (df, dg) = (&mut self.df[newest], &mut self.dg[newest]);
            (df.par_iter_mut(), dg.par_iter_mut(), self.f_prev.par_iter_mut())
                .into_par_iter()
                .with_min_len(PAR_MIN_LEN)
                .enumerate()
                .for_each(|(i, (df, dg, f_prev))| {
                    let f = g[i] - x[i];
                    if record {
                        *df = f - *f_prev;
                        *dg = g[i] - g_prev[i];
                    }
                    *f_prev = f;
                });
            std::mem::swap(&mut self.g, &mut self.g_prev); // G(xᵏ) is now `g_prev`
            if record {
                self.update_normal_equations(cols, newest);
            }
            match self.coefficients(cols, newest) {
                None => x.copy_from_slice(&self.g_prev), // no history: the plain step
                Some(theta) => {
                    let slots: Vec<(usize, Real)> =
                        (0..cols).map(|a| ((newest + m - a) % m, theta[a])).collect();
                    let (g, dg) = (&self.g_prev, &self.dg);
                    x.par_iter_mut().zip(pinned.par_iter()).with_min_len(PAR_MIN_LEN).enumerate().for_each(
                        |(i, (x, &p))| {
                            if !p {
                                *x = slots.iter().fold(g[i], |acc, &(s, t)| acc - dg[s][i] * t);
                            }
                        },
                    );
                }
            }
        }
        // The last combination has not been evaluated: keep it only if it lowers E.
        if iterations > 0 && energy(x) >= e_accepted {
            x.copy_from_slice(&self.g_prev);
        }
        evaluations
    }

    /// Adds the newest column's entries to `ΔFᵀΔF` and updates `ΔFᵀ fᵏ`, in one pass over the
    /// history: `ΔFⱼᵀ fᵏ = ΔFⱼᵀ fᵏ⁻¹ + ΔFⱼᵀ ΔF_newest` for the older columns (`fᵏ = fᵏ⁻¹ + ΔF_newest`).
    fn update_normal_equations(&mut self, cols: usize, newest: usize) {
        let m = self.window;
        let slots: Vec<usize> = (0..cols).map(|a| (newest + m - a) % m).collect();
        let (df, f) = (&self.df, &self.f_prev);
        let new = &df[newest];
        // sums[a] = ΔF_newest · ΔF_slot(a); sums[cols] = ΔF_newest · fᵏ
        // in blocks fixed by the length alone, added in order: the same bits on any number of
        // threads (these sums are the least-squares coefficients that mix the iterates)
        let parts = ordered_blocks(new.len(), PAR_MIN_LEN, |block| {
            let mut acc = vec![0.0; cols + 1];
            for i in block {
                for (a, &j) in slots.iter().enumerate() {
                    acc[a] += new[i].dot(&df[j][i]);
                }
                acc[cols] += new[i].dot(&f[i]);
            }
            acc
        });
        let mut sums = vec![0.0; cols + 1];
        for part in &parts {
            sums.iter_mut().zip(part).for_each(|(s, p)| *s += p);
        }
        for (a, &j) in slots.iter().enumerate().skip(1) {
            (self.gram[newest * m + j], self.gram[j * m + newest]) = (sums[a], sums[a]);
            self.rhs[j] += sums[a];
        }
        self.gram[newest * m + newest] = sums[0];
        self.rhs[newest] = sums[cols];
    }

    /// `θ` of the `cols` newest columns (newest first), or `None` without history or when the
    /// normal equations are singular.
    fn coefficients(&self, cols: usize, newest: usize) -> Option<Vec<Real>> {
        if cols == 0 {
            return None;
        }
        let m = self.window;
        let slot = |a: usize| (newest + m - a) % m;
        let mut a = nalgebra::DMatrix::<Real>::from_fn(cols, cols, |r, c| self.gram[slot(r) * m + slot(c)]);
        let rhs = nalgebra::DVector::<Real>::from_fn(cols, |r, _| self.rhs[slot(r)]);
        let scale = (0..cols).map(|r| a[(r, r)]).fold(0.0, Real::max);
        if !(scale > 0.0 && scale.is_finite()) {
            return None;
        }
        for r in 0..cols {
            a[(r, r)] += GRAM_REGULARISATION * scale;
        }
        let theta = a.cholesky()?.solve(&rhs);
        theta.iter().all(|t| t.is_finite()).then(|| theta.iter().copied().collect())
    }
}

/// The local/global objective of one implicit step ([Liu 2013](crate#references) Eq. (8) with
/// the explicit forces): `E(x) = ½ (x − y)ᵀ M (x − y) + h² (E_springs(x) + E_damping(x) − xᵀ f)`
/// (kg·m², an energy times `h²`), whose minimisers are the implicit-Euler steps and which every
/// plain local/global iteration lowers. `E_damping` is the strain-rate damping's term measured
/// from `origin`, the step's `x_t` ([`crate::springs::damping_energy`]; 0 when no spring damps).
/// Pinned entries add a constant.
pub fn objective(
    mass: &[Real],
    springs: &crate::springs::Springs,
    h: Real,
    y: &[Vec3],
    f: &[Vec3],
    origin: &[Vec3],
    x: &[Vec3],
) -> Real {
    let rate = crate::springs::StrainRate { origin, h };
    let damping = crate::springs::damping_energy(springs, rate, x);
    let inertia_and_forces = inertial_objective(mass, h, y, f, x);
    let (ends, k, rest) = (springs.ends(), springs.stiffness(), springs.rest_lengths());
    // in fixed blocks: the safeguard compares these sums, which must not depend on the threads
    let elastic = ordered_sum(ends.len(), |s| {
        let [a, b] = ends[s];
        let stretch = (x[a as usize] - x[b as usize]).norm() - rest[s];
        0.5 * k[s] * stretch * stretch
    });
    inertia_and_forces + h * h * (elastic + damping)
}

/// The vertex part of [`objective`], `½ (x − y)ᵀ M (x − y) − h² xᵀ f` (kg·m²).
pub fn inertial_objective(mass: &[Real], h: Real, y: &[Vec3], f: &[Vec3], x: &[Vec3]) -> Real {
    ordered_sum(x.len(), |i| 0.5 * mass[i] * (x[i] - y[i]).norm_squared() - h * h * x[i].dot(&f[i]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The safeguard's energies and the accelerated mix have the same bits on any number of
    /// threads (a rayon `sum` groups its terms as work stealing splits them, so they used to
    /// differ in the last bits): on a 100 × 100 cloth (about 60,000 springs), `objective`,
    /// `inertial_objective`, the spring energy of the local step and four accelerated
    /// iterations, on 1, 2, 3 and 7 threads.
    #[test]
    fn energies_and_accelerated_iterations_have_the_same_bits_on_any_number_of_threads() {
        use crate::springs::{local_step_energy, springs_from_triangles, Springs};
        let mesh = crate::shapes::grid(100, 100, 0.01);
        let n = mesh.positions.len();
        let (ends, k) = springs_from_triangles(n, &mesh.triangles).unwrap().with_stiffness(100.0, 10.0);
        let springs = Springs::new(&mesh.positions, &ends, &k).unwrap();
        let wobble = |i: usize, s: Real| {
            Vec3::new((i as Real * s).sin(), (i as Real * 1.7 * s).cos(), (i as Real * 0.3).sin()) * 1e-3
        };
        let x: Vec<Vec3> =
            mesh.positions.iter().enumerate().map(|(i, p)| p * 1.05 + wobble(i, 0.37)).collect();
        let y: Vec<Vec3> = mesh.positions.iter().enumerate().map(|(i, p)| p + wobble(i, 0.11)).collect();
        let f: Vec<Vec3> = (0..n).map(|i| wobble(i, 0.53) * 1e3).collect();
        let mass: Vec<Real> = (0..n).map(|i| 1e-4 * (1.0 + (i % 3) as Real)).collect();
        let pinned = vec![false; n];
        let on = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                let mut d = vec![Vec3::zeros(); springs.len()];
                let energies = [
                    objective(&mass, &springs, 0.01, &y, &f, &x, &x),
                    inertial_objective(&mass, 0.01, &y, &f, &x),
                    local_step_energy(&springs, &x, &mut d),
                ]
                .map(Real::to_bits);
                // a contraction towards `y` mixed by the accelerated iterations
                let mut z = x.clone();
                let step = |z: &mut [Vec3]| {
                    z.iter_mut()
                        .zip(&y)
                        .enumerate()
                        .for_each(|(i, (z, y))| *z = y + (*z - y) * (0.5 + 0.4 * ((i % 7) as Real / 7.0)));
                    0.0
                };
                let energy = |z: &[Vec3]| z.iter().zip(&y).map(|(a, b)| (a - b).norm_squared()).sum::<Real>();
                Anderson::new(ANDERSON_WINDOW).run(4, &pinned, &mut z, step, energy, |_, _| false);
                (energies, z.iter().map(|p| p.map(Real::to_bits)).collect::<Vec<_>>())
            })
        };
        let one = on(1);
        for threads in [2, 3, 7] {
            let other = on(threads);
            assert_eq!(other.0, one.0, "energies on {threads} threads");
            assert!(other.1 == one.1, "accelerated iterates on {threads} threads");
        }
    }

    /// On a linear iteration `x ↦ B x + c` with `B`'s spectrum in `[0, 1)` and the quadratic
    /// it descends, 10 accelerated iterations get far closer to the fixed point than 10 plain
    /// ones, and pinned entries are never written.
    #[test]
    fn accelerates_a_linear_contraction_and_keeps_pins() {
        let eig = [0.0, 0.3, 0.9, 0.99, 0.995, 0.5];
        let n = eig.len();
        let fixed: Vec<Vec3> = (0..n).map(|i| Vec3::new(i as Real, 1.0, -2.0)).collect();
        let mut pinned = vec![false; n];
        pinned[5] = true;
        // E = Σ (1 − λ_i) |x_i − x*_i|² / 2: G is its preconditioned gradient step
        let energy = |x: &[Vec3]| -> Real {
            x.iter().zip(&fixed).zip(&eig).map(|((a, b), l)| 0.5 * (1.0 - l) * (a - b).norm_squared()).sum()
        };
        let plain = |x: &mut [Vec3]| {
            let e = energy(x);
            for (i, xi) in x.iter_mut().enumerate().filter(|(i, _)| *i != 5) {
                *xi = fixed[i] + (*xi - fixed[i]) * eig[i];
            }
            e
        };
        let err = |x: &[Vec3]| x[..5].iter().zip(&fixed).map(|(a, b)| (a - b).norm()).fold(0.0, Real::max);
        let start: Vec<Vec3> = (0..n).map(|i| Vec3::new(0.0, 0.0, i as Real)).collect();
        let mut x_plain = start.clone();
        (0..10).for_each(|_| {
            plain(&mut x_plain);
        });
        let mut x_acc = start.clone();
        Anderson::new(ANDERSON_WINDOW).run(10, &pinned, &mut x_acc, plain, energy, |_, _| false);
        assert!(err(&x_acc) < 1e-3 * err(&x_plain), "{} vs {}", err(&x_acc), err(&x_plain));
        assert_eq!(x_acc[5], start[5]);
    }

    /// A fixed point stays put, whatever the history.
    #[test]
    fn fixed_point_is_kept() {
        let target = vec![Vec3::new(1.0, 2.0, 3.0); 4];
        let mut x = target.clone();
        let energy = |x: &[Vec3]| x.iter().map(|x| (x - Vec3::new(1.0, 2.0, 3.0)).norm_squared()).sum();
        let plain = |x: &mut [Vec3]| {
            let e = energy(x);
            x.iter_mut().for_each(|x| *x = (*x + Vec3::new(1.0, 2.0, 3.0)) * 0.5);
            e
        };
        Anderson::new(3).run(7, &[false; 4], &mut x, plain, energy, |_, _| false);
        assert_eq!(x, target);
    }
}
