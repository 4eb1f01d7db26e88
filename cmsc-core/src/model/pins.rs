//! Pinned vertices: held exactly at targets, eliminated from the global solve.

use crate::error::{Error, Result};
use crate::math::Vec3;

/// Which vertices are pinned and where they must be.
#[derive(Debug, Clone)]
pub(crate) struct Pins {
    /// `pinned[i]` for every vertex.
    pub pinned: Vec<bool>,
    /// Pinned vertex indices, in the caller's order.
    pub indices: Vec<u32>,
    /// Target per pin (m), parallel to `indices`.
    pub targets: Vec<Vec3>,
}

impl Pins {
    /// No pins on `n` vertices.
    pub fn new(n: usize) -> Self {
        Pins { pinned: vec![false; n], indices: vec![], targets: vec![] }
    }

    /// Pins `indices` at their current positions `x`.
    pub fn from_indices(indices: &[u32], x: &[Vec3]) -> Result<Self> {
        let mut pins = Pins::new(x.len());
        for (k, &i) in indices.iter().enumerate() {
            let slot = pins.pinned.get_mut(i as usize).ok_or_else(|| {
                Error::invalid(
                    "indices",
                    Some(k),
                    format!("vertex {i} out of range for {} vertices", x.len()),
                )
            })?;
            if *slot {
                return Err(Error::invalid("indices", Some(k), format!("vertex {i} is listed twice")));
            }
            *slot = true;
        }
        pins.indices = indices.to_vec();
        pins.targets = indices.iter().map(|&i| x[i as usize]).collect();
        Ok(pins)
    }
}
