"""Scenes, energies and cmsc runs shared by the validation experiments.

cmsc is driven only through the add-on's pure-Python wrapper (`blender_addon/sim`: `Simulation`,
`SimParams`, `sim.mesh`), which loads `libcmsc.so` through its C ABI. Every energy that the
report compares is computed here by one numpy function (`energies`) from positions and
velocities, whichever code produced them, so that the codes are compared on one definition:

    E = sum_i m_i |v_i|^2 / 2 + sum_s k_s (|x_a - x_b| - l_s)^2 / 2 + sum_{i<j} k_c q_i q_j / r_ij

(the true Coulomb law; cmsc spreads each charge over a ball of radius a = a quarter of the rest
distance to the nearest neighbour, which is exactly this law for every pair farther apart than a, i.e. for
every pair of a mesh without contact; any difference is reported as `own_energy_gap`).
"""

import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "blender_addon"))

from sim import CoulombMethod, DivergedError, Integrator, SimParams, Simulation, UnavailableError  # noqa: E402,F401
from sim.mesh import springs_from_triangles  # noqa: E402

#: Coulomb's constant k_c (N m^2 / C^2), cmsc's default.
K_C = 8.9875517923e9
SUZANNE_OBJ = ROOT / "cmsc-core" / "tests" / "data" / "suzanne.obj"


def lib_path():
    """The libcmsc.so under test: $CMSC_LIB, else target/release/libcmsc.so."""
    path = Path(os.environ.get("CMSC_LIB", ROOT / "target" / "release" / "libcmsc.so"))
    if not path.is_file():
        raise SystemExit(f"{path} is missing: build it with `cargo build --release -p cmsc-ffi`")
    return str(path)


# ---------------------------------------------------------------------------------------------
# Meshes (numpy ports of cmsc-core/src/shapes.rs, same vertex order)
# ---------------------------------------------------------------------------------------------


def torus_mesh(u, v, major=1.0, minor=0.3):
    """shapes::torus(u, v, major, minor): u*v vertices, index i*v + j."""
    theta = 2 * np.pi * np.arange(u) / u
    phi = 2 * np.pi * np.arange(v) / v
    th, ph = np.meshgrid(theta, phi, indexing="ij")
    ring = major + minor * np.cos(ph)
    x = np.stack([ring * np.cos(th), ring * np.sin(th), minor * np.sin(ph)], axis=-1).reshape(-1, 3)
    i, j = np.meshgrid(np.arange(u), np.arange(v), indexing="ij")
    i, j = i.ravel(), j.ravel()

    def idx(a, b):
        return (a % u) * v + (b % v)

    t1 = np.stack([idx(i, j), idx(i + 1, j), idx(i + 1, j + 1)], axis=1)
    t2 = np.stack([idx(i, j), idx(i + 1, j + 1), idx(i, j + 1)], axis=1)
    tri = np.stack([t1, t2], axis=1).reshape(-1, 3)
    return np.ascontiguousarray(x), tri


def uv_sphere_mesh(rings, segments, radius=1.0):
    """shapes::uv_sphere(rings, segments, radius): 2 + (rings - 1) * segments vertices."""
    pts = [[0.0, 0.0, radius]]
    for r in range(1, rings):
        polar = math.pi * r / rings
        az = 2 * np.pi * np.arange(segments) / segments
        pts.extend(np.stack([math.sin(polar) * np.cos(az), math.sin(polar) * np.sin(az),
                             np.full(segments, math.cos(polar))], axis=1) * radius)
    pts.append([0.0, 0.0, -radius])
    south = len(pts) - 1

    def ring(r, s):
        return 1 + (r - 1) * segments + s % segments

    tri = []
    for s in range(segments):
        tri.append([0, ring(1, s), ring(1, s + 1)])
        tri.append([south, ring(rings - 1, s + 1), ring(rings - 1, s)])
    for r in range(1, rings - 1):
        for s in range(segments):
            a, b, c, d = ring(r, s), ring(r + 1, s), ring(r + 1, s + 1), ring(r, s + 1)
            tri.extend([[a, b, c], [a, c, d]])
    return np.asarray(pts, dtype=np.float64), np.asarray(tri, dtype=np.int64)


def icosphere_mesh(subdivisions, radius=1.0):
    """A geodesic sphere: an icosahedron whose triangles are split in four `subdivisions`
    times, vertices pushed to the sphere: 10 * 4^k + 2 nearly evenly spaced vertices."""
    t = (1.0 + 5**0.5) / 2.0
    x = [[-1, t, 0], [1, t, 0], [-1, -t, 0], [1, -t, 0], [0, -1, t], [0, 1, t], [0, -1, -t], [0, 1, -t],
         [t, 0, -1], [t, 0, 1], [-t, 0, -1], [-t, 0, 1]]
    tri = [[0, 11, 5], [0, 5, 1], [0, 1, 7], [0, 7, 10], [0, 10, 11], [1, 5, 9], [5, 11, 4], [11, 10, 2],
           [10, 7, 6], [7, 1, 8], [3, 9, 4], [3, 4, 2], [3, 2, 6], [3, 6, 8], [3, 8, 9], [4, 9, 5],
           [2, 4, 11], [6, 2, 10], [8, 6, 7], [9, 8, 1]]
    x = [list(np.asarray(p, float) / np.linalg.norm(p)) for p in x]
    for _ in range(subdivisions):
        mid = {}

        def midpoint(a, b):
            key = (min(a, b), max(a, b))
            if key not in mid:
                p = np.asarray(x[a]) + np.asarray(x[b])
                x.append(list(p / np.linalg.norm(p)))
                mid[key] = len(x) - 1
            return mid[key]

        new = []
        for a, b, c in tri:
            ab, bc, ca = midpoint(a, b), midpoint(b, c), midpoint(c, a)
            new += [[a, ab, ca], [b, bc, ab], [c, ca, bc], [ab, bc, ca]]
        tri = new
    return np.asarray(x) * radius, np.asarray(tri, dtype=np.int64)


def grid_mesh(nx, ny, spacing):
    """shapes::grid(nx, ny, spacing): a flat cloth in the xy plane (positions only are used)."""
    i, j = np.meshgrid(np.arange(nx), np.arange(ny), indexing="xy")
    x = np.stack([i.ravel() * spacing, j.ravel() * spacing, np.zeros(nx * ny)], axis=1)
    return x.astype(np.float64), np.zeros((0, 3), dtype=np.int64)


def suzanne_mesh():
    """Blender's Suzanne, subdivision level 1, triangulated (cmsc-core/tests/data/suzanne.obj)."""
    v, f = [], []
    for line in SUZANNE_OBJ.read_text().splitlines():
        if line.startswith("v "):
            v.append([float(t) for t in line.split()[1:4]])
        elif line.startswith("f "):
            f.append([int(t.split("/")[0]) - 1 for t in line.split()[1:4]])
    return np.asarray(v, dtype=np.float64), np.asarray(f, dtype=np.int64)


# ---------------------------------------------------------------------------------------------
# Scenes
# ---------------------------------------------------------------------------------------------


@dataclass
class Scene:
    """A charged mass-spring system: what every code is given."""

    name: str
    x: np.ndarray  # (n, 3) m, also the rest shape
    springs: np.ndarray  # (s, 2) vertex indices
    stiffness: np.ndarray  # (s,) N/m
    masses: np.ndarray  # (n,) kg
    charges: np.ndarray  # (n,) C
    params: dict = field(default_factory=dict)  # what the report prints

    @property
    def n(self):
        return len(self.x)

    @property
    def rest(self):
        return np.linalg.norm(self.x[self.springs[:, 0]] - self.x[self.springs[:, 1]], axis=1)

    @property
    def size(self):
        """Bounding-box diagonal of the rest shape (m)."""
        return float(np.linalg.norm(self.x.max(axis=0) - self.x.min(axis=0)))


def structural_scene(name, x, tri, ks, mass_per_vertex, q_per_vertex, **params):
    """Structural springs (the mesh edges, no bending springs, as cmsc-core/tests/common)."""
    structural, _bending = springs_from_triangles(tri)
    n = len(x)
    return Scene(name, x, structural.astype(np.int64), np.full(len(structural), float(ks)),
                 np.full(n, float(mass_per_vertex)), np.full(n, float(q_per_vertex)),
                 dict(params, vertices=n, springs=len(structural), k_s=ks,
                      mass_per_vertex=mass_per_vertex, q_per_vertex=q_per_vertex))


def paper_torus(q=6e-6, ks=10.0, mass=1.0):
    """The paper's torus (§4.1.2, Fig. 4) as cmsc-core/tests/common::paper_torus: 29 x 5 = 145
    vertices, R = 1 m, r = 0.3 m, structural springs of 10 N/m, 6 µC and 1 kg per vertex."""
    x, tri = torus_mesh(29, 5, 1.0, 0.3)
    return structural_scene("torus-145", x, tri, ks, mass, q, mesh="torus(29, 5, R = 1 m, r = 0.3 m)")


def bunny_scene(q_label, ks, subdivisions):
    """The 'bunny-sized' scene of Figs. 5 and 12: a geodesic sphere of radius 1 m (evenly
    spaced vertices, so no region carries a denser charge than another). It carries the total
    charge and mass of the paper's torus at the same per-vertex label q (145 q and 145 kg),
    spread evenly over its n vertices, so that its dynamics are those of the torus at another
    resolution."""
    x, tri = icosphere_mesh(subdivisions, 1.0)
    n = len(x)
    scene = structural_scene(f"icosphere-{n}", x, tri, ks, 145.0 / n, 145.0 * q_label / n,
                             mesh=f"icosphere({subdivisions} subdivisions, radius = 1 m)")
    scene.params.update(q_label=q_label, total_charge=145.0 * q_label, total_mass=145.0)
    return scene


# ---------------------------------------------------------------------------------------------
# Energies (one definition for every code)
# ---------------------------------------------------------------------------------------------


def coulomb_energy(x, q, k_c=K_C):
    """sum_{i<j} k_c q_i q_j / r_ij (J), exact, in row blocks."""
    n = len(x)
    total = 0.0
    block = max(1, 2_000_000 // max(n, 1))
    for s in range(0, n, block):
        d = x[s:s + block, None, :] - x[None, :, :]
        r = np.sqrt(np.einsum("knc,knc->kn", d, d))
        rows = np.arange(s, min(s + block, n))
        mask = np.arange(n)[None, :] > rows[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            total += float(np.sum(np.where(mask, q[rows, None] * q[None, :] / np.where(mask, r, 1.0), 0.0)))
    return k_c * total


def energies(scene, x, v):
    """Kinetic, spring, Coulomb and total energy (J) of a state, see the module docs."""
    kinetic = 0.5 * float(np.sum(scene.masses * np.einsum("ic,ic->i", v, v)))
    length = np.linalg.norm(x[scene.springs[:, 0]] - x[scene.springs[:, 1]], axis=1)
    spring = 0.5 * float(np.sum(scene.stiffness * (length - scene.rest) ** 2))
    coulomb = coulomb_energy(x, scene.charges)
    return {"kinetic": kinetic, "spring": spring, "coulomb": coulomb, "total": kinetic + spring + coulomb}


# ---------------------------------------------------------------------------------------------
# Trajectories
# ---------------------------------------------------------------------------------------------


@dataclass
class Trajectory:
    """Samples of one run: times (s), total energy (J), positions (m); `failed` says why and
    when a run stopped early (None if it ran to the end)."""

    code: str
    h: float
    t: list = field(default_factory=list)
    energy: list = field(default_factory=list)
    x: list = field(default_factory=list)
    radius: list = field(default_factory=list)  # largest vertex distance from the rest centre (m)
    own_energy_gap: float = 0.0  # max |E_code - E_common| / |E_common| over the samples
    failed: str = None
    wall: float = 0.0

    def as_arrays(self):
        return np.asarray(self.t), np.asarray(self.energy)


def blown_up(scene, x, limit):
    """True when positions are not finite or a vertex is farther than `limit` m from the
    rest shape's centre."""
    if not np.all(np.isfinite(x)):
        return True
    return float(np.max(np.linalg.norm(x - scene.x.mean(axis=0), axis=1))) > limit


def sample_steps(h, sample_dt):
    return max(1, int(round(sample_dt / h)))


def cmsc_params(h, integrator, coulomb=CoulombMethod.DIRECT, grid_points=1000, iterations=10):
    return SimParams(time_step=h, iterations=iterations, damping=0.0, gravity=(0.0, 0.0, 0.0),
                     coulomb=coulomb, grid_points=grid_points, integrator=integrator)


def run_cmsc(scene, h, integrator, duration, sample_dt, limit, keep_x=False, x0=None):
    """Runs cmsc from rest for `duration` s, sampling every round(sample_dt / h) steps."""
    name = {Integrator.IMEX: "cmsc IMEX", Integrator.VERLET: "cmsc Verlet",
            Integrator.IMEX_LOW_DISSIPATION: "cmsc IMEX low-dissipation"}[integrator]
    traj = Trajectory(name, h)
    t0 = time.perf_counter()
    every = sample_steps(h, sample_dt)
    steps = int(round(duration / h))
    with Simulation(lib_path(), scene.x, scene.masses, scene.springs, scene.stiffness,
                    cmsc_params(h, integrator)) as sim:
        sim.set_charges(scene.charges)
        if x0 is not None:
            sim.positions = x0
        done = 0
        while True:
            x, v = sim.positions, sim.velocities
            if blown_up(scene, x, limit):
                traj.failed = f"left the {limit:g} m ball at t = {done * h:.3g} s"
                break
            e = energies(scene, x, v)
            own = sim.energies()["total"]
            traj.own_energy_gap = max(traj.own_energy_gap, abs(own - e["total"]) / abs(e["total"]))
            traj.t.append(done * h)
            traj.energy.append(e["total"])
            traj.radius.append(float(np.max(np.linalg.norm(x - scene.x.mean(axis=0), axis=1))))
            if keep_x:
                traj.x.append(x)
            if done >= steps:
                break
            k = min(every, steps - done)
            try:
                sim.step(k)
            except DivergedError as err:
                traj.failed = f"diverged at t = {done * h:.3g} s ({err})"
                break
            done += k
    traj.wall = time.perf_counter() - t0
    return traj


def relative_error(traj, ref_t, ref_e):
    """|E(t) - E_ref(t)| / |E_ref(t)| at the trajectory's samples (reference interpolated)."""
    t, e = traj.as_arrays()
    er = np.interp(t, ref_t, ref_e)
    return t, np.abs(e - er) / np.abs(er)


def machine_info():
    """CPU model, cores, memory and OS, for the report."""
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = int(line.split()[1]) / 1024**2
    except OSError:
        pass
    import platform

    return {"cpu": model, "cores": os.cpu_count(), "memory_gib": mem,
            "os": f"{platform.system()} {platform.release()}", "python": platform.python_version()}


def loadavg():
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None

