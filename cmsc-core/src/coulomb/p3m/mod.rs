//! Particle-particle particle-mesh (P3M) Coulomb forces: the solver [`P3m`], its method and
//! references in its docs; one submodule per stage.

mod fft;
mod grid;
mod params;
mod short;
mod spline;
mod split;

use std::time::Instant;

use fft::{Convolution, Output};
use grid::Grid;
use params::{choose, Choice};
use short::Cells;
use split::Split;

use super::{inv_r, Charged, Ddef, FieldMethod, FieldSolver};
use crate::error::{Error, Result};
use crate::math::{Real, Vec3};

/// The relative RMS force error [`P3m::new`] asks for: below DDEF's (about 10⁻², [Paper](crate#references) Fig. 3).
pub const P3M_DEFAULT_TOLERANCE: Real = 1e-2;

/// Wall-clock time of each P3M stage in the last call (s), and the parameters it ran with.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct P3mTimings {
    /// Choosing the parameters and transforming the kernels (zero when the mesh was kept).
    pub setup: f64,
    /// Spreading the charges onto the mesh.
    pub spread: f64,
    /// The forward transform and the inverse ones.
    pub fft: f64,
    /// Interpolating the field (or potential) at the charges.
    pub interpolate: f64,
    /// The cell list and the short-range pair sum.
    pub short: f64,
    /// Splitting parameter `α` (1/m), mesh spacing `h` (m), cut-off `r_c` (m).
    pub alpha: Real,
    /// Mesh spacing `h` (m).
    pub h: Real,
    /// Cut-off `r_c` (m).
    pub r_c: Real,
    /// Spline order `p`.
    pub order: usize,
    /// Mesh points per axis the charges occupy, and of the doubled FFT mesh.
    pub mesh: [usize; 3],
    /// FFT sizes per axis.
    pub fft_mesh: [usize; 3],
    /// Whether this call ran DDEF instead ([`P3m::fallback_reason`]).
    pub fell_back: bool,
}

/// The mesh, split and convolution of the current parameters.
struct Mesh {
    grid: Grid,
    split: Split,
    conv: Convolution,
    /// The effective potential kernel near 0 ([`Convolution::near_kernel`]).
    near_kernel: Vec<f32>,
    /// Charged vertices when the parameters were chosen.
    n: usize,
}

/// The P3M field solver. Forces `F_i = k_c q_i (E_mesh(x_i) +
/// E_short(x_i))` with the mean force over the charges removed (momentum exact, as [`Ddef`]
/// does; the mesh's own pair forces already obey Newton's third law, so the mean is only the
/// `f32` round-off), and the potential `U = ½ k_c Σ_i q_i φ(x_i)` from one more inverse
/// transform of the same charges' transform.
///
/// **Error.** [`P3m::with_tolerance`] asks for a relative RMS force error (`‖F − F_exact‖ /
/// ‖F_exact‖` over the charges); the default is [`P3M_DEFAULT_TOLERANCE`], 10⁻², and 10⁻³ is
/// `P3m::with_tolerance(1e-3)`. The settings per level are calibrated (`tests/p3m.rs` checks
/// them against the direct sum); the short-range form of charges closer than `a` (Eq. (C1) of
/// [`crate::coulomb`]) is exact, since `r_c ≥ a`.
///
/// **Sparse scenes.** The mesh spans the charges' box at the spacing their neighbours need, so
/// empty space between objects costs mesh points: two 50K-vertex tori 3 m apart take 83 ms
/// (5.9× faster than DDEF), 10 m apart 258 ms (1.08×), measured with `examples/p3m_bench.rs
/// --shapes apart`. When
/// that would take more than 2²⁵ FFT points (about 330 MB; e.g. two balls 350 m apart, `tests/p3m.rs`), this solver runs [`Ddef::adaptive`] instead, says why in [`P3m::fallback_reason`],
/// and reports [`FieldMethod::Ddef`] from [`FieldSolver::method`] until the box allows the mesh
/// again.
///
/// Particle-particle particle-mesh (P3M) Coulomb forces, [Hockney & Eastwood
/// 1988](P3m#references) ch. 8, in free space: Ewald's split `1/r = erf(α r)/r + erfc(α r)/r`
/// (`split`); the smooth part on a regular mesh (charges spread with B-splines of order `p`,
/// `spline`; convolved by FFT with 2× zero padding and a cached, deconvolved kernel
/// transform, `fft`; the field interpolated back with the same splines); the rest summed
/// exactly (Eq. (C1) of [`crate::coulomb`]), over pairs within `r_c` on a cell list (`short`). `α`, `h`, `p` and
/// `r_c` follow from the error asked for (`params`). `O(n)` in the pair sum at fixed density
/// and `O(M log M)` in the mesh of `M` points.
///
/// # References
/// - **\[Hockney & Eastwood 1988\]** R. W. Hockney, J. W. Eastwood. *Computer Simulation Using
///   Particles.* Adam Hilger, 1988. doi:10.1201/9780367806934.
/// - **\[Deserno & Holm 1998\]** M. Deserno, C. Holm. *How to mesh up Ewald sums.* J. Chem.
///   Phys. 109, 7678 and 7694 (1998). doi:10.1063/1.477414.
/// - **\[Essmann et al. 1995\]** U. Essmann, L. Perera, M. L. Berkowitz, T. Darden, H. Lee,
///   L. G. Pedersen. *A smooth particle mesh Ewald method.* J. Chem. Phys. 103, 8577 (1995).
///   doi:10.1063/1.470117.
pub struct P3m {
    tolerance: Real,
    mesh: Option<Mesh>,
    charged: Charged,
    /// Grid coordinates of the charged vertices.
    u: Vec<Vec3>,
    rho: Vec<f32>,
    field: Vec<f32>,
    phi: Vec<f32>,
    slab_order: Vec<u32>,
    slab_starts: Vec<usize>,
    cells: Cells,
    /// Whether `mesh.conv` holds the transform of `charged` and `cells` its sorting.
    staged: bool,
    /// DDEF, and why, while the scene needs a mesh larger than allowed; the box diagonal that
    /// decided it.
    fallback: Option<(Ddef, String, Real)>,
    timings: P3mTimings,
}

impl Default for P3m {
    fn default() -> Self {
        Self::new()
    }
}

impl P3m {
    /// A P3M solver for a relative RMS force error of [`P3M_DEFAULT_TOLERANCE`].
    pub fn new() -> Self {
        P3m {
            tolerance: P3M_DEFAULT_TOLERANCE,
            mesh: None,
            charged: Charged::default(),
            u: vec![],
            rho: vec![],
            field: vec![],
            phi: vec![],
            slab_order: vec![],
            slab_starts: vec![],
            cells: Cells::default(),
            staged: false,
            fallback: None,
            timings: P3mTimings::default(),
        }
    }

    /// Asks for a relative RMS force error of `tolerance` (e.g. `1e-3`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] unless `1e-4 <= tolerance <= 0.1` (the calibrated range).
    pub fn with_tolerance(mut self, tolerance: Real) -> Result<Self> {
        if !(1e-4..=0.1).contains(&tolerance) {
            return Err(Error::InvalidArgument {
                name: "tolerance",
                index: None,
                reason: format!("{tolerance}: P3M is calibrated for 1e-4 ..= 0.1"),
            });
        }
        self.tolerance = tolerance;
        self.mesh = None;
        Ok(self)
    }

    /// The relative RMS force error asked for.
    pub fn tolerance(&self) -> Real {
        self.tolerance
    }

    /// Stage timings and parameters of the last call.
    pub fn timings(&self) -> P3mTimings {
        self.timings
    }

    /// Why the last call ran DDEF instead of P3M, if it did.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.fallback.as_ref().map(|(_, why, _)| why.as_str())
    }

    /// Gathers the charges, (re)chooses the mesh when needed, spreads and transforms the charges
    /// and sorts them into cells. Returns `false` when fewer than two vertices are charged or
    /// the scene falls back to DDEF.
    fn stage(&mut self, x: &[Vec3], q: &[Real], a: Real) -> Result<bool> {
        self.staged = false;
        self.charged.gather(x, q);
        let n = self.charged.x.len();
        if n < 2 {
            return Ok(false);
        }
        let (lo, hi) = bounds(&self.charged.x);
        if !self.charged.x.iter().all(crate::math::is_finite3) {
            return Err(Error::InvalidArgument {
                name: "x",
                index: None,
                reason: "a charged vertex's position is not finite".into(),
            });
        }
        let t0 = Instant::now();
        if let Some((_, _, diag)) = &self.fallback {
            let now = (hi - lo).norm();
            if (now - diag).abs() < 0.25 * diag {
                return Ok(false);
            }
            self.fallback = None;
        }
        let keep = self.mesh.as_ref().is_some_and(|m| {
            m.n == n && m.grid.holds(lo, hi) && {
                let fresh = Grid::fft_points(lo, hi, m.grid.h, m.grid.order);
                fresh > 0.4 * m.grid.m.iter().product::<usize>() as f64
            }
        });
        if keep {
            self.mesh.as_mut().expect("kept").grid.center(lo, hi);
            self.timings.setup = 0.0;
        } else {
            match choose(&self.charged.x, lo, hi, self.tolerance, a) {
                Choice::Fallback(why) => {
                    self.mesh = None;
                    self.fallback = Some((Ddef::adaptive(), why, (hi - lo).norm()));
                    return Ok(false);
                }
                Choice::Run { alpha, h, r_c, order } => {
                    let grid = Grid::fit(lo, hi, h, order);
                    let split = Split::new(alpha, r_c);
                    let (conv, near_kernel) = match self.mesh.take() {
                        Some(m) if m.conv.fits(&grid) && m.grid.h == h && m.split.alpha == alpha => {
                            (m.conv, m.near_kernel)
                        }
                        _ => {
                            let mut conv = Convolution::new(&grid, &split);
                            let near = conv.near_kernel(order);
                            (conv, near)
                        }
                    };
                    self.mesh = Some(Mesh { grid, split, conv, near_kernel, n });
                }
            }
            self.timings.setup = t0.elapsed().as_secs_f64();
        }
        let mesh = self.mesh.as_mut().expect("a mesh was placed");
        let (grid, split) = (&mesh.grid, &mesh.split);
        let t1 = Instant::now();
        self.u.clear();
        self.u.extend(self.charged.x.iter().map(|&p| grid.to_grid(p)));
        bin_slabs(grid, &self.u, &mut self.slab_order, &mut self.slab_starts);
        self.rho.resize(grid.len(), 0.0);
        spline::spread(grid, &self.u, &self.charged.q, &self.slab_order, &self.slab_starts, &mut self.rho);
        let t2 = Instant::now();
        mesh.conv.transform_charges(&self.rho);
        let t3 = Instant::now();
        self.cells.build(&self.charged.x, &self.charged.q, lo, hi, split.r_c);
        let t4 = Instant::now();
        self.timings.spread = (t2 - t1).as_secs_f64();
        self.timings.fft = (t3 - t2).as_secs_f64();
        self.timings.short = (t4 - t3).as_secs_f64();
        self.timings.alpha = split.alpha;
        self.timings.h = grid.h;
        self.timings.r_c = split.r_c;
        self.timings.order = grid.order;
        self.timings.mesh = grid.n;
        self.timings.fft_mesh = grid.m;
        self.staged = true;
        Ok(true)
    }
}

impl FieldSolver for P3m {
    /// [`FieldMethod::P3m`], or [`FieldMethod::Ddef`] while the scene falls back to it.
    fn method(&self) -> FieldMethod {
        if self.fallback.is_some() {
            FieldMethod::Ddef
        } else {
            FieldMethod::P3m
        }
    }

    /// Sizes the next mesh for `tolerance` (chosen anew at the next call).
    fn set_tolerance(&mut self, tolerance: Real) {
        if tolerance != self.tolerance {
            self.tolerance = tolerance;
            self.mesh = None;
        }
    }

    fn forces(&mut self, x: &[Vec3], q: &[Real], k_c: Real, a: Real, out: &mut [Vec3]) -> Result<()> {
        assert!(x.len() == q.len() && q.len() == out.len());
        out.fill(Vec3::zeros());
        if coincident(x, q).is_some() {
            return Ok(()); // every pair at distance 0: no force, as in the direct sum
        }
        if !self.stage(x, q, a)? {
            self.timings.fell_back = self.fallback.is_some();
            if let Some((ddef, _, _)) = &mut self.fallback {
                return ddef.forces(x, q, k_c, a, out);
            }
            return Ok(()); // no pair, no force
        }
        self.timings.fell_back = false;
        let mesh = self.mesh.as_mut().expect("staged");
        let t0 = Instant::now();
        self.field.resize(3 * mesh.grid.len(), 0.0);
        for d in 0..3 {
            mesh.conv.inverse(Output::Field(d), &mut self.field, 3, d);
        }
        let t1 = Instant::now();
        let n = self.charged.x.len();
        let mut long = vec![Vec3::zeros(); n];
        spline::interpolate_field(&mesh.grid, &self.u, &self.field, &mut long);
        let t2 = Instant::now();
        let mut near = vec![Vec3::zeros(); n];
        self.cells.fields(&mesh.split, a * a, &mut near);
        for (s, &i) in self.cells.index.iter().enumerate() {
            long[i as usize] += near[s];
        }
        let (index, cq) = (&self.charged.index, &self.charged.q);
        let mut net = Vec3::zeros();
        for ((&v, e), &qi) in index.iter().zip(&long).zip(cq) {
            out[v as usize] = e * (k_c * qi);
            net += out[v as usize];
        }
        let correction = net / n as Real;
        for &v in index {
            out[v as usize] -= correction;
        }
        self.timings.fft += (t1 - t0).as_secs_f64();
        self.timings.interpolate = (t2 - t1).as_secs_f64();
        self.timings.short += t2.elapsed().as_secs_f64();
        Ok(())
    }

    /// `U = ½ k_c Σ_i q_i (φ_mesh(x_i) − q_i s(x_i) + φ_short(x_i))`: the mesh potential
    /// interpolated at each charge, less its own charge's share `q_i s(x_i)` (the mesh's
    /// interaction of a charge with itself where it sits: `2α/√π` on average, but it varies
    /// with the position in the cell by more than the tolerance when a few charges carry the
    /// energy), plus the short-range pair sums. After [`FieldSolver::forces`] at the same positions it
    /// reuses the charges' transform and cell list: one inverse transform, one interpolation
    /// and one pair sum of one component.
    fn potential(&mut self, x: &[Vec3], q: &[Real], k_c: Real, a: Real) -> Result<Real> {
        assert_eq!(x.len(), q.len());
        if let Some((sum, squares)) = coincident(x, q) {
            // every pair at distance 0: Σ_{i<j} q_i q_j φ_a(0) = 3/(2a), or nothing at a = 0 (as
            // the direct sum)
            return Ok(0.5 * k_c * (sum * sum - squares) * inv_r(0.0, a * a));
        }
        let reuse = self.staged && self.fallback.is_none() && self.charged.matches(x, q);
        if !reuse && !self.stage(x, q, a)? {
            if let Some((ddef, _, _)) = &mut self.fallback {
                return ddef.potential(x, q, k_c, a);
            }
            return Ok(0.0);
        }
        let mesh = self.mesh.as_mut().expect("staged");
        self.phi.resize(mesh.grid.len(), 0.0);
        mesh.conv.inverse(Output::Potential, &mut self.phi, 1, 0);
        let n = self.charged.x.len();
        let mut long = vec![0.0; n];
        spline::interpolate_potential(&mesh.grid, &self.u, &self.phi, &mut long);
        let mut near = vec![0.0; n];
        self.cells.potentials(&mesh.split, a * a, &mut near);
        let mut own = vec![0.0; n];
        spline::self_interaction(&mesh.grid, &self.u, &mesh.near_kernel, &mut own);
        let cq = &self.charged.q;
        let mut sum = 0.0;
        for (s, &i) in self.cells.index.iter().enumerate() {
            let i = i as usize;
            sum += cq[i] * (long[i] - cq[i] * own[i] + near[s]);
        }
        Ok(0.5 * k_c * sum)
    }
}

/// `(Σ q, Σ q²)` when all the charged vertices (at least two) sit at one point, else `None`: a
/// mesh cannot be fitted to a box of size 0.
fn coincident(x: &[Vec3], q: &[Real]) -> Option<(Real, Real)> {
    let mut charged = x.iter().zip(q).filter(|(_, &q)| q != 0.0);
    let (first, _) = charged.next()?;
    let mut count = 1;
    for (p, _) in charged {
        if p != first {
            return None;
        }
        count += 1;
    }
    let (sum, squares) = q.iter().fold((0.0, 0.0), |(s, s2), &q| (s + q, s2 + q * q));
    (count >= 2).then_some((sum, squares))
}

/// The charges' bounding box.
fn bounds(x: &[Vec3]) -> (Vec3, Vec3) {
    x.iter().fold((Vec3::repeat(Real::INFINITY), Vec3::repeat(Real::NEG_INFINITY)), |(lo, hi), p| {
        (lo.inf(p), hi.sup(p))
    })
}

/// Sorts the charges by slab of the spreading (see [`spline::spread`]).
fn bin_slabs(grid: &Grid, u: &[Vec3], order: &mut Vec<u32>, starts: &mut Vec<usize>) {
    let axis = grid.longest_axis();
    let p = grid.order;
    let width = p.max(grid.n[axis].div_ceil(8 * rayon::current_num_threads()));
    let slabs = grid.n[axis].div_ceil(width);
    let slab = |u: &Vec3| ((u[axis] - 0.5 * p as Real).floor() as i64 + 1).max(0) as usize / width;
    starts.clear();
    starts.resize(slabs + 1, 0);
    for v in u {
        starts[slab(v).min(slabs - 1) + 1] += 1;
    }
    for s in 0..slabs {
        starts[s + 1] += starts[s];
    }
    let mut next = starts.clone();
    order.clear();
    order.resize(u.len(), 0);
    for (i, u) in u.iter().enumerate() {
        let s = slab(u).min(slabs - 1);
        order[next[s]] = i as u32;
        next[s] += 1;
    }
}
