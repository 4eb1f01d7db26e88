"""FMM3D's Laplace FMM from the source build (`make fmm3d`: FMM3D's `make lib FAST_KER=ON`)
through its C interface (c/lfmm3d_c.h), loaded with ctypes: the one wrapper that the validation
peers (peers.py) and the benchmark (tests/bench/fmm3d_compare.py) share.

    lfmm3d_s_c_g_(double *eps, int64_t *nsource, double *source, double *charge, double *pot,
                  double *grad, int64_t *ier)

gives the potential and its gradient at the sources (self term dropped); `source` is (3, n) in
Fortran order, i.e. a C-contiguous (n, 3) array. Its OpenMP pool takes OMP_NUM_THREADS."""

import ctypes
from ctypes import POINTER, byref, c_double, c_int, c_int64
from pathlib import Path

import numpy as np

_P_DOUBLE = POINTER(c_double)


class Fmm3dC:
    """The library at `path`."""

    def __init__(self, path):
        self.path = Path(path)
        self.lib = ctypes.CDLL(str(self.path))
        fn = self.lib.lfmm3d_s_c_g_
        fn.restype = None
        fn.argtypes = [_P_DOUBLE, POINTER(c_int64), _P_DOUBLE, _P_DOUBLE, _P_DOUBLE, _P_DOUBLE, POINTER(c_int64)]
        self._fn = fn

    def gradient(self, points, charges, eps):
        """(pot (n,), grad (n, 3)) of u_i = c sum_{j != i} q_j / r_ij at every source."""
        src = np.ascontiguousarray(points, dtype=np.float64)
        q = np.ascontiguousarray(charges, dtype=np.float64)
        n = len(src)
        pot, grad, ier = np.empty(n), np.empty((n, 3)), c_int64(0)
        arrays = (a.ctypes.data_as(_P_DOUBLE) for a in (src, q, pot, grad))
        self._fn(byref(c_double(eps)), byref(c_int64(n)), *arrays, byref(ier))
        if ier.value != 0:
            raise RuntimeError(f"FMM3D lfmm3d_s_c_g: ier = {ier.value} (eps = {eps}, n = {n})")
        return pot, grad

    def openmp_threads(self):
        """omp_get_max_threads() of the OpenMP runtime the library links, or None without one."""
        try:
            fn = self.lib.omp_get_max_threads  # dlsym searches the library's dependencies
        except AttributeError:
            return None
        fn.restype, fn.argtypes = c_int, []
        return fn()

    def version(self):
        """The FMM3D version (the sdist's PKG-INFO beside the build), or "?"."""
        info = self.path.resolve().parent.parent / "PKG-INFO"
        if info.is_file():
            for line in info.read_text(errors="replace").splitlines():
                if line.startswith("Version:"):
                    return line.split(":", 1)[1].strip()
        return "?"

    def describe(self):
        """What this build is: path, version, vectorised kernels, OpenMP threads."""
        return {"path": str(self.path), "version": self.version(),
                "vectorised": hasattr(self.lib, "l3ddirectcg_cpp_"),  # FAST_KER=ON's C++ kernels
                "omp_threads": self.openmp_threads()}
