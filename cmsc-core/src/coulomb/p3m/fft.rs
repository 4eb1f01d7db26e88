//! The free-space convolution of the spread charges with the long-range kernel,
//! `φ_m = Σ_n G((m − n) h) ρ_n` and `E_m = Σ_n E((m − n) h) ρ_n`, by FFT on a mesh doubled along
//! each axis (Hockney & Eastwood's zero padding, [Hockney & Eastwood 1988](super::P3m#references)
//! §6-5-4): offsets up to `±(n − 1)` fit without wrap-around, so the cyclic convolution is the
//! free-space one.
//!
//! The kernels are `G(r) = erf(α r) / r` and its field `E(r) = −∇G = r L(r)`,
//! `L(r) = erf(α r)/r³ − (2α/√π) e^{−α² r²}/r²`, sampled at the mesh offsets (minimum image in
//! the doubled mesh) and transformed once per mesh; each transform is divided by the
//! B-splines' aliasing sum `D(k) = Π_d Σ_j M_{2p}(p + j) cos(j θ_d)`, `θ_d = k_d h`, so that
//! spreading then interpolating with the same splines reproduces the continuous kernel on
//! average (the leading term of Hockney & Eastwood's optimal influence function, Eq. 8-22; the
//! `D` of smooth PME, Essmann et al. 1995 Eq. 4.4). The field kernels are odd: their transforms
//! are imaginary, and only those parts are kept; the potential's is real. All in `f32` (the
//! method's own error is `10⁻²`–`10⁻³`), kept until the mesh changes. The kernels' radial
//! factors are evaluated on one octant of the offsets, once for all four ([`Octant`]).
//!
//! Only the non-zero part is transformed: the forward pass runs its `x` transforms on the
//! `n_y n_z` occupied lines and its `y` transforms on the `n_z` occupied planes; the inverse
//! pass keeps only the first `n_z` planes after `z` and the first `n_y` rows after `y`. A
//! kernel, whose transform is kept only for `k_y ≤ m_y/2`, has its `z` transforms run on those
//! rows alone.

use std::f64::consts::PI;
use std::sync::Arc;

use rayon::prelude::*;
use realfft::num_complex::Complex;
use realfft::{ComplexToReal, RealFftPlanner, RealToComplex};
use rustfft::{Fft, FftPlanner};

use super::grid::Grid;
use super::spline::{bspline_at, Shared};
use super::split::Split;
use crate::math::Real;

type C32 = Complex<f32>;

/// Strided columns transformed together (gathered into one contiguous buffer).
const BLOCK: usize = 16;

/// What an inverse pass produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Output {
    /// The potential `φ`.
    Potential,
    /// Component `d` of the field `E`.
    Field(usize),
}

/// Plans, cached kernel transforms and buffers of one mesh's convolution.
pub(super) struct Convolution {
    n: [usize; 3],
    m: [usize; 3],
    /// `m_x / 2 + 1`: complex points per `x` line after the real transform.
    kx: usize,
    r2c: Arc<dyn RealToComplex<f32>>,
    c2r: Arc<dyn ComplexToReal<f32>>,
    fy: Arc<dyn Fft<f32>>,
    iy: Arc<dyn Fft<f32>>,
    fz: Arc<dyn Fft<f32>>,
    iz: Arc<dyn Fft<f32>>,
    /// Per [`Output`] (potential, then the three field components): the kernel transform,
    /// real part (potential) or imaginary part (field), over `[z ≤ m_z/2][y ≤ m_y/2][kx]` (a
    /// quarter: each is even or odd along `y` and `z`), divided by `D(k)` and by the length.
    kernels: [Vec<f32>; 4],
    /// The charges' transform, `[z][y][kx]`.
    spectrum: Vec<C32>,
    /// One inverse pass's partial result: `[z < n_z][y][kx]`.
    work: Vec<C32>,
}

impl Convolution {
    /// Plans the transforms of `grid`'s doubled mesh and transforms the kernels of `split`.
    pub fn new(grid: &Grid, split: &Split) -> Convolution {
        let (n, m) = (grid.n, grid.m);
        let kx = m[0] / 2 + 1;
        let mut real = RealFftPlanner::<f32>::new();
        let mut complex = FftPlanner::<f32>::new();
        let mut conv = Convolution {
            n,
            m,
            kx,
            r2c: real.plan_fft_forward(m[0]),
            c2r: real.plan_fft_inverse(m[0]),
            fy: complex.plan_fft_forward(m[1]),
            iy: complex.plan_fft_inverse(m[1]),
            fz: complex.plan_fft_forward(m[2]),
            iz: complex.plan_fft_inverse(m[2]),
            kernels: Default::default(),
            spectrum: vec![C32::default(); kx * m[1] * m[2]],
            work: vec![C32::default(); kx * m[1] * n[2]],
        };
        let octant = Octant::sample(m, grid.h, split);
        conv.kernels = [0, 1, 2, 3].map(|c| conv.kernel_transform(grid, &octant, c));
        conv
    }

    /// The effective potential kernel (spread, convolved, interpolated at grid points) at the
    /// offsets `[−(p − 1), p − 1]³` (`x` fastest): the potential of a unit charge spread at one
    /// grid point, for [`super::spline::self_interaction`]. Overwrites the charges' transform.
    pub fn near_kernel(&mut self, p: usize) -> Vec<f32> {
        let [n0, n1, n2] = self.n;
        let c = p - 1;
        let mut rho = vec![0.0f32; n0 * n1 * n2];
        rho[(c * n1 + c) * n0 + c] = 1.0;
        self.transform_charges(&rho);
        let mut phi = vec![0.0f32; n0 * n1 * n2];
        self.inverse(Output::Potential, &mut phi, 1, 0);
        let w = 2 * p - 1;
        let mut k = Vec::with_capacity(w * w * w);
        for z in 0..w {
            for y in 0..w {
                for x in 0..w {
                    k.push(phi[(z * n1 + y) * n0 + x]);
                }
            }
        }
        k
    }

    /// Whether this convolution was planned for `grid`'s sizes.
    pub fn fits(&self, grid: &Grid) -> bool {
        self.n == grid.n && self.m == grid.m
    }

    /// Transforms kernel `c` (0: `G`; 1–3: the components of `E`) sampled on the whole doubled
    /// mesh from `octant`, divided by `D(k)` and the length, keeping its real (`c = 0`) or
    /// imaginary part.
    fn kernel_transform(&mut self, grid: &Grid, octant: &Octant, c: usize) -> Vec<f32> {
        let m = self.m;
        let h = grid.h;
        let offset = |i: usize, d: usize| -> (Real, bool) {
            let nyquist = m[d].is_multiple_of(2) && i == m[d] / 2;
            let j = if i <= m[d] / 2 { i as Real } else { i as Real - m[d] as Real };
            (j * h, nyquist)
        };
        let along = |d: usize| -> Vec<(Real, bool)> { (0..m[d]).map(|i| offset(i, d)).collect() };
        let (rx, ry, rz) = (along(0), along(1), along(2));
        let fold_x: Vec<usize> = (0..m[0]).map(|x| octant.fold(x, 0)).collect();
        let mut sampled = vec![0.0f32; m[0] * m[1] * m[2]];
        sampled.par_chunks_mut(m[0] * m[1]).enumerate().for_each(|(z, plane)| {
            for (y, line) in plane.chunks_exact_mut(m[0]).enumerate() {
                let (potential, field) = octant.rows(y, z);
                // an odd kernel has no consistent value at the Nyquist offset
                let odd = |(r, at_nyquist): (Real, bool), l: Real| if at_nyquist { 0.0 } else { r * l };
                match c {
                    0 => line.iter_mut().zip(&fold_x).for_each(|(v, &i)| *v = potential[i] as f32),
                    1 => line
                        .iter_mut()
                        .zip(&fold_x)
                        .zip(&rx)
                        .for_each(|((v, &i), &r)| *v = odd(r, field[i]) as f32),
                    _ => {
                        let r = if c == 2 { ry[y] } else { rz[z] };
                        line.iter_mut().zip(&fold_x).for_each(|(v, &i)| *v = odd(r, field[i]) as f32);
                    }
                }
            }
        });
        let full = [m[0], m[1], m[2]];
        self.forward(&sampled, full, m[1] / 2 + 1);
        let aliasing = |d: usize| -> Vec<Real> {
            let (p, len) = (grid.order, m[d]);
            let b = bspline_at(0.0, 2 * p); // M_{2p}(j), j = 0..2p
            (0..len)
                .map(|k| {
                    let theta = 2.0 * PI * k as Real / len as Real;
                    (1 - p as i64..p as i64)
                        .map(|j| b[(p as i64 + j) as usize] * (j as Real * theta).cos())
                        .sum()
                })
                .collect()
        };
        let (dx, dy, dz) = (aliasing(0), aliasing(1), aliasing(2));
        let scale = 1.0 / (m[0] * m[1] * m[2]) as Real;
        let kx = self.kx;
        let (hy, hz) = (m[1] / 2 + 1, m[2] / 2 + 1);
        // only ky <= m_y/2 and kz <= m_z/2: the kernels are even or odd along each axis
        let mut out = vec![0.0f32; kx * hy * hz];
        out.par_chunks_mut(kx * hy).zip(self.spectrum.par_chunks(kx * m[1])).enumerate().for_each(
            |(z, (o, s))| {
                for y in 0..hy {
                    for k in 0..kx {
                        let v = s[y * kx + k];
                        let part = if c == 0 { v.re } else { v.im };
                        o[y * kx + k] = (part as Real * scale / (dx[k] * dy[y] * dz[z])) as f32;
                    }
                }
            },
        );
        out
    }

    /// The forward transform of `rho` (`occupied` points per axis, `x` fastest) zero-padded to
    /// the doubled mesh, into `spectrum`: complete in the first `rows` rows along `y` (`m_y` for
    /// the charges; a kernel keeps only `k_y ≤ m_y/2`, and its later rows are left unfinished,
    /// without their `z` transforms).
    fn forward(&mut self, rho: &[f32], occupied: [usize; 3], rows: usize) {
        let [_, m1, m2] = self.m;
        let [n0, n1, n2] = occupied;
        let kx = self.kx;
        let (r2c, fy, fz) = (&self.r2c, &self.fy, &self.fz);
        // x then y, plane by plane; planes past n2 are zero
        self.spectrum.par_chunks_mut(kx * m1).enumerate().for_each(|(z, plane)| {
            if z >= n2 {
                plane.fill(C32::default());
                return;
            }
            let mut line = r2c.make_input_vec();
            let mut scratch = r2c.make_scratch_vec();
            for y in 0..m1 {
                let row = &mut plane[y * kx..(y + 1) * kx];
                if y >= n1 {
                    row.fill(C32::default());
                    continue;
                }
                line[..n0].copy_from_slice(&rho[(z * n1 + y) * n0..(z * n1 + y + 1) * n0]);
                line[n0..].fill(0.0);
                r2c.process_with_scratch(&mut line, row, &mut scratch).expect("lengths match the plan");
            }
            columns(plane, kx, m1, fy, None);
        });
        // z, over the rows kept and all kx: strided columns, each y owned by one task
        let shared = Shared(self.spectrum.as_mut_ptr());
        (0..rows).into_par_iter().for_each(|y| {
            let mut buf = vec![C32::default(); BLOCK * m2];
            let mut scratch = vec![C32::default(); fz.get_inplace_scratch_len()];
            for k0 in (0..kx).step_by(BLOCK) {
                let b = BLOCK.min(kx - k0);
                for z in 0..m2 {
                    for j in 0..b {
                        // SAFETY: task `y` alone reads and writes row y of every plane
                        buf[j * m2 + z] = if z < n2 {
                            unsafe { *shared.ptr().add((z * m1 + y) * kx + k0 + j) }
                        } else {
                            C32::default()
                        };
                    }
                }
                fz.process_with_scratch(&mut buf[..b * m2], &mut scratch);
                for z in 0..m2 {
                    for j in 0..b {
                        // SAFETY: as above
                        unsafe { *shared.ptr().add((z * m1 + y) * kx + k0 + j) = buf[j * m2 + z] };
                    }
                }
            }
        });
    }

    /// Transforms the spread charges `rho` (the mesh's `n` points, `x` fastest) for the inverse
    /// passes.
    pub fn transform_charges(&mut self, rho: &[f32]) {
        self.forward(rho, self.n, self.m[1]);
    }

    /// One inverse pass: the charges' transform times the kernel of `what`, back to the mesh's
    /// `n` points, written to `out[stride · point + lane]`.
    pub fn inverse(&mut self, what: Output, out: &mut [f32], stride: usize, lane: usize) {
        let [_, m1, m2] = self.m;
        let [n0, n1, n2] = self.n;
        let kx = self.kx;
        let (kernel, imaginary) = match what {
            Output::Potential => (&self.kernels[0], false),
            Output::Field(d) => (&self.kernels[1 + d], true),
        };
        // the kernel is stored for ky <= m_y/2, kz <= m_z/2; beyond, mirrored, with the sign of
        // its parity along that axis (odd only for the field component along it)
        let hy = m1 / 2 + 1;
        let (odd_y, odd_z) = (what == Output::Field(1), what == Output::Field(2));
        let mirror = |i: usize, m: usize, odd: bool| {
            if i < m / 2 + 1 {
                (i, 1.0)
            } else {
                (m - i, if odd { -1.0 } else { 1.0 })
            }
        };
        let (spectrum, iz) = (&self.spectrum, &self.iz);
        let shared = Shared(self.work.as_mut_ptr());
        (0..m1).into_par_iter().for_each(|y| {
            let mut buf = vec![C32::default(); BLOCK * m2];
            let mut scratch = vec![C32::default(); iz.get_inplace_scratch_len()];
            for k0 in (0..kx).step_by(BLOCK) {
                let b = BLOCK.min(kx - k0);
                let (ky, sy) = mirror(y, m1, odd_y);
                for z in 0..m2 {
                    let at = (z * m1 + y) * kx + k0;
                    let (kz, sz) = mirror(z, m2, odd_z);
                    let kat = (kz * hy + ky) * kx + k0;
                    let sign: f32 = sy * sz;
                    for j in 0..b {
                        let (s, g) = (spectrum[at + j], sign * kernel[kat + j]);
                        // times g (real kernel) or i g (imaginary kernel)
                        buf[j * m2 + z] = if imaginary { C32::new(-s.im * g, s.re * g) } else { s * g };
                    }
                }
                iz.process_with_scratch(&mut buf[..b * m2], &mut scratch);
                for z in 0..n2 {
                    for j in 0..b {
                        // SAFETY: task `y` alone writes row y of every plane of `work`
                        unsafe { *shared.ptr().add((z * m1 + y) * kx + k0 + j) = buf[j * m2 + z] };
                    }
                }
            }
        });
        let (iy, c2r) = (&self.iy, &self.c2r);
        self.work.par_chunks_mut(kx * m1).zip(out.par_chunks_mut(n0 * n1 * stride)).for_each(
            |(plane, out)| {
                columns(plane, kx, m1, iy, Some(n1));
                let mut line = c2r.make_output_vec();
                let mut scratch = c2r.make_scratch_vec();
                for y in 0..n1 {
                    let row = &mut plane[y * kx..(y + 1) * kx];
                    // the imaginary parts of the DC and Nyquist terms of a real signal are round-off
                    row[0].im = 0.0;
                    if line.len() % 2 == 0 {
                        row[kx - 1].im = 0.0;
                    }
                    c2r.process_with_scratch(row, &mut line, &mut scratch).expect("lengths match the plan");
                    for (x, &v) in line[..n0].iter().enumerate() {
                        out[(y * n0 + x) * stride + lane] = v;
                    }
                }
            },
        );
    }
}

/// The long-range kernels' radial factors, `G(r)` and `L(r)` ([`Split`]), at the offsets of one
/// octant of the doubled mesh `m`: `(x h, y h, z h)` for `x ≤ m_x/2` (likewise `y`, `z`). The
/// mesh's offsets `j h` with `|j| ≤ m/2` are symmetric, and `r²` is the same, bit for bit, at
/// `±j` (`(−j) h = −(j h)` exactly), so every mesh point's factors are its octant point's: the
/// special functions are evaluated at an eighth of the points, once for all four kernels
/// (before, each kernel evaluated them on the whole mesh: 186 of the 262 ms the kernels took on
/// the 100K cloth's mesh of 384 × 384 × 48).
struct Octant {
    /// The doubled mesh's points per axis.
    m: [usize; 3],
    /// The octant's points per axis, `m/2 + 1`.
    len: [usize; 3],
    potential: Vec<Real>,
    field: Vec<Real>,
}

impl Octant {
    /// `G` and `L` of `split` at the octant's offsets of mesh `m`, spacing `h` (m).
    fn sample(m: [usize; 3], h: Real, split: &Split) -> Octant {
        let len = m.map(|m| m / 2 + 1);
        let plane = len[0] * len[1];
        let mut potential = vec![0.0; plane * len[2]];
        let mut field = vec![0.0; plane * len[2]];
        potential.par_chunks_mut(plane).zip(field.par_chunks_mut(plane)).enumerate().for_each(
            |(z, (potential, field))| {
                let rz = z as Real * h;
                for y in 0..len[1] {
                    let ry = y as Real * h;
                    for x in 0..len[0] {
                        let rx = x as Real * h;
                        let r2 = rx * rx + ry * ry + rz * rz;
                        potential[y * len[0] + x] = split.long_potential(r2);
                        field[y * len[0] + x] = split.long_field(r2);
                    }
                }
            },
        );
        Octant { m, len, potential, field }
    }

    /// The octant index of mesh index `i` along axis `d`: `i` up to `m_d/2`, `m_d − i` beyond
    /// (its offset, `(i − m_d) h`, is `−(m_d − i) h`).
    fn fold(&self, i: usize, d: usize) -> usize {
        if i <= self.m[d] / 2 {
            i
        } else {
            self.m[d] - i
        }
    }

    /// The factors `G` and `L` along the mesh's row `y` of plane `z` (index `x` folded).
    fn rows(&self, y: usize, z: usize) -> (&[Real], &[Real]) {
        let start = (self.fold(z, 2) * self.len[1] + self.fold(y, 1)) * self.len[0];
        let row = start..start + self.len[0];
        (&self.potential[row.clone()], &self.field[row])
    }
}

/// Transforms the `kx` columns (length `len`, stride `kx`) of `plane` with `fft`, in place;
/// with `keep = Some(k)` only the first `k` entries of each column are written back.
fn columns(plane: &mut [C32], kx: usize, len: usize, fft: &Arc<dyn Fft<f32>>, keep: Option<usize>) {
    let mut buf = vec![C32::default(); BLOCK * len];
    let mut scratch = vec![C32::default(); fft.get_inplace_scratch_len()];
    let keep = keep.unwrap_or(len);
    for k0 in (0..kx).step_by(BLOCK) {
        let b = BLOCK.min(kx - k0);
        for y in 0..len {
            for j in 0..b {
                buf[j * len + y] = plane[y * kx + k0 + j];
            }
        }
        fft.process_with_scratch(&mut buf[..b * len], &mut scratch);
        for y in 0..keep {
            for j in 0..b {
                plane[y * kx + k0 + j] = buf[j * len + y];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::Vec3;

    #[test]
    fn kernel_transforms_are_the_direct_dft_of_the_sampled_kernels_over_d() {
        // a mesh small enough for the O(M²) transform, with odd and even FFT sizes, against the
        // formula of the module docs: the DFT of each kernel sampled at the offsets, its real
        // (potential) or imaginary (field) part, over D(k) and the length
        let (p, h) = (4, 0.02);
        let grid = Grid { origin: Vec3::zeros(), h, n: [4, 2, 2], m: [12, 9, 8], order: p };
        let split = Split::new(20.0, 0.1);
        let conv = Convolution::new(&grid, &split);
        let m = grid.m;
        let offset =
            |i: usize, d: usize| if i <= m[d] / 2 { i as Real } else { i as Real - m[d] as Real } * h;
        let b = bspline_at(0.0, 2 * p);
        let aliasing = |k: usize, d: usize| -> Real {
            let theta = 2.0 * PI * k as Real / m[d] as Real;
            (1 - p as i64..p as i64).map(|j| b[(p as i64 + j) as usize] * (j as Real * theta).cos()).sum()
        };
        let (kx, hy, hz) = (m[0] / 2 + 1, m[1] / 2 + 1, m[2] / 2 + 1);
        for c in 0..4 {
            let (mut worst, mut largest): (Real, Real) = (0.0, 0.0);
            for k in (0..hz).flat_map(|z| (0..hy).flat_map(move |y| (0..kx).map(move |x| [x, y, z]))) {
                let (mut re, mut im) = (0.0, 0.0);
                for i in
                    (0..m[2]).flat_map(|z| (0..m[1]).flat_map(move |y| (0..m[0]).map(move |x| [x, y, z])))
                {
                    let r = [offset(i[0], 0), offset(i[1], 1), offset(i[2], 2)];
                    let r2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
                    let value = match c {
                        0 => split.long_potential(r2),
                        _ if m[c - 1].is_multiple_of(2) && i[c - 1] == m[c - 1] / 2 => 0.0,
                        _ => r[c - 1] * split.long_field(r2),
                    };
                    let phase =
                        -2.0 * PI * (0..3).map(|d| (k[d] * i[d]) as Real / m[d] as Real).sum::<Real>();
                    re += value * phase.cos();
                    im += value * phase.sin();
                }
                let part = if c == 0 { re } else { im };
                let length = (m[0] * m[1] * m[2]) as Real;
                let expected = part / length / (aliasing(k[0], 0) * aliasing(k[1], 1) * aliasing(k[2], 2));
                let got = conv.kernels[c][(k[2] * hy + k[1]) * kx + k[0]] as Real;
                worst = worst.max((got - expected).abs());
                largest = largest.max(expected.abs());
            }
            assert!(worst < 1e-4 * largest, "kernel {c}: off by {worst:e} of {largest:e}");
        }
    }

    #[test]
    fn the_octant_gives_every_mesh_point_its_kernels_bit_for_bit() {
        // even and odd sizes: an even axis has a Nyquist offset, m/2, that is its own mirror
        let (m, h) = ([10, 9, 8], 0.013);
        let split = Split::new(30.0, 0.1);
        let octant = Octant::sample(m, h, &split);
        let offset =
            |i: usize, d: usize| if i <= m[d] / 2 { i as Real } else { i as Real - m[d] as Real } * h;
        for z in 0..m[2] {
            for y in 0..m[1] {
                for x in 0..m[0] {
                    let r = [offset(x, 0), offset(y, 1), offset(z, 2)];
                    let r2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
                    let ((potential, field), at) = (octant.rows(y, z), octant.fold(x, 0));
                    assert_eq!(potential[at].to_bits(), split.long_potential(r2).to_bits(), "{x} {y} {z}");
                    assert_eq!(field[at].to_bits(), split.long_field(r2).to_bits(), "{x} {y} {z}");
                }
            }
        }
    }
}
