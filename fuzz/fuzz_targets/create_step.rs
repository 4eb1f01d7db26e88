//! Fuzz target over the C ABI: `cmsc_create` with arbitrary arrays and parameters, then a short
//! arbitrary sequence of setters, steps and reads on the handle, checking the contract of
//! `include/cmsc.h` after every call.
//!
//! Buffers always really have the length passed with them (the API cannot detect a lie, so
//! lying would be UB in this harness, not a library bug). The only "bad pointers" passed are
//! NULL (checked by the library before any read) and misaligned pointers into a real buffer
//! (checked before any read).
//!
//! Invariants asserted:
//! * every status is one of the 5 `CmscStatus` values, and never `CMSC_INTERNAL`;
//! * `cmsc_last_error()` is never NULL; it is non-empty after a non-OK status and "" after OK;
//! * a failed `cmsc_create` leaves `*out == NULL`;
//! * after a non-OK status, positions and velocities are bit-identical to before the call
//!   (for `cmsc_step(n > 1)` returning `CMSC_DIVERGED`, "last good step" may be an
//!   intermediate step, so there only finiteness is checked);
//! * after a successful step, positions and velocities are finite and pinned vertices sit
//!   exactly on their targets; `cmsc_step(sim, 0)` changes nothing;
//! * a successful set_positions / set_velocities reads back bit-identically;
//! * calls on a NULL handle return `CMSC_INVALID_ARGUMENT`.
#![no_main]

use std::ffi::CStr;
use std::ptr;

use arbitrary::Arbitrary;
use cmsc::{CmscAskedSteps, CmscEnergies, CmscParams, CmscSim, CmscStatus};
use libfuzzer_sys::fuzz_target;

const MAX_VERTICES: usize = 64;
const MAX_SPRINGS: usize = 256;
const MAX_OPS: usize = 16;
const MAX_ITERATIONS: u32 = 50;
const MAX_GRID_POINTS: u32 = 2000;
const MAX_STEPS_PER_CALL: u32 = 20;
const MAX_STEPS_TOTAL: u32 = 60;
const MAX_EXTRA: usize = 16;
/// A signalling-NaN payload no computation produces: marks output slots not written.
const UNWRITTEN: u64 = 0x7ff4_dead_beef_0001;

// ---------------------------------------------------------------------------------------------
// Input model
// ---------------------------------------------------------------------------------------------

/// A double: mostly "nice" values so that valid systems get built and stepped, plus special
/// values and raw bit patterns (NaN payloads, subnormals, huge/tiny).
#[derive(Arbitrary, Debug, Clone, Copy)]
enum F {
    Small(i16),
    Micro(i32),
    Special(u8),
    Bits(u64),
}

const SPECIALS: [f64; 20] = [
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    0.0,
    -0.0,
    f64::MIN_POSITIVE,
    5e-324,
    f64::MAX,
    -f64::MAX,
    1e300,
    -1e300,
    1e-300,
    1e154,
    1e-162,
    f64::EPSILON,
    1.0,
    -1.0,
    1e20,
    1e-20,
    8.9875517873681764e9,
];

impl F {
    fn get(self) -> f64 {
        match self {
            F::Small(i) => i as f64 / 8.0,
            F::Micro(i) => i as f64 * 1e-6,
            F::Special(k) => {
                if k == 255 {
                    f64::from_bits(0xfff8_0000_0000_0001) // negative NaN with payload
                } else {
                    SPECIALS[k as usize % SPECIALS.len()]
                }
            }
            F::Bits(b) => f64::from_bits(b),
        }
    }
}

/// How a pointer is passed.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Ptr {
    Valid,
    Null,
    /// One byte into a real buffer: misaligned, must be rejected before any read or write.
    Misaligned,
}

/// The element count passed, relative to what the system expects.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Len {
    Match,
    Plus(u8),
    Minus(u8),
    Zero,
    Any(u8),
    /// Huge count: only ever passed with a NULL pointer (never a lie about a real buffer).
    Huge(u8),
}

impl Len {
    /// `(count, force_null)`.
    fn resolve(self, want: usize) -> (usize, bool) {
        match self {
            Len::Match => (want, false),
            Len::Plus(d) => (want + 1 + d as usize % MAX_EXTRA, false),
            Len::Minus(d) => (want.saturating_sub(1 + d as usize % MAX_EXTRA), false),
            Len::Zero => (0, false),
            Len::Any(k) => (k as usize % (MAX_VERTICES + MAX_EXTRA), false),
            Len::Huge(k) => {
                let huge = [usize::MAX, usize::MAX / 2, usize::MAX / 3 + 1, usize::MAX / 8 + 1, 1 << 60];
                (huge[k as usize % huge.len()], true)
            }
        }
    }
}

#[derive(Arbitrary, Debug, Clone)]
struct Buf {
    len: Len,
    ptr: Ptr,
    data: Vec<F>,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Idx {
    InRange(u8),
    Raw(u32),
}

impl Idx {
    fn get(self, n: usize) -> u32 {
        match self {
            Idx::InRange(i) => (i as usize % n.max(1)) as u32,
            Idx::Raw(i) => i,
        }
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Iters {
    Small(u8),
    /// Passed unchanged only when the library must reject it (0 or > 100000); else capped.
    Raw(u32),
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Enum {
    Valid(u8),
    Raw(u32),
}

#[derive(Arbitrary, Debug, Clone)]
struct ParamsIn {
    time_step: Option<F>,
    iterations: Option<Iters>,
    damping: Option<F>,
    gravity: Option<[F; 3]>,
    coulomb_constant: Option<F>,
    coulomb: Option<Enum>,
    grid_points: Option<u32>,
    integrator: Option<Enum>,
    ground_height: Option<F>,
    friction: Option<F>,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Steps {
    Small(u8),
    Zero,
}

#[derive(Arbitrary, Debug, Clone)]
enum Op {
    SetCharges(Buf),
    SetPositions(Buf),
    SetVelocities(Buf),
    SetPins { len: Len, ptr: Ptr, idx: Vec<Idx> },
    SetPinTargets(Buf),
    SetExternalCharges { len: Len, pos_ptr: Ptr, q_ptr: Ptr, pos: Vec<F>, q: Vec<F> },
    SetUniformField(Option<[F; 3]>),
    SetSphereColliders { len: Len, c_ptr: Ptr, r_ptr: Ptr, c: Vec<F>, r: Vec<F> },
    /// Triangles (index triples) and per-vertex distances: self-collision, or with `surface`
    /// the simulated surface (`cmsc_set_surface`, distances unused).
    SetTriangles { surface: bool, tri: Vec<(Idx, Idx, Idx)>, t_ptr: Ptr, d_len: Len, d_ptr: Ptr, d: Vec<F> },
    SetSelfCollisionFriction(Buf),
    /// One damping time per spring (`cmsc_set_spring_damping`).
    SetSpringDamping(Buf),
    SetColliderFrictionLaw(u32),
    Step(Steps),
    GetPositions(Len, Ptr),
    GetVelocities(Len, Ptr),
    CoulombForces(Len, Ptr),
    /// `cmsc_contact_steps_per_vertex` over a duration (s), checked against `cmsc_contact_steps`
    /// and `cmsc_asked_steps`, `cmsc_charge_steps` and its per-vertex form.
    ContactSteps(Len, Ptr, F),
    Energies(bool),
    NullHandle(u8, u32),
}

#[derive(Arbitrary, Debug, Clone)]
struct Input {
    n_vertices: u8,
    positions: Vec<F>,
    pos_ptr: Ptr,
    masses: Vec<F>,
    mass_ptr: Ptr,
    springs: Vec<(Idx, Idx)>,
    springs_ptr: Ptr,
    stiffness: Vec<F>,
    stiffness_ptr: Ptr,
    params: ParamsIn,
    params_null: bool,
    out_null: bool,
    ops: Vec<Op>,
}

// ---------------------------------------------------------------------------------------------
// Buffers that really have the length claimed
// ---------------------------------------------------------------------------------------------

/// An aligned backing store with one spare element, so a misaligned view of `len` elements
/// still lies inside it.
struct Backing<T: Copy + Default> {
    v: Vec<T>,
}

impl<T: Copy + Default> Backing<T> {
    fn new(values: Vec<T>) -> Self {
        let mut v = values;
        v.push(T::default());
        Backing { v }
    }

    /// Pointer for `len` elements (the store holds `len + 1`), or NULL / misaligned.
    fn ptr(&mut self, how: Ptr, force_null: bool) -> *mut T {
        if force_null {
            return ptr::null_mut();
        }
        match how {
            Ptr::Valid => self.v.as_mut_ptr(),
            Ptr::Null => ptr::null_mut(),
            Ptr::Misaligned => unsafe { (self.v.as_mut_ptr() as *mut u8).add(1) as *mut T },
        }
    }
}

/// `len` doubles: the fuzzer's values first, then `pad(i)`.
fn doubles(data: &[F], len: usize, pad: impl Fn(usize) -> f64) -> Vec<f64> {
    (0..len).map(|i| data.get(i).map_or_else(|| pad(i), |f| f.get())).collect()
}

fn grid(i: usize) -> f64 {
    let v = i / 3;
    match i % 3 {
        0 => (v % 4) as f64 * 0.1,
        1 => ((v / 4) % 4) as f64 * 0.1,
        _ => (v / 16) as f64 * 0.1,
    }
}

// ---------------------------------------------------------------------------------------------
// Contract checks
// ---------------------------------------------------------------------------------------------

fn last_error() -> String {
    let p = cmsc::cmsc_last_error();
    assert!(!p.is_null(), "cmsc_last_error() returned NULL");
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// `CMSC_FUZZ_STATS=1`: print one `STAT call status` line per checked call (corpus statistics).
fn stats_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("CMSC_FUZZ_STATS").is_some_and(|v| v == "1"))
}

/// Checks status and last-error consistency; returns whether the call succeeded.
fn check(what: &str, s: CmscStatus) -> bool {
    let raw = s as u32;
    if stats_enabled() {
        eprintln!("STAT {what} {s:?}");
    }
    assert!(raw <= 4, "{what}: status {raw} is not a CmscStatus value");
    let msg = last_error();
    // CMSC_INTERNAL means a panic or a bug. (The first run found one: a finite but absurdly
    // stiff system, h² k / m ≈ 1e16, made M + h²L singular; it is now CMSC_INVALID_ARGUMENT.)
    assert!(s != CmscStatus::CMSC_INTERNAL, "{what}: CMSC_INTERNAL: {msg}");
    if s == CmscStatus::CMSC_OK {
        assert!(msg.is_empty(), "{what}: CMSC_OK but cmsc_last_error() = {msg:?}");
        true
    } else {
        assert!(!msg.is_empty(), "{what}: status {s:?} but cmsc_last_error() is empty");
        false
    }
}

fn expect_invalid(what: &str, s: CmscStatus) {
    check(what, s);
    assert_eq!(s, CmscStatus::CMSC_INVALID_ARGUMENT, "{what}: expected CMSC_INVALID_ARGUMENT");
}

struct State {
    x: Vec<f64>,
    v: Vec<f64>,
}

fn read_state(sim: *mut CmscSim, n: usize) -> State {
    let mut x = vec![f64::NAN; 3 * n];
    let mut v = vec![f64::NAN; 3 * n];
    let s = unsafe { cmsc::cmsc_get_positions(sim, x.as_mut_ptr(), n) };
    assert!(check("cmsc_get_positions (state)", s), "cmsc_get_positions failed on a valid call");
    let s = unsafe { cmsc::cmsc_get_velocities(sim, v.as_mut_ptr(), n) };
    assert!(check("cmsc_get_velocities (state)", s), "cmsc_get_velocities failed on a valid call");
    State { x, v }
}

fn bits(a: &[f64]) -> Vec<u64> {
    a.iter().map(|x| x.to_bits()).collect()
}

fn assert_same(what: &str, before: &State, after: &State) {
    assert!(bits(&before.x) == bits(&after.x), "{what}: positions changed by a failed call");
    assert!(bits(&before.v) == bits(&after.v), "{what}: velocities changed by a failed call");
}

fn assert_finite(what: &str, st: &State) {
    if let Some(i) = st.x.iter().position(|x| !x.is_finite()) {
        panic!("{what}: position component {i} = {} is not finite", st.x[i]);
    }
    if let Some(i) = st.v.iter().position(|x| !x.is_finite()) {
        panic!("{what}: velocity component {i} = {} is not finite", st.v[i]);
    }
}

// ---------------------------------------------------------------------------------------------
// The target
// ---------------------------------------------------------------------------------------------

fn build_params(p: &ParamsIn) -> CmscParams {
    let mut out = CmscParams {
        time_step: f64::NAN,
        iterations: 0,
        damping: f64::NAN,
        gravity: [f64::NAN; 3],
        coulomb_constant: f64::NAN,
        coulomb: 99,
        grid_points: 0,
        integrator: 99,
        ground_height: f64::NAN,
        friction: f64::NAN,
    };
    unsafe { cmsc::cmsc_params_default(&mut out) };
    assert!(out.time_step.is_finite() && out.time_step > 0.0, "cmsc_params_default did not write");
    unsafe { cmsc::cmsc_params_default(ptr::null_mut()) }; // NULL is a no-op
    if let Some(f) = p.time_step {
        out.time_step = f.get();
    }
    match p.iterations {
        None => out.iterations = out.iterations.min(MAX_ITERATIONS),
        Some(Iters::Small(k)) => out.iterations = 1 + k as u32 % MAX_ITERATIONS,
        Some(Iters::Raw(k)) => {
            out.iterations = if k == 0 || k > 100_000 { k } else { 1 + k % MAX_ITERATIONS };
        }
    }
    if let Some(f) = p.damping {
        out.damping = f.get();
    }
    if let Some(g) = p.gravity {
        out.gravity = [g[0].get(), g[1].get(), g[2].get()];
    }
    if let Some(f) = p.coulomb_constant {
        out.coulomb_constant = f.get();
    }
    match p.coulomb {
        None => {}
        Some(Enum::Valid(k)) => out.coulomb = k as u32 % 6,
        Some(Enum::Raw(k)) => out.coulomb = k,
    }
    if let Some(g) = p.grid_points {
        // Raw only when the library must reject it (0 or > 10^7); else capped to keep DDEF
        // grids (where available) fast.
        out.grid_points = if g == 0 || g > 10_000_000 { g } else { 1 + g % MAX_GRID_POINTS };
    } else {
        out.grid_points = out.grid_points.min(MAX_GRID_POINTS);
    }
    match p.integrator {
        None => {}
        Some(Enum::Valid(k)) => out.integrator = k as u32 % 2,
        Some(Enum::Raw(k)) => out.integrator = k,
    }
    if let Some(f) = p.ground_height {
        out.ground_height = f.get();
    }
    if let Some(f) = p.friction {
        out.friction = f.get();
    }
    out
}

fn null_handle_calls(which: u8, steps: u32) {
    let null = ptr::null_mut::<CmscSim>();
    let mut buf = [0.0f64; 3];
    let mut e = CmscEnergies::default();
    unsafe {
        match which % 13 {
            0 => expect_invalid("step(NULL)", cmsc::cmsc_step(null, steps)),
            1 => expect_invalid("set_charges(NULL)", cmsc::cmsc_set_charges(null, buf.as_ptr(), 1)),
            2 => expect_invalid("get_positions(NULL)", cmsc::cmsc_get_positions(null, buf.as_mut_ptr(), 1)),
            3 => expect_invalid("set_positions(NULL)", cmsc::cmsc_set_positions(null, buf.as_ptr(), 1)),
            4 => expect_invalid("get_velocities(NULL)", cmsc::cmsc_get_velocities(null, buf.as_mut_ptr(), 1)),
            5 => expect_invalid("set_velocities(NULL)", cmsc::cmsc_set_velocities(null, buf.as_ptr(), 1)),
            6 => expect_invalid("set_pins(NULL)", cmsc::cmsc_set_pins(null, ptr::null(), 0)),
            7 => expect_invalid("set_pin_targets(NULL)", cmsc::cmsc_set_pin_targets(null, ptr::null(), 0)),
            8 => expect_invalid(
                "set_external_charges(NULL)",
                cmsc::cmsc_set_external_charges(null, ptr::null(), ptr::null(), 0),
            ),
            9 => expect_invalid("set_uniform_field(NULL)", cmsc::cmsc_set_uniform_field(null, buf.as_ptr())),
            10 => expect_invalid(
                "set_sphere_colliders(NULL)",
                cmsc::cmsc_set_sphere_colliders(null, ptr::null(), ptr::null(), 0),
            ),
            11 => expect_invalid("coulomb_forces(NULL)", cmsc::cmsc_coulomb_forces(null, buf.as_mut_ptr(), 1)),
            _ => {
                expect_invalid("energies(NULL)", cmsc::cmsc_energies(null, &mut e));
                cmsc::cmsc_destroy(null);
            }
        }
    }
}

fuzz_target!(|input: Input| {
    let n = input.n_vertices as usize % (MAX_VERTICES + 1);

    // ---- create ----
    let mut pos = Backing::new(doubles(&input.positions, 3 * n, grid));
    let mut mass = Backing::new(doubles(&input.masses, n, |_| 1.0));
    let pairs: Vec<u32> =
        input.springs.iter().take(MAX_SPRINGS).flat_map(|&(a, b)| [a.get(n), b.get(n)]).collect();
    let n_springs = pairs.len() / 2;
    let mut springs = Backing::new(pairs);
    let mut stiffness = Backing::new(doubles(&input.stiffness, n_springs, |_| 100.0));
    let params = build_params(&input.params);
    let params_ptr: *const CmscParams = if input.params_null { ptr::null() } else { &params };

    let sentinel = ptr::NonNull::<CmscSim>::dangling().as_ptr();
    let mut handle: *mut CmscSim = sentinel;
    let out_ptr: *mut *mut CmscSim = if input.out_null { ptr::null_mut() } else { &mut handle };
    let s = unsafe {
        cmsc::cmsc_create(
            pos.ptr(input.pos_ptr, false),
            n,
            mass.ptr(input.mass_ptr, false),
            springs.ptr(input.springs_ptr, false),
            n_springs,
            stiffness.ptr(input.stiffness_ptr, false),
            params_ptr,
            out_ptr,
        )
    };
    let ok = check("cmsc_create", s);
    if input.out_null {
        assert!(!ok, "cmsc_create succeeded with out == NULL");
        assert_eq!(handle, sentinel);
        return;
    }
    if !ok {
        assert!(handle.is_null(), "cmsc_create failed ({s:?}) but *out is not NULL");
        return;
    }
    assert!(!handle.is_null() && handle != sentinel, "cmsc_create returned OK without a handle");
    let sim = handle;
    let initial = read_state(sim, n);
    assert_finite("after create", &initial);
    let created_x: Vec<f64> = doubles(&input.positions, 3 * n, grid);
    assert!(bits(&initial.x) == bits(&created_x), "positions after create differ from the input");
    assert!(initial.v.iter().all(|&v| v == 0.0), "a new simulation is not at rest");

    // Model of what the harness knows about the handle.
    let mut pins: Vec<u32> = vec![];
    let mut targets: Vec<f64> = vec![];
    let mut steps_left = MAX_STEPS_TOTAL;

    for op in input.ops.iter().take(MAX_OPS) {
        let before = read_state(sim, n);
        // Each arm checks status and cmsc_last_error() right after its call; `strict` says
        // whether a non-OK status must leave the state bit-identical.
        let (what, s, strict): (&str, CmscStatus, bool) = match op {
            Op::SetCharges(b) => {
                let (k, null) = b.len.resolve(n);
                let mut buf = Backing::new(doubles(&b.data, k.min(4096) * (!null as usize), |i| {
                    1e-6 * (i as f64 - 3.0)
                }));
                let s = unsafe { cmsc::cmsc_set_charges(sim, buf.ptr(b.ptr, null), k) };
                check("cmsc_set_charges", s);
                ("cmsc_set_charges", s, true)
            }
            Op::SetPositions(b) => {
                let (k, null) = b.len.resolve(n);
                let len = if null { 0 } else { 3 * k };
                let vals = doubles(&b.data, len, |i| before.x.get(i).copied().unwrap_or(grid(i)));
                let mut buf = Backing::new(vals.clone());
                let s = unsafe { cmsc::cmsc_set_positions(sim, buf.ptr(b.ptr, null), k) };
                check("cmsc_set_positions", s);
                if s == CmscStatus::CMSC_OK {
                    let after = read_state(sim, n);
                    assert!(bits(&after.x) == bits(&vals), "set_positions did not read back");
                    assert!(bits(&after.v) == bits(&before.v), "set_positions changed velocities");
                }
                ("cmsc_set_positions", s, true)
            }
            Op::SetVelocities(b) => {
                let (k, null) = b.len.resolve(n);
                let len = if null { 0 } else { 3 * k };
                let vals = doubles(&b.data, len, |i| before.v.get(i).copied().unwrap_or(0.0));
                let mut buf = Backing::new(vals.clone());
                let s = unsafe { cmsc::cmsc_set_velocities(sim, buf.ptr(b.ptr, null), k) };
                check("cmsc_set_velocities", s);
                if s == CmscStatus::CMSC_OK {
                    let after = read_state(sim, n);
                    assert!(bits(&after.v) == bits(&vals), "set_velocities did not read back");
                    assert!(bits(&after.x) == bits(&before.x), "set_velocities changed positions");
                }
                ("cmsc_set_velocities", s, true)
            }
            Op::SetPins { len, ptr: how, idx } => {
                let (k, null) = len.resolve(idx.len());
                let vals: Vec<u32> = if null {
                    vec![]
                } else {
                    (0..k).map(|i| idx.get(i).map_or(i as u32, |x| x.get(n))).collect()
                };
                let mut buf = Backing::new(vals.clone());
                let s = unsafe { cmsc::cmsc_set_pins(sim, buf.ptr(*how, null), k) };
                check("cmsc_set_pins", s);
                if s == CmscStatus::CMSC_OK {
                    targets = vals.iter().flat_map(|&i| before.x[3 * i as usize..3 * i as usize + 3].to_vec()).collect();
                    pins = vals;
                }
                ("cmsc_set_pins", s, true)
            }
            Op::SetPinTargets(b) => {
                let (k, null) = b.len.resolve(pins.len());
                let len = if null { 0 } else { 3 * k };
                let vals = doubles(&b.data, len, |i| targets.get(i).copied().unwrap_or(0.5));
                let mut buf = Backing::new(vals.clone());
                let s = unsafe { cmsc::cmsc_set_pin_targets(sim, buf.ptr(b.ptr, null), k) };
                check("cmsc_set_pin_targets", s);
                if s == CmscStatus::CMSC_OK {
                    targets = vals;
                }
                ("cmsc_set_pin_targets", s, true)
            }
            Op::SetExternalCharges { len, pos_ptr, q_ptr, pos, q } => {
                let (k, null) = len.resolve(pos.len() / 3);
                let kk = if null { 0 } else { k };
                let mut p = Backing::new(doubles(pos, 3 * kk, |i| 2.0 + i as f64));
                let mut c = Backing::new(doubles(q, kk, |_| 1e-6));
                let s = unsafe {
                    cmsc::cmsc_set_external_charges(sim, p.ptr(*pos_ptr, null), c.ptr(*q_ptr, null), k)
                };
                check("cmsc_set_external_charges", s);
                ("cmsc_set_external_charges", s, true)
            }
            Op::SetUniformField(f) => {
                let s = match f {
                    None => unsafe { cmsc::cmsc_set_uniform_field(sim, ptr::null()) },
                    Some(f) => {
                        let e = [f[0].get(), f[1].get(), f[2].get()];
                        unsafe { cmsc::cmsc_set_uniform_field(sim, e.as_ptr()) }
                    }
                };
                check("cmsc_set_uniform_field", s);
                ("cmsc_set_uniform_field", s, true)
            }
            Op::SetSphereColliders { len, c_ptr, r_ptr, c, r } => {
                let (k, null) = len.resolve(r.len());
                let kk = if null { 0 } else { k };
                let mut cb = Backing::new(doubles(c, 3 * kk, |i| i as f64 * 0.3));
                let mut rb = Backing::new(doubles(r, kk, |_| 0.25));
                let s = unsafe {
                    cmsc::cmsc_set_sphere_colliders(sim, cb.ptr(*c_ptr, null), rb.ptr(*r_ptr, null), k)
                };
                check("cmsc_set_sphere_colliders", s);
                ("cmsc_set_sphere_colliders", s, true)
            }
            Op::SetTriangles { surface, tri, t_ptr, d_len, d_ptr, d } => {
                let flat: Vec<u32> =
                    tri.iter().take(MAX_SPRINGS).flat_map(|&(a, b, c)| [a.get(n), b.get(n), c.get(n)]).collect();
                let n_tri = flat.len() / 3;
                let mut t = Backing::new(flat);
                let tp = t.ptr(*t_ptr, false);
                if *surface {
                    let s = unsafe { cmsc::cmsc_set_surface(sim, tp, n_tri) };
                    check("cmsc_set_surface", s);
                    ("cmsc_set_surface", s, true)
                } else {
                    let (k, null) = d_len.resolve(n);
                    let mut db = Backing::new(doubles(d, if null { 0 } else { k.min(4096) }, |_| 0.01));
                    let s = unsafe { cmsc::cmsc_set_self_collision(sim, tp, n_tri, db.ptr(*d_ptr, null), k) };
                    check("cmsc_set_self_collision", s);
                    ("cmsc_set_self_collision", s, true)
                }
            }
            Op::SetSelfCollisionFriction(b) => {
                let (k, null) = b.len.resolve(n);
                let mut buf = Backing::new(doubles(&b.data, if null { 0 } else { k.min(4096) }, |_| 5.0));
                let s = unsafe { cmsc::cmsc_set_self_collision_friction(sim, buf.ptr(b.ptr, null), k) };
                check("cmsc_set_self_collision_friction", s);
                ("cmsc_set_self_collision_friction", s, true)
            }
            Op::SetSpringDamping(b) => {
                let (k, null) = b.len.resolve(n_springs);
                let mut buf = Backing::new(doubles(&b.data, if null { 0 } else { k.min(4096) }, |_| 0.01));
                let s = unsafe { cmsc::cmsc_set_spring_damping(sim, buf.ptr(b.ptr, null), k) };
                check("cmsc_set_spring_damping", s);
                ("cmsc_set_spring_damping", s, true)
            }
            Op::SetColliderFrictionLaw(law) => {
                let s = unsafe { cmsc::cmsc_set_collider_friction_law(sim, *law % 4) };
                check("cmsc_set_collider_friction_law", s);
                ("cmsc_set_collider_friction_law", s, true)
            }
            Op::Step(st) => {
                let steps = match st {
                    Steps::Zero => 0,
                    Steps::Small(k) => (1 + *k as u32 % MAX_STEPS_PER_CALL).min(steps_left),
                };
                steps_left -= steps;
                let s = unsafe { cmsc::cmsc_step(sim, steps) };
                let ok = check("cmsc_step", s);
                let after = read_state(sim, n);
                if ok {
                    assert_finite("after a successful cmsc_step", &after);
                    if steps == 0 {
                        assert_same("cmsc_step(0)", &before, &after);
                    } else {
                        if stats_enabled() && !pins.is_empty() {
                            eprintln!("STAT pinned-step-checked {}", pins.len());
                        }
                        for (j, &i) in pins.iter().enumerate() {
                            let i = i as usize;
                            let got = &after.x[3 * i..3 * i + 3];
                            let want = &targets[3 * j..3 * j + 3];
                            assert!(
                                bits(got) == bits(want),
                                "pinned vertex {i} at {got:?} after step, target {want:?}"
                            );
                        }
                    }
                }
                ("cmsc_step", s, steps <= 1 || s != CmscStatus::CMSC_DIVERGED)
            }
            Op::GetPositions(len, how) | Op::GetVelocities(len, how) | Op::CoulombForces(len, how) => {
                let (k, null) = len.resolve(n);
                let mut out = Backing::new(vec![f64::from_bits(UNWRITTEN); if null { 0 } else { 3 * k }]);
                let p = out.ptr(*how, null);
                let (what, s) = unsafe {
                    match op {
                        Op::GetPositions(..) => ("cmsc_get_positions", cmsc::cmsc_get_positions(sim, p, k)),
                        Op::GetVelocities(..) => ("cmsc_get_velocities", cmsc::cmsc_get_velocities(sim, p, k)),
                        _ => ("cmsc_coulomb_forces", cmsc::cmsc_coulomb_forces(sim, p, k)),
                    }
                };
                check(what, s);
                if s == CmscStatus::CMSC_OK {
                    assert_eq!(k, n, "{what} accepted a wrong count");
                    let vals = &out.v[..3 * k];
                    match op {
                        Op::GetPositions(..) => assert!(bits(vals) == bits(&before.x), "{what} read differs"),
                        Op::GetVelocities(..) => assert!(bits(vals) == bits(&before.v), "{what} read differs"),
                        _ => assert!(!vals.iter().any(|x| x.to_bits() == UNWRITTEN), "{what}: output not fully written"),
                    }
                }
                (what, s, true)
            }
            Op::ContactSteps(len, how, seconds) => {
                let (k, null) = len.resolve(n);
                let mut out = Backing::new(vec![u32::MAX; if null { 0 } else { k }]);
                let seconds = seconds.get();
                let s = unsafe { cmsc::cmsc_contact_steps_per_vertex(sim, seconds, out.ptr(*how, null), k) };
                check("cmsc_contact_steps_per_vertex", s);
                if s == CmscStatus::CMSC_OK {
                    assert_eq!(k, n, "cmsc_contact_steps_per_vertex accepted a wrong count");
                    let each = &out.v[..k];
                    let mut most = u32::MAX;
                    let whole = unsafe { cmsc::cmsc_contact_steps(sim, seconds, &mut most) };
                    assert_eq!(whole, CmscStatus::CMSC_OK, "contact_steps after the per-vertex call: {}", last_error());
                    assert!(each.iter().all(|&e| e >= 1), "a vertex asked for no step");
                    assert_eq!(each.iter().copied().max().unwrap_or(1), most, "the largest is cmsc_contact_steps'");
                    let mut asked = CmscAskedSteps::default();
                    let s = unsafe { cmsc::cmsc_asked_steps(sim, seconds, &mut asked) };
                    assert_eq!(s, CmscStatus::CMSC_OK, "asked_steps after contact_steps: {}", last_error());
                    assert_eq!(asked.contact, most, "cmsc_asked_steps' contact is cmsc_contact_steps'");
                    assert!(asked.charge >= 1 && asked.motion >= 1, "a bound asked for no step: {asked:?}");
                    let mut charge = 0;
                    let s = unsafe { cmsc::cmsc_charge_steps(sim, seconds, &mut charge) };
                    assert_eq!(s, CmscStatus::CMSC_OK, "charge_steps after asked_steps: {}", last_error());
                    assert_eq!(charge, asked.charge, "cmsc_charge_steps is cmsc_asked_steps' charge");
                    let mut each = vec![0; n];
                    let s = unsafe { cmsc::cmsc_charge_steps_per_vertex(sim, seconds, each.as_mut_ptr(), n) };
                    assert_eq!(s, CmscStatus::CMSC_OK, "charge_steps_per_vertex: {}", last_error());
                    assert_eq!(each.iter().copied().max().unwrap_or(1), charge, "the largest is cmsc_charge_steps'");
                } else {
                    assert!(out.v.iter().all(|&e| e == u32::MAX), "written on failure");
                }
                ("cmsc_contact_steps_per_vertex", s, true)
            }
            Op::Energies(null) => {
                let mut e = CmscEnergies::default();
                let p: *mut CmscEnergies = if *null { ptr::null_mut() } else { &mut e };
                let s = unsafe { cmsc::cmsc_energies(sim, p) };
                check("cmsc_energies", s);
                if *null {
                    assert_eq!(s, CmscStatus::CMSC_INVALID_ARGUMENT, "energies(out = NULL)");
                } else {
                    assert_eq!(s, CmscStatus::CMSC_OK, "energies on a valid handle: {}", last_error());
                }
                ("cmsc_energies", s, true)
            }
            Op::NullHandle(which, steps) => {
                null_handle_calls(*which, *steps);
                ("NULL-handle call", CmscStatus::CMSC_OK, true)
            }
        };
        if s != CmscStatus::CMSC_OK {
            let after = read_state(sim, n);
            if strict {
                assert_same(what, &before, &after);
            } else {
                assert_finite(what, &after);
            }
        }
    }

    unsafe { cmsc::cmsc_destroy(sim) };
});
