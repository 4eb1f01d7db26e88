//! The model of a charged mass-spring system: everything that defines the physics and stays
//! fixed while the state advances — parameters, masses `m_i`, charges `q_i`, springs
//! `(i, j, k_s, l_s)`, pins, the external field and the colliders. [`crate::State`] holds what
//! a step changes; [`crate::System`] edits both with validation.

mod damping;
mod params;
mod pins;

pub(crate) use damping::{Damping, Parts};
pub use params::{
    Acceleration, Integrator, SimParams, Softening, COULOMB_CONSTANT, DEFAULT_ITERATIONS,
    MAX_FAR_FIELD_INTERVAL, MAX_FIELD_TOLERANCE, MAX_ITERATIONS, MIN_FIELD_TOLERANCE,
};
pub(crate) use pins::Pins;

use crate::collision::{Colliders, FrictionLaw, MeshColliders, SelfCollision};
use crate::coulomb::{coulomb_energy, FieldMethod};
use crate::energy::Energies;
use crate::fields::{gravity_energy, ExternalField};
use crate::math::{Real, Vec3};
use crate::springs::{spring_energy, Springs};
use crate::state::State;

/// What a step reads and never writes. Fields are validated by [`crate::System`]'s setters
/// before they get here, so the stepper trusts them.
#[derive(Debug, Clone)]
pub struct Model {
    pub(crate) params: SimParams,
    /// `m_i` per vertex (kg), all finite and `> 0`.
    pub(crate) mass: Vec<Real>,
    /// `q_i` per vertex (C), all finite.
    pub(crate) charge: Vec<Real>,
    pub(crate) springs: Springs,
    pub(crate) pins: Pins,
    pub(crate) external: ExternalField,
    pub(crate) colliders: Colliders,
    /// The vertices' parts (objects), each damped relative to its own motion.
    pub(crate) parts: Parts,
    /// Triangle-mesh obstacles.
    pub(crate) mesh_colliders: MeshColliders,
    /// How the ground, spheres and mesh obstacles apply their friction.
    pub(crate) friction_law: FrictionLaw,
    /// Self-collision of the simulated mesh, if on.
    pub(crate) self_collision: Option<SelfCollision>,
    /// The edges of the simulated surface's triangles ([`crate::System::set_surface`]), each
    /// once, `[low, high]`: what the mesh obstacles' sharp edges keep out. Empty: not given.
    pub(crate) surface_edges: Vec<[u32; 2]>,
    /// Charge radius `a` used when [`Softening::Auto`] is selected (m), fixed at creation from
    /// the rest mesh.
    pub(crate) auto_softening: Real,
}

impl Model {
    /// A model of uncharged, unpinned vertices with no external field, taking the auto
    /// charge radius from the rest positions `x`.
    pub(crate) fn new(params: SimParams, mass: Vec<Real>, springs: Springs, x: &[Vec3]) -> Self {
        let n = mass.len();
        Model {
            charge: vec![0.0; n],
            pins: Pins::new(n),
            external: ExternalField::default(),
            colliders: Colliders { ground: params.ground_height, spheres: vec![] },
            parts: Parts::default(),
            mesh_colliders: MeshColliders::default(),
            friction_law: FrictionLaw::default(),
            self_collision: None,
            surface_edges: Vec::new(),
            auto_softening: auto_softening(x, &springs),
            params,
            mass,
            springs,
        }
    }

    /// Number of vertices `n`.
    pub fn n_vertices(&self) -> usize {
        self.mass.len()
    }

    /// The parameters in force.
    pub fn params(&self) -> &SimParams {
        &self.params
    }

    /// Masses `m_i` (kg).
    pub fn masses(&self) -> &[Real] {
        &self.mass
    }

    /// Charges `q_i` (C).
    pub fn charges(&self) -> &[Real] {
        &self.charge
    }

    /// The springs, with their rest lengths.
    pub fn springs(&self) -> &Springs {
        &self.springs
    }

    /// Indices of pinned vertices, in the order they were given.
    pub fn pins(&self) -> &[u32] {
        &self.pins.indices
    }

    /// The external point charges and uniform field.
    pub fn external(&self) -> &ExternalField {
        &self.external
    }

    /// The obstacles.
    pub fn colliders(&self) -> &Colliders {
        &self.colliders
    }

    /// The triangle-mesh obstacles.
    pub fn mesh_colliders(&self) -> &MeshColliders {
        &self.mesh_colliders
    }

    /// The friction law of the ground, spheres and mesh obstacles.
    pub fn friction_law(&self) -> FrictionLaw {
        self.friction_law
    }

    /// Self-collision settings, if on.
    pub fn self_collision(&self) -> Option<&SelfCollision> {
        self.self_collision.as_ref()
    }

    /// The charge radius `a` in force (m): each vertex's charge is spread over a ball of that
    /// radius, so the pair force is Coulomb's beyond `a` and bounded below it (Eqs. (C1)–(C2)
    /// of [`crate::coulomb`]); see [`Softening`].
    pub fn softening(&self) -> Real {
        match self.params.softening {
            Softening::Auto => self.auto_softening,
            Softening::Length(a) => a,
        }
    }

    /// Kinetic, spring, Coulomb and external energy of `state` under this model (J). Coulomb
    /// energy is always the exact pairwise sum of the potential of Eq. (C2) of [`crate::coulomb`]
    /// (whose gradient is the force of every backend), whatever the force
    /// method, and zero with [`FieldMethod::Off`].
    pub fn energies(&self, state: &State) -> Energies {
        let (x, v) = (&state.x, &state.v);
        let (k_c, a) = (self.params.coulomb_constant, self.softening());
        let kinetic = 0.5 * v.iter().zip(&self.mass).map(|(v, m)| m * v.norm_squared()).sum::<Real>();
        let spring = spring_energy(&self.springs, x);
        let coulomb = if self.params.coulomb == FieldMethod::Off {
            0.0
        } else {
            coulomb_energy(x, &self.charge, k_c, a)
        };
        let external = self.external.potential_energy(x, &self.charge, k_c, a)
            + gravity_energy(&self.mass, self.params.gravity, x);
        Energies::new(kinetic, spring, coulomb, external)
    }
}

/// [`Softening::Auto`]'s charge radius `a` (m).
///
/// With springs (a mesh): [`PATCH_FRACTION`] `= ¼ ×` the rest distance from a vertex to its
/// nearest spring neighbour, taken at the [`FINE_QUANTILE`] (10 %) quantile over vertices, i.e.
/// in the finely meshed parts. A vertex's charge stands for the charge on its patch of surface,
/// which reaches about half-way to its neighbours; the ball is half that (its charge's centre
/// half), so the pairs of the rest mesh (at least one edge apart) interact by Coulomb's law
/// exactly, as do pairs in motion down to a quarter of an edge, and only pairs closer than
/// that — two layers in contact or an edge crushed to a quarter of its length — feel the
/// bounded form, whose largest force is `k_c |q_i q_j| / a²`. Half an edge (balls that meet)
/// was measured first: it bounds the contact force 4× lower but changed the paper's torus at
/// h = 0.15 s beyond `tests/low_dissipation.rs`'s bound (vertices pass within half an edge of
/// each other in those large steps); a quarter keeps every existing test's figures. The quantile rather than the mean keeps graded meshes exact too: on a
/// UV sphere the ring next to each pole is spaced far closer than the rest (16 × 32: 15 mm
/// against a mean nearest distance of 53 mm at radius 0.4 m), and half the mean would soften
/// those rings' own neighbours; a single sliver edge (below the quantile) does not shrink `a`.
///
/// Without springs (a charge cloud with no surface): `10⁻³ ×` the bounding-box diagonal over
/// `∛n`, a near-point charge that only keeps coincident pairs finite (as the former Plummer
/// softening of that length did, which the validation scenes were measured with). `1 µm` if the
/// points all coincide.
fn auto_softening(x: &[Vec3], springs: &Springs) -> Real {
    const CLOUD_FRACTION: Real = 1e-3;
    let scale = if springs.is_empty() {
        let (mut lo, mut hi) = (x[0], x[0]);
        for p in x {
            lo = lo.inf(p);
            hi = hi.sup(p);
        }
        CLOUD_FRACTION * (hi - lo).norm() / (x.len() as Real).cbrt()
    } else {
        let mut nearest = vec![Real::INFINITY; x.len()];
        for (&[i, j], &l) in springs.ends().iter().zip(springs.rest_lengths()) {
            for v in [i as usize, j as usize] {
                nearest[v] = nearest[v].min(l);
            }
        }
        let mut nearest: Vec<Real> = nearest.into_iter().filter(|l| l.is_finite()).collect();
        let k = ((FINE_QUANTILE * nearest.len() as Real) as usize).min(nearest.len() - 1);
        PATCH_FRACTION * *nearest.select_nth_unstable_by(k, Real::total_cmp).1
    };
    if scale > 0.0 {
        scale
    } else {
        1e-6
    }
}

/// The charge radius of a mesh vertex as a fraction of the rest distance to its nearest
/// neighbour (see [`Softening::Auto`]): `¼`, half of a patch that reaches half-way.
pub const PATCH_FRACTION: Real = 0.25;

/// The quantile over vertices of the nearest-neighbour rest distance that [`PATCH_FRACTION`]
/// applies to (see [`Softening::Auto`]): 10 %, below the share of the finest rings of a UV
/// sphere (its two pole rings: 13 % of a 16 × 32 sphere's vertices).
pub const FINE_QUANTILE: Real = 0.1;
