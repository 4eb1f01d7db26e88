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
        let ends_rest = springs.ends.par_iter().zip(&springs.rest).zip(&springs.stiffness);
        d.par_iter_mut().zip(ends_rest).map(kernel).sum()
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
    assert_eq!(out.len() + 1, springs.offsets.len());
    let k = &springs.stiffness;
    let kernel = |(i, o): (usize, &mut Vec3)| {
        let mut acc = Vec3::zeros();
        for &(s, sign) in springs.incident(i) {
            acc += d[s as usize] * (sign * k[s as usize]);
        }
        *o = acc;
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
