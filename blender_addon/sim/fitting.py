"""Fitting some charge groups while the others keep their charges.

The library's fitter (`Simulation.fit_charges`, `cmsc_fit_charges`) solves for every group it
is given. When only some groups are to be solved, the others still carry charge that acts on
them, so they cannot simply be left out: this module minimizes the same loss over the free
groups only, with L-BFGS on `Simulation.rollout_gradient` (the library's exact gradient), the
held groups fixed at their values.
"""

import numpy as np

from .errors import CmscError, InvalidArgumentError

#: L-BFGS memory (pairs kept); the problems have one variable per charge group.
MEMORY = 8
#: Armijo sufficient-decrease constant (Nocedal & Wright's usual 1e-4).
ARMIJO = 1e-4
#: First step: change the free charges by at most this fraction of their scale, since the
#: gradient's size says nothing yet about the curvature.
FIRST_STEP = 0.25
#: Smallest charge scale (C): charges are optimized in units of max(|Q₀|∞, 1 nC), like the library.
MIN_SCALE = 1e-9


def fit_group_charges(sim, steps, group_weights, group_charges, target, free=None, max_iterations=50, tolerance=1e-10):
    """Fits the charges (C) of the groups where `free` is true (all if `free` is None or all
    true, with the library's fitter), the others held at `group_charges`; returns
    `(charges (g,), loss m², initial loss m²)`. The simulation is left as it was."""
    q0 = np.array(group_charges, dtype=np.float64).reshape(-1)
    free = np.ones(len(q0), dtype=bool) if free is None else np.asarray(free, dtype=bool).reshape(-1)
    if free.shape != q0.shape:
        raise InvalidArgumentError(f"free must have {len(q0)} entries, got {free.shape}")
    if not free.any():
        raise InvalidArgumentError("no charge group to fit")
    initial, _, _ = sim.rollout_gradient(steps, group_weights, q0, target)
    if free.all():
        q, loss = sim.fit_charges(steps, group_weights, q0, target, max_iterations)
        return q, loss, initial
    scale = max(float(np.abs(q0[free]).max()), MIN_SCALE)

    def evaluate(z):
        q = q0.copy()
        q[free] = z * scale
        loss, grad, _ = sim.rollout_gradient(steps, group_weights, q, target)
        return loss, grad[free] * scale

    z = q0[free] / scale
    loss, g = evaluate(z)
    pairs = []
    for _ in range(int(max_iterations)):
        d = -_two_loop(g, pairs)
        if g @ d >= 0:  # not a descent direction: restart from steepest descent
            pairs.clear()
            d = -g
        if not pairs:
            d *= FIRST_STEP / max(float(np.abs(d).max()), 1e-300)
        t, trial = 1.0, None
        while t > 1e-12:
            try:
                trial = (z + t * d, *evaluate(z + t * d))
            except CmscError:  # a diverging trial step: shorten it
                trial = None
            if trial is not None and trial[1] <= loss + ARMIJO * t * (g @ d):
                break
            trial = None
            t *= 0.5
        if trial is None:
            break
        z_new, loss_new, g_new = trial
        s, y = z_new - z, g_new - g
        if s @ y > 1e-12 * np.sqrt((s @ s) * (y @ y)):
            pairs.append((s, y))
            del pairs[:-MEMORY]
        decrease = loss - loss_new
        z, loss, g = z_new, loss_new, g_new
        if decrease <= tolerance * loss or loss == 0.0:
            break
    q = q0.copy()
    q[free] = z * scale
    return q, loss, initial


def _two_loop(g, pairs):
    """L-BFGS two-loop recursion: H·g for the inverse-Hessian estimate of `pairs`."""
    r = g.copy()
    alphas = []
    for s, y in reversed(pairs):
        a = (s @ r) / (y @ s)
        alphas.append(a)
        r -= a * y
    if pairs:
        s, y = pairs[-1]
        r *= (s @ y) / (y @ y)
    for (s, y), a in zip(pairs, reversed(alphas)):
        b = (y @ r) / (y @ s)
        r += (a - b) * s
    return r
