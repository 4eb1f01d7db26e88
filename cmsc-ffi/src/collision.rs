//! The entry points for triangle-mesh colliders and self-collision (issue 18, appended to the
//! v1 ABI), and the obstacles' friction law (issue 30, appended). Each one: check the
//! arguments → call the core → map the result, inside the panic boundary.

use crate::buffers::{input, vec3_input};
use crate::handle::{sim_mut, CmscSim};
use crate::panic::boundary;
use crate::status::{CmscFrictionLaw, CmscStatus, FfiError};
use cmsc_core::FrictionLaw;

/// `3 n` indices at `ptr` as `n` triangles (copied).
///
/// # Safety
/// As `input` with `3 n` elements.
unsafe fn triangles_input(ptr: *const u32, n: usize, name: &str) -> Result<Vec<[u32; 3]>, FfiError> {
    let len =
        n.checked_mul(3).ok_or_else(|| FfiError::invalid(format!("`{name}`: count {n} is too large")))?;
    // SAFETY: forwarded.
    let flat = unsafe { input(ptr, len, name) }?;
    Ok(flat.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect())
}

/// Replaces every mesh collider (static or moving obstacles that vertices cannot pass through or
/// end inside). The meshes share one vertex array (3 doubles each, m, world) and one triangle
/// array (3 uint32 indices into `vertices` each); mesh k owns triangles `first_triangle[k]` ..
/// `first_triangle[k+1] - 1` (n_meshes + 1 offsets, `first_triangle[0]` = 0, non-decreasing,
/// last = n_triangles; a mesh with no triangles collides with nothing), with contact distance
/// `thickness[k]` (m, >= 0) and `friction[k]` (0..1: the fraction of tangential motion removed
/// on contact; a Coulomb coefficient >= 0 instead after
/// cmsc_set_collider_friction_law(sim, CMSC_FRICTION_COULOMB)). n_meshes = 0 removes all (then
/// n_triangles must be 0 and first_triangle, thickness, friction may be NULL). A mesh whose
/// every edge is shared by two triangles is closed: no vertex may end a step inside it.
/// Triangles must have three distinct, in-range corners and non-zero area. The arrays are
/// copied. On error the colliders in force are unchanged.
///
/// # Safety
/// `sim` must be NULL or a live handle; arrays valid for their lengths (`vertices` 3 n_vertices
/// doubles, `triangles` 3 n_triangles, `first_triangle` n_meshes + 1, `thickness` and
/// `friction` n_meshes).
#[no_mangle]
#[allow(clippy::too_many_arguments)] // the signature is fixed by the ABI
pub unsafe extern "C" fn cmsc_set_mesh_colliders(
    sim: *mut CmscSim,
    vertices: *const f64,
    n_vertices: usize,
    triangles: *const u32,
    n_triangles: usize,
    first_triangle: *const u32,
    thickness: *const f64,
    friction: *const f64,
    n_meshes: usize,
) -> CmscStatus {
    boundary(|| {
        // SAFETY (all blocks): forwarded from the caller; the helpers check NULL and sizes.
        let sim = unsafe { sim_mut(sim) }?;
        let v = unsafe { vec3_input(vertices, n_vertices, "vertices") }?;
        let t = unsafe { triangles_input(triangles, n_triangles, "triangles") }?;
        let n_offsets = if n_meshes == 0 { 0 } else { n_meshes.saturating_add(1) };
        let first = unsafe { input(first_triangle, n_offsets, "first_triangle") }?;
        let th = unsafe { input(thickness, n_meshes, "thickness") }?;
        let fr = unsafe { input(friction, n_meshes, "friction") }?;
        sim.call(|s| Ok(s.set_mesh_colliders(&v, &t, first, th, fr)?))
    })
}

/// New positions of the mesh colliders' vertices (3 n_vertices doubles, m, world; same count and
/// order as given to cmsc_set_mesh_colliders), where they are at the end of the next step; the
/// previous positions give their velocity during that step (vertices touching a moving collider
/// move with it; friction carries them along). Without a new call the colliders stay still in
/// later steps. A move that makes a triangle degenerate is rejected. On error nothing changes.
///
/// # Safety
/// `sim` must be NULL or a live handle; `vertices` valid for 3 n_vertices doubles.
#[no_mangle]
pub unsafe extern "C" fn cmsc_move_mesh_colliders(
    sim: *mut CmscSim,
    vertices: *const f64,
    n_vertices: usize,
) -> CmscStatus {
    boundary(|| {
        // SAFETY: forwarded from the caller.
        let (sim, v) = unsafe { (sim_mut(sim)?, vec3_input(vertices, n_vertices, "vertices")?) };
        sim.call(|s| Ok(s.move_mesh_colliders(&v)?))
    })
}

/// Self-collision among the simulated vertices: `triangles` (3 uint32 vertex indices each, in
/// range, distinct corners, non-zero area at the current positions) are the surfaces that repel;
/// `distance[i]` (m, >= 0, n values, n = the simulation's vertex count) is how far vertex i keeps
/// from them (0: vertex i does not collide). Keep distances below the shortest edge length
/// (about half of it). n_triangles = 0 turns self-collision off (then `distance` may be NULL
/// with n = 0). Arrays are copied. On error the settings in force are unchanged.
///
/// # Safety
/// `sim` must be NULL or a live handle; `triangles` valid for 3 n_triangles values, `distance`
/// for n doubles.
#[no_mangle]
pub unsafe extern "C" fn cmsc_set_self_collision(
    sim: *mut CmscSim,
    triangles: *const u32,
    n_triangles: usize,
    distance: *const f64,
    n: usize,
) -> CmscStatus {
    boundary(|| {
        // SAFETY: forwarded from the caller.
        let sim = unsafe { sim_mut(sim) }?;
        let t = unsafe { triangles_input(triangles, n_triangles, "triangles") }?;
        let d = unsafe { input(distance, n, "distance") }?;
        sim.call(|s| Ok(s.set_self_collision(&t, d)?))
    })
}

/// Friction between layers of the self-collision in force: `rate[i]` (1/s, >= 0, n values, n =
/// the simulation's vertex count) is how fast a contact of vertex i loses its tangential slip,
/// which keeps the fraction `exp(-rate[i] h)` per step of length h (0: frictionless, the default):
/// a rate per second, so the result does not depend on the number of substeps. The tangential
/// correction is shared by mass between the vertex and the triangle it touches, so linear
/// momentum is conserved. `cmsc_set_self_collision` resets it to 0. Self-collision must be on
/// (CMSC_INVALID_ARGUMENT otherwise). The array is copied. On error the settings in force are
/// unchanged.
///
/// # Safety
/// `sim` must be NULL or a live handle; `rate` valid for n doubles.
#[no_mangle]
pub unsafe extern "C" fn cmsc_set_self_collision_friction(
    sim: *mut CmscSim,
    rate: *const f64,
    n: usize,
) -> CmscStatus {
    boundary(|| {
        // SAFETY: forwarded from the caller.
        let (sim, r) = unsafe { (sim_mut(sim)?, input(rate, n, "rate")?) };
        sim.call(|s| Ok(s.set_self_collision_friction(r)?))
    })
}

/// How the obstacles apply friction: the ground (`CmscParams.friction`), the spheres (the same
/// value) and the mesh colliders (`friction[k]` of cmsc_set_mesh_colliders). `law` is a
/// CmscFrictionLaw: CMSC_FRICTION_PER_STEP (the default of a new simulation; friction values in
/// 0..1 are the fraction of tangential motion removed per step in contact, as documented there)
/// or CMSC_FRICTION_COULOMB (friction values are Coulomb coefficients mu >= 0, Blender Cloth's
/// law: mu = Collision Friction / 100; the tangential velocity relative to the obstacle loses at
/// most mu times the normal velocity change of the contact, the tangential displacement at most
/// that times h, so the motion does not depend on the number of substeps). The values in force
/// keep their numbers and are read under the new law. Once the law is Coulomb,
/// cmsc_set_mesh_colliders accepts any finite friction >= 0 (above 1 too); switching back to
/// CMSC_FRICTION_PER_STEP while a value above 1 is in force is CMSC_INVALID_ARGUMENT. An unknown
/// `law` is CMSC_INVALID_ARGUMENT. On error nothing changes. Takes effect at the next step.
///
/// # Safety
/// `sim` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn cmsc_set_collider_friction_law(sim: *mut CmscSim, law: u32) -> CmscStatus {
    boundary(|| {
        // SAFETY: forwarded from the caller.
        let sim = unsafe { sim_mut(sim)? };
        let law = match law {
            x if x == CmscFrictionLaw::CMSC_FRICTION_PER_STEP as u32 => FrictionLaw::PerStep,
            x if x == CmscFrictionLaw::CMSC_FRICTION_COULOMB as u32 => FrictionLaw::Coulomb,
            other => return Err(FfiError::invalid(format!("`law`: unknown CmscFrictionLaw value {other}"))),
        };
        sim.call(|s| Ok(s.set_friction_law(law)?))
    })
}

/// The triangles of the simulated surface (3 uint32 vertex indices each, in range, distinct
/// corners, non-zero area at the current positions): their edges are kept outside the mesh
/// colliders' convex sharp edges (an edge of a closed collider whose faces meet at more than
/// 20°), so that a cloth draped over a box does not cut into it between its vertices; without
/// them only the vertices are kept out. Springs are not used for this (bending springs are no
/// part of the surface). n_triangles = 0 clears them (then `triangles` may be NULL). The array
/// is copied. On error the surface in force is unchanged.
///
/// # Safety
/// `sim` must be NULL or a live handle; `triangles` valid for 3 n_triangles values.
#[no_mangle]
pub unsafe extern "C" fn cmsc_set_surface(
    sim: *mut CmscSim,
    triangles: *const u32,
    n_triangles: usize,
) -> CmscStatus {
    boundary(|| {
        // SAFETY: forwarded from the caller.
        let sim = unsafe { sim_mut(sim) }?;
        let t = unsafe { triangles_input(triangles, n_triangles, "triangles") }?;
        sim.call(|s| Ok(s.set_surface(&t)?))
    })
}
