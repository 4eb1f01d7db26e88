//! The DDEF solver, [`Ddef`]: its settings, what it keeps across calls (the grid and its world
//! box, each charge's last tet, the adaptive `m`), and one call, Alg. 1's steps in order (see
//! [`super`] for the method and its near-field rule).

use std::time::Instant;

use super::super::kernel::Soa;
use super::super::{Charged, FarFieldGather, FieldMethod, FieldSolver};
use super::adaptive::{first_grid, next_grid};
use super::delaunay::NONE;
use super::gather::far_field;
use super::grid::UnitGrid;
use super::grid_box::GridBox;
use super::locate::{locate_all, Location};
use super::near::NearField;
use super::neighborhood::Neighborhood;
use super::placement::{Placement, FOLLOW_GROWTH, FOLLOW_PAD};
use super::potential::{grid_potential, potentials};
use crate::error::Result;
use crate::math::{Real, Vec3};

/// Wall-clock time of each DDEF stage in the last call (s).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DdefTimings {
    /// Bounding box and grid mapping.
    pub grid: f64,
    /// Tetrahedralization (zero when the cached reference mesh was reused).
    pub tetrahedralize: f64,
    /// Morton sort, point location, barycentric coordinates, near sets and their inverse.
    pub locate: f64,
    /// Far field on the grid (the `O(m n)` gather).
    pub gather: f64,
    /// Interpolation and near-field correction at the charges.
    pub near: f64,
    /// The grid size `m` this call used.
    pub grid_points: u32,
    /// Pair terms the near field summed, `Σ_τ (n_τ + 4) |C_τ|`.
    pub near_pairs: u64,
    /// Grid points whose far field was summed again in `f64` because a charge outside their
    /// near set came close (a Delaunay sliver; see the gather's guard).
    pub guarded: u32,
}

/// The DDEF field solver, [Paper](crate#references) §3.1, Alg. 1: Halton grid in the charges'
/// padded box, Delaunay tetrahedralization (cached across calls), far field on the grid by the
/// `O(m n)` gather, interpolation at the charges, and exact near field. Near charges are those
/// left out of any vertex of the charge's tet; each is subtracted from the interpolation and
/// added exactly, so every charge is counted once (see the source's module docs).
///
/// Its [`FieldSolver::potential`] uses the same split: the far charges' potential interpolated
/// from the grid, the near ones' summed exactly, on the grid and near sets of the last `forces`
/// call at the same positions, for [`crate::Integrator::ImexLowDissipation`]'s energy safeguard
/// (see [`Ddef::potential`](FieldSolver::potential) for its cost and accuracy).
pub struct Ddef {
    /// Grid size of the next call (`0` before an adaptive solver's first call).
    m: u32,
    /// Whether `m` follows the work of the last call ([`Ddef::adaptive`]).
    adaptive: bool,
    /// Calls per whole evaluation ([`FieldSolver::set_far_field_interval`]).
    interval: u32,
    far_field: bool,
    neighborhood: Neighborhood,
    placement: Placement,
    grid: Option<UnitGrid>,
    /// The world box the grid was mapped to in the last call.
    frame: Option<GridBox>,
    /// Near-field pair terms of the first call on the current grid and of the last call.
    near_pairs: (u64, u64),
    /// The charged vertices (`q ≠ 0`): only they are sources or feel a force.
    charged: Charged,
    /// Their positions in the grid's reference coordinates.
    unit: Vec<Vec3>,
    /// Per vertex: last containing tet, the warm start of the next walk.
    warm: Vec<u32>,
    warm_scratch: Vec<u32>,
    loc: Location,
    /// The charges as structure of arrays, for the gather.
    sources: Soa,
    /// Grid points (m, world frame) of the last call.
    world: Vec<Vec3>,
    e_grid: Vec<Vec3>,
    /// Whether `charged`, `unit`, `loc`, `frame` and `world` describe one placement of the
    /// current `charged` (steps 1–3 completed): what [`FieldSolver::potential`] reuses.
    staged: bool,
    /// The far part of the last [`FieldSolver::forces`] call, per charged vertex (N:
    /// `k_c q_i` times the interpolated field of the charges outside `C_τ`), what
    /// [`FieldSolver::forces_holding_far_field`] adds to fresh near sums; `None` when `loc`
    /// no longer holds that call's near sets.
    held: Option<HeldFar>,
    timings: DdefTimings,
    /// Runs step 4 instead of the CPU gather when set (e.g. on a GPU).
    gather: Option<Box<dyn FarFieldGather>>,
}

impl Ddef {
    /// A DDEF solver with `m` Halton grid points (the paper's error is ≤ 0.1 from `m = 100`);
    /// `m = 0` gives [`Ddef::adaptive`].
    pub fn new(m: u32) -> Self {
        if m == 0 {
            return Self::adaptive();
        }
        Self::with_grid(m, false)
    }

    /// A DDEF solver that sizes its grid itself, the paper's suggested "adaptive m" (§4, Fig. 7),
    /// and puts most of its points where the charges are ([`Placement::Following`]).
    ///
    /// The cost is the far-field gather, `(m + 8) n` pair terms, plus the near field,
    /// `Σ_τ (n_τ + 4) |C_τ|` (charges in `τ` and the 4 grid corrections, each over `C_τ`); with
    /// charges on a surface the near term falls like `m^(−2/3)`, in a volume like `m^(−1)`.
    /// After each call both are counted and the next `m` is `m (near / (c gather))^0.6`, the
    /// balance point between those laws, with `c` the cost of a gather term relative to a near
    /// one (about ½, measured), on the levels `100 · 2^(k/2)` from
    /// [`ADAPTIVE_MIN_GRID_POINTS`](super::ADAPTIVE_MIN_GRID_POINTS) up to half the charges; it
    /// moves only when that is at least two levels (2×) away, so the Delaunay grid is rebuilt
    /// rarely. The first call starts at `5 n^0.6` (about 1,000 at n = 10K, 5,000 at 100K). The
    /// choice depends on counts, not clocks: runs repeat exactly.
    pub fn adaptive() -> Self {
        Self::with_grid(0, true)
    }

    fn with_grid(m: u32, adaptive: bool) -> Self {
        Ddef {
            m,
            adaptive,
            interval: 1,
            far_field: true,
            neighborhood: Neighborhood::default(),
            placement: if adaptive { Placement::Following } else { Placement::Uniform },
            grid: None,
            frame: None,
            near_pairs: (0, 0),
            charged: Charged::default(),
            unit: vec![],
            warm: vec![],
            warm_scratch: vec![],
            loc: Location::default(),
            sources: Soa::default(),
            world: vec![],
            e_grid: vec![],
            staged: false,
            held: None,
            timings: DdefTimings::default(),
            gather: None,
        }
    }

    /// Runs the far-field gather (step 4) on `gather`, e.g. a GPU; the other steps stay here.
    pub(crate) fn with_gather(mut self, gather: Box<dyn FarFieldGather>) -> Self {
        self.gather = Some(gather);
        self
    }

    /// Drops the far field and keeps only the exact near field: the paper's "far field
    /// ignored" comparison, to show what the grid contributes. Not for simulation.
    pub fn without_far_field(mut self) -> Self {
        self.far_field = false;
        self
    }

    /// Uses `neighborhood` for the near sets instead of the default [`Neighborhood::Ring`].
    pub fn with_neighborhood(mut self, neighborhood: Neighborhood) -> Self {
        self.neighborhood = neighborhood;
        self.grid = None;
        self
    }

    /// Uses `placement` for the grid points (by default [`Placement::Following`] for the
    /// adaptive solver, the paper's [`Placement::Uniform`] for a fixed `m`).
    pub fn with_placement(mut self, placement: Placement) -> Self {
        self.placement = placement;
        self.grid = None;
        self
    }

    /// Grid size `m` of the next call (of the last one, unless an adaptive solver moved it;
    /// `0` before an adaptive solver's first call).
    pub fn grid_points(&self) -> u32 {
        self.m
    }

    /// Where the grid points go.
    pub fn placement(&self) -> Placement {
        self.placement
    }

    /// Whether the grid size adapts ([`Ddef::adaptive`]).
    pub fn is_adaptive(&self) -> bool {
        self.adaptive
    }
}

impl Ddef {
    /// Maps the paper's uniform grid to this call's box `fresh`, rebuilding it when `m` changed
    /// or the box's aspect ratio drifted; fills `unit`. Returns the box and whether it rebuilt.
    fn place_uniform(&mut self, fresh: GridBox) -> Result<(GridBox, bool)> {
        let aspect = fresh.aspect();
        let rebuild = self.grid.as_ref().is_none_or(|g| g.m() != self.m as usize || !g.fits(aspect));
        if rebuild {
            self.grid = Some(UnitGrid::new(self.m, self.neighborhood, aspect)?);
            self.warm.clear();
        }
        let aspect = self.grid.as_ref().expect("grid was just built").aspect;
        self.unit.clear();
        self.unit.extend(self.charged.x.iter().map(|&p| fresh.to_reference(p, aspect)));
        self.frame = Some(fresh);
        Ok((fresh, rebuild))
    }

    /// Keeps the following grid and its world box while `m` is unchanged, every charge is in the
    /// box and moved by at most [`super::placement::FOLLOW_DRIFT`] of a band cell, and the near
    /// field's pair terms grew by at most [`FOLLOW_GROWTH`] since the grid was built; otherwise
    /// builds a new one in `fresh` grown by [`FOLLOW_PAD`]. Fills `unit`; returns the box and
    /// whether it rebuilt.
    fn place_following(&mut self, fresh: GridBox) -> Result<(GridBox, bool)> {
        if let (Some(grid), Some(frame)) = (&self.grid, self.frame) {
            if grid.m() == self.m as usize {
                self.unit.clear();
                self.unit.extend(self.charged.x.iter().map(|&p| frame.to_reference(p, grid.aspect)));
                let drifted = grid.drifted(&self.unit).unwrap_or(true);
                let outside = self.unit.iter().any(|u| (0..3).any(|k| u[k] <= 0.0 || u[k] >= grid.aspect[k]));
                let (first, last) = self.near_pairs;
                let grown = last as Real > FOLLOW_GROWTH * first as Real;
                if !drifted && !outside && !grown {
                    return Ok((frame, false));
                }
            }
        }
        let frame = fresh.grown(FOLLOW_PAD);
        let aspect = frame.aspect();
        self.unit.clear();
        self.unit.extend(self.charged.x.iter().map(|&p| frame.to_reference(p, aspect)));
        self.grid = Some(UnitGrid::following(self.m, self.neighborhood, aspect, &self.unit)?);
        self.warm.clear();
        self.frame = Some(frame);
        Ok((frame, true))
    }

    /// Step 5's inputs on the placed grid and located charges: the far field `e_grid` on the
    /// grid (empty when `far_field` is false or only the potential is wanted) and `a²`.
    fn near_field<'a>(&'a self, e_grid: &'a [Vec3], far_field: bool, a2: Real) -> NearField<'a> {
        NearField {
            grid: self.grid.as_ref().expect("a grid was placed"),
            loc: &self.loc,
            world: &self.world,
            e_grid,
            x: &self.charged.x,
            q: &self.charged.q,
            a2,
            far_field,
        }
    }

    /// Stage timings of the last call.
    pub fn timings(&self) -> DdefTimings {
        self.timings
    }

    /// Alg. 1, lines 1–3 for the charges of `x`, `q`: gathers the charged vertices, places the
    /// grid (steps 1–2) and locates the charges in it (step 3), filling `charged`, `unit`,
    /// `loc`, `frame` and `world`. Returns `None` when fewer than two vertices are charged (no
    /// pair), otherwise the grid's world box, whether the grid was rebuilt, and the instants
    /// after each step.
    fn stage(&mut self, x: &[Vec3], q: &[Real], a: Real) -> Result<Option<(GridBox, bool, [Instant; 3])>> {
        self.staged = false;
        self.held = None;
        self.charged.gather(x, q);
        if self.charged.index.len() < 2 {
            return Ok(None);
        }
        if self.m == 0 {
            self.m = first_grid(self.charged.index.len());
        }
        let fresh = GridBox::around(self.charged.x.iter().copied(), self.m as usize, a.max(1e-9));
        let t1 = Instant::now();
        let (grid_box, rebuild) = match self.placement {
            Placement::Uniform => self.place_uniform(fresh)?,
            Placement::Following => self.place_following(fresh)?,
        };
        let grid = self.grid.as_ref().expect("a grid was placed");
        let t2 = Instant::now();

        self.warm.resize(x.len(), NONE);
        self.warm_scratch.clear();
        self.warm_scratch.extend(self.charged.index.iter().map(|&i| self.warm[i as usize]));
        locate_all(grid, &self.unit, &mut self.warm_scratch, &mut self.loc);
        for (&i, &t) in self.charged.index.iter().zip(&self.warm_scratch) {
            self.warm[i as usize] = t;
        }
        self.world.clear();
        self.world.extend(grid.points.iter().map(|r| grid_box.reference_to_world(*r, grid.aspect)));
        let t3 = Instant::now();
        self.staged = true;
        Ok(Some((grid_box, rebuild, [t1, t2, t3])))
    }
}

impl FieldSolver for Ddef {
    fn method(&self) -> FieldMethod {
        self.gather.as_ref().map_or(FieldMethod::Ddef, |g| g.method())
    }

    fn forces(&mut self, x: &[Vec3], q: &[Real], k_c: Real, a: Real, out: &mut [Vec3]) -> Result<()> {
        assert!(x.len() == q.len() && q.len() == out.len());
        out.fill(Vec3::zeros());
        let t0 = Instant::now();
        let previous = self.held.take();
        let Some((grid_box, rebuild, [t1, t2, t3])) = self.stage(x, q, a)? else {
            return Ok(()); // no pair, no force
        };
        let a2 = a * a;
        let grid = self.grid.as_ref().expect("a grid was placed");
        let world = &self.world;

        let (cx, cq) = (&self.charged.x, &self.charged.q);
        let loc = &self.loc;
        self.e_grid.resize(world.len(), Vec3::zeros());
        let mut guarded = 0;
        if let (true, Some(gather)) = (self.far_field, self.gather.as_mut()) {
            gather.gather(world, cx, cq, a2, &loc.inv, &mut self.e_grid)?;
        } else if self.far_field {
            self.sources.load(cx, cq);
            let near = (&loc.inv.offsets[..], &loc.inv.items[..]);
            let extent = grid_box.size.max();
            guarded = far_field(&grid.blocks, world, extent, &self.sources, a2, near, &mut self.e_grid);
        } else {
            self.e_grid.fill(Vec3::zeros());
        }
        let t4 = Instant::now();

        let near = self.near_field(&self.e_grid, self.far_field, a2);
        let fields = near.fields();
        let near_pairs = fields.pairs;
        let far: Vec<Vec3> = fields.far.iter().zip(cq).map(|(e, &qi)| e * (k_c * qi)).collect();
        for (((&v, f), e), &qi) in self.charged.index.iter().zip(&far).zip(&fields.near).zip(cq) {
            out[v as usize] = f + e * (k_c * qi);
        }
        remove_net_force(&self.charged.index, out);
        // kept only for multiple time stepping: every whole call would copy it for nothing
        if self.far_field && self.interval > 1 {
            let (index, tets) = (&self.charged.index, &self.loc.tet);
            let previous = previous.filter(|p| !rebuild && p.k_c == k_c && p.a == a && p.index == *index);
            let slope = match previous {
                // the same split for a charge in the same tet of the same grid: its far part is
                // smooth in time, extrapolate it; otherwise hold it
                Some(p) => (0..far.len())
                    .map(|i| {
                        if p.tets[i] == tets[i] {
                            (far[i] - p.far[i]) / (p.calls + 1) as Real
                        } else {
                            Vec3::zeros()
                        }
                    })
                    .collect(),
                None => vec![Vec3::zeros(); far.len()],
            };
            self.held =
                Some(HeldFar { far, slope, calls: 0, index: index.clone(), tets: tets.clone(), k_c, a });
        }
        let t5 = Instant::now();
        let used_m = self.m;
        if rebuild {
            self.near_pairs.0 = near_pairs;
        }
        self.near_pairs.1 = near_pairs;
        // a kept following grid degrades as the charges move; its size is judged when it is new
        let representative = rebuild || self.placement == Placement::Uniform;
        if self.adaptive && self.far_field && representative {
            let n = self.charged.index.len();
            // the gather runs once per interval, the near field every call
            let gather = world.len() as f64 * n as f64 / self.interval as f64;
            self.m = next_grid(self.m, n, gather, near_pairs as f64);
        }
        self.timings = DdefTimings {
            grid: (t1 - t0).as_secs_f64(),
            tetrahedralize: if rebuild { (t2 - t1).as_secs_f64() } else { 0.0 },
            locate: (t3 - t2).as_secs_f64(),
            gather: (t4 - t3).as_secs_f64(),
            near: (t5 - t4).as_secs_f64(),
            grid_points: used_m,
            near_pairs,
            guarded: guarded as u32,
        };
        Ok(())
    }

    /// Multiple time stepping of the far field: the far part of the last [`FieldSolver::forces`]
    /// call held, the near part summed exactly at `x` over the same near sets `C_τ` (each charge
    /// keeps the tet it was located in, wherever it has moved since), then the net force
    /// removed as in `forces`. No grid placement, location, gather or corner corrections: the
    /// cost is the near field's `Σ_τ n_τ |C_τ|` pair terms. Falls back to `forces` when there
    /// is nothing to hold: before the first call, after [`FieldSolver::potential`] placed the
    /// charges anew, when a charge changed or `k_c` or `a` differ, for
    /// [`Ddef::without_far_field`], and while the interval
    /// ([`FieldSolver::set_far_field_interval`]) is 1, when `forces` keeps no far part. Between two whole evaluations on the same grid, a charge
    /// that stayed in its tet has its far part extrapolated linearly in the calls since, from its
    /// change between them (the split of its field is the same, so that change is smooth).
    fn forces_holding_far_field(
        &mut self,
        x: &[Vec3],
        q: &[Real],
        k_c: Real,
        a: Real,
        out: &mut [Vec3],
    ) -> Result<bool> {
        assert!(x.len() == q.len() && q.len() == out.len());
        let holds = self.held.as_ref().is_some_and(|h| h.k_c == k_c && h.a == a);
        if !(holds && self.charged.same_charges(q)) {
            return self.forces(x, q, k_c, a, out).map(|()| false);
        }
        let t0 = Instant::now();
        out.fill(Vec3::zeros());
        self.charged.x.clear();
        self.charged.x.extend(self.charged.index.iter().map(|&i| x[i as usize]));
        self.staged = false; // `loc` locates the charges where they were, not at `x`
        let fields = self.near_field(&[], false, a * a).fields();
        let cq = &self.charged.q;
        let held = self.held.as_mut().expect("checked above");
        held.calls += 1;
        let j = held.calls as Real;
        for ((((&v, f), s), e), &qi) in
            self.charged.index.iter().zip(&held.far).zip(&held.slope).zip(&fields.near).zip(cq)
        {
            out[v as usize] = f + s * j + e * (k_c * qi);
        }
        remove_net_force(&self.charged.index, out);
        self.timings = DdefTimings {
            near: t0.elapsed().as_secs_f64(),
            grid_points: self.m,
            near_pairs: fields.pairs,
            ..DdefTimings::default()
        };
        Ok(true)
    }

    /// The adaptive grid then balances the gather, run once per `steps` calls, against the near
    /// field, run every call: it grows (by about `steps^0.6`), and the near sets shrink.
    fn set_far_field_interval(&mut self, steps: u32) {
        self.interval = steps.max(1);
    }

    fn grid_size(&self) -> Option<u32> {
        Some(self.m)
    }

    /// DDEF's Coulomb potential energy (J), `U = ½ k_c Σ_i q_i φ̂(x_i)` with `φ̂` split like
    /// the field: the potential of the far charges interpolated over the charge's tet from the
    /// grid, that of the near ones summed exactly with the same softening (see the source's
    /// `potential` module docs). It reuses the grid, the point location and the near sets of the
    /// last [`FieldSolver::forces`] call when `x` and `q` are the ones that call saw (the
    /// integrators call `forces(x)` then `potential(x)`); otherwise it places and locates the
    /// charges first, as `forces` does.
    ///
    /// Cost: the grid potential, `(m + 8) n` `f64` terms, plus the near sums, the force's
    /// `Σ_τ (n_τ + 4) |C_τ|` terms of one component instead of three; no `f32` far-field gather
    /// and no locating when reused. The near sums are most of it, as they are of the force, so
    /// the potential costs about as much as a force evaluation, not a small fraction of one.
    /// Measured (`cargo run --release -p cmsc-core --example ddef_bench -- --m 0,1000`, torus
    /// points with every fifth charge negative, 2 threads on a 2-core VM that a CI job shared,
    /// so ±30 %): after `forces` at the same positions 0.6–0.9× the force's time (10K charges:
    /// ~20 ms against 23–29 ms; 100K: 0.52–0.67 s against 0.64–1.09 s), 0.8–1.4× on a fresh
    /// solver; the exact sum takes 190 ms at 10K and 18.6 s at 100K (10× and 28–36× the DDEF
    /// potential). Relative error of `U` against the exact sum 1.3·10⁻⁴–4.2·10⁻⁴ there and
    /// 7·10⁻⁵–1.2·10⁻³ on the test scenes (`tests/ddef.rs`), against the force's ~10⁻².
    fn potential(&mut self, x: &[Vec3], q: &[Real], k_c: Real, a: Real) -> Result<Real> {
        assert_eq!(x.len(), q.len());
        if !(self.staged && self.charged.matches(x, q)) && self.stage(x, q, a)?.is_none() {
            return Ok(0.0); // no pair, no energy
        }
        let a2 = a * a;
        let (cx, cq) = (&self.charged.x, &self.charged.q);
        let phi_grid = if self.far_field {
            self.sources.load(cx, cq);
            grid_potential(&self.world, &self.sources, a2)
        } else {
            vec![]
        };
        let near = self.near_field(&[], self.far_field, a2);
        let (sum, _pairs) = potentials(&near, &phi_grid);
        Ok(0.5 * k_c * sum)
    }
}

/// The far part of one [`FieldSolver::forces`] call, held for
/// [`FieldSolver::forces_holding_far_field`].
struct HeldFar {
    /// Per charged vertex (N).
    far: Vec<Vec3>,
    /// Its change per step, from the previous whole evaluation (N): zero for a charge whose tet
    /// changed or when the grid was rebuilt in between (its split changed).
    slope: Vec<Vec3>,
    /// Calls that used it since it was computed.
    calls: u32,
    /// The charged vertices and their tets when it was computed.
    index: Vec<u32>,
    tets: Vec<u32>,
    /// The `k_c` and charge radius `a` it was computed with.
    k_c: Real,
    a: Real,
}

/// Removes the mean force over the charged vertices `index` from `out`. Interpolation breaks
/// Newton's third law at the level of the approximation error, and a net internal force would
/// accelerate the whole mesh (at 0.01 kg per vertex the paper's torus drifted 175 m in 15 s).
/// Removing it conserves momentum exactly, as the direct sum does, and changes each force by no
/// more than the error itself.
fn remove_net_force(index: &[u32], out: &mut [Vec3]) {
    let net: Vec3 = index.iter().map(|&v| out[v as usize]).sum();
    let correction = net / index.len() as Real;
    for &v in index {
        out[v as usize] -= correction;
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::kernel::inv_r3;
    use super::*;
    use crate::COULOMB_CONSTANT as KC;

    /// `q (p − x) / max(|p − x|, a)³`: one Coulomb term (Eq. (C1)) per unit `k_c`.
    fn term(p: Vec3, x: Vec3, q: Real, a2: Real) -> Vec3 {
        let r = p - x;
        r * (q * inv_r3(r.norm_squared(), a2))
    }

    fn cloud(n: usize, seed: u64) -> (Vec<Vec3>, Vec<Real>) {
        let mut s = seed;
        let mut rnd = || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (s >> 11) as Real / (1u64 << 53) as Real
        };
        let x = (0..n).map(|_| Vec3::new(rnd(), 0.5 * rnd(), 0.2 * rnd())).collect();
        let q = (0..n).map(|_| (rnd() - 0.3) * 1e-6).collect();
        (x, q)
    }

    /// The fast path (gather with `M_j` zeroed, deduplicated corrections) equals the rule
    /// written out by brute force: every charge `j ≠ i` counted once, exactly when `j ∈ C_i`
    /// and by interpolation over `τ_i` otherwise (then the mean force removed).
    #[test]
    fn every_charge_is_counted_once_by_the_stated_rule() {
        let (x, q) = cloud(300, 7);
        let a = 1e-4;
        let placements = [Placement::Uniform, Placement::Following];
        for (m, placement) in [10, 60, 400].into_iter().flat_map(|m| placements.map(|p| (m, p))) {
            let mut ddef = Ddef::new(m).with_placement(placement);
            let mut out = vec![Vec3::zeros(); x.len()];
            ddef.forces(&x, &q, KC, a, &mut out).unwrap();
            let grid = ddef.grid.as_ref().unwrap();
            let loc = &ddef.loc;
            let gb = ddef.frame.unwrap();
            let world: Vec<Vec3> =
                grid.points.iter().map(|r| gb.reference_to_world(*r, grid.aspect)).collect();
            let mut expected = vec![Vec3::zeros(); x.len()];
            for i in 0..x.len() {
                let tv = grid.tri.tets[loc.tet[i] as usize];
                let psi = loc.bary[i];
                let mut e = Vec3::zeros();
                let mut exact = 0;
                for j in 0..x.len() {
                    if j == i {
                        continue;
                    }
                    if tv.iter().any(|v| grid.near(loc.tet[j]).contains(v)) {
                        e += term(x[i], x[j], q[j], a * a);
                        exact += 1;
                    } else {
                        e += (0..4)
                            .map(|k| term(world[tv[k] as usize], x[j], q[j], a * a) * psi[k])
                            .sum::<Vec3>();
                    }
                }
                assert!(
                    exact < x.len() - 1 || m == 10,
                    "m = {m}, {placement:?}: every charge was near, the test is vacuous"
                );
                expected[i] = e * (KC * q[i]);
            }
            // the same momentum-conserving correction the solver applies
            let mean = expected.iter().sum::<Vec3>() / x.len() as Real;
            let worst = (0..x.len())
                .map(|i| (out[i] - (expected[i] - mean)).norm() / (expected[i] - mean).norm())
                .fold(0.0, Real::max);
            // the far field is summed in f32 (`gather`: ~1e-7 here); one charge counted twice or
            // dropped moves a force by more than 3e-5 of it for 99 % of the pairs of this cloud
            // (median 3e-3)
            assert!(worst < 1e-5, "m = {m}, {placement:?}: fast path differs from the rule by {worst}");
        }
    }

    #[test]
    fn degenerate_clouds_give_finite_forces_and_potentials() {
        let p = Vec3::new(0.3, -0.2, 1.0);
        let clouds: Vec<Vec<Vec3>> = vec![
            vec![p],                                                                        // single
            vec![p, p, p],                                                                  // duplicates
            (0..50).map(|i| Vec3::new(i as Real * 0.01, 0.0, 0.0)).collect(),               // collinear
            (0..100).map(|i| Vec3::new((i % 10) as Real, (i / 10) as Real, 2.0)).collect(), // coplanar
            (0..40).map(|i| if i % 2 == 0 { p } else { p + Vec3::x() }).collect(),          // two stacks
        ];
        for x in clouds {
            let q: Vec<Real> = (0..x.len()).map(|i| if i % 3 == 0 { -1e-6 } else { 2e-6 }).collect();
            for (m, a) in [(10, 0.0), (100, 1e-4), (1000, 0.0)] {
                for placement in [Placement::Uniform, Placement::Following] {
                    let mut out = vec![Vec3::zeros(); x.len()];
                    let mut ddef = Ddef::new(m).with_placement(placement);
                    ddef.forces(&x, &q, KC, a, &mut out).unwrap();
                    assert!(out.iter().all(crate::math::is_finite3), "m {m}, {placement:?}: {out:?}");
                    let u = ddef.potential(&x, &q, KC, a).unwrap();
                    assert!(u.is_finite(), "m {m}, {placement:?}: potential {u}");
                }
            }
        }
    }
}
