"""Live preview: while the timeline plays forward from an object's start frame, a
frame_change_post handler advances its simulation one frame (one frame of substeps, with the
bake's inputs: `inputs.setup`, `inputs.world_state`, `inputs.substep_inputs`, `step_frame`) and
writes the positions into a shape key (`bridge.write_shape_key`), so the mesh's own coordinates
stay the rest shape. Running previews and their status lines are kept in `activity`, by
`session_uid`.

- Substeps: `preview_substeps` per frame (default 1, so playback stays interactive on large
  meshes), or with 0 the bake's `substeps`, and then the preview equals the bake.

- Reset: at or before the start frame, on a jump back, and when a setting changes; the shape key
  is removed and the next pass through the start frame starts over.
- Never when the object bakes together with other simulated objects or colliders (a preview of
  it alone would show another motion than the bake's), when a bake exists or is running (the
  bake plays), with deforming modifiers above the
  cache slot (an Armature: the preview's shape key would be deformed again), in Edit Mode, while a bake or a
  fit gathers its inputs (`activity.previews_suspended()`), or during a render job started from
  the interface.
- A forward jump of a few frames (playback dropping frames) is simulated with the object and
  external charge positions interpolated, and flagged approximate; a longer jump pauses.
- Saving: the shape key is kept out of the saved .blend (`on_save_pre` removes it,
  `on_save_post` puts back those of running previews), so a file never opens deformed.
- Nothing raises into Blender: problems become the panel's status line (`status(obj)`).
"""

import time

import bpy
import numpy as np
from bpy.app.handlers import persistent

from ..sim import methods
from ..sim.bake_job import DIVERGED_HINT, step_frame, to_local
from ..sim.errors import CmscError, DivergedError
from . import activity, bridge, cache, inputs

#: The shape key holding the preview positions (not "cmsc …": that prefix is the shape-key bake's).
KEY_NAME = "Preview (cmsc)"
#: Frames a forward jump may skip and still be simulated (interpolating positions); chosen so a
#: dropped-frame catch-up stays below a few frames' cost.
MAX_CATCH_UP = 8


class _State:
    """A running preview: the simulation and where it is."""

    def __init__(self, scene, obj):
        self.substeps = substeps(obj.cmsc)
        self.setup = inputs.setup(scene, obj, self.substeps)
        st = self.setup
        self.sim = st.create_simulation()
        #: the Coulomb method that runs (what AUTO chose), shown in the panel
        self.coulomb_method = self.sim.coulomb_method
        self.frame = scene.frame_current
        externals = inputs.external_charges(scene)
        self.externals = [o.session_uid for o in externals]
        self.pin, self.ext = inputs.world_state(obj, st.rest_local, st.pins, externals)
        self.n_vertices = bridge.vertex_count(obj)
        self.approximate = False
        #: seconds spent reading Blender data, in the library, and writing the shape key
        self.timings = {"read": 0.0, "simulate": 0.0, "write": 0.0}

    def close(self):
        self.sim.close()


def substeps(s):
    """Steps per frame of the preview of object settings `s`."""
    return s.preview_substeps or s.substeps


def diverged_hint(s):
    """What a diverged preview of object settings `s` suggests."""
    if substeps(s) < s.substeps:
        return (
            f"The preview runs {substeps(s)} substeps per frame: raise Preview Substeps (0 = the bake's {s.substeps})"
        )
    return DIVERGED_HINT


def status(obj):
    """(icon, text) of `obj`'s preview for the panel, or None."""
    return activity.status(obj)


def is_running(obj):
    return activity.preview(obj) is not None


def timings(obj):
    """Seconds the running preview of `obj` spent reading Blender data, simulating and writing
    the shape key (a copy), or None."""
    state = activity.preview(obj)
    return dict(state.timings) if state is not None else None


def coulomb_method(obj):
    """What the panel says of the Coulomb method of `obj`'s running preview ("DDEF (chosen by
    AUTO)"), or None."""
    state = activity.preview(obj)
    return methods.describe(state.setup.params.coulomb, state.coulomb_method) if state is not None else None


def _drop(obj):
    state = activity.preview_ended(obj)
    if state is not None:
        state.close()


def clear(obj):
    """Stops `obj`'s preview and removes its shape key and status."""
    _drop(obj)
    activity.clear_status(obj)
    if obj.type == "MESH":
        bridge.remove_shape_key(obj, KEY_NAME)


def reset(obj):
    """A setting changed: the preview starts over at the start frame."""
    running = is_running(obj)
    clear(obj)
    if running:
        activity.set_status(obj, "INFO", f"Settings changed: the preview restarts at frame {obj.cmsc.frame_start}")
    _schedule_prepare()


def _stop(obj, icon, text):
    _drop(obj)
    activity.set_status(obj, icon, text)


def _update(scene, obj):
    s = obj.cmsc
    frame = scene.frame_current
    if activity.is_baking(obj):
        return
    if cache.has_bake(obj):
        if is_running(obj) or bridge.shape_keys(obj) is not None:
            clear(obj)
        return
    if obj.mode == "EDIT":
        _stop(obj, "INFO", "Preview paused in Edit Mode")
        return
    together = [o.name for o in inputs.simulated_objects(scene, obj)[1:]]
    together += [o.name for o in inputs.collision_objects(scene)]
    if together:
        # the bake simulates them together; a preview of this object alone would show other motion
        names = ", ".join(together)
        _stop(obj, "INFO", f"Preview paused: this object bakes together with {names}; bake to see them")
        return
    deforming = cache.deforming_modifiers(obj)
    if deforming:
        # the preview's shape key sits under the modifiers, which would deform its result again
        names = ", ".join(deforming)
        _stop(obj, "INFO", f"Preview paused: {names} deform the mesh under the simulation; bake to see both")
        return
    state = activity.preview(obj)
    if state is not None and (
        bridge.vertex_count(obj) != state.n_vertices
        or [o.session_uid for o in inputs.external_charges(scene)] != state.externals
    ):
        reset(obj)
        state = None
    if frame <= s.frame_start:
        clear(obj)
        if frame == s.frame_start:
            state = _State(scene, obj)
            activity.preview_started(obj, state)
            inputs.keep_warnings(obj, state.setup.warnings)
            if state.setup.note:
                activity.set_status(obj, "ERROR", state.setup.note)
        return
    if state is None:
        if activity.status(obj) is None:
            activity.set_status(obj, "INFO", f"Preview: play from frame {s.frame_start} to simulate")
        return
    target = min(frame, s.frame_end)
    if target < state.frame:
        clear(obj)
        activity.set_status(obj, "INFO", f"Preview reset (jumped back to {frame}): play from frame {s.frame_start}")
        return
    gap = target - state.frame
    if gap == 0:
        return
    if gap > MAX_CATCH_UP:
        activity.set_status(
            obj,
            "INFO",
            f"Preview paused at frame {state.frame}: {gap} frames ahead; play from frame {s.frame_start} or bake",
        )
        return
    _advance(scene, obj, state, target, gap)


def _advance(scene, obj, state, target, gap):
    st, s = state.setup, obj.cmsc
    clock, t = time.perf_counter, state.timings
    t0 = clock()
    externals = inputs.external_charges(scene)
    pin1, ext1 = inputs.world_state(obj, st.rest_local, st.pins, externals)
    f = state.frame
    try:
        for f in range(state.frame + 1, target + 1):
            a, b = (f - 1 - state.frame) / gap, (f - state.frame) / gap
            pin = np.stack([(1 - a) * state.pin + a * pin1, (1 - b) * state.pin + b * pin1])
            ext = np.stack([(1 - a) * state.ext + a * ext1, (1 - b) * state.ext + b * ext1])
            charges_and_field = inputs.substep_inputs(scene, obj, externals, f, state.substeps)
            t1 = clock()
            t["read"] += t1 - t0
            step_frame(state.sim, st.group_weights, st.pins, pin, ext, *charges_and_field)
            t0 = clock()
            t["simulate"] += t0 - t1
        local = to_local(state.sim.positions, np.linalg.inv(np.array(obj.matrix_world)))
    except DivergedError as e:
        _stop(obj, "ERROR", f"Preview diverged at frame {f}: {e}. {diverged_hint(s)}")
        return
    except CmscError as e:
        _stop(obj, "ERROR", f"Preview failed at frame {f}: {e}")
        return
    if local is None:
        _stop(obj, "ERROR", f"Preview diverged at frame {target}: vertices left the float32 range. {diverged_hint(s)}")
        return
    t0 = clock()
    bridge.write_shape_key(obj, KEY_NAME, local)
    t["write"] += clock() - t0
    state.frame, state.pin, state.ext = target, pin1, ext1
    if gap > 1:
        state.approximate = True
    if state.approximate:
        activity.set_status(obj, "INFO", "Preview skipped frames (positions interpolated): bake for the exact motion")
    elif (activity.status(obj) or ("",))[0] == "INFO":
        activity.clear_status(obj)


@persistent
def on_frame_change(scene, depsgraph=None):
    """frame_change_post: advance or reset every previewed object of `scene`. Not while the
    interface renders (a render job reads the data this would write; bake for renders)."""
    if activity.previews_are_suspended() or bpy.app.is_job_running("RENDER"):
        return
    for obj in scene.objects:
        if obj.type != "MESH" or not (obj.cmsc.enabled and obj.cmsc.preview):
            continue
        try:
            _update(scene, obj)
        except Exception as e:  # noqa: BLE001 - a handler must never raise into Blender: shown in the panel
            print(f"cmsc: preview of {obj.name} stopped: {type(e).__name__}: {e}", flush=True)
            try:
                _stop(obj, "ERROR", f"Preview stopped at frame {scene.frame_current}: {type(e).__name__}: {e}")
            except Exception as e2:  # noqa: BLE001 - as above
                print(f"cmsc: preview cleanup failed: {e2}", flush=True)


def _prepare():
    """Timer: starts the preview of objects sitting at their start frame, so that the first
    frame played is simulated (the handler only sees frame changes)."""
    try:
        scene = bpy.context.scene
        if scene is None or activity.previews_are_suspended():
            return None
        for obj in scene.objects:
            s = obj.cmsc if obj.type == "MESH" else None
            if s is None or not (s.enabled and s.preview) or scene.frame_current != s.frame_start:
                continue
            if not is_running(obj) and not cache.has_bake(obj) and not activity.is_baking(obj) and obj.mode != "EDIT":
                _update(scene, obj)
    except Exception as e:  # noqa: BLE001 - a timer must never raise into Blender
        print(f"cmsc: preview preparation failed: {type(e).__name__}: {e}", flush=True)
    return None


def _schedule_prepare():
    if not bpy.app.background and not bpy.app.timers.is_registered(_prepare):
        bpy.app.timers.register(_prepare, first_interval=0.2)


def _end_all():
    for state in activity.end_all_previews():
        state.close()


@persistent
def on_save_pre(*args):
    """save_pre: the preview's shape key is not part of the scene (it is the add-on's playback,
    and without the add-on it would leave the mesh deformed): take it out of what is saved.
    `on_save_post` puts back those of running previews."""
    try:
        for obj in bpy.data.objects:
            if obj.type == "MESH" and bridge.has_shape_key(obj, KEY_NAME):
                bridge.remove_shape_key(obj, KEY_NAME)
    except Exception as e:  # noqa: BLE001 - a handler must never raise into Blender
        print(f"cmsc: could not keep the preview out of the saved file: {type(e).__name__}: {e}", flush=True)


@persistent
def on_save_post(*args):
    """save_post: running previews show their current frame again."""
    try:
        for obj in bpy.data.objects:
            state = activity.preview(obj) if obj.type == "MESH" else None
            if state is not None and state.frame > obj.cmsc.frame_start:
                local = to_local(state.sim.positions, np.linalg.inv(np.array(obj.matrix_world)))
                if local is not None:
                    bridge.write_shape_key(obj, KEY_NAME, local)
    except Exception as e:  # noqa: BLE001 - as above
        print(f"cmsc: could not restore the preview after saving: {type(e).__name__}: {e}", flush=True)


@persistent
def on_load(*args):
    """load_post: previews of the previous file end; this file's start at their start frame."""
    _end_all()
    _schedule_prepare()


def _handlers():
    """(handler list, function) of every app handler the preview installs."""
    h = bpy.app.handlers
    return (
        (h.frame_change_post, on_frame_change),
        (h.load_post, on_load),
        (h.save_pre, on_save_pre),
        (h.save_post, on_save_post),
    )


def register():
    for handlers, fn in _handlers():
        handlers.append(fn)
    _schedule_prepare()


def unregister():
    for handlers, fn in _handlers():
        while fn in handlers:
            handlers.remove(fn)
    if bpy.app.timers.is_registered(_prepare):
        bpy.app.timers.unregister(_prepare)
    _end_all()
    # the preview shape keys would outlive the add-on and leave the meshes deformed
    try:
        objects = list(bpy.data.objects)
    except AttributeError:  # data is not accessible while Blender quits
        return
    for obj in objects:
        if bridge.has_shape_key(obj, KEY_NAME):
            bridge.remove_shape_key(obj, KEY_NAME)
