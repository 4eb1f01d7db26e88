"""Mistakes in a simulation's inputs that do not stop it but that an artist should hear about:
a charge group whose vertex group is blank, missing, empty or all zero (its charge acts
nowhere), a pin group that pins nothing, vertices that no spring holds (on no edge or face). Each is a sentence that
names the group and says what follows; the bake reports them as warnings and proceeds.

Plain data in, sentences out (no bpy): a group is given by its vertex group's name and its
`Weights` on the mesh, or None when the mesh has no vertex group of that name."""

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Weights:
    """A vertex group on a mesh of n vertices: each vertex's weight (0 where it is not a
    member) and whether it is a member at all."""

    weight: np.ndarray  # (n,)
    member: np.ndarray  # (n,) bool


def _name_problem(name, exists):
    if not name:
        return "names no vertex group"
    if not exists:
        return f'names vertex group "{name}", which this mesh does not have'
    return None


def group_problem(name, weights):
    """What is wrong with a vertex group called `name` (its `Weights`, None if the mesh has no
    such group) as a source of charge or pins, as the end of a sentence; None if nothing."""
    problem = _name_problem(name, weights is not None)
    if problem:
        return problem
    if not weights.member.any():
        return f'names vertex group "{name}", which has no vertices'
    if not (weights.weight > 0).any():
        return f'names vertex group "{name}", whose weights are all 0'
    return None


def _charge_warning(label, problem):
    return f'Charge group "{label}" {problem}: its charge acts on no vertex'


def _pin_warning(problem):
    return f"Pin Group {problem}: no vertex is pinned"


def charge_group_warnings(groups):
    """Warnings for charge groups given as (group name, vertex group name, Weights or None)."""
    problems = ((label, group_problem(name, weights)) for label, name, weights in groups)
    return [_charge_warning(label, problem) for label, problem in problems if problem]


def pin_group_warning(name, weights):
    """A warning for a Pin Group that is set but pins nothing, or None."""
    problem = group_problem(name, weights) if name else None
    return _pin_warning(problem) if problem else None


def name_warnings(groups, pin_name, has_group):
    """The warnings that names alone give (a blank or missing vertex group), cheap enough for a
    panel to draw: `groups` as (group name, vertex group name), `has_group(name)` whether the
    mesh has a vertex group of that name. Worded as `input_warnings` words them."""
    out = []
    for label, name in groups:
        problem = _name_problem(name, has_group(name))
        if problem:
            out.append(_charge_warning(label, problem))
    problem = _name_problem(pin_name, has_group(pin_name)) if pin_name else None
    if problem:
        out.append(_pin_warning(problem))
    return out


def unsprung_warning(n, springs):
    """A warning when some of the `n` vertices belong to no spring (loose vertices: edges, faces
    and strands all get springs), or None. `springs` is (s, 2)."""
    held = np.zeros(n, dtype=bool)
    held[np.asarray(springs, dtype=np.int64).reshape(-1)] = True
    loose = int(n - held.sum())
    if loose == 0:
        return None
    return (
        f"{loose} of the {n} vertices {'is' if loose == 1 else 'are'} held by no spring (on no edge or face): "
        "they move as free particles"
    )


def input_warnings(groups, pin_name, pin_weights, n, springs):
    """Every warning about a simulation's inputs, in the order of the panel: charge groups, pin
    group, vertices without springs."""
    out = charge_group_warnings(groups)
    pin = pin_group_warning(pin_name, pin_weights)
    if pin:
        out.append(pin)
    loose = unsprung_warning(n, springs)
    if loose:
        out.append(loose)
    return out


def nothing_but_gravity_warning(group_weights, group_charge, pinned, gravity, colliders):
    """A warning for an object that carries no charge at any substep (so no electric force acts
    on it), has no pinned vertex and meets no collider while gravity is on: all it can do is
    fall, which a bare Enable + Bake of a mesh without charge groups does (528 m in 10 s). None
    otherwise. `group_weights` (g, n), `group_charge` (..., g) C over the bake's substeps."""
    if pinned or colliders or not gravity:
        return None
    weights = np.asarray(group_weights, dtype=np.float64)
    g = weights.shape[0] if weights.ndim == 2 else 0
    if g:
        acting = np.abs(np.asarray(group_charge, dtype=np.float64).reshape(-1, g)).max(axis=0) > 0
        if (acting & (np.abs(weights).max(axis=1) > 0)).any():
            return None
    return (
        "carries no charge and nothing holds it (no pinned vertex, no collider), so it only falls under gravity: "
        "give a charge group a charge, pin it with a Pin Group, or turn off Gravity in the scene's cmsc settings"
    )


def self_distance_check(distance, edge_lengths):
    """(refusal, warning), each a sentence or None, for a Self Collision Distance (m) on a mesh
    whose springs at rest are `edge_lengths` (m). A distance as long as the typical (median)
    edge puts the mesh in contact with itself at rest: its vertices push their neighbours' faces
    apart from the first step (a 2 mm cloth at the default 15 mm blew up to 2 m), so it is
    refused. Above half the shortest edge, vertices next to small faces start in contact (a 5 cm
    sphere at 4.9 mm, edges from 1.9 mm, gained energy from nothing): a warning. Both suggest half
    the shortest edge, the longest distance that neither refuses nor warns."""
    lengths = np.asarray(edge_lengths, dtype=np.float64)
    if distance <= 0 or not lengths.size:
        return None, None
    median, shortest = float(np.median(lengths)), float(lengths.min())
    suggest = f"set it to at most {length_text(_down_to_3_digits(0.5 * shortest))}"
    if distance >= median:
        return (
            f"Self Collision Distance {length_text(distance)} is as long as its edges "
            f"(median {length_text(median)}): the mesh would collide with itself at rest and blow apart; {suggest}"
        ), None
    if distance > 0.5 * shortest:
        return None, (
            f"Self Collision Distance {length_text(distance)} is more than half its shortest edge "
            f"({length_text(shortest)}): vertices beside small faces start in contact; {suggest}"
        )
    return None, None


def _down_to_3_digits(x):
    """`x` > 0 rounded down to 3 significant digits: a suggested distance printed rounded up
    could itself be just too long."""
    unit = 10.0 ** (math.floor(math.log10(x)) - 2)
    return math.floor(x / unit) * unit


def length_text(metres):
    """A length for an artist: "4.9 mm", "0.95 mm", or from a metre on "5 m" (not "5e+03 mm")."""
    return f"{metres:.3g} m" if metres >= 1.0 else f"{metres * 1000:.3g} mm"
