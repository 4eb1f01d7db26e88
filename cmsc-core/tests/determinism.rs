//! A bake gives the same bits however many threads run it: the crumpling cloth of
//! `examples/crumple_cost.rs` (1,681 vertices, about 10,000 springs: the parallel paths of the
//! springs' kernels, accelerated iterations stopped by a tolerance, self-collision and the
//! sphere, exact Coulomb) stepped by `System::advance` as the add-on does, on 1, 2 and 3 threads.
//! Every sum over vertices or springs that decides something (when the iterations stop, what the
//! acceleration's safeguard keeps, the acceleration's least squares) adds its terms in blocks
//! fixed by the sizes alone, so the threads cannot change the result.

#[path = "../examples/common/crumple.rs"]
mod crumple;

use cmsc_core::Vec3;
use crumple::{crumple, Cloth, Contacts};

/// The positions after `frames` frames of 1/24 s of `advance` (3–32 steps, iterations to 1e-3)
/// on `threads` threads, with the steps each frame took.
fn run(threads: usize, frames: usize) -> (Vec<Vec3>, Vec<u32>) {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    pool.install(|| {
        let (mut sys, _, _) = crumple(
            Cloth::ISSUES,
            40e-6,
            1e-3,
            Contacts { self_collision: true, sphere: true, friction: false },
        );
        let steps = (0..frames).map(|_| sys.advance(1.0 / 24.0, 3, 32).unwrap()).collect();
        (sys.positions().to_vec(), steps)
    })
}

#[test]
fn the_crumpling_cloth_has_the_same_bits_on_any_number_of_threads() {
    let frames = 16; // past where the halves meet (frame 10), contacts and all
    let (one, steps) = run(1, frames);
    eprintln!("steps per frame: {steps:?}");
    for threads in [2, 2, 3] {
        let (x, taken) = run(threads, frames);
        assert_eq!(taken, steps, "{threads} threads took other steps");
        let differ = x.iter().zip(&one).filter(|(a, b)| a != b).count();
        let largest = x.iter().zip(&one).map(|(a, b)| (a - b).norm()).fold(0.0, f64::max);
        assert_eq!(differ, 0, "{threads} threads: {differ} vertices differ, by up to {largest:e} m");
    }
}
