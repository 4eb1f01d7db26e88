"""What runs now, per object, keyed by `Object.session_uid` (stable for the session, unlike a
name that the user may change): bakes running in the UI (modal), live previews with their status
lines, the input warnings of the last run, and the suspension of every preview while a bake or a
fit steps through frames.

Only state lives here; `bake` and `preview` decide what runs. Nothing is saved with the file."""

import contextlib
import enum
from typing import NamedTuple

_bakes = {}  # session_uid → BakeJob of a modal bake
_previews = {}  # session_uid → the state of the preview the object is part of (preview._State)
_status = {}  # session_uid → (icon, text): the preview's status line
_suspend = [0]


# -- bakes ------------------------------------------------------------------------------------
def bake_started(obj, job):
    _bakes[obj.session_uid] = job


def bake_ended(obj):
    _bakes.pop(obj.session_uid, None)


def bake_job(obj):
    """The BakeJob of `obj`'s running modal bake (the panel draws its progress), or None."""
    return _bakes.get(obj.session_uid)


def is_baking(obj):
    return obj.session_uid in _bakes


# -- previews ---------------------------------------------------------------------------------
def preview(obj):
    """The state of `obj`'s running preview, or None."""
    return _previews.get(obj.session_uid)


def preview_started(objects, state):
    """`state` previews `objects` together (one simulation)."""
    for obj in objects:
        _previews[obj.session_uid] = state


def preview_ended(obj):
    """Forgets the preview `obj` is part of, for every object of it; returns its state (for the
    caller to close), or None."""
    state = _previews.pop(obj.session_uid, None)
    for uid in [uid for uid, s in _previews.items() if s is state]:
        del _previews[uid]
    return state


def end_all_previews():
    """Forgets every preview and status line; returns the states (for the caller to close)."""
    states = list({id(s): s for s in _previews.values()}.values())
    _previews.clear()
    _status.clear()
    return states


class Severity(str, enum.Enum):
    """How much a preview's status line matters; its value is the panel's icon."""

    INFO = "INFO"  # what the preview is doing, or why it waits
    ERROR = "ERROR"  # it stopped: diverged, failed, or a GPU fallback


class Status(NamedTuple):
    """A preview's status line for the panel."""

    severity: Severity
    text: str


def status(obj):
    """The `Status` of `obj`'s preview, or None."""
    return _status.get(obj.session_uid)


def set_status(obj, severity, text):
    """Sets `obj`'s status line; `severity` a `Severity` (or its name)."""
    _status[obj.session_uid] = Status(Severity(severity), text)


def clear_status(obj):
    _status.pop(obj.session_uid, None)


# -- input warnings ---------------------------------------------------------------------------
_warnings = {}  # session_uid → warnings of the inputs the last bake or preview read


def set_warnings(obj, warnings):
    _warnings[obj.session_uid] = list(warnings)


def warnings(obj):
    """The input warnings kept from `obj`'s last bake or preview start: those that need the
    weights to be found (the panel checks names itself)."""
    return _warnings.get(obj.session_uid, [])


# -- suspension -------------------------------------------------------------------------------
@contextlib.contextmanager
def previews_suspended():
    """No preview advances while this is active (a bake or a fit stepping through frames)."""
    _suspend[0] += 1
    try:
        yield
    finally:
        _suspend[0] -= 1


def previews_are_suspended():
    return _suspend[0] > 0
