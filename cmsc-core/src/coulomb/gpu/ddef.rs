//! DDEF's far-field gather, [Paper](crate#references) §3.1.2 Eq. (9) (Alg. 1, line 4), on a
//! CUDA GPU (`kernels/ddef_far.cu`): the `O(m n)` stage that dominates the CPU DDEF for
//! `m ≳ 100`. The grid, the point location, the near sets `M_j` and the near field stay on
//! the CPU ([`crate::coulomb::Ddef`]), which hands this gather the grid points, the charges and
//! `M_j` each call.

use cudarc::driver::PushKernelArg;

use super::device::{DeviceVec, Frame};
use super::launch::{FieldLaunch, MAX_CHARGES};
use crate::coulomb::{Csr, Ddef, FarFieldGather, FieldMethod, Neighborhood};
use crate::error::{Error, Result};
use crate::math::{Real, Vec3};

/// The [`FieldMethod::DdefGpu`] solver: [`Ddef`] with `m` grid points and `near` near sets whose
/// far-field gather runs on the GPU ([`Ddef::timings`] reports its stages, the gather
/// including its copies).
///
/// # Errors
/// As [`super::DirectGpu::new`].
pub fn ddef_solver(m: u32, near: Neighborhood) -> Result<Ddef> {
    Ok(Ddef::new(m).with_neighborhood(near).with_gather(Box::new(GpuFarField::new()?)))
}

/// The far-field gather of [`FieldMethod::DdefGpu`], with its stream and device buffers kept
/// across calls. Same f32/f64 precision as the direct kernel (see [`crate::coulomb::gpu`]);
/// the charges in `M_j` are left out exactly, never added and subtracted.
pub(crate) struct GpuFarField {
    launch: FieldLaunch,
    g_hi: Vec<f32>,
    g_lo: Vec<f32>,
    hi: Vec<f32>,
    lo: Vec<f32>,
    d_g_hi: DeviceVec<f32>,
    d_g_lo: DeviceVec<f32>,
    d_hi: DeviceVec<f32>,
    d_lo: DeviceVec<f32>,
    d_near_start: DeviceVec<u32>,
    d_near: DeviceVec<u32>,
}

impl GpuFarField {
    /// Opens the GPU (once per process) and a stream of its own.
    ///
    /// # Errors
    /// As [`super::DirectGpu::new`].
    pub fn new() -> Result<Self> {
        Ok(GpuFarField {
            launch: FieldLaunch::new()?,
            g_hi: vec![],
            g_lo: vec![],
            hi: vec![],
            lo: vec![],
            d_g_hi: DeviceVec::default(),
            d_g_lo: DeviceVec::default(),
            d_hi: DeviceVec::default(),
            d_lo: DeviceVec::default(),
            d_near_start: DeviceVec::default(),
            d_near: DeviceVec::default(),
        })
    }

    /// Runs `ddef_far_field` (and `sum_slices`) for the `m` packed grid points and `n` packed
    /// charges: the far field per unit `k_c` in the frame's units, x, y, z blocks of `m` in
    /// [`FieldLaunch::field`].
    fn run(&mut self, m: usize, n: usize, near_start: &[u32], near: &[u32], a2: f32) -> Result<()> {
        let up = &self.launch;
        let d_g_hi = up.upload(&mut self.d_g_hi, &self.g_hi)?;
        let d_g_lo = up.upload(&mut self.d_g_lo, &self.g_lo)?;
        let d_hi = up.upload(&mut self.d_hi, &self.hi)?;
        let d_lo = up.upload(&mut self.d_lo, &self.lo)?;
        let d_near_start = up.upload(&mut self.d_near_start, near_start)?;
        let d_near = up.upload(&mut self.d_near, near)?;
        let (m_i, n_i) = (m as i32, n as i32);
        self.launch.run("ddef_far_field", m, n, |l| {
            // SAFETY: ddef_far_field(const float4 *g_hi, const float4 *g_lo, int m, const float4
            // *hi, const float4 *lo, int n, int slice, const unsigned *near_start, const unsigned
            // *near, float a2, double *partial): 4m, 4m, 4n, 4n floats, m + 1 and
            // near_start[m] indices (< n), slices * 3m doubles, as the kernel indexes them
            // (kernels/ddef_far.cu).
            unsafe {
                l.stream
                    .launch_builder(&l.gpu.ddef_far_field)
                    .arg(d_g_hi)
                    .arg(d_g_lo)
                    .arg(&m_i)
                    .arg(d_hi)
                    .arg(d_lo)
                    .arg(&n_i)
                    .arg(&l.slice)
                    .arg(d_near_start)
                    .arg(d_near)
                    .arg(&a2)
                    .arg(l.partial)
                    .launch(l.cfg)
            }
        })
    }
}

/// Checks the `M_j` CSR the kernel walks: `m + 1` non-decreasing offsets ending at
/// `near.len()`, indices below `n` and ascending within each `j`.
fn check_near_sets(m: usize, n: usize, near_start: &[u32], near: &[u32]) -> bool {
    near_start.len() == m + 1
        && near_start.last() == Some(&(near.len() as u32))
        && near_start.windows(2).all(|w| w[0] <= w[1])
        && near_start.windows(2).all(|w| {
            let list = &near[w[0] as usize..w[1] as usize];
            list.windows(2).all(|p| p[0] < p[1]) && list.last().is_none_or(|&i| (i as usize) < n)
        })
}

impl FarFieldGather for GpuFarField {
    fn method(&self) -> FieldMethod {
        FieldMethod::DdefGpu
    }

    fn gather(
        &mut self,
        grid: &[Vec3],
        x: &[Vec3],
        q: &[Real],
        a2: Real,
        near: &Csr,
        out: &mut [Vec3],
    ) -> Result<()> {
        let (near_start, near) = (&near.offsets[..], &near.items[..]);
        let (m, n) = (grid.len(), x.len());
        assert!(q.len() == n && out.len() == m && m > 0);
        debug_assert!(check_near_sets(m, n, near_start, near), "malformed M_j");
        if n > MAX_CHARGES || m > MAX_CHARGES {
            return Err(Error::invalid(
                "charges",
                None,
                format!("{n} charges, {m} grid points; the GPU kernels take {MAX_CHARGES}"),
            ));
        }
        let frame = Frame::around(grid.iter().chain(x));
        let q_max = q.iter().map(|v| v.abs()).fold(0.0, Real::max);
        if q_max == 0.0 {
            out.fill(Vec3::zeros());
            return Ok(());
        }
        for v in [&mut self.g_hi, &mut self.g_lo, &mut self.hi, &mut self.lo] {
            v.clear();
        }
        frame.pack(grid.iter().map(|u| (*u, 0.0)), &mut self.g_hi, &mut self.g_lo);
        frame.pack(x.iter().zip(q).map(|(p, qi)| (*p, (qi / q_max) as f32)), &mut self.hi, &mut self.lo);
        self.run(m, n, near_start, near, (a2 / (frame.scale * frame.scale)) as f32)?;
        let unit = q_max / (frame.scale * frame.scale);
        let (ex, rest) = self.launch.field().split_at(m);
        let (ey, ez) = rest.split_at(m);
        for (j, e) in out.iter_mut().enumerate() {
            *e = Vec3::new(ex[j], ey[j], ez[j]) * unit;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_set_check_rejects_what_the_kernel_cannot_walk() {
        assert!(check_near_sets(2, 5, &[0, 2, 3], &[1, 4, 0]));
        assert!(!check_near_sets(2, 5, &[0, 2, 3], &[4, 1, 0]), "unsorted");
        assert!(!check_near_sets(2, 5, &[0, 2, 3], &[1, 5, 0]), "out of range");
        assert!(!check_near_sets(2, 5, &[0, 2], &[1, 4]), "too few offsets");
        assert!(!check_near_sets(2, 5, &[0, 2, 4], &[1, 4, 0]), "last offset");
    }
}
