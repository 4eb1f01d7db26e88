//! The short-range part: for every pair closer than `r_c`, the exact term (Eq. (C1) of
//! [`crate::coulomb`]) minus the
//! mesh's long-range one ([`super::split`]), summed over a cell list of cells at least `r_c / 2`
//! wide. Charges are counting-sorted by cell (`x` fastest), so the five cells `x − 2 … x + 2`
//! of a neighbouring row are one contiguous run: each cell's targets scan 25 runs, the sources
//! of each cell gathered once for all its targets. Half-width cells scan a 2.5 r_c wide block
//! instead of 3 r_c: 0.69× the pairs on a surface, 0.58× in a volume. Parallel
//! over rows of cells; every target sums its own neighbours (no shared writes).

use rayon::prelude::*;

use crate::coulomb::kernel::{inv_r, LANES};

use super::spline::Shared;
use super::split::{clenshaw, Split, DEGREE};
use crate::math::{Real, Vec3};

/// Cells per charge at most: a sparse scene enlarges the cells rather than allocating a vast,
/// mostly empty list.
const MAX_CELLS_PER_CHARGE: usize = 4;

/// Cells per `r_c`: each cell's neighbourhood reaches this many cells each way.
const REACH: usize = 2;

/// Charges sorted into cells.
#[derive(Debug, Default)]
pub(super) struct Cells {
    dims: [usize; 3],
    lo: Vec3,
    inv_size: Real,
    /// `start[c]..start[c + 1]`: the sorted charges of cell `c`.
    start: Vec<usize>,
    /// Sorted positions and charges as structure of arrays.
    x: Vec<Real>,
    y: Vec<Real>,
    z: Vec<Real>,
    q: Vec<Real>,
    /// Index (into the caller's arrays) of each sorted charge.
    pub index: Vec<u32>,
}

impl Cells {
    /// Sorts the charges `x`, `q` (box `lo..hi`) into cells at least `r_c / 2` wide.
    pub fn build(&mut self, x: &[Vec3], q: &[Real], lo: Vec3, hi: Vec3, r_c: Real) {
        let ext = hi - lo;
        let mut size = r_c / REACH as Real;
        let cells_for = |s: Real| (0..3).map(|d| (ext[d] / s).floor() as usize + 1).product::<usize>();
        while cells_for(size) > MAX_CELLS_PER_CHARGE * x.len() + 64 {
            size *= 1.25;
        }
        self.dims = [0, 1, 2].map(|d| (ext[d] / size).floor() as usize + 1);
        self.lo = lo;
        self.inv_size = 1.0 / size;
        let cells = self.dims.iter().product::<usize>();
        let cell: Vec<usize> = x.iter().map(|p| self.cell_of(*p)).collect();
        self.start.clear();
        self.start.resize(cells + 1, 0);
        for &c in &cell {
            self.start[c + 1] += 1;
        }
        for c in 0..cells {
            self.start[c + 1] += self.start[c];
        }
        let mut next = self.start.clone();
        self.index.clear();
        self.index.resize(x.len(), 0);
        for (i, &c) in cell.iter().enumerate() {
            self.index[next[c]] = i as u32;
            next[c] += 1;
        }
        let sorted =
            |f: &dyn Fn(usize) -> Real| self.index.iter().map(|&i| f(i as usize)).collect::<Vec<Real>>();
        self.x = sorted(&|i| x[i].x);
        self.y = sorted(&|i| x[i].y);
        self.z = sorted(&|i| x[i].z);
        self.q = sorted(&|i| q[i]);
    }

    fn cell_of(&self, p: Vec3) -> usize {
        let c = [0, 1, 2].map(|d| (((p[d] - self.lo[d]) * self.inv_size) as usize).min(self.dims[d] - 1));
        (c[2] * self.dims[1] + c[1]) * self.dims[0] + c[0]
    }

    /// The short-range field sums per sorted charge: `Σ_{j, r < r_c} q_j d (1/max(r², a²)^{3/2} −
    /// L(r))` with `d = x_i − x_j` (the field over `k_c`), written to `out` in sorted order.
    pub fn fields(&self, split: &Split, a2: Real, out: &mut [Vec3]) {
        let avx2 = has_avx2();
        let fit = Fit32::new(split, a2);
        self.for_each_cell(out, |targets, src, out| {
            let origin = Vec3::new(self.x[targets.start], self.y[targets.start], self.z[targets.start]);
            src.narrow(origin);
            for (t, o) in targets.clone().zip(out.iter_mut()) {
                let p = [self.x[t] - origin.x, self.y[t] - origin.y, self.z[t] - origin.z].map(|v| v as f32);
                *o = if avx2 {
                    // SAFETY: the CPU has AVX2 and FMA (checked by has_avx2)
                    #[cfg(target_arch = "x86_64")]
                    unsafe {
                        field_avx2(p, src, &fit)
                    }
                    #[cfg(not(target_arch = "x86_64"))]
                    field_portable(p, src, &fit)
                } else {
                    field_portable(p, src, &fit)
                };
            }
        });
    }

    /// The short-range potential sums per sorted charge, `Σ_{j ≠ i, r < r_c} q_j (φ_a(r)
    /// − erf(α r)/r)` (`φ_a` of Eq. (C2); a coincident pair at `a = 0` has no exact term, as in
    /// the direct sum).
    pub fn potentials(&self, split: &Split, a2: Real, out: &mut [Real]) {
        self.for_each_cell(out, |targets, src, out| {
            for (t, o) in targets.clone().zip(out.iter_mut()) {
                let p = Vec3::new(self.x[t], self.y[t], self.z[t]);
                // the target itself is in `src`: its exact term is not counted (r = 0 and, with
                // a > 0, it would be 3q/(2a)), so add back what the sum subtracts for it
                let own = self.q[t] * (inv_r(0.0, a2) - clenshaw(&split.potential, -1.0));
                *o = potential_portable(p, src, split, a2) - own;
            }
        });
    }

    /// The contiguous runs of sorted charges in the cells within [`REACH`] of cell
    /// `(cx, cy, cz)`, one per row.
    fn runs(&self, cx: usize, cy: usize, cz: usize) -> Vec<std::ops::Range<usize>> {
        let [nx, ny, nz] = self.dims;
        let (x0, x1) = (cx.saturating_sub(REACH), (cx + REACH).min(nx - 1));
        let mut runs = Vec::with_capacity((2 * REACH + 1) * (2 * REACH + 1));
        for z in cz.saturating_sub(REACH)..=(cz + REACH).min(nz - 1) {
            for y in cy.saturating_sub(REACH)..=(cy + REACH).min(ny - 1) {
                let row = (z * ny + y) * nx;
                let run = self.start[row + x0]..self.start[row + x1 + 1];
                if !run.is_empty() {
                    runs.push(run);
                }
            }
        }
        runs
    }

    /// Calls `f(targets, sources, out)` for every non-empty cell: `targets` its sorted charges,
    /// `sources` those of the cells around it gathered (padded to [`LANES`]), `out` the
    /// targets' slots of `out`. Parallel over rows of cells.
    fn for_each_cell<T: Send, F>(&self, out: &mut [T], f: F)
    where
        F: Fn(std::ops::Range<usize>, &mut Sources, &mut [T]) + Sync,
    {
        let [nx, ny, nz] = self.dims;
        assert_eq!(out.len(), self.x.len());
        let shared = Shared(out.as_mut_ptr());
        (0..ny * nz).into_par_iter().for_each_init(Sources::default, |src, row| {
            let (cy, cz) = (row % ny, row / ny);
            for cx in 0..nx {
                let c = row * nx + cx;
                let targets = self.start[c]..self.start[c + 1];
                if targets.is_empty() {
                    continue;
                }
                src.clear();
                for run in self.runs(cx, cy, cz) {
                    src.x.extend_from_slice(&self.x[run.clone()]);
                    src.y.extend_from_slice(&self.y[run.clone()]);
                    src.z.extend_from_slice(&self.z[run.clone()]);
                    src.q.extend_from_slice(&self.q[run]);
                }
                src.pad();
                // SAFETY: each sorted charge belongs to one cell, each cell to one row, and each
                // row to one task: the targets' slots are written by this task alone.
                let out =
                    unsafe { std::slice::from_raw_parts_mut(shared.ptr().add(targets.start), targets.len()) };
                f(targets, src, out);
            }
        });
    }
}

/// The sources around one cell, structure of arrays padded with zero charges to [`LANES`]; for
/// the field also in `f32` relative to a point of the cell ([`Sources::narrow`]).
#[derive(Debug, Default)]
struct Sources {
    x: Vec<Real>,
    y: Vec<Real>,
    z: Vec<Real>,
    q: Vec<Real>,
    x32: Vec<f32>,
    y32: Vec<f32>,
    z32: Vec<f32>,
    q32: Vec<f32>,
}

impl Sources {
    fn clear(&mut self) {
        for v in [&mut self.x, &mut self.y, &mut self.z, &mut self.q] {
            v.clear();
        }
    }

    /// Fills the `f32` copies, positions relative to `origin` (within `2.5 r_c` of every source
    /// that matters, so `f32` keeps them to `10⁻⁷ r_c`), padded to [`LANES32`].
    fn narrow(&mut self, origin: Vec3) {
        let padded = self.q.len().div_ceil(LANES32) * LANES32;
        for (wide, narrow, o) in [
            (&self.x, &mut self.x32, origin.x),
            (&self.y, &mut self.y32, origin.y),
            (&self.z, &mut self.z32, origin.z),
        ] {
            narrow.clear();
            narrow.extend(wide.iter().map(|&v| ((v - o) as f32).clamp(-1e18, 1e18)));
            narrow.resize(padded, 1e18);
        }
        self.q32.clear();
        self.q32.extend(self.q.iter().map(|&q| q as f32));
        self.q32.resize(padded, 0.0);
    }

    /// Pads with zero charges far outside the cut-off.
    fn pad(&mut self) {
        let padded = self.q.len().div_ceil(LANES) * LANES;
        for v in [&mut self.x, &mut self.y, &mut self.z] {
            v.resize(padded, 1e100);
        }
        self.q.resize(padded, 0.0);
    }
}

/// Whether the CPU has AVX2 and FMA (cached by the standard library).
fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// `f32` lanes of the field kernel: two AVX2 registers.
const LANES32: usize = 16;

/// The field kernel's constants in `f32`.
struct Fit32 {
    coefficients: [f32; DEGREE + 1],
    to_unit: f32,
    rc2: f32,
    a2: f32,
}

impl Fit32 {
    fn new(split: &Split, a2: Real) -> Fit32 {
        Fit32 {
            coefficients: split.field.map(|c| c as f32),
            to_unit: split.to_unit as f32,
            rc2: (split.r_c * split.r_c) as f32,
            a2: a2 as f32,
        }
    }
}

/// [`field_portable`] compiled for AVX2 and FMA: the same code, eight lanes per instruction.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn field_avx2(p: [f32; 3], s: &Sources, fit: &Fit32) -> Vec3 {
    field_portable(p, s, fit)
}

/// `Σ_j q_j d (1/max(r², a²)^{3/2} − L(r))` over the sources within `r_c` of `p` (all relative
/// to the cell's origin), [`LANES32`] at a time with the lanes' own accumulators, branch-free
/// (selects), `L` by its Chebyshev fit; in `f32` (relative error ~10⁻⁶ of the pair sum, far
/// below the method's 10⁻³), summed in `f64` per lane at the end.
#[inline(always)]
fn field_portable(p: [f32; 3], s: &Sources, fit: &Fit32) -> Vec3 {
    let (mut ax, mut ay, mut az) = ([0.0f32; LANES32], [0.0f32; LANES32], [0.0f32; LANES32]);
    let chunks = s
        .x32
        .chunks_exact(LANES32)
        .zip(s.y32.chunks_exact(LANES32))
        .zip(s.z32.chunks_exact(LANES32).zip(s.q32.chunks_exact(LANES32)));
    for ((cx, cy), (cz, cq)) in chunks {
        let (mut dx, mut dy, mut dz, mut r2, mut y) =
            ([0.0f32; LANES32], [0.0f32; LANES32], [0.0f32; LANES32], [0.0f32; LANES32], [0.0f32; LANES32]);
        for l in 0..LANES32 {
            dx[l] = p[0] - cx[l];
            dy[l] = p[1] - cy[l];
            dz[l] = p[2] - cz[l];
            r2[l] = dx[l] * dx[l] + dy[l] * dy[l] + dz[l] * dz[l];
            y[l] = (r2[l] * fit.to_unit - 1.0).min(1.0);
        }
        let (mut b1, mut b2) = ([0.0f32; LANES32], [0.0f32; LANES32]);
        for &ck in fit.coefficients[1..].iter().rev() {
            for l in 0..LANES32 {
                let b0 = ck + 2.0 * y[l] * b1[l] - b2[l];
                b2[l] = b1[l];
                b1[l] = b0;
            }
        }
        for l in 0..LANES32 {
            let long = fit.coefficients[0] + y[l] * b1[l] - b2[l];
            let soft = r2[l].max(fit.a2);
            let r3 = soft * soft.sqrt();
            let exact = if r3 > f32::MIN_POSITIVE { 1.0 / r3 } else { 0.0 };
            let w = if r2[l] < fit.rc2 { cq[l] * (exact - long) } else { 0.0 };
            ax[l] += dx[l] * w;
            ay[l] += dy[l] * w;
            az[l] += dz[l] * w;
        }
    }
    let sum = |a: [f32; LANES32]| a.iter().map(|&v| v as Real).sum::<Real>();
    Vec3::new(sum(ax), sum(ay), sum(az))
}

/// `Σ_j q_j (φ_a(r) − erf(α r)/r)` over the sources within `r_c` of `p` (including `p`
/// itself if it is a source: the caller removes it).
#[inline(always)]
fn potential_portable(p: Vec3, s: &Sources, split: &Split, a2: Real) -> Real {
    let rc2 = split.r_c * split.r_c;
    let mut acc = [0.0; LANES];
    let chunks =
        s.x.chunks_exact(LANES)
            .zip(s.y.chunks_exact(LANES))
            .zip(s.z.chunks_exact(LANES).zip(s.q.chunks_exact(LANES)));
    for ((cx, cy), (cz, cq)) in chunks {
        let (mut r2, mut y) = ([0.0; LANES], [0.0; LANES]);
        for l in 0..LANES {
            let (dx, dy, dz) = (p.x - cx[l], p.y - cy[l], p.z - cz[l]);
            r2[l] = dx * dx + dy * dy + dz * dz;
            y[l] = (r2[l] * split.to_unit - 1.0).min(1.0);
        }
        let long = clenshaw_lanes(&split.potential, &y);
        for l in 0..LANES {
            let w = if r2[l] < rc2 { cq[l] * (inv_r(r2[l], a2) - long[l]) } else { 0.0 };
            acc[l] += w;
        }
    }
    acc.iter().sum()
}

/// [`clenshaw`] at [`LANES`] points at once (the loop over lanes innermost, so it vectorises).
#[inline(always)]
fn clenshaw_lanes(c: &[Real; DEGREE + 1], y: &[Real; LANES]) -> [Real; LANES] {
    let (mut b1, mut b2) = ([0.0; LANES], [0.0; LANES]);
    for &ck in c[1..].iter().rev() {
        for l in 0..LANES {
            let b0 = ck + 2.0 * y[l] * b1[l] - b2[l];
            b2[l] = b1[l];
            b1[l] = b0;
        }
    }
    let mut f = [0.0; LANES];
    for l in 0..LANES {
        f[l] = c[0] + y[l] * b1[l] - b2[l];
    }
    f
}
