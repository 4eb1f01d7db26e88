//! DDEF's far-field gather, [Paper](crate#references) §3.1.2 Eq. (9) (Alg. 1, line 4), on a
//! CUDA GPU (`kernels/ddef_far.cu`): the `O(m n)` stage that dominates the CPU DDEF for
//! `m ≳ 100`. The grid, the point location, the near sets `M_j` and the near field stay on
//! the CPU ([`crate::coulomb::Ddef`]), which hands this gather the grid points, the charges and
//! `M_j` each call.

use std::sync::Arc;

use cudarc::driver::{CudaStream, LaunchConfig, PushKernelArg};

use super::device::{gpu_err, shared, DeviceVec, Frame, Gpu, TILE};
use super::direct::MAX_CHARGES;
use crate::coulomb::{Ddef, FarFieldGather, FieldMethod, Neighborhood};
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
    gpu: Arc<Gpu>,
    stream: Arc<CudaStream>,
    g_hi: Vec<f32>,
    g_lo: Vec<f32>,
    hi: Vec<f32>,
    lo: Vec<f32>,
    field: Vec<f64>,
    d_g_hi: DeviceVec<f32>,
    d_g_lo: DeviceVec<f32>,
    d_hi: DeviceVec<f32>,
    d_lo: DeviceVec<f32>,
    d_near_start: DeviceVec<u32>,
    d_near: DeviceVec<u32>,
    d_partial: DeviceVec<f64>,
    d_field: DeviceVec<f64>,
}

impl GpuFarField {
    /// Opens the GPU (once per process) and a stream of its own.
    ///
    /// # Errors
    /// As [`super::DirectGpu::new`].
    pub fn new() -> Result<Self> {
        let gpu = shared()?;
        let stream = gpu.stream()?;
        Ok(GpuFarField {
            gpu,
            stream,
            g_hi: vec![],
            g_lo: vec![],
            hi: vec![],
            lo: vec![],
            field: vec![],
            d_g_hi: DeviceVec::default(),
            d_g_lo: DeviceVec::default(),
            d_hi: DeviceVec::default(),
            d_lo: DeviceVec::default(),
            d_near_start: DeviceVec::default(),
            d_near: DeviceVec::default(),
            d_partial: DeviceVec::default(),
            d_field: DeviceVec::default(),
        })
    }

    /// Fills `self.field` (x, y, z blocks of `m`) with the kernel's far field at the `m` packed
    /// grid points from the `n` packed charges.
    fn run(&mut self, m: usize, n: usize, near_start: &[u32], near: &[u32], eps2: f32) -> Result<()> {
        let s = &self.stream;
        let d_g_hi = self.d_g_hi.at_least(s, 4 * m)?;
        s.memcpy_htod(&self.g_hi, d_g_hi).map_err(gpu_err("upload"))?;
        let d_g_lo = self.d_g_lo.at_least(s, 4 * m)?;
        s.memcpy_htod(&self.g_lo, d_g_lo).map_err(gpu_err("upload"))?;
        let d_hi = self.d_hi.at_least(s, 4 * n)?;
        s.memcpy_htod(&self.hi, d_hi).map_err(gpu_err("upload"))?;
        let d_lo = self.d_lo.at_least(s, 4 * n)?;
        s.memcpy_htod(&self.lo, d_lo).map_err(gpu_err("upload"))?;
        let d_near_start = self.d_near_start.at_least(s, m + 1)?;
        s.memcpy_htod(near_start, d_near_start).map_err(gpu_err("upload"))?;
        let d_near = self.d_near.at_least(s, near.len())?;
        s.memcpy_htod(near, d_near).map_err(gpu_err("upload"))?;
        let blocks_x = m.div_ceil(TILE as usize) as u32;
        let (slices, slice) = self.gpu.slices(blocks_x, n);
        let len = 3 * m;
        let partial = self.d_partial.at_least(s, slices as usize * len)?;
        let (m_i, n_i, slice_i, len_i, slices_i) =
            (m as i32, n as i32, slice as i32, len as i32, slices as i32);
        let cfg =
            LaunchConfig { grid_dim: (blocks_x, slices, 1), block_dim: (TILE, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: ddef_far_field(const float4 *g_hi, const float4 *g_lo, int m, const float4 *hi,
        // const float4 *lo, int n, int slice, const unsigned *near_start, const unsigned *near,
        // float eps2, double *partial): 4m, 4m, 4n, 4n floats, m + 1 and near_start[m] indices
        // (< n), slices * 3m doubles, as the kernel indexes them (kernels/ddef_far.cu).
        unsafe {
            s.launch_builder(&self.gpu.ddef_far_field)
                .arg(&*d_g_hi)
                .arg(&*d_g_lo)
                .arg(&m_i)
                .arg(&*d_hi)
                .arg(&*d_lo)
                .arg(&n_i)
                .arg(&slice_i)
                .arg(&*d_near_start)
                .arg(&*d_near)
                .arg(&eps2)
                .arg(&mut *partial)
                .launch(cfg)
        }
        .map_err(gpu_err("ddef_far_field launch"))?;
        self.field.resize(len, 0.0);
        if slices > 1 {
            let field = self.d_field.at_least(s, len)?;
            // SAFETY: sum_slices(const double *partial, int len, int slices, double *out):
            // partial holds slices * len doubles, out len.
            unsafe {
                s.launch_builder(&self.gpu.sum_slices)
                    .arg(&*partial)
                    .arg(&len_i)
                    .arg(&slices_i)
                    .arg(&mut *field)
                    .launch(LaunchConfig::for_num_elems(len as u32))
            }
            .map_err(gpu_err("sum_slices launch"))?;
            s.memcpy_dtoh(&field.slice(..len), &mut self.field).map_err(gpu_err("download"))?;
        } else {
            s.memcpy_dtoh(&partial.slice(..len), &mut self.field).map_err(gpu_err("download"))?;
        }
        s.synchronize().map_err(gpu_err("ddef_far_field"))
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
        eps2: Real,
        near_start: &[u32],
        near: &[u32],
        out: &mut [Vec3],
    ) -> Result<()> {
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
        self.run(m, n, near_start, near, (eps2 / (frame.scale * frame.scale)) as f32)?;
        let unit = q_max / (frame.scale * frame.scale);
        let (ex, rest) = self.field.split_at(m);
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
