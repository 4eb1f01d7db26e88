//! The CUDA device shared by the GPU backends (driver probe, context, kernels compiled once with
//! NVRTC), and the host-side pieces both backends use: the normalised hi/lo frame, the split
//! of the sources into slices, growable device buffers.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, OnceLock};

use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DeviceRepr, DriverError, ValidAsZeroBits,
};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileError, CompileOptions};

use crate::error::{Error, GpuUnavailable, Result};
use crate::math::{Real, Vec3};

/// Threads per block and sources per shared-memory tile; `#define TILE` in `kernels/common.cuh`.
pub(super) const TILE: u32 = 256;

/// Resident blocks per multiprocessor the source slicing aims for (2048 threads / [`TILE`]).
const BLOCKS_PER_SM: u32 = 8;

/// One CUDA C source of `kernels/`, embedded in the library.
#[derive(Debug, Clone, Copy)]
pub struct KernelSource {
    /// File name under `kernels/`.
    pub file: &'static str,
    /// The CUDA C source.
    pub source: &'static str,
    /// The `extern "C" __global__` functions the library loads from it.
    pub entry_points: &'static [&'static str],
}

/// Every kernel source the GPU backends compile.
pub const KERNELS: [KernelSource; 2] = [
    KernelSource {
        file: "direct.cu",
        source: include_str!("../../../../kernels/direct.cu"),
        entry_points: &["direct_field", "sum_slices"],
    },
    KernelSource {
        file: "ddef_far.cu",
        source: include_str!("../../../../kernels/ddef_far.cu"),
        entry_points: &["ddef_far_field"],
    },
];

/// The headers the kernels include, embedded like them: (file name under `kernels/`, text).
/// [`compile`] puts each one's text in place of its `#include "<name>"` line.
pub const HEADERS: [(&str, &str); 1] = [("common.cuh", include_str!("../../../../kernels/common.cuh"))];

/// `kernel`'s source with each `#include "<name>"` line of a [`HEADERS`] file replaced by that
/// file's text, between `#line` directives naming the header and then the kernel again. Other
/// lines, other `#include`s among them, are kept as they are.
pub(super) fn with_headers(kernel: &KernelSource) -> String {
    // Why substitute text: NVRTC has no include path for embedded sources. An include directory
    // (`--include-path`) would need `kernels/`, which is not there where the library runs;
    // NVRTC's in-memory headers (`nvrtcCreateProgram`'s `headers`) are not exposed by cudarc's
    // safe compile, and using them means managing the NVRTC program by hand in unsafe code.
    // Substitution is a few lines of safe code, and the `#line` directives keep the file names
    // and line numbers in NVRTC's log right.
    let mut out =
        String::with_capacity(kernel.source.len() + HEADERS.iter().map(|h| h.1.len()).sum::<usize>());
    for (k, line) in kernel.source.lines().enumerate() {
        let header = line.strip_prefix("#include \"").and_then(|rest| {
            let name = rest.split('"').next()?;
            HEADERS.iter().find(|(file, _)| *file == name)
        });
        match header {
            Some((file, text)) => {
                out.push_str(&format!("#line 1 \"{file}\"\n{text}"));
                if !text.ends_with('\n') {
                    out.push('\n');
                }
                // the kernel goes on at its line k + 2 (1-based), after the #include
                out.push_str(&format!("#line {} \"{}\"\n", k + 2, kernel.file));
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

const NO_DRIVER: &str = "no CUDA driver found (libcuda.so): GPU methods need an NVIDIA GPU and its driver";
const NO_NVRTC: &str = "NVRTC not found (libnvrtc.so.12): install a CUDA 12 toolkit or the \
     nvidia-cuda-nvrtc-cu12 wheel and put its lib directory on LD_LIBRARY_PATH";

/// What [`device`] found and compiled for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The device's name, e.g. "NVIDIA H100 80GB HBM3".
    pub name: String,
    /// Compute capability (major, minor), e.g. (9, 0).
    pub compute_capability: (i32, i32),
    /// Number of streaming multiprocessors.
    pub multiprocessors: u32,
    /// The virtual architecture the kernels were compiled for, e.g. 90 for `compute_90`.
    pub arch: u32,
    /// The CUDA version the driver supports, e.g. 12080 for 12.8.
    pub driver_version: i32,
    /// NVRTC's version (major, minor).
    pub nvrtc_version: (i32, i32),
}

/// Device 0 with the kernels loaded, shared by every GPU backend of the process.
pub(super) struct Gpu {
    pub ctx: Arc<CudaContext>,
    pub info: DeviceInfo,
    pub direct_field: CudaFunction,
    pub sum_slices: CudaFunction,
    pub ddef_far_field: CudaFunction,
}

/// Runs `f`, turning a panic inside cudarc (it panics when a library cannot be loaded) into
/// [`Error::GpuUnavailable`] for `reason`.
fn guarded<T>(reason: GpuUnavailable, what: &str, f: impl FnOnce() -> T) -> Result<T> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| {
        let msg = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        Error::gpu_unavailable(reason, format!("{what} failed: {msg}"))
    })
}

/// Maps a driver error to [`Error::Gpu`], saying what was being done.
pub(super) fn gpu_err(what: &'static str) -> impl FnOnce(DriverError) -> Error {
    move |e| Error::Gpu(format!("{what}: {e}"))
}

fn driver_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: only tries to dlopen the driver library by its usual names.
    *PRESENT
        .get_or_init(|| catch_unwind(|| unsafe { cudarc::driver::sys::is_culib_present() }).unwrap_or(false))
}

/// True when NVRTC (`libnvrtc.so.12`, or another name cudarc tries) can be loaded.
pub fn nvrtc_present() -> bool {
    // SAFETY: only tries to dlopen the NVRTC library by its usual names.
    catch_unwind(|| unsafe { cudarc::nvrtc::sys::is_culib_present() }).unwrap_or(false)
}

/// NVRTC's version (major, minor).
///
/// # Errors
/// [`Error::GpuUnavailable`] ([`GpuUnavailable::Nvrtc`]) when NVRTC cannot be loaded.
pub fn nvrtc_version() -> Result<(i32, i32)> {
    if !nvrtc_present() {
        return Err(Error::gpu_unavailable(GpuUnavailable::Nvrtc, NO_NVRTC));
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: NVRTC is loadable (checked above); the pointers are valid for one int each.
    let status = guarded(GpuUnavailable::Nvrtc, "nvrtcVersion", || unsafe {
        cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor)
    })?;
    match status {
        cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS => Ok((major, minor)),
        e => Err(Error::gpu_unavailable(GpuUnavailable::Nvrtc, format!("nvrtcVersion failed: {e:?}"))),
    }
}

/// The virtual architectures NVRTC can compile for, ascending (e.g. `[50, ..., 90, ..., 120]`).
///
/// # Errors
/// [`Error::GpuUnavailable`] ([`GpuUnavailable::Nvrtc`]) when NVRTC cannot be loaded or does
/// not answer.
pub fn nvrtc_supported_archs() -> Result<Vec<u32>> {
    use cudarc::nvrtc::sys::{nvrtcGetNumSupportedArchs, nvrtcGetSupportedArchs, nvrtcResult::NVRTC_SUCCESS};
    if !nvrtc_present() {
        return Err(Error::gpu_unavailable(GpuUnavailable::Nvrtc, NO_NVRTC));
    }
    let mut count = 0;
    // SAFETY: NVRTC is loadable; `count` is valid for one int.
    if guarded(GpuUnavailable::Nvrtc, "nvrtcGetNumSupportedArchs", || unsafe {
        nvrtcGetNumSupportedArchs(&mut count)
    })? != NVRTC_SUCCESS
    {
        return Err(Error::gpu_unavailable(GpuUnavailable::Nvrtc, "nvrtcGetNumSupportedArchs failed"));
    }
    let mut archs = vec![0; count.max(0) as usize];
    // SAFETY: `archs` holds `count` ints, as NVRTC asked for.
    if guarded(GpuUnavailable::Nvrtc, "nvrtcGetSupportedArchs", || unsafe {
        nvrtcGetSupportedArchs(archs.as_mut_ptr())
    })? != NVRTC_SUCCESS
    {
        return Err(Error::gpu_unavailable(GpuUnavailable::Nvrtc, "nvrtcGetSupportedArchs failed"));
    }
    let mut archs: Vec<u32> = archs.into_iter().filter_map(|a| u32::try_from(a).ok()).collect();
    archs.sort_unstable();
    Ok(archs)
}

/// Compiles `kernel` with NVRTC for the virtual architecture `compute_<arch>` (e.g. 90 for an
/// H100) and returns the PTX. Its `#include`s of [`HEADERS`] files are resolved from the
/// embedded text. Needs NVRTC only, no driver or device.
///
/// # Errors
/// [`Error::GpuUnavailable`] ([`GpuUnavailable::Nvrtc`]) when NVRTC cannot be loaded;
/// [`Error::Gpu`] with NVRTC's log when the source does not compile.
pub fn compile(kernel: &KernelSource, arch: u32) -> Result<String> {
    if !nvrtc_present() {
        return Err(Error::gpu_unavailable(GpuUnavailable::Nvrtc, NO_NVRTC));
    }
    let opts = CompileOptions {
        options: vec![format!("--gpu-architecture=compute_{arch}")],
        name: Some(kernel.file.into()),
        ..CompileOptions::default()
    };
    let ptx = guarded(GpuUnavailable::Nvrtc, "NVRTC", || compile_ptx_with_opts(with_headers(kernel), opts))?
        .map_err(|e| {
            let detail = match e {
                CompileError::CompileError { log, .. } => log.to_string_lossy().into_owned(),
                other => other.to_string(),
            };
            Error::Gpu(format!(
                "NVRTC could not compile kernels/{} for compute_{arch}: {detail}",
                kernel.file
            ))
        })?;
    Ok(ptx.to_src())
}

static SHARED: OnceLock<Result<Arc<Gpu>>> = OnceLock::new();

/// The process's GPU, opened and its kernels loaded on first call; the outcome (including a
/// failure) is kept for the life of the process.
pub(super) fn shared() -> Result<Arc<Gpu>> {
    SHARED.get_or_init(|| open().map(Arc::new)).clone()
}

/// Opens CUDA device 0 and compiles and loads the kernels, once per process, and describes it.
///
/// # Errors
/// [`Error::GpuUnavailable`] with its [`GpuUnavailable`] reason: [`Driver`](GpuUnavailable::Driver)
/// ("no CUDA driver found (libcuda.so)"), [`Device`](GpuUnavailable::Device) ("no CUDA device",
/// or device 0 cannot be opened), [`Nvrtc`](GpuUnavailable::Nvrtc) (NVRTC missing, or a driver
/// too old for its PTX), [`Architecture`](GpuUnavailable::Architecture) (NVRTC cannot target
/// the device). [`Error::Gpu`] if a CUDA call fails while the device is set up.
pub fn device() -> Result<DeviceInfo> {
    shared().map(|g| g.info.clone())
}

/// True when [`device`] succeeds: a driver, a device and NVRTC are present and the kernels load.
/// Cheap after the first call; on a machine without a driver the first call only tries to
/// load `libcuda.so`.
pub fn usable() -> bool {
    shared().is_ok()
}

fn open() -> Result<Gpu> {
    if !driver_present() {
        return Err(Error::gpu_unavailable(GpuUnavailable::Driver, NO_DRIVER));
    }
    let count = guarded(GpuUnavailable::Driver, "cuInit", CudaContext::device_count)?;
    match count {
        Ok(c) if c > 0 => {}
        Ok(_) => return Err(Error::gpu_unavailable(GpuUnavailable::Device, "no CUDA device")),
        Err(e) => {
            return Err(Error::gpu_unavailable(
                GpuUnavailable::Device,
                format!("no CUDA device (the driver says {e})"),
            ))
        }
    }
    if !nvrtc_present() {
        return Err(Error::gpu_unavailable(GpuUnavailable::Nvrtc, NO_NVRTC));
    }
    let ctx = guarded(GpuUnavailable::Device, "cuCtx", || CudaContext::new(0))?.map_err(|e| {
        Error::gpu_unavailable(GpuUnavailable::Device, format!("cannot open CUDA device 0: {e}"))
    })?;
    let attr = |a| ctx.attribute(a).map_err(gpu_err("cuDeviceGetAttribute"));
    let compute_capability = ctx.compute_capability().map_err(gpu_err("cuDeviceGetAttribute"))?;
    let multiprocessors = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32;
    let name = ctx.name().map_err(gpu_err("cuDeviceGetName"))?;
    let mut driver_version = 0;
    // SAFETY: the driver is loaded and initialised (cuInit above); one int is written.
    unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut driver_version) }
        .result()
        .map_err(gpu_err("cuDriverGetVersion"))?;
    let nvrtc_version = nvrtc_version()?;
    let want = (compute_capability.0 * 10 + compute_capability.1) as u32;
    // The newest architecture NVRTC knows that the device can run (PTX is forward-compatible).
    let arch = nvrtc_supported_archs()?.into_iter().filter(|&a| a <= want).max().ok_or_else(|| {
        let detail = format!(
            "NVRTC {}.{} cannot compile for compute capability {}.{}",
            nvrtc_version.0, nvrtc_version.1, compute_capability.0, compute_capability.1
        );
        Error::gpu_unavailable(GpuUnavailable::Architecture, detail)
    })?;
    let info = DeviceInfo { name, compute_capability, multiprocessors, arch, driver_version, nvrtc_version };
    let mut functions = Vec::new();
    for kernel in &KERNELS {
        let ptx = compile(kernel, arch)?;
        let module = ctx.load_module(cudarc::nvrtc::Ptx::from_src(ptx)).map_err(|e| {
            let detail = format!(
                "the CUDA driver (CUDA {}.{}) cannot load kernels/{} compiled by NVRTC {}.{} (use an \
                 NVRTC no newer than the driver): {e}",
                driver_version / 1000,
                driver_version % 1000 / 10,
                kernel.file,
                nvrtc_version.0,
                nvrtc_version.1
            );
            Error::gpu_unavailable(GpuUnavailable::Nvrtc, detail)
        })?;
        for name in kernel.entry_points {
            functions.push(module.load_function(name).map_err(gpu_err("cuModuleGetFunction"))?);
        }
    }
    let [direct_field, sum_slices, ddef_far_field]: [CudaFunction; 3] =
        functions.try_into().expect("KERNELS lists three entry points");
    Ok(Gpu { ctx, info, direct_field, sum_slices, ddef_far_field })
}

impl Gpu {
    /// A new stream on the device, for one backend.
    pub fn stream(&self) -> Result<Arc<CudaStream>> {
        self.ctx.new_stream().map_err(gpu_err("cuStreamCreate"))
    }

    /// Splits `n` sources into rows of `slice` sources (a multiple of [`TILE`]) so that
    /// `blocks_x × slices` blocks fill the device; returns `(slices, slice)`.
    pub fn slices(&self, blocks_x: u32, n: usize) -> (u32, u32) {
        plan_slices(blocks_x, n, self.info.multiprocessors)
    }
}

/// See [`Gpu::slices`].
pub(super) fn plan_slices(blocks_x: u32, n: usize, multiprocessors: u32) -> (u32, u32) {
    let tiles = n.div_ceil(TILE as usize).max(1);
    let want = ((BLOCKS_PER_SM * multiprocessors.max(1)).div_ceil(blocks_x.max(1)) as usize).clamp(1, tiles);
    let slice = tiles.div_ceil(want) * TILE as usize;
    (n.div_ceil(slice).max(1) as u32, slice as u32)
}

/// The kernels' frame: `p' = (p − centre) / scale` puts every point of the box it was built
/// around in `[−1, 1]³`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Frame {
    /// Centre of the box (m).
    pub centre: Vec3,
    /// Half its largest extent (m), `> 0`.
    pub scale: Real,
}

impl Frame {
    /// The frame of the bounding box of `points`.
    pub fn around<'a>(points: impl Iterator<Item = &'a Vec3>) -> Frame {
        let (mut lo, mut hi) = (Vec3::repeat(Real::INFINITY), Vec3::repeat(Real::NEG_INFINITY));
        for p in points {
            lo = lo.inf(p);
            hi = hi.sup(p);
        }
        let half = 0.5 * (hi - lo).max();
        let scale = if half.is_finite() && half > 0.0 { half } else { 1.0 };
        let centre = if lo.x.is_finite() { 0.5 * (lo + hi) } else { Vec3::zeros() };
        Frame { centre, scale }
    }

    /// Appends each point as `hi = (x, y, z, w)` and `lo = (x, y, z, 0)` in this frame: `hi` the
    /// f32 rounding of the frame coordinates, `lo` that of the remainder; `w` is the per-point
    /// value (a scaled charge, or 0 for grid points).
    pub fn pack(&self, points: impl Iterator<Item = (Vec3, f32)>, hi: &mut Vec<f32>, lo: &mut Vec<f32>) {
        for (p, w) in points {
            let r = (p - self.centre) / self.scale;
            let h = r.map(|c| c as f32);
            let l = (r - h.map(Real::from)).map(|c| c as f32);
            hi.extend_from_slice(&[h.x, h.y, h.z, w]);
            lo.extend_from_slice(&[l.x, l.y, l.z, 0.0]);
        }
    }
}

/// A device buffer that grows (by at least half) and is otherwise kept across calls.
pub(super) struct DeviceVec<T>(Option<CudaSlice<T>>);

impl<T> Default for DeviceVec<T> {
    fn default() -> Self {
        DeviceVec(None)
    }
}

impl<T: DeviceRepr + ValidAsZeroBits> DeviceVec<T> {
    /// The buffer, at least `len` long (contents unspecified after a growth).
    pub fn at_least(&mut self, stream: &Arc<CudaStream>, len: usize) -> Result<&mut CudaSlice<T>> {
        let cap = self.0.as_ref().map_or(0, |b| b.len());
        if cap < len.max(1) {
            self.0 = None; // free first: the device may not hold both
            let grown = len.max(1).max(cap + cap / 2);
            self.0 = Some(stream.alloc_zeros::<T>(grown).map_err(gpu_err("cuMemAlloc"))?);
        }
        Ok(self.0.as_mut().expect("allocated above"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_define_the_tile_the_host_launches() {
        for k in &KERNELS {
            let source = with_headers(k);
            assert!(source.contains(&format!("\n#define TILE {TILE}\n")), "{}", k.file);
            for e in k.entry_points {
                assert!(source.contains(&format!("{e}(")), "{}: {e}", k.file);
            }
        }
    }

    #[test]
    fn headers_replace_their_include_and_keep_line_numbers() {
        for k in &KERNELS {
            let source = with_headers(k);
            assert!(!source.lines().any(|l| l.starts_with("#include \"common.cuh\"")), "{}", k.file);
            assert!(source.contains("__device__ __forceinline__ void coulomb_term("), "{}", k.file);
        }
        let kernel = KernelSource {
            file: "k.cu",
            source: "// one\n#include \"common.cuh\"\n#include <other.h>\nint four;\n",
            entry_points: &[],
        };
        let source = with_headers(&kernel);
        let (before, after) = source.split_once("#line 1 \"common.cuh\"\n").expect("the header's #line");
        assert_eq!(before, "// one\n");
        let (header, rest) = after.split_once("#line 3 \"k.cu\"\n").expect("the kernel's #line");
        assert_eq!(header, HEADERS[0].1);
        assert_eq!(rest, "#include <other.h>\nint four;\n", "line 3 of k.cu follows `#line 3`");
    }

    #[test]
    fn slices_fill_the_device_and_cover_every_source() {
        for (blocks_x, n, sms) in [(1, 1, 132), (4, 1000, 132), (391, 100_000, 132), (3907, 1_000_000, 132)] {
            let (slices, slice) = plan_slices(blocks_x, n, sms);
            assert_eq!(slice % TILE, 0);
            assert!(slices as usize * slice as usize >= n, "sources left out");
            assert!((slices as usize - 1) * (slice as usize) < n, "an empty slice");
            let blocks = blocks_x * slices;
            assert!(blocks >= (8 * sms).min(blocks_x * n.div_ceil(256) as u32), "{blocks_x} {n}: {blocks}");
        }
        assert_eq!(plan_slices(3907, 1_000_000, 132).0, 1);
    }

    #[test]
    fn hi_lo_pack_keeps_about_48_bits() {
        let x =
            [Vec3::new(1000.0, -3.0, 7.25), Vec3::new(1000.0 + 1e-9, -3.0, 7.25), Vec3::new(999.0, 2.0, 0.0)];
        let frame = Frame::around(x.iter());
        let (mut hi, mut lo) = (vec![], vec![]);
        frame.pack(x.iter().map(|p| (*p, 1.0)), &mut hi, &mut lo);
        for (k, p) in x.iter().enumerate() {
            let back = Vec3::from_fn(|c, _| hi[4 * k + c] as Real + lo[4 * k + c] as Real) * frame.scale
                + frame.centre;
            assert!((back - p).norm() < 1e-13 * frame.scale, "{k}: {back} vs {p}");
            assert!((0..3).all(|c| hi[4 * k + c].abs() <= 1.0));
        }
        // the 1 nm step survives in the difference, to the 2⁻⁴⁸ of the frame that hi + lo keep
        let d = ((hi[4] - hi[0]) as Real + (lo[4] - lo[0]) as Real) * frame.scale;
        assert!((d - 1e-9).abs() < 4e-15 * frame.scale, "{d:e}");
        assert_eq!(hi[4], hi[0], "the step is below f32 resolution: only lo carries it");
        let single = Frame::around([Vec3::new(1.0, 2.0, 3.0)].iter());
        assert_eq!(single.scale, 1.0);
    }
}
