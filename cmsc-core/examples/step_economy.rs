//! Step economy (issue 29): steps per frame, iterations per step, wall time per frame and the
//! error against a converged bake, for the fixed schedule (5 steps of 6 iterations per frame)
//! and for `System::advance` with an iteration tolerance.
//!
//! The scene is `bake_profile`'s hanging cloth (the bake benchmark's): a square grid of about
//! `--n` vertices, 2 m wide, horizontal, top row pinned, gravity, structural/bending springs
//! 100/10 N/m, 1 kg lumped by area, `--charge` µC (default 10) shared by all vertices, the
//! automatic Coulomb method. It swings down from horizontal and hangs. Frames are 1/24 s.
//!
//! The reference is the converged bake: 4× the fixed steps (20 per frame, `--ref-steps`) of 30
//! iterations. It
//! is cached in `--cache` (default `/tmp`) per `(n, charge, frames)`, so that other settings can
//! be compared without recomputing it. The error at a frame is the RMS vertex distance to the
//! reference divided by the reference's bounding-box diagonal (the object's size).
//!
//! Run: `RAYON_NUM_THREADS=2 cargo run --release -p cmsc-core --example step_economy -- [--n 10000]
//! [--frames 60] [--charge 10] [--min 1] [--max 32] [--tol 1e-3] [--iters 10] [--motion 0.01]
//! [--charge-factor 1] [--fixed 5] [--skip-fixed] [--ref-steps 20]`. `--fixed K` sets the fixed schedule's steps per
//! frame (6 iterations each).

use std::time::Instant;

use cmsc_core::shapes::grid;
use cmsc_core::{springs_from_triangles, Real, SimParams, StepBounds, System, Vec3};

#[path = "common/args.rs"]
mod args;
#[path = "common/lumped.rs"]
mod lumped;
use args::arg;
use lumped::area_lumped;

const FRAME: Real = 1.0 / 24.0;

/// The hanging cloth with `iterations` per step of `h` (s).
fn scene(n: u32, charge_uc: Real, h: Real, iterations: u32) -> System {
    let side = (n as f64).sqrt().round() as u32;
    let mesh = grid(side, side, 2.0 / (side - 1) as f64);
    let nv = mesh.positions.len();
    let (ends, k) = springs_from_triangles(nv, &mesh.triangles).unwrap().with_stiffness(100.0, 10.0);
    let params = SimParams { time_step: h, iterations, ..SimParams::default() };
    let mut sys = System::new(&mesh.positions, &area_lumped(&mesh, 1.0), &ends, &k, params).unwrap();
    let top: Vec<u32> = (0..nv as u32).filter(|&i| mesh.positions[i as usize].y > 2.0 - 1e-9).collect();
    sys.set_pins(&top).unwrap();
    sys.set_charges(&vec![charge_uc * 1e-6 / nv as Real; nv]).unwrap();
    sys
}

/// Per-frame record of one run.
#[derive(Default)]
struct Run {
    steps: Vec<u32>,
    iterations: Vec<u64>,
    ms: Vec<f64>,
    /// Positions after frames 30 and 60 (or the last frame if fewer).
    at: Vec<Vec<Vec3>>,
}

fn checkpoints(frames: u32) -> Vec<u32> {
    [30, 60].into_iter().filter(|&f| f <= frames).collect()
}

fn run(sys: &mut System, frames: u32, mut frame: impl FnMut(&mut System) -> u32) -> Run {
    let mut out = Run::default();
    for f in 1..=frames {
        let t0 = Instant::now();
        let k = frame(sys);
        out.ms.push(t0.elapsed().as_secs_f64() * 1e3);
        out.steps.push(k);
        out.iterations.push(sys.last_call_counts().iterations);
        if checkpoints(frames).contains(&f) {
            out.at.push(sys.positions().to_vec());
        }
    }
    out
}

fn rms_relative(x: &[Vec3], reference: &[Vec3]) -> Real {
    let (lo, hi) = reference.iter().fold((reference[0], reference[0]), |(lo, hi), p| (lo.inf(p), hi.sup(p)));
    let ms: Real =
        x.iter().zip(reference).map(|(a, b)| (a - b).norm_squared()).sum::<Real>() / x.len() as Real;
    ms.sqrt() / (hi - lo).norm()
}

fn reference(n: u32, charge: Real, frames: u32, steps: u32, cache: &str) -> Vec<Vec<Vec3>> {
    let path = format!(
        "{cache}/step_economy_ref_{n}_{charge}_{frames}{}.f64",
        if steps == 20 { String::new() } else { format!("_{steps}") }
    );
    if let Ok(bytes) = std::fs::read(&path) {
        let v: Vec<Real> =
            bytes.chunks_exact(8).map(|c| Real::from_le_bytes(c.try_into().unwrap())).collect();
        let per = v.len() / 3 / checkpoints(frames).len();
        let pts: Vec<Vec3> = v.chunks_exact(3).map(|c| Vec3::new(c[0], c[1], c[2])).collect();
        eprintln!("reference from {path}");
        return pts.chunks(per).map(|c| c.to_vec()).collect();
    }
    let mut sys = scene(n, charge, FRAME / steps as Real, 30);
    let t0 = Instant::now();
    let r = run(&mut sys, frames, |s| {
        s.step_n(steps).unwrap();
        steps
    });
    eprintln!("reference: {:.1} s", t0.elapsed().as_secs_f64());
    let bytes: Vec<u8> = r.at.iter().flatten().flat_map(|p| p.iter().flat_map(|c| c.to_le_bytes())).collect();
    std::fs::write(&path, bytes).unwrap();
    r.at
}

fn report(name: &str, r: &Run, reference: &[Vec<Vec3>]) {
    let frames = r.steps.len() as f64;
    let steps: u32 = r.steps.iter().sum();
    let iterations: u64 = r.iterations.iter().sum();
    let errors: Vec<String> =
        r.at.iter()
            .zip(reference)
            .map(|(x, x_ref)| format!("{:.2} %", 100.0 * rms_relative(x, x_ref)))
            .collect();
    println!(
        "| {name} | {:.2} ({}) | {:.2} | {:.1} | {} |",
        steps as f64 / frames,
        r.steps.iter().max().unwrap(),
        iterations as f64 / steps as f64,
        r.ms.iter().sum::<f64>() / frames,
        errors.join(" | ")
    );
}

fn main() {
    let n: u32 = arg("--n", 10_000);
    let frames: u32 = arg("--frames", 60);
    let charge: Real = arg("--charge", 10.0);
    let (min, max): (u32, u32) = (arg("--min", 1), arg("--max", 32));
    let tol: Real = arg("--tol", 1e-3);
    let iters: u32 = arg("--iters", 10);
    let bounds = StepBounds {
        motion: arg("--motion", StepBounds::default().motion),
        charge: arg("--charge-factor", StepBounds::default().charge),
        contact: StepBounds::default().contact,
    };
    let cache = arg("--cache", "/tmp".to_string());
    let skip_fixed = std::env::args().any(|a| a == "--skip-fixed");
    let fixed_steps: u32 = arg("--fixed", 5);

    let ref_steps: u32 = arg("--ref-steps", 20);
    let reference = reference(n, charge, frames, ref_steps, &cache);
    println!(
        "n = {n}, {charge} µC, {frames} frames; error = RMS distance / size vs {ref_steps} steps × 30 iterations"
    );
    println!("| schedule | steps/frame mean (most) | iterations/step | ms/frame | error f30 | error f60 |");
    println!("|---|---|---|---|---|---|");
    if !skip_fixed {
        let mut fixed = scene(n, charge, FRAME / fixed_steps as Real, 6);
        let r = run(&mut fixed, frames, |s| {
            s.step_n(fixed_steps).unwrap();
            fixed_steps
        });
        report(&format!("fixed {fixed_steps} × 6"), &r, &reference);
    }
    let mut adaptive = scene(n, charge, FRAME / 5.0, iters);
    adaptive.set_iteration_tolerance(tol).unwrap();
    adaptive.set_step_bounds(bounds).unwrap();
    let r = run(&mut adaptive, frames, |s| s.advance(FRAME, min, max).unwrap());
    let name = format!(
        "advance {min}..{max}, c_q {}, c_v {}, tol {tol:e}, ≤ {iters} it",
        bounds.charge, bounds.motion
    );
    report(&name, &r, &reference);
    let per_frame: Vec<String> = r.steps.iter().map(|k| k.to_string()).collect();
    eprintln!("steps per frame: {}", per_frame.join(" "));
    let entries = adaptive.factor_entries();
    let mb: Vec<String> = entries.iter().map(|e| format!("{:.1} MB", *e as f64 * 12.0 / 1e6)).collect();
    println!("cached factorizations: {} ({} entries of L each: {:?})", mb.join(", "), entries.len(), entries);
}
