"""Warnings about a simulation's inputs (sim.checks): each mistake named, honest inputs silent."""

import re

import numpy as np
import pytest

from sim.checks import Weights, input_warnings, name_warnings


def weights(w, member=None):
    w = np.asarray(w, dtype=float)
    return Weights(w, np.asarray(member if member is not None else w > 0))


SPRINGS = np.array([[0, 1], [1, 2], [2, 3]])


def test_honest_inputs_give_no_warning():
    good = weights([1.0, 0.5, 0.0, 1.0])
    assert input_warnings([("Body", "body", good)], "roots", good, 4, SPRINGS) == []
    assert input_warnings([], "", None, 4, SPRINGS) == []


def test_each_mistake_is_named():
    groups = [
        ("Blank", "", None),
        ("Lost", "tentacle", None),
        ("Hollow", "empty", weights([0, 0, 0, 0], [False] * 4)),
        ("Faint", "zero", weights([0, 0, 0, 0], [True, True, False, False])),
    ]
    out = input_warnings(groups, "roots", None, 5, SPRINGS)
    assert out == [
        'Charge group "Blank" names no vertex group: its charge acts on no vertex',
        'Charge group "Lost" names vertex group "tentacle", which this mesh does not have: its charge acts on '
        "no vertex",
        'Charge group "Hollow" names vertex group "empty", which has no vertices: its charge acts on no vertex',
        'Charge group "Faint" names vertex group "zero", whose weights are all 0: its charge acts on no vertex',
        'Pin Group names vertex group "roots", which this mesh does not have: no vertex is pinned',
        "1 of the 5 vertices is held by no spring (on no edge or face): they move as free particles",
    ]


def test_name_warnings_match_the_full_check_word_for_word():
    groups = [("Blank", ""), ("Lost", "tentacle"), ("Body", "body")]
    live = name_warnings(groups, "roots", lambda name: name == "body")
    full = input_warnings(
        [(label, name, weights([1.0]) if name == "body" else None) for label, name in groups], "roots", None, 2,
        [[0, 1]],
    )
    assert live == full


@pytest.mark.parametrize(
    "lengths",
    [np.r_[np.full(40, 9.8e-3), np.full(8, 1.91e-3)], np.full(10, 1e-3), np.r_[np.full(5, 2.0), np.full(5, 4.0)]],
    ids=["5 cm sphere", "2 cm grid", "10 m mesh"],
)
def test_the_self_collision_distance_suggested_neither_refuses_nor_warns(lengths):
    """The refusal said "at most half the median edge", which then warned ("more than half its
    shortest edge ... set it to at most" the same number) and gained energy from nothing."""
    from sim.checks import length_text, self_distance_check

    refusal, _ = self_distance_check(1.01 * np.median(lengths), lengths)
    suggested = re.search(r"set it to at most ([\d.]+) (mm|m)$", refusal)
    assert suggested, refusal
    value = float(suggested.group(1)) * (1e-3 if suggested.group(2) == "mm" else 1.0)
    assert self_distance_check(value, lengths) == (None, None), value
    _, warning = self_distance_check(0.99 * np.median(lengths), lengths)
    assert warning.endswith(f"set it to at most {length_text(value)}"), warning
    assert "e+" not in refusal and "e-" not in refusal, refusal
