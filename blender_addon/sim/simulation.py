"""`Simulation`: owns one native handle; numpy arrays in and out."""

import ctypes

import numpy as np

from . import _native
from .errors import CmscError, InvalidArgumentError
from .params import CoulombMethod, SimParams


def _f64(array, shape, name):
    """A C-contiguous float64 copy-or-view of `array` with the given shape."""
    a = np.ascontiguousarray(array, dtype=np.float64)
    if a.shape != shape:
        raise InvalidArgumentError(f"{name} must have shape {shape}, got {a.shape}")
    return a


def _ptr(a, ctype=ctypes.c_double):
    return a.ctypes.data_as(ctypes.POINTER(ctype))


class Simulation:
    """A charged mass-spring simulation (one `CmscSim`).

    Use as a context manager or call `close()`; after closing, every call raises CmscError.
    One thread at a time per instance; instances are independent.
    """

    def __init__(self, library_path, positions, masses, springs, stiffness, params=None):
        """Creates the simulation.

        positions: (n, 3) m; masses: (n,) kg; springs: (s, 2) vertex indices; stiffness: (s,) N/m;
        params: SimParams (defaults if None). `library_path` is the libcmsc.so to use.
        """
        self._lib = _native.load(library_path)
        self._handle = None
        positions = np.asarray(positions)
        n = positions.shape[0] if positions.ndim == 2 else -1
        self._x = _f64(positions, (n, 3), "positions")
        m = _f64(masses, (n,), "masses")
        springs = np.ascontiguousarray(springs, dtype=np.uint32).reshape(-1, 2)
        k = _f64(stiffness, (springs.shape[0],), "stiffness")
        params = params or SimParams()
        c_params = params.to_c(_native.CmscParams)
        handle = ctypes.c_void_p()
        status = self._lib.cmsc_create(
            _ptr(self._x), n, _ptr(m), _ptr(springs, ctypes.c_uint32), springs.shape[0], _ptr(k),
            ctypes.byref(c_params), ctypes.byref(handle),
        )
        _native.note_pool_start()
        _native.check(self._lib, status)
        self._handle = handle
        self.n_vertices = n
        if params.far_field_interval != 1:
            self.set_far_field_interval(params.far_field_interval)
        if params.iteration_tolerance:
            self.set_iteration_tolerance(params.iteration_tolerance)

    # -- lifetime ---------------------------------------------------------------------------
    def close(self):
        """Frees the native simulation (idempotent)."""
        if self._handle is not None:
            self._lib.cmsc_destroy(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):  # fallback only; prefer close() or `with`
        try:
            self.close()
        except Exception:  # noqa: BLE001 - never raise from a finalizer
            pass

    def _h(self):
        if self._handle is None:
            raise CmscError("the simulation is closed")
        return self._handle

    def _call(self, name, *args):
        _native.check(self._lib, getattr(self._lib, name)(self._h(), *args))

    # -- state -------------------------------------------------------------------------------
    def step(self, steps=1):
        """Advances `steps` time steps; DivergedError keeps the last good step."""
        self._call("cmsc_step", int(steps))

    def advance(self, seconds, min_steps, max_steps):
        """Advances `seconds` in as many equal steps as the charges and the motion need, from
        `min_steps` (doubled while needed) up to `max_steps`; the pin targets, external charges,
        field, charges and collider vertices set since the last step are reached linearly over
        the duration. Returns the steps taken; DivergedError keeps the last good state."""
        taken = ctypes.c_uint32()
        self._call("cmsc_advance", float(seconds), int(min_steps), int(max_steps), ctypes.byref(taken))
        return taken.value

    def charge_steps_per_vertex(self, seconds):
        """The equal steps over the next `seconds` that the charge bound of `advance` asks for at
        each vertex, from the state and the inputs as they are (those set since the last step
        ramped from their values then, as `advance` would): (n,) uint32, 1 where a vertex is
        pinned or nothing is stiff. `advance` takes at least the largest, up to its
        `max_steps`."""
        out = np.empty(self.n_vertices, dtype=np.uint32)
        self._call("cmsc_charge_steps_per_vertex", float(seconds), _ptr(out, ctypes.c_uint32), len(out))
        return out

    def contact_steps(self, seconds):
        """The equal steps over the next `seconds` that the contact bound of `advance` asks for,
        from the state as it is: 1 where no vertex touches or is about to strike a curved
        collider. A stiff mesh pressed onto one at fewer fixed steps gains energy from nothing."""
        steps = ctypes.c_uint32()
        self._call("cmsc_contact_steps", float(seconds), ctypes.byref(steps))
        return steps.value

    def contact_steps_per_vertex(self, seconds):
        """`contact_steps` for each vertex (n,) uint32, from its own contacts: 1 where it neither
        touches nor is about to strike a curved collider; the largest is `contact_steps`."""
        out = np.empty(self.n_vertices, dtype=np.uint32)
        self._call("cmsc_contact_steps_per_vertex", float(seconds), _ptr(out, ctypes.c_uint32), len(out))
        return out

    @property
    def positions(self):
        """(n, 3) float64 copy of the positions (m)."""
        out = np.empty((self.n_vertices, 3))
        self._call("cmsc_get_positions", _ptr(out), self.n_vertices)
        return out

    @positions.setter
    def positions(self, values):
        x = _f64(values, (self.n_vertices, 3), "positions")
        self._call("cmsc_set_positions", _ptr(x), self.n_vertices)

    @property
    def velocities(self):
        """(n, 3) float64 copy of the velocities (m/s)."""
        out = np.empty((self.n_vertices, 3))
        self._call("cmsc_get_velocities", _ptr(out), self.n_vertices)
        return out

    @velocities.setter
    def velocities(self, values):
        v = _f64(values, (self.n_vertices, 3), "velocities")
        self._call("cmsc_set_velocities", _ptr(v), self.n_vertices)

    def set_charges(self, charges):
        """Charges per vertex (C)."""
        q = _f64(charges, (self.n_vertices,), "charges")
        self._call("cmsc_set_charges", _ptr(q), self.n_vertices)

    def set_pins(self, indices):
        """Pins these vertices where they are (replacing earlier pins)."""
        idx = np.ascontiguousarray(indices, dtype=np.uint32).reshape(-1)
        self._call("cmsc_set_pins", _ptr(idx, ctypes.c_uint32), idx.shape[0])

    def set_pin_targets(self, targets):
        """Targets (k, 3) m of the pins, in set_pins order."""
        t = np.ascontiguousarray(targets, dtype=np.float64).reshape(-1, 3)
        self._call("cmsc_set_pin_targets", _ptr(t), t.shape[0])

    def set_external_charges(self, positions, charges):
        """External point charges: positions (k, 3) m, charges (k,) C."""
        p = np.ascontiguousarray(positions, dtype=np.float64).reshape(-1, 3)
        q = _f64(charges, (p.shape[0],), "charges")
        self._call("cmsc_set_external_charges", _ptr(p), _ptr(q), p.shape[0])

    def set_uniform_field(self, field):
        """Uniform electric field (V/m)."""
        e = _f64(field, (3,), "field")
        self._call("cmsc_set_uniform_field", _ptr(e))

    def set_relative_damping(self, rate):
        """Relative damping rate (1/s): velocities relative to the pins' mean motion (or, without
        pins, the centre of mass's) decay as exp(-rate t)."""
        self._call("cmsc_set_relative_damping", float(rate))

    def set_acceleration(self, enabled):
        """Accelerated local/global iterations (True, the default) or plain Liu 2013 ones."""
        self._call("cmsc_set_acceleration", 1 if enabled else 0)

    def set_iteration_tolerance(self, tolerance):
        """Stop a step's local/global iterations once their relative update falls below
        `tolerance` (the parameters' iterations are then the most); 0: always all of them."""
        self._call("cmsc_set_iteration_tolerance", float(tolerance))

    def set_far_field_interval(self, steps):
        """DDEF's whole field every `steps` steps, only its exact near part in between with the
        far part held (1 = every step; the exact methods always evaluate everything)."""
        self._call("cmsc_set_far_field_interval", int(steps))

    def set_field_tolerance(self, tolerance):
        """The relative RMS force error P3M aims for (1e-2 by default; MIN_FIELD_TOLERANCE ..
        MAX_FIELD_TOLERANCE); the exact methods and DDEF ignore it."""
        self._call("cmsc_set_field_tolerance", float(tolerance))

    def set_parts(self, part, relative_damping):
        """Parts (objects) of the vertices: part (n,) indices, each part's Settling (1/s)."""
        p = np.ascontiguousarray(part, dtype=np.uint32).reshape(-1)
        c = np.ascontiguousarray(relative_damping, dtype=np.float64).reshape(-1)
        self._call("cmsc_set_parts", _ptr(p, ctypes.c_uint32), len(p), _ptr(c), len(c))

    def set_spring_damping(self, seconds):
        """Strain-rate damping time (s) of each spring (s,), in the order given at creation: a
        spring resists the rate at which its length changes with seconds × its stiffness (N·s/m),
        never a rigid motion. All zeros (or an empty array) turns it off."""
        b = np.ascontiguousarray(seconds, dtype=np.float64).reshape(-1)
        self._call("cmsc_set_spring_damping", _ptr(b), len(b))

    def set_mesh_colliders(self, vertices, triangles, first_triangle, thickness, friction):
        """Triangle-mesh obstacles: vertices (v, 3) m world, triangles (t, 3), mesh k owning
        triangles first_triangle[k]..first_triangle[k+1]-1 (k + 1 offsets), contact distance
        thickness (k,) m and friction (k,) per mesh (0..1, or mu >= 0 under the Coulomb law of
        `set_collider_friction_law`), replacing earlier ones."""
        v = np.ascontiguousarray(vertices, dtype=np.float64).reshape(-1, 3)
        t = np.ascontiguousarray(triangles, dtype=np.uint32).reshape(-1, 3)
        first = np.ascontiguousarray(first_triangle, dtype=np.uint32).reshape(-1)
        d = np.ascontiguousarray(thickness, dtype=np.float64).reshape(-1)
        mu = np.ascontiguousarray(friction, dtype=np.float64).reshape(-1)
        self._call(
            "cmsc_set_mesh_colliders", _ptr(v), len(v), _ptr(t, ctypes.c_uint32), len(t),
            _ptr(first, ctypes.c_uint32), _ptr(d), _ptr(mu), len(d),
        )

    def move_mesh_colliders(self, vertices):
        """Where the mesh colliders' vertices (v, 3) m are at the end of the next step."""
        v = np.ascontiguousarray(vertices, dtype=np.float64).reshape(-1, 3)
        self._call("cmsc_move_mesh_colliders", _ptr(v), len(v))

    def set_self_collision(self, triangles, distance):
        """Self-collision: the surfaces (t, 3) that repel, and how far (n,) m each vertex keeps
        from them (0: the vertex does not collide); no triangles turns it off."""
        t = np.ascontiguousarray(triangles, dtype=np.uint32).reshape(-1, 3)
        d = np.ascontiguousarray(distance, dtype=np.float64).reshape(-1)
        self._call("cmsc_set_self_collision", _ptr(t, ctypes.c_uint32), len(t), _ptr(d), len(d))

    def set_self_collision_friction(self, rate):
        """Friction between layers (n,) 1/s per vertex: a touching vertex's slip keeps
        exp(-rate h) per step of length h, the same per second at any number of substeps
        (0: frictionless). After `set_self_collision`, which resets it."""
        r = _f64(rate, (self.n_vertices,), "rate")
        self._call("cmsc_set_self_collision_friction", _ptr(r), len(r))

    def set_surface(self, triangles):
        """The simulated surface's triangles (t, 3), with area: their edges are kept off the mesh
        colliders' sharp edges (a cloth draped over a box does not cut into it); none clears."""
        t = np.ascontiguousarray(triangles, dtype=np.uint32).reshape(-1, 3)
        self._call("cmsc_set_surface", _ptr(t, ctypes.c_uint32), len(t))

    def set_collider_friction_law(self, law):
        """How the obstacles' friction values are read (a `FrictionLaw`): PER_STEP (the default,
        0..1 removed per step in contact) or COULOMB (coefficients mu >= 0, Blender Cloth's law,
        the same motion at any number of substeps). Set it before colliders with mu > 1."""
        self._call("cmsc_set_collider_friction_law", int(law))

    def set_sphere_colliders(self, centers, radii):
        """Sphere obstacles: centers (k, 3) m, radii (k,) m."""
        c = np.ascontiguousarray(centers, dtype=np.float64).reshape(-1, 3)
        r = _f64(radii, (c.shape[0],), "radii")
        self._call("cmsc_set_sphere_colliders", _ptr(c), _ptr(r), c.shape[0])

    def coulomb_forces(self):
        """(n, 3) vertex-vertex Coulomb forces (N) of the selected method."""
        out = np.empty((self.n_vertices, 3))
        self._call("cmsc_coulomb_forces", _ptr(out), self.n_vertices)
        return out

    @property
    def coulomb_method(self):
        """The CoulombMethod that runs: what AUTO or AUTO_CPU resolved to for this vertex count and
        machine, or the method asked for (never AUTO or AUTO_CPU)."""
        out = ctypes.c_uint32()
        self._call("cmsc_get_coulomb_method", ctypes.byref(out))
        return CoulombMethod(out.value)

    def energies(self):
        """Dict of kinetic, spring, coulomb, external and total energy (J)."""
        e = _native.CmscEnergies()
        self._call("cmsc_energies", ctypes.byref(e))
        return {name: getattr(e, name) for name, _ in e._fields_}

    # -- gradients (paper §3.2) -----------------------------------------------------------------
    def _groups_and_target(self, group_weights, group_charges, target):
        w = np.ascontiguousarray(group_weights, dtype=np.float64)
        if w.ndim != 2 or w.shape[1] != self.n_vertices:
            raise InvalidArgumentError(f"group_weights must have shape (groups, {self.n_vertices}), got {w.shape}")
        q = _f64(group_charges, (w.shape[0],), "group_charges")
        x = _f64(target, (self.n_vertices, 3), "target")
        return w, q, x

    def rollout_gradient(self, steps, group_weights, group_charges, target, stiffness=False):
        """Loss `L = (1/2n) Σ_i |x_i(T) − target_i|²` (m²) after `steps` steps from the current
        state with vertex charges `group_charges @ group_weights`, and its gradients.

        group_weights: (g, n); group_charges: (g,) C; target: (n, 3) m. Returns
        `(loss, grad_charges (g,) m²/C, grad_stiffness_scale m² or None)` — the last only if
        `stiffness`. The state, charges and time are restored afterwards. UnavailableError if the
        library predates the gradients."""
        _native.require(self._lib, "cmsc_rollout_gradient")
        w, q, x = self._groups_and_target(group_weights, group_charges, target)
        loss = ctypes.c_double()
        grad = np.empty(w.shape[0])
        scale = ctypes.c_double() if stiffness else None
        self._call(
            "cmsc_rollout_gradient", int(steps), _ptr(w), w.shape[0], _ptr(q), _ptr(x), ctypes.byref(loss), _ptr(grad),
            ctypes.byref(scale) if stiffness else None,
        )
        return loss.value, grad, (scale.value if stiffness else None)

    def fit_charges(self, steps, group_weights, group_charges, target, max_iterations=50):
        """The group charges (C) that bring the state after `steps` steps closest to `target`
        (L-BFGS in the library, from the initial guess `group_charges`, not all zero without
        external charges or field); returns `(charges (g,), loss m²)`. The simulation is left as
        it was."""
        _native.require(self._lib, "cmsc_fit_charges")
        w, q, x = self._groups_and_target(group_weights, group_charges, target)
        q = q.copy()
        loss = ctypes.c_double()
        self._call(
            "cmsc_fit_charges", int(steps), _ptr(w), w.shape[0], _ptr(q), _ptr(x), int(max_iterations),
            ctypes.byref(loss),
        )
        return q, loss.value

    @property
    def library_version(self):
        return self._lib.cmsc_version().decode()
