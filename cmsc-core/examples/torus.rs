//! The main job until the Blender add-on lands: simulate the paper's charged torus (§4, Fig. 4:
//! 145 vertices, R = 1 m, r = 0.3 m, k = 10 N/m, q = 6 µC, 1 kg per vertex, no damping) for 15 s
//! with the IMEX step, and write
//!
//! - `out/torus.pc2` — a PC2 point cache (24 frames/s, 5 substeps per frame), loadable by
//!   Blender's Mesh Cache modifier on a 29 × 5 torus;
//! - `out/torus.obj` — that torus, so the cache has a mesh to play on;
//! - `out/torus_energy.csv` — kinetic, spring, Coulomb, external and total energy per frame.
//!
//! Run with `cargo run --release -p cmsc-core --example torus [OUT_DIR]`.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use cmsc_core::{shapes, springs_from_triangles, FieldMethod, SimParams, System, Vec3};

const FPS: f64 = 24.0;
const SUBSTEPS: u32 = 5;
const SECONDS: f64 = 15.0;

/// A PC2 writer: header, then one `f32` xyz triple per point per sample; the sample count in
/// the header is patched when the file is finished.
struct Pc2 {
    file: BufWriter<File>,
    points: usize,
    samples: i32,
}

impl Pc2 {
    fn create(path: &Path, points: usize, start_frame: f32, sample_rate: f32) -> std::io::Result<Self> {
        let mut file = BufWriter::new(File::create(path)?);
        file.write_all(b"POINTCACHE2\0")?;
        file.write_all(&1i32.to_le_bytes())?;
        file.write_all(&(points as i32).to_le_bytes())?;
        file.write_all(&start_frame.to_le_bytes())?;
        file.write_all(&sample_rate.to_le_bytes())?;
        file.write_all(&0i32.to_le_bytes())?;
        Ok(Pc2 { file, points, samples: 0 })
    }

    fn push(&mut self, positions: &[Vec3]) -> std::io::Result<()> {
        assert_eq!(positions.len(), self.points);
        for p in positions {
            for c in [p.x, p.y, p.z] {
                self.file.write_all(&(c as f32).to_le_bytes())?;
            }
        }
        self.samples += 1;
        Ok(())
    }

    fn finish(self) -> std::io::Result<()> {
        use std::io::{Seek, SeekFrom};
        let mut file = self.file.into_inner().map_err(|e| e.into_error())?;
        file.seek(SeekFrom::Start(28))?; // numSamples follows the 12-byte signature and 4 fields
        file.write_all(&self.samples.to_le_bytes())?;
        file.sync_all()
    }
}

fn write_obj(path: &Path, mesh: &shapes::TriMesh) -> std::io::Result<()> {
    let mut f = BufWriter::new(File::create(path)?);
    for p in &mesh.positions {
        writeln!(f, "v {} {} {}", p.x, p.y, p.z)?;
    }
    for t in &mesh.triangles {
        writeln!(f, "f {} {} {}", t[0] + 1, t[1] + 1, t[2] + 1)?;
    }
    f.flush()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "out".into()));
    std::fs::create_dir_all(&out)?;

    let mesh = shapes::torus(29, 5, 1.0, 0.3);
    let n = mesh.positions.len();
    let (ends, k) = springs_from_triangles(n, &mesh.triangles)?.with_stiffness(10.0, 0.0);
    let (ends, k): (Vec<_>, Vec<_>) = ends.into_iter().zip(k).filter(|(_, k)| *k > 0.0).unzip();
    let params = SimParams {
        time_step: 1.0 / (FPS * SUBSTEPS as f64),
        gravity: Vec3::zeros(),
        coulomb: FieldMethod::Direct,
        ..SimParams::default()
    };
    let mut sys = System::new(&mesh.positions, &vec![1.0; n], &ends, &k, params)?;
    sys.set_charges(&vec![6e-6; n])?;

    write_obj(&out.join("torus.obj"), &mesh)?;
    let mut pc2 = Pc2::create(&out.join("torus.pc2"), n, 1.0, 1.0)?;
    let mut log = BufWriter::new(File::create(out.join("torus_energy.csv"))?);
    writeln!(log, "frame,time_s,kinetic_J,spring_J,coulomb_J,external_J,total_J")?;

    let frames = (SECONDS * FPS).round() as u32;
    let started = std::time::Instant::now();
    for frame in 0..=frames {
        if frame > 0 {
            sys.step_n(SUBSTEPS)?;
        }
        pc2.push(sys.positions())?;
        let e = sys.energies();
        writeln!(
            log,
            "{},{:.6},{:.9e},{:.9e},{:.9e},{:.9e},{:.9e}",
            frame + 1,
            sys.time(),
            e.kinetic,
            e.spring,
            e.coulomb,
            e.external,
            e.total
        )?;
    }
    pc2.finish()?;
    log.flush()?;

    let e = sys.energies();
    let extent = sys.positions().iter().map(|p| p.norm()).fold(0.0, f64::max);
    println!(
        "torus: {n} vertices, {} springs, {} frames x {SUBSTEPS} substeps (h = {:.5} s) in {:.2?}",
        ends.len(),
        frames,
        sys.params().time_step,
        started.elapsed()
    );
    println!(
        "final energy {:.2} J (kinetic {:.2}, spring {:.2}, Coulomb {:.2}); extent {extent:.2} m",
        e.total, e.kinetic, e.spring, e.coulomb
    );
    println!(
        "wrote {}, {}, {}",
        out.join("torus.pc2").display(),
        out.join("torus.obj").display(),
        out.join("torus_energy.csv").display()
    );
    Ok(())
}
