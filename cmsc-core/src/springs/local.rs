//! Per-spring kernels: Liu 2013's local step, the `J d` gather, explicit forces, energy.

use rayon::prelude::*;

use super::Springs;
use crate::math::{Real, Vec3};

/// Below this many springs the kernels run serially: a rayon fork/join costs a few µs, a spring
/// a few ns, so parallel work only pays from thousands of springs (the 81×81 cloth bench has
/// 32K springs and runs the local step plus `J d` gather in 0.15 ms on 2 cores).
const PAR_MIN: usize = 4096;

/// Liu 2013 local step, the minimiser of Eq. (10): `d_s = l_s (x_a − x_b) / |x_a − x_b|` for every spring.
///
/// A spring whose ends coincide has no direction; it keeps its previous `d_s`, which is the
/// minimiser's continuation and keeps the step finite.
///
/// # Panics
/// If `d.len() != springs.len()` or an index exceeds `x` (both guaranteed by [`Springs::new`]).
pub fn local_step(springs: &Springs, x: &[Vec3], d: &mut [Vec3]) {
    assert_eq!(d.len(), springs.len());
    let kernel = |(d_s, (&[a, b], &l)): (&mut Vec3, (&[u32; 2], &Real))| {
        let p = x[a as usize] - x[b as usize];
        let len = p.norm();
        if len > 0.0 {
            *d_s = p * (l / len);
        }
    };
    if springs.len() >= PAR_MIN {
        let ends_rest = springs.ends.par_iter().zip(&springs.rest);
        d.par_iter_mut().zip(ends_rest).for_each(kernel);
    } else {
        let ends_rest = springs.ends.iter().zip(&springs.rest);
        d.iter_mut().zip(ends_rest).for_each(kernel);
    }
}

/// [`local_step`] that also returns the spring energy `Σ_s k_s (|x_a − x_b| − l_s)² / 2` (J) at
/// `x`, [Liu 2013](crate#references) Eq. (9), from the lengths the step computes anyway (the
/// accelerated iterations' safeguard needs it every iteration).
///
/// # Panics
/// As [`local_step`].
pub fn local_step_energy(springs: &Springs, x: &[Vec3], d: &mut [Vec3]) -> Real {
    assert_eq!(d.len(), springs.len());
    let kernel = |(d_s, ((&[a, b], &l), &k)): (&mut Vec3, ((&[u32; 2], &Real), &Real))| {
        let p = x[a as usize] - x[b as usize];
        let len = p.norm();
        if len > 0.0 {
            *d_s = p * (l / len);
        }
        0.5 * k * (len - l) * (len - l)
    };
    if springs.len() >= PAR_MIN {
        // in blocks fixed by the length alone, added in order (`math::ordered_sum`): the
        // accelerated iterations' safeguard compares this energy, which must not depend on
        // the number of threads
        let block = crate::math::SUM_BLOCK;
        let parts: Vec<Real> = d
            .par_chunks_mut(block)
            .enumerate()
            .map(|(b, chunk)| {
                let s = b * block..b * block + chunk.len();
                let ends_rest =
                    springs.ends[s.clone()].iter().zip(&springs.rest[s.clone()]).zip(&springs.stiffness[s]);
                chunk.iter_mut().zip(ends_rest).map(kernel).sum()
            })
            .collect();
        parts.iter().sum()
    } else {
        let ends_rest = springs.ends.iter().zip(&springs.rest).zip(&springs.stiffness);
        d.iter_mut().zip(ends_rest).map(kernel).sum()
    }
}

/// `(J d)_i = Σ_{s ∋ i} ± k_s d_s` ([Liu 2013](crate#references) Eq. (12)), written to `out`
/// (N·m/m = N), one parallel gather per vertex.
///
/// # Panics
/// If `out` does not have one entry per vertex of `springs`' index.
pub fn gather_jd(springs: &Springs, d: &[Vec3], out: &mut [Vec3]) {
    let k = &springs.stiffness;
    gather(springs, out, |s| d[s] * k[s]);
}

/// `out_i = Σ_{s ∋ i} ± term(s)` (`+` where `i` is the spring's `a` end): the per-vertex gather
/// of [`gather_jd`] and [`gather_jd_damped`], in parallel from [`PAR_MIN`] springs.
///
/// # Panics
/// If `out` does not have one entry per vertex of `springs`' index.
fn gather(springs: &Springs, out: &mut [Vec3], term: impl Fn(usize) -> Vec3 + Sync) {
    assert_eq!(out.len() + 1, springs.offsets.len());
    let kernel = |(i, o): (usize, &mut Vec3)| {
        *o = springs.incident(i).iter().fold(Vec3::zeros(), |acc, &(s, sign)| acc + term(s as usize) * sign);
    };
    if springs.len() >= PAR_MIN {
        out.par_iter_mut().enumerate().for_each(kernel);
    } else {
        out.iter_mut().enumerate().for_each(kernel);
    }
}

/// What strain-rate damping ([`super`]'s module docs) measures a step against: the positions
/// `x_t` at its start and the step length `h` of its implicit equation.
#[derive(Debug, Clone, Copy)]
pub struct StrainRate<'a> {
    /// `x_t` (m), one per vertex.
    pub origin: &'a [Vec3],
    /// The implicit equation's step (s): the time step for the IMEX step, half of it for the
    /// implicit midpoint.
    pub h: Real,
}

impl StrainRate<'_> {
    /// `x_a − x_b` at the step's start (m).
    #[inline]
    fn start(&self, a: u32, b: u32) -> Vec3 {
        self.origin[a as usize] - self.origin[b as usize]
    }
}

/// The strain-rate damping term of an implicit step's energy, `Σ_s β_s k_s (|p_s| − |p_s,t|)² /
/// (2h)` (J) at `x`, `p_s = x_a − x_b` (module docs of [`super`]); 0 when no spring damps.
pub fn damping_energy(springs: &Springs, rate: StrainRate<'_>, x: &[Vec3]) -> Real {
    if !springs.damped() {
        return 0.0;
    }
    let kernel = |s: usize| {
        let [a, b] = springs.ends[s];
        let beta_k = springs.damping[s] * springs.stiffness[s];
        let e = (x[a as usize] - x[b as usize]).norm() - rate.start(a, b).norm();
        beta_k * e * e
    };
    crate::math::ordered_sum(springs.len(), kernel) / (2.0 * rate.h)
}

/// The work (J) the springs' strain-rate damping does against the motion over one implicit
/// midpoint step of length `h` (s) from `x0` to `x1`: its force at the midpoint `z = (x0 + x1)/2`
/// and the velocity `2 (z − x0)/h`, `f_a = −β_s k_s (|p_z| − |p_0|)/(h/2) u_z`, times `x1 − x0`,
/// summed with the opposite sign (what the damping took from the motion).
pub fn midpoint_damping_work(springs: &Springs, x0: &[Vec3], x1: &[Vec3], h: Real) -> Real {
    if !springs.damped() {
        return 0.0;
    }
    let kernel = |s: usize| {
        let [a, b] = springs.ends[s];
        let (a, b) = (a as usize, b as usize);
        let (p0, p1) = (x0[a] - x0[b], x1[a] - x1[b]);
        let pz = (p0 + p1) * 0.5;
        let len = pz.norm();
        if len == 0.0 {
            return 0.0;
        }
        let force = springs.damping[s] * springs.stiffness[s] * (len - p0.norm()) / (0.5 * h);
        force * (pz / len).dot(&(p1 - p0))
    };
    crate::math::ordered_sum(springs.len(), kernel)
}

/// [`gather_jd`] with strain-rate damping: `(J d̃)_i = Σ_{s ∋ i} ± k_s (d_s + (β_s/h) u_s)` with
/// the damping's local step `u_s = |p_s,t| p_s/|p_s|` at `x` (Liu 2013 Eq. (10) for a spring of
/// rest length `|p_s,t|`; module docs of [`super`]), written to `out` (N). A spring whose ends
/// coincide takes `u_s = p_s,t`; springs that do not damp contribute `± k_s d_s`, as in
/// [`gather_jd`].
///
/// # Panics
/// As [`gather_jd`].
pub fn gather_jd_damped(springs: &Springs, d: &[Vec3], x: &[Vec3], rate: StrainRate<'_>, out: &mut [Vec3]) {
    let (k, beta) = (&springs.stiffness, &springs.damping);
    let inv_h = 1.0 / rate.h;
    gather(springs, out, |s| {
        let b_s = beta.get(s).copied().unwrap_or(0.0);
        if b_s == 0.0 {
            return d[s] * k[s];
        }
        let [a, b] = springs.ends[s];
        let (p, p_t) = (x[a as usize] - x[b as usize], rate.start(a, b));
        let len = p.norm();
        let u = if len > 0.0 { p * (p_t.norm() / len) } else { p_t };
        (d[s] + u * (b_s * inv_h)) * k[s]
    });
}

/// Strain-rate damping forces `f_a = −β_s k_s ((v_a − v_b)·u_s) u_s`, `f_b = −f_a`, with `u_s`
/// the spring's direction at `x` (so `(v_a − v_b)·u_s` is the rate its length changes), added to
/// `out` (N): the explicit form the Verlet reference integrator uses (module docs of [`super`]).
///
/// # Panics
/// If `out`, `x` and `v` differ in length.
pub fn damping_forces(springs: &Springs, x: &[Vec3], v: &[Vec3], out: &mut [Vec3]) {
    assert!(out.len() == x.len() && v.len() == x.len());
    if !springs.damped() {
        return;
    }
    let (k, beta) = (&springs.stiffness, &springs.damping);
    let kernel = |(i, o): (usize, &mut Vec3)| {
        let mut acc = Vec3::zeros();
        for &(s, sign) in springs.incident(i) {
            let s = s as usize;
            let [a, b] = springs.ends[s];
            let (a, b) = (a as usize, b as usize);
            let p = x[a] - x[b];
            let len = p.norm();
            if len > 0.0 && beta[s] > 0.0 {
                let n = p / len;
                acc -= n * (sign * beta[s] * k[s] * (v[a] - v[b]).dot(&n));
            }
        }
        *o += acc;
    };
    if springs.len() >= PAR_MIN {
        out.par_iter_mut().enumerate().for_each(kernel);
    } else {
        out.iter_mut().enumerate().for_each(kernel);
    }
}

/// Hooke forces `f_a = −k_s (|p| − l_s) p/|p|`, `f_b = −f_a` with `p = x_a − x_b`, added to `out`
/// (N). Used by the explicit reference integrator and by tests.
///
/// # Panics
/// If `out.len() != x.len()`.
pub fn spring_forces(springs: &Springs, x: &[Vec3], out: &mut [Vec3]) {
    assert_eq!(out.len(), x.len());
    let (k, l) = (&springs.stiffness, &springs.rest);
    let kernel = |(i, o): (usize, &mut Vec3)| {
        let mut acc = Vec3::zeros();
        for &(s, sign) in springs.incident(i) {
            let [a, b] = springs.ends[s as usize];
            let p = x[a as usize] - x[b as usize];
            let len = p.norm();
            if len > 0.0 {
                let s = s as usize;
                acc -= p * (sign * k[s] * (len - l[s]) / len);
            }
        }
        *o += acc;
    };
    if springs.len() >= PAR_MIN {
        out.par_iter_mut().enumerate().for_each(kernel);
    } else {
        out.iter_mut().enumerate().for_each(kernel);
    }
}

/// Total spring energy `Σ_s k_s (|x_a − x_b| − l_s)² / 2` (J), Liu 2013 Eq. (9).
pub fn spring_energy(springs: &Springs, x: &[Vec3]) -> Real {
    springs
        .ends
        .iter()
        .zip(springs.stiffness.iter().zip(&springs.rest))
        .map(|(&[a, b], (&k, &l))| {
            let stretch = (x[a as usize] - x[b as usize]).norm() - l;
            0.5 * k * stretch * stretch
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_spring() -> (Springs, Vec<Vec3>) {
        let x0 = vec![Vec3::zeros(), Vec3::new(2.0, 0.0, 0.0)];
        (Springs::new(&x0, &[[0, 1]], &[5.0]).unwrap(), x0)
    }

    #[test]
    fn local_step_projects_onto_rest_length() {
        let (s, _) = one_spring();
        let x = vec![Vec3::new(1.0, 1.0, 1.0), Vec3::new(1.0, 1.0, -2.0)];
        let mut d = vec![Vec3::zeros()];
        local_step(&s, &x, &mut d);
        assert!((d[0] - Vec3::new(0.0, 0.0, 2.0)).norm() < 1e-15);
    }

    #[test]
    fn coincident_ends_keep_previous_direction() {
        let (s, _) = one_spring();
        let x = vec![Vec3::zeros(), Vec3::zeros()];
        let mut d = vec![Vec3::new(0.0, 2.0, 0.0)];
        local_step(&s, &x, &mut d);
        assert_eq!(d[0], Vec3::new(0.0, 2.0, 0.0));
    }

    #[test]
    fn hooke_force_and_energy() {
        let (s, _) = one_spring();
        // stretched from 2 m to 3 m: |f| = k Δl = 5 N, pulling the ends together; E = k Δl²/2
        let x = vec![Vec3::zeros(), Vec3::new(3.0, 0.0, 0.0)];
        let mut f = vec![Vec3::zeros(); 2];
        spring_forces(&s, &x, &mut f);
        assert!((f[0] - Vec3::new(5.0, 0.0, 0.0)).norm() < 1e-12);
        assert!((f[1] + f[0]).norm() < 1e-15);
        assert!((spring_energy(&s, &x) - 2.5).abs() < 1e-12);
    }

    #[test]
    fn jd_is_equal_and_opposite() {
        let (s, _) = one_spring();
        let d = vec![Vec3::new(0.0, 0.0, 2.0)];
        let mut jd = vec![Vec3::zeros(); 2];
        gather_jd(&s, &d, &mut jd);
        assert_eq!(jd[0], Vec3::new(0.0, 0.0, 10.0));
        assert_eq!(jd[1], Vec3::new(0.0, 0.0, -10.0));
    }
}
