//! Handles are independent: several simulations stepped concurrently from several threads give
//! bit-identical results to the same simulations stepped one after another.

mod common;

use cmsc::CmscStatus::*;
use cmsc::*;
use common::{params, positions, square};

struct Handle(*mut CmscSim);
// SAFETY: a CmscSim may move between threads; each handle here is used by one thread at a time.
unsafe impl Send for Handle {}

fn run(h: &Handle, variant: usize) -> Vec<f64> {
    // SAFETY: live handle used by this thread only.
    unsafe {
        let q = [1e-7 * (variant + 1) as f64, 1e-7, -1e-7, 2e-7];
        assert_eq!(cmsc_set_charges(h.0, q.as_ptr(), 4), CMSC_OK);
        assert_eq!(cmsc_set_uniform_field(h.0, [0.0, 50.0 * variant as f64, 0.0].as_ptr()), CMSC_OK);
        assert_eq!(cmsc_step(h.0, 300), CMSC_OK);
        // an error on this thread must not leak into another thread's last error
        assert_eq!(cmsc_set_charges(h.0, [0.0].as_ptr(), 1), CMSC_INVALID_ARGUMENT);
        positions(h.0, 4)
    }
}

#[test]
fn concurrent_handles_match_serial_runs() {
    let p = params();
    let serial: Vec<Vec<f64>> = (0..6)
        .map(|v| {
            let h = Handle(square(&p));
            let out = run(&h, v);
            // SAFETY: live handle.
            unsafe { cmsc_destroy(h.0) };
            out
        })
        .collect();
    let handles: Vec<Handle> = (0..6).map(|_| Handle(square(&p))).collect();
    let jobs: Vec<_> =
        handles.into_iter().enumerate().map(|(v, h)| std::thread::spawn(move || (run(&h, v), h))).collect();
    let parallel: Vec<Vec<f64>> = jobs
        .into_iter()
        .map(|j| {
            let (out, h) = j.join().unwrap();
            // SAFETY: live handle, destroyed once.
            unsafe { cmsc_destroy(h.0) };
            out
        })
        .collect();
    assert_eq!(serial, parallel);
    assert_ne!(serial[0], serial[1], "variants should differ");
}
