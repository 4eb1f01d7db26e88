//! Vertex–vertex Coulomb forces behind one interface, so that approximate and GPU backends
//! (DDEF, CUDA) plug in beside the exact sum.
//!
//! Every backend computes the same quantity, [Paper](crate#references) Eq. (8) for surface
//! charges: each vertex's charge stands for the charge on its patch of surface, spread over a
//! ball of radius `a` (the *charge radius*, see [`crate::Softening`]), so that
//!
//! ```text
//! (C1)  f_i = k_c q_i Σ_{j≠i} q_j (x_i − x_j) g(|x_i − x_j|),   g(r) = 1 / max(r, a)³
//! (C2)  U   = Σ_{i<j} k_c q_i q_j φ_a(|x_i − x_j|),   φ_a(r) = 1/r               (r ≥ a)
//!                                                     φ_a(r) = (3a² − r²)/(2a³)  (r < a)
//! ```
//!
//! ## Derivation
//!
//! A charge `q_j` spread uniformly over a ball of radius `a` has, by Gauss's law, the field
//! `k_c q_j r̂/r²` outside the ball and `k_c q_j r/a³` inside it (the enclosed charge is
//! `q_j r³/a³`); integrating `−E·dr` from infinity gives the potential `k_c q_j φ_a(r)` of
//! (C2), which is `1/r` outside and `(3a² − r²)/(2a³)` inside (the two agree, `1/a`, at
//! `r = a`). A point charge `q_i` at distance `r` from the centre then feels
//! `f = q_i E = k_c q_i q_j r_vec g(r)`, (C1). The pair term is symmetric in `i, j`, so the
//! forces are equal and opposite (linear momentum exact) and `f_i = −∇_i U` (the
//! gradient of `φ_a` is `−r_vec g(r)` on both sides and continuous at `a`).
//!
//! Properties: beyond `a` the law is exactly Coulomb's (no softening at any distance a mesh
//! neighbour sits at); `|f| ≤ k_c |q_i q_j| / a²`, reached at `r = a`, and the force falls
//! linearly to 0 as `r → 0` (two patches in contact exert a bounded force, so a contact
//! solver never has to fight an unbounded attraction); `U` is bounded by
//! `3 k_c |q_i q_j| / (2a)`. (The ball–ball interaction of two spread charges differs from the
//! point–ball one only inside `2a`; the point–ball form is used because it has a closed form
//! that every kernel evaluates branch-free, `s² = max(r², a²)`, at the cost of one `max`.)
//! `a = 0` is the bare Coulomb law (coincident pairs then contribute nothing).
//!
//! The same form runs in every backend: the direct sum and its shared kernels
//! (`kernel`, Eq. (C1) as `1/max(r², a²)^{3/2}`, Eq. (C2) as `y (3/2 − r² y²/2)` with
//! `y = 1/max(r, a)`), DDEF's near field, far-field gather and potential, P3M's short-range
//! part (whose cut-off is kept at least `a`, so that every pair the form changes is summed
//! exactly and the mesh only carries the Coulomb tail), the CUDA kernels
//! (`kernels/common.cuh`), the external point charges ([`crate::fields`]) and the gradient's
//! vector–Jacobian products.

mod ddef;
mod direct;
pub mod gpu;
mod kernel;
mod p3m;

pub(crate) use ddef::Csr;
pub use ddef::{Ddef, DdefTimings, Neighborhood, Placement, ADAPTIVE_MIN_GRID_POINTS, MAX_GRID_POINTS};
pub use gpu::DirectGpu;
pub use p3m::{P3m, P3mTimings, P3M_DEFAULT_TOLERANCE};

pub use direct::{coulomb_energy, DirectSum};
pub(crate) use kernel::{inv_r, inv_r3, vjp_sum, Soa};

use crate::error::Result;
use crate::math::{Real, Vec3};

/// Which algorithm evaluates vertex–vertex Coulomb forces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldMethod {
    /// No vertex–vertex Coulomb force (external charges and fields still act).
    Off,
    /// The exact `O(n²)` sum, [`DirectSum`].
    Direct,
    /// The `O(m n)` DDEF approximation of [Paper](crate#references) §3.1, [`Ddef`], with
    /// `SimParams::grid_points` grid points.
    Ddef,
    /// Let the library choose from the vertex count and the hardware (see
    /// [`FieldMethod::resolve`]). [`crate::System::field_method`] reports the resolved choice.
    #[default]
    Auto,
    /// [`FieldMethod::Ddef`] with the far-field gather (Alg. 1, line 4) on a CUDA GPU,
    /// `kernels/ddef_far.cu`; grid, location and near field stay on the CPU.
    DdefGpu,
    /// The exact sum on a CUDA GPU, [`DirectGpu`] (`kernels/direct.cu`).
    DirectGpu,
    /// [`FieldMethod::Auto`] restricted to the CPU: what `Auto` picks when no GPU is usable,
    /// for callers whose user has turned the GPU off.
    AutoCpu,
    /// Particle-particle particle-mesh, [`P3m`]: Ewald's split, the smooth part by FFT on a
    /// mesh, the rest summed over pairs within a cut-off; relative RMS error 10⁻² by default.
    P3m,
}

/// Vertex count from which [`FieldMethod::Auto`] picked DDEF before [`FieldMethod::P3m`]
/// existed (measured with m = 1000 on torus point sets, 2 threads: DDEF took 0.7×, 1.7×, 2.6×
/// and 4.3× less time than the direct sum at n = 2K, 5K, 10K, 20K, relative error 0.009). Auto
/// no longer picks DDEF on the CPU: P3M is faster at a smaller error from
/// [`AUTO_P3M_MIN_VERTICES`] (see there).
pub const AUTO_DDEF_MIN_VERTICES: usize = 10_000;

/// Vertex count from which [`FieldMethod::Auto`] (without a usable GPU) and
/// [`FieldMethod::AutoCpu`] pick [`FieldMethod::P3m`] instead of the exact sum. Measured in one
/// run (`cargo run --release -p cmsc-core --example p3m_bench -- --n 2000,5000,10000`, 2
/// threads, the 2-core VM shared with other jobs, load 4–5, so ±30 %), a call at a step's
/// positions (mesh kept), torus / hanging cloth, time relative to the direct sum and error:
///
/// | n | DDEF (adaptive) | P3M (10⁻²) | P3M error | DDEF error |
/// |---|---|---|---|---|
/// | 2K | 0.7× / 1.0× | 1.1× / 1.1× | 6.6·10⁻³ / 3.7·10⁻³ | 1.3·10⁻² / 1.5·10⁻² |
/// | 5K | 1.9× / 2.2× faster | 2.9× / 3.5× faster | 2.8·10⁻³ / 3.2·10⁻³ | 9·10⁻³ / 1.5·10⁻² |
/// | 10K | 3.4× / 4.0× | 6.6× / 6.6× | 6.2·10⁻³ / 3.0·10⁻³ | 9·10⁻³ / 1.6·10⁻² |
/// | 20K | 6.1× / 7.2× | 12.3× / 13.9× | 2.2·10⁻³ / 2.9·10⁻³ | 9·10⁻³ / 1.5·10⁻² |
///
/// From 5K P3M is faster than both at a smaller error (4.2–4.4× DDEF's speed at 100K, 9.8–9.9×
/// at 1M: `examples/p3m_bench.rs`, README); its first call (choosing the parameters and transforming the
/// kernels) costs about two or three calls, again whenever the charges outgrow the mesh.
pub const AUTO_P3M_MIN_VERTICES: usize = 5_000;

/// Vertex count from which [`FieldMethod::Auto`] uses a usable CUDA GPU ([`gpu::usable`]).
/// Measured on an NVIDIA H200 with 16 CPU threads (`examples/gpu_auto.rs`, README "GPU"): the
/// exact sum on the GPU is faster per call than either CPU method from 1K vertices on (5K:
/// 0.23 ms against 4.5 ms direct and 2.4 ms P3M), but a process's first GPU use (the context,
/// NVRTC compiling the kernel, a first call) costs 0.86 s, which the saving repays after about
/// 400 calls at 5K and fewer above.
pub const AUTO_GPU_MIN_VERTICES: usize = 5_000;

/// Vertex count from which [`FieldMethod::Auto`] with a usable GPU moves from the exact
/// [`FieldMethod::DirectGpu`] to [`FieldMethod::P3m`] on the CPU. Measured on an NVIDIA H200
/// with 16 CPU threads (`examples/gpu_auto.rs`), a call's time, P3M's relative error beside it
/// (the GPU sum's is 1·10⁻⁷):
///
/// | n | GPU direct | P3M (error) |
/// |---|---|---|
/// | 150K | 26.9 ms | 44.7 ms (1.6·10⁻³) |
/// | 200K | 45.4 ms | 67.6 ms (1.9·10⁻³) |
/// | 250K | 69.3 ms | 68.5 ms (1.9·10⁻³) |
/// | 400K | 169 ms | 123 ms (1.6·10⁻³) |
/// | 1M | 983 ms | 347 ms (1.5·10⁻³) |
///
/// The GPU sum grows as n², P3M about as n. With fewer CPU threads P3M is slower and the
/// crossover lies higher.
pub const AUTO_GPU_P3M_MIN_VERTICES: usize = 250_000;

/// Vertex count from which [`FieldMethod::Auto`] on a GPU would run [`FieldMethod::DdefGpu`]:
/// never (`u32::MAX`, the largest count the C ABI can pass). Until measured on a device it was
/// 200,000, an estimate; on an NVIDIA H200 DDEF_GPU was slower than both the GPU sum and P3M at
/// every n from 1K to 1M (200K: 512 ms against 45 ms and 68 ms; 1M: 12.5 s against 0.98 s and
/// 0.35 s, with m = 1000), because its grid, locate and near-field stages stay on the CPU
/// (12.8 s of it at 1M; the GPU gather takes 37 ms). With the default adaptive grid those CPU
/// stages alone took 2.5× (200K) and 4.1× (1M) P3M's whole time on 2 threads. It stays a method
/// of its own to choose by name.
pub const AUTO_GPU_DDEF_MIN_VERTICES: usize = u32::MAX as usize;

impl FieldMethod {
    /// The concrete method `self` stands for on a system of `n` vertices.
    ///
    /// [`FieldMethod::Auto`] becomes, with a usable CUDA GPU ([`gpu::usable`], probed once per
    /// process and only where it would be used), [`FieldMethod::DirectGpu`] from
    /// [`AUTO_GPU_MIN_VERTICES`] up to [`AUTO_GPU_P3M_MIN_VERTICES`]. Without one, and outside
    /// that range: [`FieldMethod::Direct`] below [`AUTO_P3M_MIN_VERTICES`],
    /// [`FieldMethod::P3m`] from there on (which itself runs DDEF on a scene too sparse for its
    /// mesh, [`P3m`]'s docs). [`FieldMethod::AutoCpu`] is that CPU choice whatever
    /// the hardware. Every other method stands for itself.
    pub fn resolve(self, n: usize) -> FieldMethod {
        self.resolve_on(n, gpu::usable)
    }

    /// [`Self::resolve`] with the GPU's presence given: `gpu_usable` is asked only where
    /// [`FieldMethod::Auto`] would take a GPU at `n` vertices.
    pub fn resolve_on(self, n: usize, gpu_usable: impl FnOnce() -> bool) -> FieldMethod {
        match self {
            FieldMethod::Auto
                if (AUTO_GPU_MIN_VERTICES..AUTO_GPU_P3M_MIN_VERTICES).contains(&n) && gpu_usable() =>
            {
                FieldMethod::DirectGpu
            }
            FieldMethod::Auto | FieldMethod::AutoCpu if n >= AUTO_P3M_MIN_VERTICES => FieldMethod::P3m,
            FieldMethod::Auto | FieldMethod::AutoCpu => FieldMethod::Direct,
            m => m,
        }
    }
}

/// A backend that evaluates the Coulomb force on every vertex.
pub trait FieldSolver: Send {
    /// The concrete method this backend implements (never [`FieldMethod::Auto`] or
    /// [`FieldMethod::AutoCpu`]).
    fn method(&self) -> FieldMethod;

    /// Writes the Coulomb force (N) of Eq. (C1) on each vertex into `out`.
    ///
    /// # Arguments
    /// * `x` — positions (m), world frame; `q` — charges (C); `k_c` — Coulomb's constant
    ///   (N·m²/C²); `a` — charge radius (m), `>= 0`.
    ///
    /// # Errors
    /// Backend-specific (e.g. a device failure); the direct sum never fails.
    ///
    /// # Panics
    /// If `x`, `q` and `out` differ in length.
    fn forces(&mut self, x: &[Vec3], q: &[Real], k_c: Real, a: Real, out: &mut [Vec3]) -> Result<()>;

    /// The Coulomb potential energy (J) whose gradient the forces approximate,
    /// `Σ_{i<j} k_c q_i q_j φ_a(|x_i − x_j|)` (Eq. (C2)); the energy safeguard of
    /// [`crate::Integrator::ImexLowDissipation`] reads it after every sub-step. The default is
    /// the exact pairwise sum, [`coulomb_energy`] (`O(c²)` for `c` charged vertices): exact for
    /// the direct backends. [`Ddef`] (also behind [`FieldMethod::DdefGpu`]) overrides it with
    /// the potential of its own near/far split, `O(m n)`.
    ///
    /// # Errors
    /// Backend-specific, as [`FieldSolver::forces`]; the default never fails.
    ///
    /// # Panics
    /// If `x` and `q` differ in length.
    fn potential(&mut self, x: &[Vec3], q: &[Real], k_c: Real, a: Real) -> Result<Real> {
        Ok(coulomb_energy(x, q, k_c, a))
    }

    /// The force of [`FieldSolver::forces`] with its far part held from the last `forces`
    /// call and only the near part evaluated at `x`: multiple time stepping of the far field
    /// ([`crate::SimParams::far_field_interval`]). A backend without a near/far split has
    /// nothing to hold and evaluates everything (the default); [`Ddef`] holds its grid-
    /// interpolated part and sums its near sets exactly.
    ///
    /// Returns whether a far part was held (false: everything was evaluated).
    ///
    /// # Errors
    /// As [`FieldSolver::forces`].
    ///
    /// # Panics
    /// As [`FieldSolver::forces`].
    fn forces_holding_far_field(
        &mut self,
        x: &[Vec3],
        q: &[Real],
        k_c: Real,
        a: Real,
        out: &mut [Vec3],
    ) -> Result<bool> {
        self.forces(x, q, k_c, a, out).map(|()| false)
    }

    /// Tells the backend that its whole field will be evaluated once every `steps` calls and
    /// [`FieldSolver::forces_holding_far_field`] in between, so that it can size itself for that
    /// mix (the adaptive [`Ddef`] weighs its far-field gather by `1/steps` against its near
    /// field). The default ignores it.
    fn set_far_field_interval(&mut self, _steps: u32) {}

    /// Asks for a relative RMS force error of `tolerance` (within
    /// [`crate::MIN_FIELD_TOLERANCE`]`..=`[`crate::MAX_FIELD_TOLERANCE`], checked by
    /// [`crate::SimParams::validate`]): [`P3m`] sizes its split and mesh for it. The default
    /// ignores it: the exact sums have no error to choose, and DDEF's error is set by its grid.
    fn set_tolerance(&mut self, _tolerance: Real) {}

    /// The grid size `m` the next whole evaluation will use, for a backend with a grid
    /// ([`Ddef`]: adaptive or fixed); `None` (the default) for one without.
    fn grid_size(&self) -> Option<u32> {
        None
    }
}

/// DDEF's far-field gather, [Paper](crate#references) Eq. (9) (Alg. 1, line 4), run somewhere
/// other than the CPU: [`Ddef`] calls it instead of its own gather when one is set.
pub(crate) trait FarFieldGather: Send {
    /// The method a [`Ddef`] with this gather implements.
    fn method(&self) -> FieldMethod;

    /// Writes `ê(u_j) / k_c = Σ_{i ∉ M_j} q_i (u_j − x_i) g(|u_j − x_i|)` (`g` of Eq. (C1)) for
    /// every grid point into `out`.
    ///
    /// # Arguments
    /// * `grid` — grid points `u_j` (m), world frame; `x`, `q` — charges (m, C, every `q ≠ 0`);
    ///   `a2` — `a²` (m²), the charge radius squared.
    /// * `near` — `M_j` as CSR: row `j` lists indices into `x`, ascending; one row per grid
    ///   point.
    ///
    /// # Errors
    /// Device failures ([`crate::Error::Gpu`]).
    fn gather(
        &mut self,
        grid: &[Vec3],
        x: &[Vec3],
        q: &[Real],
        a2: Real,
        near: &Csr,
        out: &mut [Vec3],
    ) -> Result<()>;
}

/// The charged vertices (`q ≠ 0`) of one call, gathered: only they exert or feel a Coulomb
/// force, so both CPU backends work on this subset.
#[derive(Debug, Default)]
pub(crate) struct Charged {
    /// Vertex index of each charged vertex.
    pub index: Vec<u32>,
    /// Their positions (m) and charges (C).
    pub x: Vec<Vec3>,
    pub q: Vec<Real>,
}

impl Charged {
    /// Whether the charged vertices of `x`, `q` are exactly these (same indices, positions and
    /// charges): `O(n)`, to reuse work done for the same configuration.
    pub fn matches(&self, x: &[Vec3], q: &[Real]) -> bool {
        let mut listed = self.index.iter().zip(&self.x).zip(&self.q);
        let same = q.iter().zip(x).enumerate().filter(|(_, (&qi, _))| qi != 0.0).all(|(i, (qi, xi))| {
            listed.next().is_some_and(|((&j, xj), qj)| j as usize == i && xj == xi && qj == qi)
        });
        same && listed.next().is_none()
    }

    /// Whether the charged vertices of `q` are exactly these, with the same charges (positions
    /// not compared).
    pub fn same_charges(&self, q: &[Real]) -> bool {
        let mut listed = self.index.iter().zip(&self.q);
        let same = q
            .iter()
            .enumerate()
            .filter(|(_, &qi)| qi != 0.0)
            .all(|(i, qi)| listed.next().is_some_and(|(&j, qj)| j as usize == i && qj == qi));
        same && listed.next().is_none()
    }

    /// Gathers the charged vertices of `x`, `q` (reusing the buffers).
    pub fn gather(&mut self, x: &[Vec3], q: &[Real]) {
        self.index.clear();
        self.index.extend((0..q.len() as u32).filter(|&i| q[i as usize] != 0.0));
        self.x.clear();
        self.x.extend(self.index.iter().map(|&i| x[i as usize]));
        self.q.clear();
        self.q.extend(self.index.iter().map(|&i| q[i as usize]));
    }
}

/// The backend that returns zero forces, for [`FieldMethod::Off`].
#[derive(Debug, Default)]
pub struct NoField;

impl FieldSolver for NoField {
    fn method(&self) -> FieldMethod {
        FieldMethod::Off
    }

    fn forces(&mut self, x: &[Vec3], q: &[Real], _: Real, _: Real, out: &mut [Vec3]) -> Result<()> {
        assert!(x.len() == q.len() && q.len() == out.len());
        out.fill(Vec3::zeros());
        Ok(())
    }

    fn potential(&mut self, x: &[Vec3], q: &[Real], _: Real, _: Real) -> Result<Real> {
        assert_eq!(x.len(), q.len());
        Ok(0.0)
    }
}

/// Creates the backend for `method` on `n` vertices (`grid_points` is DDEF's `m`, `near` its
/// near-set definition).
///
/// # Errors
/// [`crate::Error::GpuUnavailable`] for a GPU method when there is no CUDA driver, no device or
/// no NVRTC (the message says which); [`crate::Error::Gpu`] if the device fails to start. A GPU
/// method never falls back to the CPU.
pub fn make_solver(
    method: FieldMethod,
    n: usize,
    grid_points: u32,
    near: Neighborhood,
) -> Result<Box<dyn FieldSolver>> {
    Ok(match method.resolve(n) {
        FieldMethod::Off => Box::new(NoField),
        FieldMethod::Ddef => Box::new(Ddef::new(grid_points).with_neighborhood(near)),
        FieldMethod::DdefGpu => Box::new(gpu::ddef_solver(grid_points, near)?),
        FieldMethod::DirectGpu => Box::new(DirectGpu::new()?),
        FieldMethod::P3m => Box::new(P3m::new()),
        FieldMethod::Direct | FieldMethod::Auto | FieldMethod::AutoCpu => Box::new(DirectSum::default()),
    })
}
