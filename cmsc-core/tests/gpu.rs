//! The CUDA backends (issue 7): every kernel in `kernels/` compiles with NVRTC (always run in
//! CI: NVRTC comes from the `nvidia-cuda-nvrtc-cu12` wheel, and `CMSC_REQUIRE_NVRTC=1` turns a
//! missing NVRTC into a failure); GPU forces agree with the CPU ones (skipped, saying so, only
//! where there is no CUDA driver or device); without a driver the GPU methods are
//! `GpuUnavailable` errors, never a panic, and `Auto` stays on the CPU.
//!
//! On a GPU machine: `LD_LIBRARY_PATH=<nvrtc lib dir> cargo test --release -p cmsc-core --test
//! gpu -- --nocapture`.

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use cmsc_core::coulomb::gpu::{self, GpuUnavailable};
use cmsc_core::coulomb::{make_solver, Ddef, DirectSum, Neighborhood};
use cmsc_core::{shapes, Error, FieldMethod, Real, SimParams, System, Vec3};
use common::field::{forces, relative_l2};

/// The mean over the points `x` of the distance to their nearest neighbour (m), by brute force.
fn mean_spacing(x: &[Vec3]) -> Real {
    let nearest =
        |a: &Vec3| x.iter().filter(|b| *b != a).map(|b| (a - b).norm()).fold(Real::INFINITY, Real::min);
    x.iter().map(nearest).sum::<Real>() / x.len() as Real
}

/// Charges of mixed sign, mostly positive (as a rigged mesh has them), a few vertices uncharged.
fn charges(n: usize) -> Vec<Real> {
    (0..n).map(|i| [1e-6, 2e-6, -0.5e-6, 0.0, 1.5e-6][i % 5] * (1.0 + 0.1 * (i % 7) as Real)).collect()
}

fn nvrtc_required() -> bool {
    std::env::var("CMSC_REQUIRE_NVRTC").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// True when a CUDA device is usable; prints why not and returns false only when there is no
/// driver or no device ([`GpuUnavailable::Driver`], [`GpuUnavailable::Device`]). Any other
/// failure (a device without NVRTC, a kernel that does not load) fails the test.
fn have_device() -> bool {
    match gpu::device() {
        Ok(info) => {
            eprintln!("device: {info:?}");
            true
        }
        Err(Error::GpuUnavailable { reason: GpuUnavailable::Driver | GpuUnavailable::Device, detail }) => {
            eprintln!("skipped: no CUDA device ({detail})");
            false
        }
        Err(e) => panic!("a CUDA driver is present but the GPU backends cannot start: {e}"),
    }
}

#[test]
fn every_kernel_compiles_with_nvrtc() {
    if !gpu::nvrtc_present() {
        assert!(
            !nvrtc_required(),
            "CMSC_REQUIRE_NVRTC is set but NVRTC (libnvrtc.so.12) cannot be loaded: put the lib \
             directory of the nvidia-cuda-nvrtc-cu12 wheel on LD_LIBRARY_PATH (make unit does)"
        );
        eprintln!("skipped: NVRTC not found (CMSC_REQUIRE_NVRTC=1 makes this a failure)");
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels");
    let on_disk: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".cu"))
        .collect();
    let embedded: BTreeSet<String> = gpu::KERNELS.iter().map(|k| k.file.to_string()).collect();
    assert_eq!(on_disk, embedded, "every kernels/*.cu must be one the library embeds (gpu::KERNELS)");
    let headers_on_disk: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".cuh"))
        .collect();
    let headers: BTreeSet<String> = gpu::HEADERS.iter().map(|(file, _)| file.to_string()).collect();
    assert_eq!(headers_on_disk, headers, "every kernels/*.cuh must be one the library embeds (gpu::HEADERS)");
    for (file, text) in gpu::HEADERS {
        let on_disk = std::fs::read_to_string(dir.join(file)).unwrap();
        assert_eq!(on_disk, text, "kernels/{file} changed since the library was built");
    }
    let version = gpu::nvrtc_version().unwrap();
    let supported = gpu::nvrtc_supported_archs().unwrap();
    // Volta, Ampere, Hopper, and the newest NVRTC knows
    let mut archs: Vec<u32> = [70, 80, 90].into_iter().filter(|a| supported.contains(a)).collect();
    archs.extend(supported.last());
    assert!(archs.contains(&90), "NVRTC {version:?} cannot target the H100 (compute_90): {supported:?}");
    for kernel in &gpu::KERNELS {
        let on_disk = std::fs::read_to_string(dir.join(kernel.file)).unwrap();
        assert_eq!(on_disk, kernel.source, "kernels/{} changed since the library was built", kernel.file);
        for &arch in &archs {
            let ptx = gpu::compile(kernel, arch).unwrap_or_else(|e| panic!("{e}"));
            assert!(ptx.contains(&format!(".target sm_{arch}")), "{}: no sm_{arch} target", kernel.file);
            for entry in kernel.entry_points {
                assert!(ptx.contains(&format!(".entry {entry}(")), "{}: no entry point {entry}", kernel.file);
            }
        }
        eprintln!("kernels/{} compiles with NVRTC {}.{} for {archs:?}", kernel.file, version.0, version.1);
    }
}

#[test]
fn a_kernel_that_does_not_compile_is_an_error_with_nvrtcs_log() {
    if !gpu::nvrtc_present() {
        assert!(!nvrtc_required(), "CMSC_REQUIRE_NVRTC is set but NVRTC cannot be loaded");
        eprintln!("skipped: NVRTC not found");
        return;
    }
    let broken = gpu::KernelSource {
        file: "broken.cu",
        source: "extern \"C\" __global__ void f(float *x) { x[0] = undeclared_name; }",
        entry_points: &["f"],
    };
    match gpu::compile(&broken, 80) {
        Err(Error::Gpu(msg)) => {
            assert!(msg.contains("undeclared_name") && msg.contains("broken.cu"), "{msg}")
        }
        other => panic!("expected a compile error, got {other:?}"),
    }
}

#[test]
fn without_a_driver_gpu_methods_are_unavailable_and_auto_stays_on_the_cpu() {
    // SAFETY: only tries to dlopen the driver library.
    let driver = unsafe { cudarc::driver::sys::is_culib_present() };
    match gpu::device() {
        Err(Error::GpuUnavailable { reason, detail }) => {
            if !driver {
                assert_eq!(reason, GpuUnavailable::Driver, "{detail}");
                assert!(detail.contains("no CUDA driver found (libcuda.so)"), "{detail}");
            }
            for method in [FieldMethod::DdefGpu, FieldMethod::DirectGpu] {
                let err = make_solver(method, 1000, 100, Neighborhood::Ring).err().expect("a GPU solver");
                assert_eq!(err, Error::GpuUnavailable { reason, detail: detail.clone() });
                assert!(err.to_string().contains(&detail));
                let x = shapes::torus(20, 8, 1.0, 0.3).positions;
                let p = SimParams { coulomb: method, ..SimParams::default() };
                let made = System::new(&x, &vec![1e-3; x.len()], &[], &[], p);
                assert!(
                    matches!(made, Err(Error::GpuUnavailable { reason: r, .. }) if r == reason),
                    "{method:?}"
                );
            }
            // Auto: exactly the CPU choice, at every size
            for (n, cpu) in [
                (10, FieldMethod::Direct),
                (4_999, FieldMethod::Direct),
                (5_000, FieldMethod::P3m),
                (3_000_000, FieldMethod::P3m),
            ] {
                assert_eq!(FieldMethod::Auto.resolve(n), cpu, "n = {n}");
            }
        }
        Ok(info) => {
            eprintln!("device present ({}): GPU methods build", info.name);
            for method in [FieldMethod::DdefGpu, FieldMethod::DirectGpu] {
                let solver = make_solver(method, 1000, 100, Neighborhood::Ring).unwrap();
                assert_eq!(solver.method(), method);
            }
            assert_eq!(FieldMethod::Auto.resolve(10), FieldMethod::Direct);
            assert_eq!(FieldMethod::Auto.resolve(50_000), FieldMethod::DirectGpu);
            assert_eq!(FieldMethod::Auto.resolve(3_000_000), FieldMethod::P3m);
        }
        Err(e) => panic!("expected GpuUnavailable or a device, got {e}"),
    }
}

/// Auto's choice where a GPU is usable, from the crossovers measured on an H200 (README "GPU",
/// `examples/gpu_auto.rs`): the GPU sum from 5K vertices, P3M on the CPU from 250K, where it
/// overtakes the n² sum; never DDEF_GPU, whose CPU stages made it the slowest at every size.
/// Needs no device: the GPU's presence is given.
#[test]
fn auto_with_a_gpu_takes_the_exact_gpu_sum_up_to_where_p3m_is_faster() {
    for (n, with_gpu, without) in [
        (10, FieldMethod::Direct, FieldMethod::Direct),
        (4_999, FieldMethod::Direct, FieldMethod::Direct),
        (5_000, FieldMethod::DirectGpu, FieldMethod::P3m),
        (200_000, FieldMethod::DirectGpu, FieldMethod::P3m),
        (249_999, FieldMethod::DirectGpu, FieldMethod::P3m),
        (250_000, FieldMethod::P3m, FieldMethod::P3m),
        (3_000_000, FieldMethod::P3m, FieldMethod::P3m),
    ] {
        assert_eq!(FieldMethod::Auto.resolve_on(n, || true), with_gpu, "n = {n} with a GPU");
        assert_eq!(FieldMethod::Auto.resolve_on(n, || false), without, "n = {n} without");
        assert_eq!(FieldMethod::AutoCpu.resolve_on(n, || true), without, "AutoCpu, n = {n}");
    }
    // the GPU is probed only where Auto would take it
    for n in [10, 4_999, 250_000, 3_000_000] {
        FieldMethod::Auto.resolve_on(n, || panic!("probed the GPU at n = {n}"));
    }
    assert_eq!(FieldMethod::DdefGpu.resolve_on(1_000_000, || true), FieldMethod::DdefGpu);
}

#[test]
fn direct_gpu_agrees_with_the_cpu_sum() {
    if !have_device() {
        return;
    }
    let mut gpu_sum = make_solver(FieldMethod::DirectGpu, 0, 1, Neighborhood::Ring).unwrap();
    let meshes = [
        ("torus", shapes::torus(200, 40, 1.0, 0.3).positions),
        ("sphere far from the origin", {
            let s = shapes::uv_sphere(64, 128, 0.5).positions;
            s.iter().map(|p| p + Vec3::new(1000.0, -200.0, 50.0)).collect()
        }),
        ("small cloth", shapes::grid(12, 10, 0.01).positions), // fewer charges than one tile
    ];
    // the same solver on meshes of different sizes: its buffers grow and are reused
    for (name, x) in meshes {
        let q = charges(x.len());
        let point_charges = forces(&mut DirectSum::default(), &x, &q, 0.0);
        // charge radii: none, far below the spacing, and twice the mean spacing,
        // where each charge's neighbours lie inside its ball (the r < a branch of Eq. (C1))
        let spacing = mean_spacing(&x);
        for a in [0.0, 1e-4 * spacing, 2.0 * spacing] {
            let exact = forces(&mut DirectSum::default(), &x, &q, a);
            let got = forces(gpu_sum.as_mut(), &x, &q, a);
            let err = relative_l2(&got, &exact);
            let inside = relative_l2(&exact, &point_charges);
            eprintln!(
                "{name}: n = {}, a = {a:.2e} m: relative L2 {err:.2e} (the radius moves the forces by {inside:.2e})",
                x.len()
            );
            assert!(err <= 1e-5, "{name}, a = {a}: relative L2 {err:e}");
            assert!(got.iter().zip(&q).all(|(f, qi)| *qi != 0.0 || *f == Vec3::zeros()));
            if a > spacing {
                assert!(inside > 1e-2, "{name}: a charge radius of 2 spacings should matter ({inside:e})");
            }
        }
    }
}

#[test]
fn ddef_gpu_agrees_with_the_cpu_ddef() {
    if !have_device() {
        return;
    }
    let x = shapes::torus(300, 60, 1.0, 0.3).positions;
    let q = charges(x.len());
    // a charge radius far below the spacing, and one of twice it (neighbours inside the ball)
    let spacing = mean_spacing(&x);
    for (near, eps, ms) in [
        (Neighborhood::Ring, 1e-5, &[100, 1000, 10_000][..]),
        (Neighborhood::Face, 1e-5, &[100, 1000, 10_000][..]),
        (Neighborhood::Ring, 2.0 * spacing, &[1000][..]),
    ] {
        for &m in ms {
            let cpu = forces(&mut Ddef::new(m).with_neighborhood(near), &x, &q, eps);
            let mut solver = make_solver(FieldMethod::DdefGpu, x.len(), m, near).unwrap();
            assert_eq!(solver.method(), FieldMethod::DdefGpu);
            let got = forces(solver.as_mut(), &x, &q, eps);
            let err = relative_l2(&got, &cpu);
            eprintln!(
                "torus n = {}, m = {m}, {near:?}, a = {eps:.1e} m: relative L2 to CPU DDEF {err:.2e}",
                x.len()
            );
            assert!(err <= 1e-4, "m = {m}, {near:?}, a = {eps}: relative L2 {err:e}");
            // a second call reuses the cached grid and the device buffers
            assert_eq!(forces(solver.as_mut(), &x, &q, eps), got);
        }
    }
}

#[test]
fn a_system_steps_on_the_gpu_like_on_the_cpu() {
    if !have_device() {
        return;
    }
    let mesh = shapes::torus(80, 20, 1.0, 0.3);
    let n = mesh.positions.len();
    let springs = cmsc_core::springs_from_triangles(n, &mesh.triangles).unwrap();
    let k = vec![200.0; springs.structural.len()];
    // 10 nC scale: vertices move up to ~3 mm in 20 steps, smoothly (1 µC tears the mesh apart)
    let q: Vec<Real> = charges(n).iter().map(|c| c * 1e-2).collect();
    let run = |coulomb| {
        let p = SimParams { coulomb, gravity: Vec3::zeros(), ..SimParams::default() };
        let mut sys = System::new(&mesh.positions, &vec![1e-3; n], &springs.structural, &k, p).unwrap();
        assert_eq!(sys.field_method(), coulomb);
        sys.set_charges(&q).unwrap();
        sys.step_n(20).unwrap();
        sys.positions().to_vec()
    };
    let (cpu, on_gpu) = (run(FieldMethod::Direct), run(FieldMethod::DirectGpu));
    let moved: Real =
        cpu.iter().zip(&mesh.positions).map(|(a, b)| (a - b).norm_squared()).sum::<Real>().sqrt();
    let gap: Real = on_gpu.iter().zip(&cpu).map(|(a, b)| (a - b).norm_squared()).sum::<Real>().sqrt();
    eprintln!("20 IMEX steps: GPU and CPU positions differ by {gap:.2e} m of {moved:.2e} m moved");
    assert!(moved > 1e-2 && gap <= 1e-5 * moved, "GPU and CPU trajectories differ by {gap:e} of {moved:e}");
}
