"""Live preview: while the timeline plays forward from the start frame, a frame_change_post
handler advances the scene's simulation one frame (one frame of substeps, with the bake's inputs:
`inputs.joint_setup`, `inputs.joint_pins`, `inputs.joint_substep_inputs`, `step_frame`) and
writes each object's positions into a shape key (`bridge.write_shape_key`), so the meshes' own
coordinates stay the rest shape. Running previews and their status lines are kept in
`activity`, by `session_uid`.

- Together, as the bake: every simulated object of the scene is one simulation (Coulomb across
  them, the scene's colliders, self-collision), from the earliest Start to the latest End, in
  scene order (the first object's Coulomb settings). It runs when at least one of them has Live
  Preview on; those with it off still act on the others but are not moved in the viewport.
- Substeps: the most `preview_substeps` per frame among the objects (default 1, so playback
  stays interactive on large meshes), fixed (not adaptive), where 0 stands for the object's bake
  `substeps`; with 0 everywhere the preview equals the bake, adaptive substeps included.
- Reset: at or before the start frame, on a jump back, when a setting changes, and when the
  scene's simulated objects, colliders or external charges change; the shape keys are removed
  and the next pass through the start frame starts over.
- Never while a bake of one of the objects exists or runs (the bake plays), with deforming
  modifiers above an object's cache slot (an Armature: the preview's shape key would be deformed
  again), in Edit Mode, while a bake or a fit gathers its inputs (`activity.previews_suspended()`),
  or during a render job started from the interface.
- A forward jump of a few frames (playback dropping frames) is simulated with the pins, external
  charges and colliders interpolated, and flagged approximate; a longer jump pauses.
- Saving: the shape keys are kept out of the saved .blend (`on_save_pre` removes them,
  `on_save_post` puts back those of running previews), so a file never opens deformed.
- Nothing raises into Blender: problems become the panels' status lines (`status(obj)`).
"""

import contextlib
import threading
import time

import bpy
import numpy as np
from bpy.app.handlers import persistent

from ..sim import methods
from ..sim.bake_job import DIVERGED_HINT, FrameInputs, step_frame, to_local
from ..sim.errors import CmscError, DivergedError
from . import activity, bridge, cache, inputs, preferences, simulated
from .activity import Severity

#: The shape key holding the preview positions (not "cmsc …": that prefix is the shape-key bake's).
KEY_NAME = "Preview (cmsc)"
#: Frames a forward jump may skip and still be simulated (interpolating positions); chosen so a
#: dropped-frame catch-up stays below a few frames' cost.
MAX_CATCH_UP = 8
#: Seconds the interface waits for a starting preview's simulation (built on a worker thread:
#: the factorization takes seconds on 100K+ vertices) before it goes on with a "starting" status
#: line; small meshes are ready well within it, so their first frame plays at once.
START_WAIT = 0.5
#: Vertex count above which a newly enabled object starts with Live Preview off: measured on
#: the 2-core VM (a 447² grid, 200,704 vertices), reading the inputs took 0.95 s and building
#: the simulation 14.5 s, and a preview frame at the default settings costs ~5 ms per 1K
#: vertices (README), so above 50K vertices playback is no longer interactive (< 4 fps).
PREVIEW_DEFAULT_MAX_VERTICES = 50_000


class _State:
    """A running preview: the joint simulation of `objects` and where it is."""

    def __init__(self, scene, objects):
        self.uids = [o.session_uid for o in objects]
        preferences.apply_threads()
        for o in objects:  # charge keyframes by group name, in one F-curve each, as the bake reads them
            bridge.name_keyed_charge_paths(o)
        run = inputs.run_start(scene, objects, max(substeps(o.cmsc) for o in objects))
        if any(o.cmsc.preview_substeps for o in objects):
            # Preview Substeps are fixed steps, for interactive playback: the adaptive motion bound
            # would spend the bake's accuracy here (130 against 53 ms per frame on the 10K swinging
            # cloth); the iterations still stop when converged, and 0 everywhere runs the bake's
            run.joint.max_steps_per_frame = 0
        self.start, self.end, self.substeps = run.start, run.end, run.substeps
        self.setups, self.setup = run.setups, run.joint
        for o, st in zip(objects, self.setups):
            inputs.keep_warnings(o, st.warnings)
        #: the simulation, once the worker thread built it (None before, or if it failed: `failure`)
        self.sim = None
        self.failure = None
        self._lock = threading.Lock()
        self._closed = False
        self._built = threading.Event()
        threading.Thread(target=self._build, name="cmsc preview start", daemon=True).start()
        self._built.wait(start_wait())
        self.frame = scene.frame_current
        self.inputs = _inputs_key(scene, objects)
        self.pin, self.ext, self.colliders = run.pin_world, run.ext_world, run.collider_world
        self.approximate = False
        #: seconds spent reading Blender data, in the library, and writing the shape keys
        self.timings = {"read": 0.0, "simulate": 0.0, "write": 0.0}

    def _build(self):
        """Worker thread: builds the simulation from the numpy inputs (no bpy)."""
        try:
            sim = self.setup.create_simulation()
        except Exception as e:  # noqa: BLE001 - reported on the main thread (`failure`)
            self.failure = e
        else:
            with self._lock:
                if self._closed:  # ended while it was being built
                    sim.close()
                else:
                    self.sim = sim
        finally:
            self._built.set()

    @property
    def ready(self):
        """Whether the simulation is built (or failed to be: `failure`)."""
        return self._built.is_set()

    @property
    def coulomb_method(self):
        """The Coulomb method that runs (what AUTO chose), shown in the panel; None before."""
        return self.sim.coulomb_method if self.sim is not None else None

    def close(self):
        with self._lock:
            self._closed = True
            sim, self.sim = self.sim, None
        if sim is not None:
            sim.close()


def _inputs_key(scene, objects):
    """What a running preview must have been started with to go on: the objects (and their
    vertex counts), the colliders and the external charges."""
    return (
        [(o.session_uid, bridge.vertex_count(o)) for o in objects],
        [o.session_uid for o in inputs.collision_objects(scene)],
        [o.session_uid for o in inputs.external_charges(scene)],
    )


def substeps(s):
    """Steps per frame of the preview of object settings `s`."""
    return s.preview_substeps or s.substeps


def diverged_hint(objects, state):
    """What a diverged preview of `objects` at `state.substeps` per frame suggests."""
    bake = max(o.cmsc.substeps for o in objects)
    if state.substeps < bake:
        return f"The preview runs {state.substeps} substeps per frame: raise Preview Substeps (0 = the bake's {bake})"
    return DIVERGED_HINT


def status(obj):
    """(icon, text) of `obj`'s preview for the panel, or None."""
    return activity.status(obj)


def is_running(obj):
    return activity.preview(obj) is not None


def timings(obj):
    """Seconds the running preview of `obj` spent reading Blender data, simulating and writing
    the shape keys (a copy), or None."""
    state = activity.preview(obj)
    return dict(state.timings) if state is not None else None


def coulomb_method(obj):
    """What the panel says of the Coulomb method of `obj`'s running preview ("DDEF (chosen by
    AUTO)"), or None."""
    state = activity.preview(obj)
    if state is None or state.coulomb_method is None:
        return None
    return methods.describe(state.setup.params.coulomb, state.coulomb_method)


def _objects(state):
    """The objects `state` simulates that still exist, in its part order (None for a deleted one)."""
    by_uid = {o.session_uid: o for o in bpy.data.objects}
    return [by_uid.get(uid) for uid in state.uids]


def _shown(objects):
    return [o for o in objects if o is not None and o.cmsc.preview]


def _drop(obj):
    state = activity.preview_ended(obj)
    if state is not None:
        state.close()
    return state


def clear(obj):
    """Stops the preview `obj` is part of and removes the shape keys and status lines of all its
    objects."""
    state = _drop(obj)
    others = [o for o in _objects(state) if o is not None and o != obj] if state is not None else []
    for o in [obj] + others:
        activity.clear_status(o)
        if o.type == "MESH":
            bridge.remove_shape_key(o, KEY_NAME)


def reset(obj):
    """A setting changed: the preview `obj` is part of starts over at the start frame."""
    state = activity.preview(obj)
    objects = [o for o in _objects(state) if o is not None] if state is not None else [obj]
    clear(obj)
    if state is not None:
        for o in _shown(objects):
            activity.set_status(o, Severity.INFO, f"Settings changed: the preview restarts at frame {state.start}")
    _schedule_prepare()


def _stop(objects, severity, text):
    """Ends the preview of `objects` (keeping their shape keys: the last good frame) with a status line."""
    for o in objects:
        _drop(o)
    for o in _shown(objects):
        activity.set_status(o, severity, text)


def _clear_all(objects):
    for o in objects:
        if is_running(o) or bridge.has_shape_key(o, KEY_NAME):
            clear(o)


def _paused(objects):
    """Why the preview of `objects` cannot run now ("" if it can)."""
    editing = [o.name for o in objects if o.mode == "EDIT"]
    if editing:
        return "Preview paused in Edit Mode" if len(objects) == 1 else f"Preview paused: {editing[0]} is in Edit Mode"
    for o, other in inputs.shared_meshes(objects):
        return (
            f"Preview paused: {o.name} and {other.name} share one mesh (a linked duplicate), which can show one "
            "motion only; bake to PC2 to see both, or give each its own mesh"
        )
    for o in objects:
        keys = bridge.shape_keys(o)
        if keys is not None and not keys.use_relative and not bridge.has_shape_key(o, KEY_NAME):
            # the preview shows its motion through a relative shape key: in an absolute sequence
            # it would be one more key to blend through
            where = "the mesh's" if len(objects) == 1 else f"{o.name}'s"
            return f"Preview paused: {where} shape keys are absolute (Relative unticked); bake to see the motion"
        deforming = cache.deforming_modifiers(o)
        if deforming:
            # the preview's shape key sits under the modifiers, which would deform its result again
            names = ", ".join(deforming)
            where = "the mesh" if len(objects) == 1 else f"{o.name}"
            return f"Preview paused: {names} deform {where} under the simulation; bake to see both"
    return ""


def _update(scene, objects):
    """Advances, starts or resets the preview of the scene's simulated `objects`."""
    frame = scene.frame_current
    if any(activity.is_baking(o) for o in objects):
        return
    baked = [o for o in objects if cache.has_bake(o)]
    if baked:
        _clear_all(objects)
        for o in _shown([o for o in objects if o not in baked]):
            names = ", ".join(b.name for b in baked)
            text = f"Preview paused: {names} play a bake; bake again to simulate this object with them"
            activity.set_status(o, Severity.INFO, text)
        return
    why = _paused(objects)
    if why:
        _stop(objects, Severity.INFO, why)
        return
    state = activity.preview(objects[0])
    uids = [o.session_uid for o in objects]
    if state is not None and (state.uids != uids or state.inputs != _inputs_key(scene, objects)):
        reset(objects[0])
        state = None
    start, end = inputs.joint_timing(objects)[:2]
    if frame <= start:
        _clear_all(objects)
        if frame == start:
            state = _State(scene, objects)
            activity.preview_started(objects, state)
            if state.setup.note:
                for o in _shown(objects):
                    activity.set_status(o, Severity.ERROR, state.setup.note)
            _check_start(objects, state)
        return
    if state is not None and not _check_start(objects, state):
        return
    if state is None:
        for o in _shown(objects):
            if activity.status(o) is None:
                activity.set_status(o, Severity.INFO, f"Preview: play from frame {start} to simulate")
        return
    target = min(frame, end)
    if target < state.frame:
        _clear_all(objects)
        for o in _shown(objects):
            activity.set_status(o, Severity.INFO, f"Preview reset (jumped back to {frame}): play from frame {start}")
        return
    gap = target - state.frame
    if gap == 0:
        return
    if gap > MAX_CATCH_UP:
        for o in _shown(objects):
            text = f"Preview paused at frame {state.frame}: {gap} frames ahead; play from frame {start} or bake"
            if scene.frame_step > MAX_CATCH_UP:  # every step of the timeline is such a jump
                text += f" (the timeline's Frame Step is {scene.frame_step}: set it to 1 to preview)"
            activity.set_status(o, Severity.INFO, text)
        return
    _advance(scene, objects, state, target, gap)


def start_wait():
    """Seconds to wait for a starting preview: `START_WAIT`, or to the end in background mode
    (no interface to keep alive, and a script expects the first frame to step)."""
    return None if bpy.app.background else START_WAIT


def _check_start(objects, state):
    """Whether the preview `state` of `objects` is built and can step: while its worker builds
    it, a status line says so (and a timer watches for the end); a failed start stops it."""
    if not state.ready:
        n = len(state.setup.x0)
        for o in _shown(objects):
            activity.set_status(o, Severity.INFO, f"Preview starting: building the simulation of {n:,} vertices…")
        _watch_start()
        return False
    if state.failure is not None:
        _stop(objects, Severity.ERROR, f"Preview failed to start: {state.failure}")
        return False
    for o in _shown(objects):
        st = activity.status(o)
        if st is not None and st.text.startswith("Preview starting"):
            activity.clear_status(o)
    return True


def _started():
    """Timer while a preview starts: once built, its status line changes and the panels redraw."""
    try:
        scene = bpy.context.scene
        objects = simulated.simulated_objects(scene)
        state = activity.preview(objects[0]) if objects else None
        if state is not None and not state.ready:
            return 0.25
        if state is not None:
            _check_start(objects, state)
        for window in bpy.context.window_manager.windows:
            for area in window.screen.areas:
                area.tag_redraw()
    except Exception as e:  # noqa: BLE001 - a timer must never raise into Blender
        print(f"cmsc: preview start check failed: {type(e).__name__}: {e}", flush=True)
    return None


def _watch_start():
    _schedule(_started, 0.25)


def _has_own_keys(obj):
    keys = bridge.shape_keys(obj)
    return keys is not None and any(kb.name != KEY_NAME for kb in keys.key_blocks[1:])


def _own_shapes(objects, setups):
    """Each object's mesh now as the bake reads it (its own shape keys and the modifiers above
    its cache, `cache.simulated_stack`), the preview's key left out: (n, 3) object space, or None
    for an object with neither pins nor shape keys of its own (nothing to read)."""
    wanted = [len(st.pins) > 0 or _has_own_keys(o) for o, st in zip(objects, setups)]
    with contextlib.ExitStack() as stack:
        for o, w in zip(objects, wanted):
            if w:
                stack.enter_context(cache.simulated_stack(o))
                stack.enter_context(bridge.shape_key_muted(o, KEY_NAME))
        return [bridge.deformed_coords(o) if w else None for o, w in zip(objects, wanted)]


def _show(obj, x, shape):
    """Shows positions `x` (n, 3, object space) on `obj` through the preview's shape key. The
    mesh's own relative keys act under it, so it holds `x` less what they add now (`shape`, from
    `_own_shapes`, less the reference key): they are not applied twice."""
    if shape is not None and _has_own_keys(obj):
        x = x - (shape - bridge.shape_key_coords(obj, obj.data.shape_keys.reference_key.name))
    bridge.write_shape_key(obj, KEY_NAME, x)


def _advance(scene, objects, state, target, gap):
    st = state.setup
    clock, t = time.perf_counter, state.timings
    t0 = clock()
    externals = inputs.external_charges(scene)
    f = target
    try:
        # pins follow the shape keys (and modifiers above the cache) as in the bake
        shapes = _own_shapes(objects, state.setups)
        pin1 = np.concatenate([
            inputs.pin_targets(o, st.rest_local if shape is None else shape, st.pins)
            for o, st, shape in zip(objects, state.setups, shapes)
        ]).reshape(-1, 3)
        ext1 = inputs.external_positions(externals)
        obstacles = inputs.collision_objects(scene) if state.colliders is not None else []
        col1 = inputs.collider_positions(obstacles, state.colliders.shape, target) if obstacles else None

        def between(a, b, x0, x1):
            return np.stack([(1 - a) * x0 + a * x1, (1 - b) * x0 + b * x1])

        for f in range(state.frame + 1, target + 1):
            a, b = (f - 1 - state.frame) / gap, (f - state.frame) / gap
            group_charge, ext_charge, field = inputs.joint_substep_inputs(scene, objects, externals, f, state.substeps)
            t1 = clock()
            t["read"] += t1 - t0
            frame_inputs = FrameInputs(
                pin_world=between(a, b, state.pin, pin1),
                ext_world=between(a, b, state.ext, ext1),
                group_charge=group_charge,
                ext_charge=ext_charge,
                field=field,
                colliders=None if col1 is None else between(a, b, state.colliders, col1),
            )
            step_frame(state.sim, st, frame_inputs, ask=False)
            t0 = clock()
            t["simulate"] += t0 - t1
        positions = state.sim.positions
        local = [
            to_local(positions[a:b], np.linalg.inv(np.array(o.matrix_world))) for (a, b), o in zip(st.parts, objects)
        ]
    except DivergedError as e:
        _stop(objects, Severity.ERROR, f"Preview diverged at frame {f}: {e}. {diverged_hint(objects, state)}")
        return
    except (CmscError, ValueError) as e:
        _stop(objects, Severity.ERROR, f"Preview failed at frame {f}: {e}")
        return
    if any(x is None for x in local):
        hint = diverged_hint(objects, state)
        _stop(objects, Severity.ERROR, f"Preview diverged at frame {target}: vertices left the float32 range. {hint}")
        return
    t0 = clock()
    for o, x, shape in zip(objects, local, shapes):
        if o.cmsc.preview:
            _show(o, x, shape)
    t["write"] += clock() - t0
    state.frame, state.pin, state.ext = target, pin1, ext1
    if col1 is not None:
        state.colliders = col1
    if gap > 1:
        state.approximate = True
    for o in _shown(objects):
        if state.approximate:
            text = "Preview skipped frames (positions interpolated): bake for the exact motion"
            activity.set_status(o, Severity.INFO, text)
        elif activity.status(o) is not None and activity.status(o).severity is Severity.INFO:
            activity.clear_status(o)


@persistent
def on_frame_change(scene, depsgraph=None):
    """frame_change_post: advance or reset the preview of `scene`'s simulated objects. Not while
    the interface renders (a render job reads the data this would write; bake for renders)."""
    if activity.previews_are_suspended() or bpy.app.is_job_running("RENDER"):
        return
    objects = simulated.simulated_objects(scene)
    if not _shown(objects):
        return
    try:
        _update(scene, objects)
    except Exception as e:  # noqa: BLE001 - a handler must never raise into Blender: shown in the panel
        print(f"cmsc: preview stopped: {type(e).__name__}: {e}", flush=True)
        try:
            _stop(objects, Severity.ERROR, f"Preview stopped at frame {scene.frame_current}: {type(e).__name__}: {e}")
        except Exception as e2:  # noqa: BLE001 - as above
            print(f"cmsc: preview cleanup failed: {e2}", flush=True)


def _prepare():
    """Timer: starts the preview of the scene's simulated objects sitting at their start frame,
    so that the first frame played is simulated (the handler only sees frame changes)."""
    try:
        scene = bpy.context.scene
        if scene is None or activity.previews_are_suspended():
            return None
        objects = simulated.simulated_objects(scene)
        if _shown(objects) and not is_running(objects[0]) and scene.frame_current == inputs.joint_timing(objects)[0]:
            _update(scene, objects)
    except Exception as e:  # noqa: BLE001 - a timer must never raise into Blender
        print(f"cmsc: preview preparation failed: {type(e).__name__}: {e}", flush=True)
    return None


def _schedule_prepare():
    _schedule(_prepare, 0.2)


def _schedule(timer, first_interval):
    """Registers `timer` once (timers run only with an interface)."""
    if not bpy.app.background and not bpy.app.timers.is_registered(timer):
        bpy.app.timers.register(timer, first_interval=first_interval)


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
        states = {id(s): s for s in (activity.preview(o) for o in bpy.data.objects) if s is not None}
        for state in states.values():
            if state.frame <= state.start or state.sim is None:
                continue
            positions = state.sim.positions
            objects = _objects(state)
            if any(o is None for o in objects):
                continue
            shapes = _own_shapes(objects, state.setups)
            for (a, b), o, shape in zip(state.setup.parts, objects, shapes):
                local = to_local(positions[a:b], np.linalg.inv(np.array(o.matrix_world)))
                if local is not None and o.cmsc.preview:
                    _show(o, local, shape)
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
    for timer in (_prepare, _started):
        if bpy.app.timers.is_registered(timer):
            bpy.app.timers.unregister(timer)
    _end_all()
    # the preview shape keys would outlive the add-on and leave the meshes deformed
    try:
        objects = list(bpy.data.objects)
    except AttributeError:  # data is not accessible while Blender quits
        return
    for obj in objects:
        if bridge.has_shape_key(obj, KEY_NAME):
            bridge.remove_shape_key(obj, KEY_NAME)
