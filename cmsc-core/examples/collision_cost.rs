//! What collisions cost per step (issue 18): a cloth of about 10K and 100K vertices draped on a
//! mesh sphere, stepped with self-collision off and on and the mesh collider off and on, in the
//! same run. Coulomb is off so that the numbers isolate the collision stage.
//!
//! Run: `cargo run --release -p cmsc-core --example collision_cost [-- STEPS]`

use std::time::Instant;

use cmsc_core::{shapes, springs_from_triangles, FieldMethod, SimParams, System, Vec3};

/// A `side × side` cloth 1 m across, its centre touching the top of a sphere of radius 0.3 m.
fn scene(side: u32, self_collision: bool, collider: bool) -> System {
    let spacing = 1.0 / (side - 1) as f64;
    let mut mesh = shapes::grid(side, side, spacing);
    mesh.positions.iter_mut().for_each(|p| *p += Vec3::new(-0.5, -0.5, 0.305));
    let springs = springs_from_triangles(mesh.positions.len(), &mesh.triangles).unwrap();
    let (ends, k) = springs.with_stiffness(500.0, 5.0);
    let n = mesh.positions.len();
    let params = SimParams { time_step: 1.0 / 240.0, coulomb: FieldMethod::Off, ..SimParams::default() };
    let mut sys = System::new(&mesh.positions, &vec![0.3 / n as f64; n], &ends, &k, params).unwrap();
    if self_collision {
        sys.set_self_collision(&mesh.triangles, &vec![0.3 * spacing; n]).unwrap();
    }
    if collider {
        let ball = shapes::uv_sphere(32, 64, 0.3);
        let last = ball.triangles.len() as u32;
        sys.set_mesh_colliders(&ball.positions, &ball.triangles, &[0, last], &[0.01], &[0.3]).unwrap();
    }
    sys
}

fn main() {
    let steps: u32 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(10);
    println!(
        "threads: {}, steps timed per case: {steps} (after 2 warm-up steps)",
        rayon::current_num_threads()
    );
    println!("{:>8} {:>15} {:>10} {:>12} {:>10}", "n", "self-collision", "collider", "s/step", "contacts?");
    for side in [100u32, 317] {
        for (sc, col) in [(false, false), (true, false), (false, true), (true, true)] {
            let mut sys = scene(side, sc, col);
            sys.step_n(2).unwrap();
            let t0 = Instant::now();
            sys.step_n(steps).unwrap();
            let per_step = t0.elapsed().as_secs_f64() / steps as f64;
            // the middle vertex rests on the sphere when the collider is on
            let mid = sys.positions()[(side / 2 * side + side / 2) as usize];
            println!(
                "{:>8} {:>15} {:>10} {:>12.4} {:>10}",
                sys.n_vertices(),
                if sc { "on" } else { "off" },
                if col { "on" } else { "off" },
                per_step,
                if col { format!("z={:.3}", mid.z) } else { "-".into() }
            );
        }
    }
}
