//! # cmsc-core — charged mass-spring systems
//!
//! Every vertex of a mesh is a point mass `m_i` carrying a charge `q_i`; mesh edges (and
//! optional bending pairs) are Hookean springs; every pair of charges interacts by Coulomb's
//! law. One step of length `h` is the IMEX integrator of [Paper](crate#references) Eq. (12):
//! springs implicit through [Liu 2013](crate#references)'s prefactored local/global solver,
//! Coulomb and external forces explicit.
//!
//! ## Shape
//! A [`Model`] (parameters, masses, charges, springs, pins, external field, colliders) and a
//! [`State`] (positions, velocities, time) are advanced by a stepper that owns the Coulomb
//! backend, the prefactored `M + h²L` and the scratch buffers; [`System`] is the validating
//! façade over the three that the C ABI uses.
//!
//! ## Pipeline of one [`System::step`]
//! edits (refactor `M + h²L` if needed) → explicit forces at `x_t` ([`coulomb`], [`fields`],
//! gravity) → integrate ([`Integrator::Imex`] local/global iterations, velocity Verlet, or
//! [`Integrator::ImexLowDissipation`]'s implicit-midpoint sub-steps between half kicks, with its
//! energy safeguard) → pins → collisions (self-collision, ground and spheres, triangle meshes) →
//! divergence guard and commit.
//!
//! ## Units
//! SI throughout: metres, kilograms, seconds, coulombs, N/m, V/m; state in `f64`.
//! Coulomb's constant defaults to [`COULOMB_CONSTANT`].
//!
//! ## Example
//! ```
//! use cmsc_core::{System, SimParams, Vec3};
//! // two vertices joined by a spring, charged alike: they repel and the spring holds them
//! let x = [Vec3::new(0.0, 0.0, 0.0), Vec3::new(0.1, 0.0, 0.0)];
//! let params = SimParams { gravity: Vec3::zeros(), ..SimParams::default() };
//! let mut sys = System::new(&x, &[1e-3, 1e-3], &[[0, 1]], &[50.0], params).unwrap();
//! sys.set_charges(&[1e-7, 1e-7]).unwrap();
//! sys.step_n(100).unwrap();
//! assert!((sys.positions()[1] - sys.positions()[0]).norm() > 0.1);
//! ```
//!
//! ## References
//! - **\[Paper\]** Zhang, Grykiel, Liu, Papanicolopulos, Subr. *Implicit-Explicit Simulation
//!   of Mass-Spring-Charge Systems.* 2024. arXiv:2403.08217.
//! - **\[Liu 2013\]** T. Liu, A. W. Bargteil, J. F. O'Brien, L. Kavan. *Fast Simulation of
//!   Mass-Spring Systems.* ACM Trans. Graph. 32(6), 209 (SIGGRAPH Asia 2013).
//!   doi:10.1145/2508363.2508406.
//! - **\[Peng 2018\]** Y. Peng, B. Deng, J. Zhang, F. Geng, W. Qin, L. Liu. *Anderson
//!   Acceleration for Geometry Optimization and Physics Simulation.* ACM Trans. Graph. 37(4), 42
//!   (SIGGRAPH 2018). doi:10.1145/3197517.3201290.
//! - **\[Wang 2015\]** H. Wang. *A Chebyshev Semi-Iterative Approach for Accelerating Projective
//!   and Position-based Dynamics.* ACM Trans. Graph. 34(6), 246 (SIGGRAPH Asia 2015).
//!   doi:10.1145/2816795.2818063.

#![warn(missing_docs)]

pub mod advance;
pub mod collision;
pub mod coulomb;
pub mod counters;
pub mod energy;
mod error;
pub mod fields;
pub mod gradient;
mod integrator;
mod linsolve;
mod math;
mod model;
pub mod shapes;
pub mod springs;
mod state;
mod step;
mod system;

pub use advance::{AskedSteps, CallCounts, StepBounds, MAX_ADVANCE_STEPS, RECOMMENDED_ITERATION_TOLERANCE};
pub use collision::{
    BroadPhase, Colliders, ContactStep, FrictionLaw, MeshCollider, MeshColliders, SelfCollision, Sphere,
};
pub use coulomb::{FieldMethod, FieldSolver, Neighborhood, MAX_GRID_POINTS};
pub use counters::{StepCounts, StepTimings};
pub use energy::Energies;
pub use error::{Divergence, Error, GpuUnavailable, Result};
pub use fields::{ExternalField, PointCharge};
pub use gradient::{fit, ChargeGroups, FitOptions, FitReport, RolloutGradient};
pub use integrator::{CAP_BAND, EXCESS_TOLERANCE, MAX_HALVINGS};
pub use linsolve::{check_conditioning, GlobalSolver, MAX_STIFFNESS_MASS_RATIO};
pub use math::{is_finite3, Real, Vec3};
pub use model::{
    Acceleration, Integrator, Model, SimParams, Softening, COULOMB_CONSTANT, DEFAULT_ITERATIONS,
    FINE_QUANTILE, MAX_FAR_FIELD_INTERVAL, MAX_FIELD_TOLERANCE, MAX_ITERATIONS, MIN_FIELD_TOLERANCE,
    PATCH_FRACTION,
};
pub use springs::{springs_from_triangles, MeshSprings, Springs};
pub use state::State;
pub use step::RUNAWAY_FACTOR;
pub use system::System;
