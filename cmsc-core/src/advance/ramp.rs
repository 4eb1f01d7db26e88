//! The inputs of one [`System::advance`] call, reached linearly from their values at its start to
//! those set for its end.

use crate::error::Result;
use crate::fields::ExternalField;
use crate::math::{Real, Vec3};
use crate::system::System;

/// The inputs in force at the end of the last step, recorded by the first edit after it (what
/// [`System::advance`] ramps from); `None` where nothing was edited since.
#[derive(Debug, Clone, Default)]
pub(crate) struct Before {
    pub charge: Option<Vec<Real>>,
    pub external: Option<ExternalField>,
}

/// The inputs of one call, from their values at its start to those set for its end.
pub(super) struct Ramp {
    pub(super) sources: Sources,
    pub(super) pins: (Vec<Vec3>, Vec<Vec3>),
    mesh: Option<(Vec<Vec3>, Vec<Vec3>)>,
}

/// The charges and external field of one call, from their values at its start to those set for
/// its end (`None` where not edited since the last step): what the charge bound reads.
pub(super) struct Sources {
    pub(super) charge: Option<(Vec<Real>, Vec<Real>)>,
    pub(super) external: Option<(ExternalField, ExternalField)>,
}

impl Sources {
    pub(super) fn new(sys: &System) -> Self {
        let model = &sys.model;
        // values set before the first step are in force from its start
        Sources {
            charge: sys
                .before
                .charge
                .clone()
                .filter(|_| sys.state.steps > 0)
                .map(|q| (q, model.charge.clone())),
            external: sys
                .before
                .external
                .clone()
                .filter(|_| sys.state.steps > 0)
                .map(|e| (e, model.external.clone())),
        }
    }
}

/// `a + (b − a) s`, exactly `b` at `s = 1`.
fn lerp<T>(a: T, b: T, s: Real) -> T
where
    T: Copy + std::ops::Sub<Output = T> + std::ops::Add<Output = T> + std::ops::Mul<Real, Output = T>,
{
    if s == 1.0 {
        b
    } else {
        a + (b - a) * s
    }
}

fn lerp_vec3s(a: &[Vec3], b: &[Vec3], s: Real) -> Vec<Vec3> {
    a.iter().zip(b).map(|(a, b)| lerp(*a, *b, s)).collect()
}
impl Ramp {
    /// The endpoints of every input edited since the last step.
    pub(super) fn new(sys: &System) -> Self {
        let model = &sys.model;
        let pins = &model.pins;
        let from_pins = pins.indices.iter().map(|&i| sys.state.x[i as usize]).collect();
        Ramp {
            sources: Sources::new(sys),
            pins: (from_pins, pins.targets.clone()),
            mesh: model.mesh_colliders.pending_move(sys.state.steps),
        }
    }

    /// Sets the inputs of `sys` to their values at the fraction `s` of the call.
    pub(super) fn apply(&self, sys: &mut System, s: Real) -> Result<()> {
        if let Some((a, b)) = &self.sources.charge {
            let q: Vec<Real> = a.iter().zip(b).map(|(a, b)| lerp(*a, *b, s)).collect();
            if q != sys.model.charge {
                sys.model.charge = q;
                sys.stepper.sources_edited();
            }
        }
        if let Some((a, b)) = &self.sources.external {
            let mut e = b.clone();
            e.uniform = lerp(a.uniform, b.uniform, s);
            if a.charges.len() == b.charges.len() {
                for ((e, a), b) in e.charges.iter_mut().zip(&a.charges).zip(&b.charges) {
                    e.position = lerp(a.position, b.position, s);
                    e.charge = lerp(a.charge, b.charge, s);
                }
            }
            sys.model.external = e;
            sys.stepper.state_edited();
        }
        sys.model.pins.targets = lerp_vec3s(&self.pins.0, &self.pins.1, s);
        if let Some((a, b)) = &self.mesh {
            sys.model.mesh_colliders =
                sys.model.mesh_colliders.moved(&lerp_vec3s(a, b, s), sys.state.steps)?;
        }
        Ok(())
    }

    /// Sets the inputs (not the obstacles, restored with the state) to their values as set.
    pub(super) fn set_final(&self, sys: &mut System) {
        if let Some((_, b)) = &self.sources.charge {
            sys.model.charge.clone_from(b);
            sys.stepper.sources_edited();
        }
        if let Some((_, b)) = &self.sources.external {
            sys.model.external = b.clone();
        }
        sys.model.pins.targets.clone_from(&self.pins.1);
    }
}
