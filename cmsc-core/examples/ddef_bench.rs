//! DDEF against the direct sum in the same run: time per stage, speed-up and relative L2 error,
//! for torus-surface point sets of n = 10K, 100K (and 1M with `--large`), m = 1K and 10K.
//! The direct sum is timed in full up to 100K; at 1M it is timed and checked on 2,000 sampled
//! targets and its full time extrapolated (n/2000 × the sampled time).
//!
//! A second table gives the Coulomb potential energy `U`: DDEF's `potential` right after its
//! `forces` at the same positions (as the low-dissipation integrator calls them), on a fresh
//! solver (placing and locating too), and the exact pairwise sum, with the relative error of
//! `U` (the exact sum is skipped above 200K).
//!
//! Run: `cargo run --release -p cmsc-core --example ddef_bench [-- --large] [--n 5000,20000] [--m 1000,3000] [--face]`
//! (`--m 0`: the adaptive grid, timed once its size has settled).
//! (`--face`: near sets of face neighbours only, instead of the default one-ring).
//! (`--place uniform` or `--place following`: where the grid points go; by default the paper's
//! uniform points for a fixed m and following points for the adaptive grid.)
//! (`--points FILE`: instead of the tori, the points in FILE (little-endian x, y, z f64 per
//! point, as `bake_profile` writes them), every one charged 1 nC.)

use std::time::Instant;

use cmsc_core::coulomb::{coulomb_energy, Ddef, DirectSum, FieldSolver, Neighborhood, Placement};
use cmsc_core::{shapes, Real, Vec3, COULOMB_CONSTANT as KC};

fn torus_points(n: usize) -> Vec<Vec3> {
    let v = ((n as f64 / 5.0).sqrt()).round() as u32; // tube segments; u = 5v around
    shapes::torus(5 * v, v, 1.0, 0.3).positions
}

fn main() {
    let large = std::env::args().any(|a| a == "--large");
    let threads = rayon::current_num_threads();
    println!("threads: {threads}");
    println!(
        "| n | m | grid | tetra | locate | gather | near | DDEF total | direct | speed-up | rel. L2 error | ns per gather / near pair term | gather points in f64 |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let custom: Option<Vec<usize>> = std::env::args()
        .skip_while(|a| a != "--n")
        .nth(1)
        .map(|list| list.split(',').map(|v| v.parse().expect("--n takes a comma-separated list")).collect());
    let sizes =
        custom.unwrap_or(if large { vec![10_000, 100_000, 1_000_000] } else { vec![10_000, 100_000] });
    let grids: Vec<u32> = std::env::args()
        .skip_while(|a| a != "--m")
        .nth(1)
        .map(|list| list.split(',').map(|v| v.parse().expect("--m takes a comma-separated list")).collect())
        .unwrap_or(vec![1000, 10_000]);
    let neighborhood =
        if std::env::args().any(|a| a == "--face") { Neighborhood::Face } else { Neighborhood::Ring };
    println!("near sets: {neighborhood:?}");
    let placement = std::env::args().skip_while(|a| a != "--place").nth(1).map(|p| match p.as_str() {
        "uniform" => Placement::Uniform,
        "following" => Placement::Following,
        other => panic!("--place {other:?}: use uniform or following"),
    });
    let file = std::env::args().skip_while(|a| a != "--points").nth(1);
    let sizes = if file.is_some() { vec![0] } else { sizes };
    let mut potential_rows = vec![];
    for &n in &sizes {
        let (x, q) = match &file {
            Some(path) => {
                let bytes = std::fs::read(path).expect("--points: cannot read the file");
                let c: Vec<Real> =
                    bytes.chunks_exact(8).map(|b| Real::from_le_bytes(b.try_into().unwrap())).collect();
                let x: Vec<Vec3> = c.chunks_exact(3).map(|p| Vec3::new(p[0], p[1], p[2])).collect();
                let q = vec![1e-9; x.len()];
                (x, q)
            }
            None => {
                let x = torus_points(n);
                let q = (0..x.len()).map(|i| if i % 5 == 0 { -1e-6 } else { 1e-6 }).collect();
                (x, q)
            }
        };
        let n = x.len();
        let eps = 1e-6;
        let sampled = n > 200_000;
        let targets: Vec<usize> =
            if sampled { (0..2000).map(|k| k * (n / 2000)).collect() } else { (0..n).collect() };
        let mut direct = DirectSum::default();
        let mut exact = vec![Vec3::zeros(); targets.len()];
        let t = Instant::now();
        direct.forces_on(&x, &q, KC, eps, &targets, &mut exact);
        let direct_s = t.elapsed().as_secs_f64() * (n as f64 / targets.len() as f64);
        let t = Instant::now();
        let exact_u = (!sampled).then(|| coulomb_energy(&x, &q, KC, eps));
        let exact_u_s = t.elapsed().as_secs_f64();
        for &m in &grids {
            let mut ddef = Ddef::new(m).with_neighborhood(neighborhood);
            if let Some(placement) = placement {
                ddef = ddef.with_placement(placement);
            }
            let mut out = vec![Vec3::zeros(); n];
            ddef.forces(&x, &q, KC, eps, &mut out).unwrap(); // first call builds the grid
            let mut first = ddef.timings();
            // adaptive (m = 0): repeat until the grid size settles; `first` times the last rebuild
            for _ in 0..8 {
                if ddef.grid_points() == ddef.timings().grid_points {
                    break;
                }
                ddef.forces(&x, &q, KC, eps, &mut out).unwrap();
                first = ddef.timings();
            }
            let settled = ddef.grid_points();
            let m_label = if ddef.is_adaptive() { format!("adaptive: {settled}") } else { m.to_string() };
            let m_label = format!("{m_label}, {:?}", ddef.placement());
            let t = Instant::now();
            ddef.forces(&x, &q, KC, eps, &mut out).unwrap(); // a step: grid reused, warm walks
            let ddef_s = t.elapsed().as_secs_f64();
            let s = ddef.timings();
            let num: Real = targets.iter().zip(&exact).map(|(&i, e)| (out[i] - e).norm_squared()).sum();
            let den: Real = exact.iter().map(|e| e.norm_squared()).sum();
            let t = Instant::now();
            let u = ddef.potential(&x, &q, KC, eps).unwrap(); // reuses the forces' grid and sets
            let potential_s = t.elapsed().as_secs_f64();
            let mut fresh =
                Ddef::new(s.grid_points).with_neighborhood(neighborhood).with_placement(ddef.placement());
            let t = Instant::now();
            let u_fresh = fresh.potential(&x, &q, KC, eps).unwrap();
            let fresh_s = t.elapsed().as_secs_f64();
            potential_rows.push(format!(
                "| {n} | {m_label} | {:.1} ms | {:.1} ms ({:.2}×) | {:.1} ms | {} | {} | {} |",
                ddef_s * 1e3,
                potential_s * 1e3,
                potential_s / ddef_s,
                fresh_s * 1e3,
                exact_u.map_or("-".into(), |_| format!("{:.1} ms", exact_u_s * 1e3)),
                exact_u.map_or("-".into(), |e| format!("{:.2e}", (u - e).abs() / e.abs())),
                exact_u.map_or("-".into(), |e| format!("{:.2e}", (u_fresh - e).abs() / e.abs())),
            ));
            let gather_pairs = (s.grid_points as f64 + 8.0) * n as f64;
            println!(
                "| {n} | {m_label} | {:.1} ms | {:.1} ms (first call) | {:.1} ms | {:.1} ms | {:.1} ms | {:.3} s | {:.2} s{} | {:.1}× | {:.4} | {:.3} / {:.3} | {} |",
                s.grid * 1e3,
                first.tetrahedralize * 1e3,
                s.locate * 1e3,
                s.gather * 1e3,
                s.near * 1e3,
                ddef_s,
                direct_s,
                if sampled { " (extrapolated)" } else { "" },
                direct_s / ddef_s,
                (num / den).sqrt(),
                s.gather * 1e9 * threads as f64 / gather_pairs,
                s.near * 1e9 * threads as f64 / s.near_pairs as f64,
                s.guarded,
            );
        }
    }
    println!();
    println!(
        "| n | m | DDEF forces | DDEF potential after forces | DDEF potential, fresh | exact potential | U rel. error | fresh U rel. error |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for row in potential_rows {
        println!("{row}");
    }
}
