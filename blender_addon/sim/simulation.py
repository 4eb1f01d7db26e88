"""`Simulation`: owns one native handle; numpy arrays in and out."""

import ctypes

import numpy as np

from . import _native
from .errors import CmscError, InvalidArgumentError
from .params import SimParams


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
        c_params = (params or SimParams()).to_c(_native.CmscParams)
        handle = ctypes.c_void_p()
        status = self._lib.cmsc_create(
            _ptr(self._x), n, _ptr(m), _ptr(springs, ctypes.c_uint32), springs.shape[0], _ptr(k),
            ctypes.byref(c_params), ctypes.byref(handle),
        )
        _native.check(self._lib, status)
        self._handle = handle
        self.n_vertices = n

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

    def energies(self):
        """Dict of kinetic, spring, coulomb, external and total energy (J)."""
        e = _native.CmscEnergies()
        self._call("cmsc_energies", ctypes.byref(e))
        return {name: getattr(e, name) for name, _ in e._fields_}

    @property
    def library_version(self):
        return self._lib.cmsc_version().decode()
