//! Issue 29's "cheaper solve": does an f32 Cholesky factor of the global matrix `A = M + h²L`
//! pay? The solve streams the factor from memory (`linsolve` module docs), so a factor of half
//! the bytes could solve up to twice as fast. Measured here on the bake benchmark's cloth (a
//! square grid of `--n` vertices, 2 m wide, structural/bending springs 100/10 N/m, 1 kg lumped
//! by area, top row pinned, h = 1/72 s: 3 steps per 24 fps frame), with faer's sparse Cholesky
//! (AMD, simplicial, as `GlobalSolver`) in f64 and in f32:
//!
//! - time of one 3-column solve (median of `--reps`), and of the factorization;
//! - the f32 solve's error against the f64 solve, `‖x₃₂ − x₆₄‖ / ‖x₆₄‖`, for the right-hand side
//!   of one local/global iteration of a hanging cloth (`M y + h² J d` at rest, gravity-loaded),
//!   plain and after one step of iterative refinement in f64 (`r = b − A x` in f64, `A δ = r`
//!   solved in f32, `x += δ`), which costs a second f32 solve and a sparse product.
//!
//! Run: `RAYON_NUM_THREADS=2 cargo run --release -p cmsc-core --example f32_solve -- [--n 10000] [--reps 20]`.

use std::time::Instant;

use cmsc_core::shapes::grid;
use cmsc_core::{springs_from_triangles, Real};
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::LltRegularization;
use faer::sparse::linalg::cholesky::{
    factorize_symbolic_cholesky, CholeskySymbolicParams, SymbolicCholesky, SymmetricOrdering,
};
use faer::sparse::linalg::SupernodalThreshold;
use faer::sparse::{SparseColMat, Triplet};
use faer::{Conj, Mat, Par, Side};

#[path = "common/args.rs"]
mod args;
#[path = "common/lumped.rs"]
mod lumped;
use args::arg;
use lumped::area_lumped;

/// A factored matrix in precision `T` with its scratch.
struct Factor<T> {
    symbolic: SymbolicCholesky<u32>,
    values: Vec<T>,
    scratch: MemBuffer,
}

fn factor<T: faer::traits::RealField + Copy>(a: &SparseColMat<u32, T>) -> Factor<T> {
    let symbolic = factorize_symbolic_cholesky(
        a.symbolic(),
        Side::Lower,
        SymmetricOrdering::Amd,
        CholeskySymbolicParams {
            supernodal_flop_ratio_threshold: SupernodalThreshold::FORCE_SIMPLICIAL,
            ..Default::default()
        },
    )
    .unwrap();
    let req = symbolic
        .factorize_numeric_llt_scratch::<T>(Par::Seq, Default::default())
        .or(symbolic.solve_in_place_scratch::<T>(3, Par::Seq));
    let mut scratch = MemBuffer::new(req);
    let mut values = vec![T::zero_impl(); symbolic.len_val()];
    symbolic
        .factorize_numeric_llt(
            &mut values,
            a.as_ref(),
            Side::Lower,
            LltRegularization::default(),
            Par::Seq,
            MemStack::new(&mut scratch),
            Default::default(),
        )
        .unwrap();
    Factor { symbolic, values, scratch }
}

impl<T: faer::traits::RealField + Copy> Factor<T> {
    fn solve(&mut self, rhs: &mut Mat<T>) {
        let llt = faer::sparse::linalg::cholesky::LltRef::new(&self.symbolic, &self.values);
        llt.solve_in_place_with_conj(Conj::No, rhs.as_mut(), Par::Seq, MemStack::new(&mut self.scratch));
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let n: u32 = arg("--n", 10_000);
    let reps: usize = arg("--reps", 20);
    let side = (n as f64).sqrt().round() as u32;
    let mesh = grid(side, side, 2.0 / (side - 1) as f64);
    let nv = mesh.positions.len();
    let (ends, k) = springs_from_triangles(nv, &mesh.triangles).unwrap().with_stiffness(100.0, 10.0);
    let mass = area_lumped(&mesh, 1.0);
    let h: Real = 1.0 / 72.0;
    let h2 = h * h;
    // free vertices: all but the top row
    let pinned: Vec<bool> = mesh.positions.iter().map(|p| p.y > 2.0 - 1e-9).collect();
    let mut free_of = vec![u32::MAX; nv];
    let mut nf = 0u32;
    for i in 0..nv {
        if !pinned[i] {
            free_of[i] = nf;
            nf += 1;
        }
    }
    let nf = nf as usize;
    let (mut lower, mut full) = (Vec::new(), Vec::new());
    for i in 0..nv {
        if !pinned[i] {
            let f = free_of[i];
            lower.push(Triplet::new(f, f, mass[i]));
            full.push(Triplet::new(f, f, mass[i]));
        }
    }
    for (&[a, b], &ks) in ends.iter().zip(&k) {
        let (fa, fb) = (free_of[a as usize], free_of[b as usize]);
        let w = h2 * ks;
        for f in [fa, fb].into_iter().filter(|&f| f != u32::MAX) {
            lower.push(Triplet::new(f, f, w));
            full.push(Triplet::new(f, f, w));
        }
        if fa != u32::MAX && fb != u32::MAX {
            lower.push(Triplet::new(fa.max(fb), fa.min(fb), -w));
            full.push(Triplet::new(fa, fb, -w));
            full.push(Triplet::new(fb, fa, -w));
        }
    }
    let a64 = SparseColMat::<u32, f64>::try_new_from_triplets(nf, nf, &lower).unwrap();
    let a_full = SparseColMat::<u32, f64>::try_new_from_triplets(nf, nf, &full).unwrap();
    let lower32: Vec<Triplet<u32, u32, f32>> =
        lower.iter().map(|t| Triplet::new(t.row, t.col, t.val as f32)).collect();
    let a32 = SparseColMat::<u32, f32>::try_new_from_triplets(nf, nf, &lower32).unwrap();

    let t = Instant::now();
    let mut f64_factor = factor(&a64);
    let factor64 = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut f32_factor = factor(&a32);
    let factor32 = t.elapsed().as_secs_f64();

    // b = M y + h² (J d + m g): the rest shape loaded by gravity, springs at rest (J d = L x)
    let g = -9.81;
    let mut b = Mat::<f64>::zeros(nf, 3);
    for i in 0..nv {
        if let Some(f) = Some(free_of[i]).filter(|&f| f != u32::MAX) {
            let p = mesh.positions[i];
            for c in 0..3 {
                b[(f as usize, c)] = mass[i] * p[c];
            }
            b[(f as usize, 2)] += h2 * mass[i] * g;
        }
    }
    // J d at rest = L x: add h² k (x_a − x_b) to a, subtract from b (free rows)
    for (&[a, bb], &ks) in ends.iter().zip(&k) {
        let d = mesh.positions[a as usize] - mesh.positions[bb as usize];
        for (v, sign) in [(a, 1.0), (bb, -1.0)] {
            let f = free_of[v as usize];
            if f != u32::MAX {
                for c in 0..3 {
                    b[(f as usize, c)] += sign * h2 * ks * d[c];
                }
            }
        }
    }
    // and the pinned coupling h² k x_p (A_FP x_P moved to the right-hand side)
    for (&[a, bb], &ks) in ends.iter().zip(&k) {
        for (f, p) in [(a, bb), (bb, a)] {
            if free_of[f as usize] != u32::MAX && pinned[p as usize] {
                for c in 0..3 {
                    b[(free_of[f as usize] as usize, c)] += h2 * ks * mesh.positions[p as usize][c];
                }
            }
        }
    }
    let (mut t64, mut t32) = (Vec::new(), Vec::new());
    let mut x64 = b.clone();
    let mut x32 = Mat::<f32>::zeros(nf, 3);
    for _ in 0..reps {
        x64.copy_from(&b);
        let t = Instant::now();
        f64_factor.solve(&mut x64);
        t64.push(t.elapsed().as_secs_f64());
        for i in 0..nf {
            for c in 0..3 {
                x32[(i, c)] = b[(i, c)] as f32;
            }
        }
        let t = Instant::now();
        f32_factor.solve(&mut x32);
        t32.push(t.elapsed().as_secs_f64());
    }
    let widen = |m: &Mat<f32>| Mat::<f64>::from_fn(nf, 3, |i, c| m[(i, c)] as f64);
    let rel = |x: &Mat<f64>| (x - &x64).norm_l2() / x64.norm_l2();
    let plain_err = rel(&widen(&x32));
    // one refinement step: r = b − A x (f64), A δ = r (f32), x += δ
    let mut refined = widen(&x32);
    let r = &b - &a_full * &refined;
    let mut delta = Mat::<f32>::from_fn(nf, 3, |i, c| r[(i, c)] as f32);
    let t = Instant::now();
    f32_factor.solve(&mut delta);
    let refine_solve = t.elapsed().as_secs_f64();
    refined += widen(&delta);
    let refined_err = rel(&refined);
    // what one iteration moves the cloth: the solution's change from the rest shape
    let moved = {
        let rest = Mat::<f64>::from_fn(nf, 3, |f, c| {
            let i = (0..nv).find(|&i| free_of[i] == f as u32).unwrap();
            mesh.positions[i][c]
        });
        (&x64 - &rest).norm_l2() / x64.norm_l2()
    };
    let (s64, s32) = (median(t64), median(t32));
    println!(
        "n = {nv} ({nf} free), factor entries {}: factorization f64 {:.1} ms, f32 {:.1} ms; 3-column solve f64 {:.2} ms, \
         f32 {:.2} ms ({:.2}×); f32 error {plain_err:.1e} plain, {refined_err:.1e} after one refinement (+{:.2} ms); \
         the step's own change ‖x − x_rest‖/‖x‖ = {moved:.1e}",
        f64_factor.values.len(),
        1e3 * factor64,
        1e3 * factor32,
        1e3 * s64,
        1e3 * s32,
        s64 / s32,
        1e3 * refine_solve,
    );
}
