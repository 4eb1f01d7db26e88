//! The exact all-pairs sum, [Paper](crate#references) Eq. (8), on a CUDA GPU
//! (`kernels/direct.cu`).

use std::sync::Arc;

use cudarc::driver::{CudaStream, LaunchConfig, PushKernelArg};

use super::device::{gpu_err, shared, DeviceInfo, DeviceVec, Frame, Gpu, TILE};
use crate::coulomb::{FieldMethod, FieldSolver};
use crate::error::{Error, Result};
use crate::math::{Real, Vec3};

/// Largest charge count the kernels index with 32-bit ints (`3 n` must fit in an `i32`).
pub(super) const MAX_CHARGES: usize = (i32::MAX / 3) as usize;

/// The exact softened Coulomb sum of [`crate::coulomb::DirectSum`] on a CUDA GPU,
/// [`FieldMethod::DirectGpu`]: f32 pair terms in a hi/lo frame summed in f64, within
/// `3.7·10⁻⁶ Σ_j |term_ij|` of the exact field (see [`crate::coulomb::gpu`]). Only charged
/// vertices are uploaded, as sources and targets; device buffers are kept across calls.
pub struct DirectGpu {
    gpu: Arc<Gpu>,
    stream: Arc<CudaStream>,
    charged: Vec<u32>,
    hi: Vec<f32>,
    lo: Vec<f32>,
    field: Vec<f64>,
    d_hi: DeviceVec<f32>,
    d_lo: DeviceVec<f32>,
    d_partial: DeviceVec<f64>,
    d_field: DeviceVec<f64>,
}

impl DirectGpu {
    /// Opens the GPU (once per process, see [`super::device()`]) and a stream of its own.
    ///
    /// # Errors
    /// [`Error::GpuUnavailable`] without a CUDA driver, device or NVRTC; [`Error::Gpu`] if the
    /// stream cannot be created.
    pub fn new() -> Result<Self> {
        let gpu = shared()?;
        let stream = gpu.stream()?;
        Ok(DirectGpu {
            gpu,
            stream,
            charged: vec![],
            hi: vec![],
            lo: vec![],
            field: vec![],
            d_hi: DeviceVec::default(),
            d_lo: DeviceVec::default(),
            d_partial: DeviceVec::default(),
            d_field: DeviceVec::default(),
        })
    }

    /// The device it runs on.
    pub fn device(&self) -> &DeviceInfo {
        &self.gpu.info
    }

    /// Fills `self.field` (x block, y block, z block of `n` each) with the kernel's field sum
    /// over the `n` packed charges.
    fn run(&mut self, n: usize, eps2: f32) -> Result<()> {
        let s = &self.stream;
        let d_hi = self.d_hi.at_least(s, 4 * n)?;
        s.memcpy_htod(&self.hi, d_hi).map_err(gpu_err("upload"))?;
        let d_lo = self.d_lo.at_least(s, 4 * n)?;
        s.memcpy_htod(&self.lo, d_lo).map_err(gpu_err("upload"))?;
        let blocks_x = n.div_ceil(TILE as usize) as u32;
        let (slices, slice) = self.gpu.slices(blocks_x, n);
        let len = 3 * n;
        let partial = self.d_partial.at_least(s, slices as usize * len)?;
        let (n_i, slice_i, len_i, slices_i) = (n as i32, slice as i32, len as i32, slices as i32);
        let cfg =
            LaunchConfig { grid_dim: (blocks_x, slices, 1), block_dim: (TILE, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: direct_field(const float4 *hi, const float4 *lo, int n, int slice, float eps2,
        // double *partial): hi and lo hold 4n floats, partial slices * 3n doubles, and the grid
        // covers exactly the ranges the kernel indexes (kernels/direct.cu).
        unsafe {
            s.launch_builder(&self.gpu.direct_field)
                .arg(&*d_hi)
                .arg(&*d_lo)
                .arg(&n_i)
                .arg(&slice_i)
                .arg(&eps2)
                .arg(&mut *partial)
                .launch(cfg)
        }
        .map_err(gpu_err("direct_field launch"))?;
        self.field.resize(len, 0.0);
        if slices > 1 {
            let field = self.d_field.at_least(s, len)?;
            let cfg = LaunchConfig::for_num_elems(len as u32);
            // SAFETY: sum_slices(const double *partial, int len, int slices, double *out):
            // partial holds slices * len doubles, out len.
            unsafe {
                s.launch_builder(&self.gpu.sum_slices)
                    .arg(&*partial)
                    .arg(&len_i)
                    .arg(&slices_i)
                    .arg(&mut *field)
                    .launch(cfg)
            }
            .map_err(gpu_err("sum_slices launch"))?;
            s.memcpy_dtoh(&field.slice(..len), &mut self.field).map_err(gpu_err("download"))?;
        } else {
            s.memcpy_dtoh(&partial.slice(..len), &mut self.field).map_err(gpu_err("download"))?;
        }
        s.synchronize().map_err(gpu_err("direct_field"))
    }
}

impl FieldSolver for DirectGpu {
    fn method(&self) -> FieldMethod {
        FieldMethod::DirectGpu
    }

    fn forces(&mut self, x: &[Vec3], q: &[Real], k_c: Real, eps: Real, out: &mut [Vec3]) -> Result<()> {
        assert!(x.len() == q.len() && q.len() == out.len());
        out.fill(Vec3::zeros());
        self.charged.clear();
        self.charged.extend((0..x.len() as u32).filter(|&i| q[i as usize] != 0.0));
        let n = self.charged.len();
        if n < 2 {
            return Ok(()); // no pair, no force
        }
        if n > MAX_CHARGES {
            return Err(Error::invalid(
                "charges",
                None,
                format!("{n} charged vertices; the GPU kernels take {MAX_CHARGES}"),
            ));
        }
        let frame = Frame::around(self.charged.iter().map(|&i| &x[i as usize]));
        let q_max = self.charged.iter().map(|&i| q[i as usize].abs()).fold(0.0, Real::max);
        self.hi.clear();
        self.lo.clear();
        let packed = self.charged.iter().map(|&i| (x[i as usize], (q[i as usize] / q_max) as f32));
        frame.pack(packed, &mut self.hi, &mut self.lo);
        self.run(n, ((eps / frame.scale) * (eps / frame.scale)) as f32)?;
        // e (world) = e (frame) · q_max / L²; f_i = k_c q_i e_i
        let unit = k_c * q_max / (frame.scale * frame.scale);
        let (ex, rest) = self.field.split_at(n);
        let (ey, ez) = rest.split_at(n);
        for (k, &i) in self.charged.iter().enumerate() {
            out[i as usize] = Vec3::new(ex[k], ey[k], ez[k]) * (unit * q[i as usize]);
        }
        Ok(())
    }
}
