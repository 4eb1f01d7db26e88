//! The exact all-pairs sum, [Paper](crate#references) Eq. (8), on a CUDA GPU
//! (`kernels/direct.cu`).

use cudarc::driver::PushKernelArg;

use super::device::{DeviceInfo, DeviceVec, Frame};
use super::launch::{FieldLaunch, MAX_CHARGES};
use crate::coulomb::{FieldMethod, FieldSolver};
use crate::error::{Error, Result};
use crate::math::{Real, Vec3};

/// The exact softened Coulomb sum of [`crate::coulomb::DirectSum`] on a CUDA GPU,
/// [`FieldMethod::DirectGpu`]: f32 pair terms in a hi/lo frame summed in f64, within
/// `3.7·10⁻⁶ Σ_j |term_ij|` of the exact field (see [`crate::coulomb::gpu`]). Only charged
/// vertices are uploaded, as sources and targets; device buffers are kept across calls.
pub struct DirectGpu {
    launch: FieldLaunch,
    charged: Vec<u32>,
    hi: Vec<f32>,
    lo: Vec<f32>,
    d_hi: DeviceVec<f32>,
    d_lo: DeviceVec<f32>,
}

impl DirectGpu {
    /// Opens the GPU (once per process, see [`super::device()`]) and a stream of its own.
    ///
    /// # Errors
    /// [`Error::GpuUnavailable`] without a CUDA driver, device or NVRTC; [`Error::Gpu`] if the
    /// stream cannot be created.
    pub fn new() -> Result<Self> {
        Ok(DirectGpu {
            launch: FieldLaunch::new()?,
            charged: vec![],
            hi: vec![],
            lo: vec![],
            d_hi: DeviceVec::default(),
            d_lo: DeviceVec::default(),
        })
    }

    /// The device it runs on.
    pub fn device(&self) -> &DeviceInfo {
        &self.launch.gpu().info
    }

    /// Runs `direct_field` (and `sum_slices`) over the `n` packed charges: the field per unit
    /// `k_c` in the frame's units, x, y, z blocks of `n` in [`FieldLaunch::field`].
    fn run(&mut self, n: usize, a2: f32) -> Result<()> {
        let d_hi = self.launch.upload(&mut self.d_hi, &self.hi)?;
        let d_lo = self.launch.upload(&mut self.d_lo, &self.lo)?;
        let n_i = n as i32;
        self.launch.run("direct_field", n, n, |l| {
            // SAFETY: direct_field(const float4 *hi, const float4 *lo, int n, int slice, float
            // a2, double *partial): hi and lo hold 4n floats, partial slices * 3n doubles, and
            // the grid covers exactly the ranges the kernel indexes (kernels/direct.cu).
            unsafe {
                l.stream
                    .launch_builder(&l.gpu.direct_field)
                    .arg(d_hi)
                    .arg(d_lo)
                    .arg(&n_i)
                    .arg(&l.slice)
                    .arg(&a2)
                    .arg(l.partial)
                    .launch(l.cfg)
            }
        })
    }
}

impl FieldSolver for DirectGpu {
    fn method(&self) -> FieldMethod {
        FieldMethod::DirectGpu
    }

    fn forces(&mut self, x: &[Vec3], q: &[Real], k_c: Real, a: Real, out: &mut [Vec3]) -> Result<()> {
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
        self.run(n, ((a / frame.scale) * (a / frame.scale)) as f32)?;
        // e (world) = e (frame) · q_max / L²; f_i = k_c q_i e_i
        let unit = k_c * q_max / (frame.scale * frame.scale);
        let (ex, rest) = self.launch.field().split_at(n);
        let (ey, ez) = rest.split_at(n);
        for (k, &i) in self.charged.iter().enumerate() {
            out[i as usize] = Vec3::new(ex[k], ey[k], ez[k]) * (unit * q[i as usize]);
        }
        Ok(())
    }
}
