//! A cloth landing on a sphere (issue 30): the energy the contacts give it at the impact, and
//! how that depends on the step, the cloth's stiffness and the sphere's radius.
//!
//! The scene of `tests/bench/drape_vs_cloth.py` in the core (`common/landing.rs`): a 2 m cloth
//! of `--side` × `--side` vertices (41: 1,681) and 1 kg, springs `--stiffness`/10 N/m, dropped
//! 5 cm onto a mesh sphere of radius `--radius` (0.6 m) 5 cm off its centre, Coulomb friction
//! `--mu`, at `--steps` steps per 1/24 s frame, or with `--steps 0` by `System::advance` at the
//! add-on's defaults (3–32 steps per frame, its bounds deciding). Prints per frame the total
//! energy (kinetic, spring, gravity) above the start, the spring energy, the largest strain of a
//! structural spring and the steps taken; then the peak. `c` is the cloth's wave speed as the
//! contact bound of `System::advance` estimates it, `√(Σ_s k_s l_s² / m_i)`, largest over the
//! vertices.
//!
//! What it shows: the contacts put vertices back on the surface after the implicit spring step,
//! so springs to neighbours not in contact stretch, and each step's push does work against
//! their tension. The peak energy above the start (J), `c h / R` in brackets:
//!
//! | N/m (c) | R | 3 steps per frame | 6 | 12 | `advance` |
//! |---|---|---|---|---|---|
//! | 3,000 (390 m/s) | 0.3 m | 3,329 (18) | 13.8 (9.0) | 0.61 (4.5) | none |
//! | 3,000 | 0.6 m | 18.8 (9.0) | 1.45 (4.5) | 0.011 (2.3) | none |
//! | 3,000 | 1.2 m | 3.8 (4.5) | 0.062 (2.3) | none (1.1) | none |
//! | 1,000 (226 m/s) | 0.3 m | 106 (10.5) | 2.9 (5.2) | 0.061 (2.6) | none |
//! | 1,000 | 0.6 m | 5.2 (5.2) | 0.075 (2.6) | none (1.3) | none |
//! | 1,000 | 1.2 m | 0.23 (2.6) | none (1.3) | none | none |
//! | 300 (126 m/s) | 0.3 m | 26.3 (5.8) | 0.56 (2.9) | none (1.5) | none |
//! | 300 | 0.6 m | 0.50 (2.9) | none (1.5) | none | none |
//! | 100 (76 m/s) | 0.3 m | 11.9 (3.5) | none (1.75) | none | none |
//! | 100 | 0.6 m | none (1.75) | none | none | none |
//!
//! The gain follows `c h / R`: none up to 1.75, fast beyond 2.3. `c` does not change with the
//! mesh's resolution (74 m/s at 100 N/m with `--side 101`, 10,201 vertices, which gains nothing
//! at 3 steps on the 0.6 m sphere), where a vertex's frequency `√(Σ_s k_s / m_i)` grows with it.
//! At 3 steps per frame the 3,000 N/m cloth stays stretched (7 % strain after 3 s) and holds on
//! the 0.6 m sphere at Friction 5 (μ = 0.05); at 6 or 12 it slides off (centroid x 1.90 and
//! 1.68 m after 72 frames): what held it was the stretch.
//!
//! Run: `cargo run --release -p cmsc-core --example landing_energy [-- --stiffness 3000
//! --mu 0.05 --steps 3 --frames 24 --side 41 --radius 0.6 --spring-damping 0]` (the defaults;
//! `--spring-damping` is the springs' strain-rate damping time in seconds).

use cmsc_core::Real;

#[path = "common/args.rs"]
mod args;
#[path = "common/landing.rs"]
mod landing;

fn main() {
    let stiffness: Real = args::arg("--stiffness", 3000.0);
    let mu: Real = args::arg("--mu", 0.05);
    let steps: u32 = args::arg("--steps", 3);
    let frames: u32 = args::arg("--frames", 24);
    let side: u32 = args::arg("--side", 41);
    let radius: Real = args::arg("--radius", 0.6);
    let spring_damping: Real = args::arg("--spring-damping", 0.0);
    let (mut sys, structural) =
        landing::landing(side, radius, stiffness, mu, 1.0 / (24.0 * steps.max(1) as Real));
    sys.set_spring_damping(&vec![spring_damping; sys.springs().len()]).unwrap();
    let n = sys.n_vertices();
    // the wave speed of the contact bound (System::advance), largest
    let c = sys.wave_speeds().into_iter().fold(0.0, Real::max);
    let schedule = match steps {
        0 => "advance".to_string(),
        _ => format!("{steps} steps per frame, c h / R = {:.2}", c / (24.0 * steps as Real) / radius),
    };
    println!("{stiffness} N/m, R = {radius} m, μ = {mu}: {schedule} (c = {c:.0} m/s)");
    let start = sys.energies().total;
    let mut peak = Real::NEG_INFINITY;
    for frame in 1..=frames {
        let taken = match steps {
            0 => sys.advance(1.0 / 24.0, 3, 32).unwrap(),
            _ => sys.step_n(steps).map(|()| steps).unwrap(),
        };
        let (e, x, s) = (sys.energies(), sys.positions(), sys.springs());
        let strain = s.ends()[..structural]
            .iter()
            .zip(s.rest_lengths())
            .map(|(&[a, b], &l)| ((x[a as usize] - x[b as usize]).norm() - l) / l)
            .fold(0.0, Real::max);
        let centroid_x = x.iter().map(|p| p.x).sum::<Real>() / n as Real;
        peak = peak.max(e.total - start);
        println!(
            "frame {frame:3}: {:+8.3} J above the start, spring {:7.3} J, largest strain {:5.1} %, \
             centroid x {centroid_x:.3} m, {taken} steps",
            e.total - start,
            e.spring,
            strain * 100.0
        );
    }
    println!("peak {peak:.3} J above the start");
}
