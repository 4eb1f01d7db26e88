"""Fitting some charge groups while the others keep their charges.

The library's fitter (`Simulation.fit_charges`, `cmsc_fit_charges`) solves for every group it
is given. When only some groups are to be solved, the others still carry charge that acts on
them, so they cannot simply be left out: this module minimizes the same loss over the free
groups only, with L-BFGS on `Simulation.rollout_gradient` (the library's exact gradient), the
held groups fixed at their values.
"""

from dataclasses import dataclass

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


#: A fit has converged when one more iteration would lower its loss by less than this fraction:
#: what is left to gain no longer shows in the motion.
CONVERGED = 1e-4

#: A fit whose RMS distance to the target is below this fraction of the target's size has
#: reached it: what is left is round-off, where "one more iteration" compares noise with noise.
REACHED = 1e-10


def _reached(loss, target):
    """Whether the loss (m², half the mean squared distance) is round-off for `target`."""
    t = np.asarray(target, dtype=np.float64).reshape(-1, 3)
    size = float(np.ptp(t, axis=0).max()) if len(t) else 0.0
    return np.sqrt(2.0 * max(loss, 0.0)) <= REACHED * size


@dataclass(frozen=True)
class FitResult:
    """What a fit reached: the charges (C, one per group), the loss at them and at the start
    (m²: half the mean squared distance to the target), and whether it converged (False: it
    stopped at its iteration limit while the loss was still falling)."""

    charges: np.ndarray
    loss: float
    initial_loss: float
    converged: bool


def fit_group_charges(sim, steps, group_weights, group_charges, target, free=None, max_iterations=50, tolerance=1e-10):
    """Fits the charges (C) of the groups where `free` is true (all if `free` is None or all
    true, with the library's fitter), the others held at `group_charges`; returns a
    `FitResult`. The simulation is left as it was."""
    q0 = np.array(group_charges, dtype=np.float64).reshape(-1)
    free = np.ones(len(q0), dtype=bool) if free is None else np.asarray(free, dtype=bool).reshape(-1)
    if free.shape != q0.shape:
        raise InvalidArgumentError(f"free must have {len(q0)} entries, got {free.shape}")
    if not free.any():
        raise InvalidArgumentError("no charge group to fit")
    initial, _, _ = sim.rollout_gradient(steps, group_weights, q0, target)
    if free.all():
        q, loss = sim.fit_charges(steps, group_weights, q0, target, max_iterations)
        # The library says not why it stopped: one more of its iterations tells.
        _, further = sim.fit_charges(steps, group_weights, q, target, 1)
        converged = loss - further <= CONVERGED * loss or _reached(loss, target)
        return FitResult(q, loss, initial, converged=converged)
    scale = max(float(np.abs(q0[free]).max()), MIN_SCALE)

    def evaluate(z):
        q = q0.copy()
        q[free] = z * scale
        loss, grad, _ = sim.rollout_gradient(steps, group_weights, q, target)
        return loss, grad[free] * scale

    z = q0[free] / scale
    loss, g = evaluate(z)
    pairs = []
    converged = False
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
        if trial is None:  # no step lowers the loss: as far as it goes
            converged = True
            break
        z_new, loss_new, g_new = trial
        s, y = z_new - z, g_new - g
        if s @ y > 1e-12 * np.sqrt((s @ s) * (y @ y)):
            pairs.append((s, y))
            del pairs[:-MEMORY]
        decrease = loss - loss_new
        z, loss, g = z_new, loss_new, g_new
        if decrease <= tolerance * loss or _reached(loss, target):
            converged = True
            break
    q = q0.copy()
    q[free] = z * scale
    return FitResult(q, loss, initial, converged)


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
