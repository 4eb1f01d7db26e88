"""Baking, in three parts: `collect` (main thread: Blender data → a `BakeJob` of numpy arrays,
through `inputs`), `sim.bake_job.run` (anywhere: the simulation, no bpy), `finish` (main thread:
the Mesh Cache modifier or shape keys through `cache`, and the record `watch` compares). `bake`
chains them on the calling thread for `execute()`; `ModalBake` runs the middle part in a worker
thread for the modal operator and is registered in `activity` while it runs."""

import secrets
import threading

from ..sim import methods
from ..sim.bake_job import Outcome, run, step_warnings, steps_line
from . import activity, bridge, cache, inputs, preferences, preview, watch


def collect(context, obj):
    """Gathers every input of the joint bake of `obj` and the scene's other simulated objects
    (`inputs.simulated_objects`; frame_set through the range once) into a BakeJob, after
    checking where each cache goes (CacheFileError: refused, nothing changed) and ending their
    previews; then frees their old bakes. Inputs are read with the old bakes out of the
    evaluated mesh (`cache.simulated_stack`), so a bake refused for its inputs (ValueError: a
    distance, an empty mesh, a collider that changes) keeps the old bake playing, its file
    untouched. Returns (objects, job)."""
    objects = inputs.simulated_objects(context.scene, obj)
    inputs.check_shared_meshes(objects)
    inputs.check_frame_ranges(objects)
    preferences.apply_threads()
    paths = [cache.check_target(o, objects) if o.cmsc.cache_format == "PC2" else None for o in objects]
    for o in objects:
        bridge.name_keyed_charge_paths(o)  # charge keyframes follow their group by name
        preview.clear(o)
    with activity.previews_suspended():
        job, warnings = inputs.bake_job(context.scene, objects, [p or cache.scratch_path() for p in paths])
    for o in objects:
        note = cache.free_bake(o)
        if note:
            print(f"cmsc: {note}", flush=True)
    for o, w in zip(objects, warnings):
        inputs.keep_warnings(o, w)
    return objects, job


def error_line(job):
    """The report of a bake that stopped early: why, and how many frames it kept."""
    kept = f"; kept {job.frames_done} baked frames" if job.frames_done else ""
    return f"cmsc: {job.error}{kept}"


def method_line(job):
    """"Coulomb: DDEF (chosen by AUTO)": the method the job's simulation ran, or "" before."""
    if job.coulomb_method is None:
        return ""
    return f"Coulomb: {methods.describe(job.params.coulomb, job.coulomb_method)}"


def summary(job):
    """What the report says of a finished bake: the Coulomb method and the steps it took,
    "Coulomb: P3M (chosen by AUTO); 1.4 steps per frame on average, at most 4"."""
    return "; ".join(x for x in (method_line(job), steps_line(job.steps)) if x)


def progress_line(job):
    print(f"cmsc: baked frame {job.start_frame + job.frames_done - 1} ({job.frames_done}/{job.frames + 1})", flush=True)


def report_warnings(job, report):
    """Reports (and prints) the job's GPU fallback note and input warnings (each names its
    object); the panels show each object's own (`activity.warnings`)."""
    for text in ([job.note] if job.note else []) + job.warnings:
        _warn(report, text)


def report_steps(job, report):
    """Reports (and prints) that a bake took fewer steps than its charges or its contacts asked
    for (`step_warnings`; the Bake panel keeps them, `Object.cmsc.baked_warnings`), if it did."""
    for text in step_warnings(job):
        _warn(report, text)


def _warn(report, text):
    print(f"cmsc: {text}", flush=True)
    report({"WARNING"}, f"cmsc: {text}")


def finish(scene, objects, job):
    """Makes what `job` baked play on each of `objects` (in the job's part order), and records
    what each was baked from (`watch`) and that they were baked together (`cache`)."""
    together = secrets.token_hex(8)
    for part, obj in enumerate(objects):
        cache.finish(obj, job, part, together)
        if job.frames_done:
            watch.record(scene, obj)


def bake(context, obj, report):
    """The whole joint bake of `obj` and the scene's other simulated objects on the calling
    thread, printing progress lines; returns (objects, job) (`job.frames_done` samples written
    to each cache)."""
    objects, job = collect(context, obj)
    report_warnings(job, report)
    try:
        run(job, on_frame=progress_line)
    finally:
        finish(context.scene, objects, job)
    report_steps(job, report)
    if summary(job):
        print(f"cmsc: {summary(job)}", flush=True)
    if job.outcome is not Outcome.DONE:
        report({"ERROR"}, error_line(job))
    return objects, job


class ModalBake:
    """The modal bake apart from Blender's event loop: constructing it gathers the inputs on
    the main thread and starts a worker thread that sees only numpy arrays; `update(event_type)`
    is what each event does (Esc asks the worker to stop after its current frame) and says
    whether the worker is done; `finish(report)` writes the result back to Blender on the main
    thread."""

    def __init__(self, context, obj):
        self.scene = context.scene
        self.objects, self.job = collect(context, obj)
        self.failure = None
        self.thread = threading.Thread(target=self._work, name="cmsc bake", daemon=True)
        for o in self.objects:
            activity.bake_started(o, self.job)
        self.thread.start()

    def _work(self):
        try:
            run(self.job)
        except Exception as e:  # noqa: BLE001 - reported on the main thread
            self.failure = e
            self.job.stop(Outcome.FAILED, f"bake failed: {e}")

    def update(self, event_type):
        """Handles one event; True once the worker has finished."""
        if event_type == "ESC":
            self.job.cancel.set()
        return not self.thread.is_alive()

    def finish(self, report):
        """Adds the cache to the object and reports; returns the operator's result."""
        self.thread.join()
        for o in self.objects:
            activity.bake_ended(o)
        finish(self.scene, self.objects, self.job)
        report_warnings(self.job, report)
        report_steps(self.job, report)
        if self.failure is not None:
            report({"ERROR"}, f"cmsc: bake failed: {self.failure}")
            return {"CANCELLED"}
        if self.job.outcome is not Outcome.DONE:
            level = "WARNING" if self.job.outcome is Outcome.CANCELLED else "ERROR"
            report({level}, error_line(self.job))
            return {"CANCELLED"}
        report({"INFO"}, f"cmsc: baked {self.job.frames_done} frames ({summary(self.job)})")
        return {"FINISHED"}
