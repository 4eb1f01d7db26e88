//! The sequence both GPU backends run each call: upload the packed points, launch the field
//! kernel over a grid of target blocks × source slices, add the slices (`sum_slices`) and
//! download the field. The kernels' arguments differ, so each backend launches its own kernel
//! in a closure; everything around that launch is here.

use std::sync::Arc;

use cudarc::driver::{
    CudaSlice, CudaStream, DeviceRepr, DriverError, LaunchConfig, PushKernelArg, ValidAsZeroBits,
};

use super::device::{gpu_err, shared, DeviceVec, Gpu, TILE};
use crate::error::{Error, Result};

/// Largest target or source count the kernels index with 32-bit ints (`3 n` must fit in an
/// `i32`).
pub(super) const MAX_CHARGES: usize = (i32::MAX / 3) as usize;

/// What a backend's launch closure gets from [`FieldLaunch::run`].
pub(super) struct Launch<'a> {
    /// The device, for its kernels.
    pub gpu: &'a Gpu,
    /// The backend's stream.
    pub stream: &'a Arc<CudaStream>,
    /// Block `(TILE, 1, 1)`, grid `(ceil(targets / TILE), slices, 1)`.
    pub cfg: LaunchConfig,
    /// Sources per block row, a multiple of [`TILE`] (the kernels' `slice`).
    pub slice: i32,
    /// `slices × 3 targets` doubles for the kernel's `partial` (structure of arrays per row).
    pub partial: &'a mut CudaSlice<f64>,
}

/// A backend's stream on the shared device, the partial-sum and field buffers (kept across
/// calls), and the last field downloaded.
pub(super) struct FieldLaunch {
    gpu: Arc<Gpu>,
    stream: Arc<CudaStream>,
    d_partial: DeviceVec<f64>,
    d_field: DeviceVec<f64>,
    field: Vec<f64>,
}

impl FieldLaunch {
    /// Opens the GPU (once per process, see [`super::device()`]) and a stream of its own.
    ///
    /// # Errors
    /// [`Error::GpuUnavailable`] without a CUDA driver, device or NVRTC;
    /// [`Error::Gpu`] if the stream cannot be created.
    pub fn new() -> Result<Self> {
        let gpu = shared()?;
        let stream = gpu.stream()?;
        Ok(FieldLaunch {
            gpu,
            stream,
            d_partial: DeviceVec::default(),
            d_field: DeviceVec::default(),
            field: vec![],
        })
    }

    /// The device.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// Copies `host` into `buffer` (grown to fit if needed) on this stream.
    ///
    /// # Errors
    /// [`Error::Gpu`] if the allocation or the copy fails.
    pub fn upload<'b, T: DeviceRepr + ValidAsZeroBits>(
        &self,
        buffer: &'b mut DeviceVec<T>,
        host: &[T],
    ) -> Result<&'b CudaSlice<T>> {
        let d = buffer.at_least(&self.stream, host.len())?;
        self.stream.memcpy_htod(host, d).map_err(gpu_err("upload"))?;
        Ok(d)
    }

    /// The field of the last [`FieldLaunch::run`]: x, y, z blocks of `targets` each.
    pub fn field(&self) -> &[f64] {
        &self.field
    }

    /// Runs `launch` (which launches the field kernel `name` with [`Launch`]'s grid) for
    /// `targets` targets and `sources` sources, adds its slices and downloads the field
    /// ([`FieldLaunch::field`]). Returns once the device is done.
    ///
    /// # Errors
    /// [`Error::Gpu`] if an allocation, a launch or the copy back fails.
    pub fn run<T>(
        &mut self,
        name: &'static str,
        targets: usize,
        sources: usize,
        launch: impl FnOnce(Launch<'_>) -> Result<T, DriverError>,
    ) -> Result<()> {
        let s = &self.stream;
        let blocks_x = targets.div_ceil(TILE as usize) as u32;
        let (slices, slice) = self.gpu.slices(blocks_x, sources);
        let len = 3 * targets;
        let partial = self.d_partial.at_least(s, slices as usize * len)?;
        let cfg =
            LaunchConfig { grid_dim: (blocks_x, slices, 1), block_dim: (TILE, 1, 1), shared_mem_bytes: 0 };
        launch(Launch { gpu: &self.gpu, stream: s, cfg, slice: slice as i32, partial: &mut *partial })
            .map_err(|e| Error::Gpu(format!("{name} launch: {e}")))?;
        self.field.resize(len, 0.0);
        if slices > 1 {
            let field = self.d_field.at_least(s, len)?;
            let (len_i, slices_i) = (len as i32, slices as i32);
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
        s.synchronize().map_err(gpu_err(name))
    }
}
