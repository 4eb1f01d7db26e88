"""Baking, in three parts: `collect` (main thread: Blender data → a `BakeJob` of numpy arrays,
through `inputs`), `sim.bake_job.run` (anywhere: the simulation, no bpy), `finish` (main thread:
the Mesh Cache modifier or shape keys through `cache`, and the record `watch` compares). `bake`
chains them on the calling thread for `execute()`; `ModalBake` runs the middle part in a worker
thread for the modal operator and is registered in `activity` while it runs."""

import threading

from ..sim import methods
from ..sim.bake_job import run
from . import activity, bridge, cache, inputs, preview, watch


def collect(context, obj):
    """Gathers every input of the bake (frame_set through the range once) into a BakeJob,
    after checking where its cache goes (CacheFileError: refused, nothing changed), ending the
    object's preview and freeing its old bake."""
    path = cache.check_target(obj) if obj.cmsc.cache_format == "PC2" else None
    bridge.name_keyed_charge_paths(obj)  # charge keyframes follow their group by name
    preview.clear(obj)
    note = cache.free_bake(obj)
    if note:
        print(f"cmsc: {note}", flush=True)
    with activity.previews_suspended():
        job = inputs.bake_job(context.scene, obj, path or cache.scratch_path())
    return job


def error_line(job):
    """The report of a bake that stopped early: why, and how many frames it kept."""
    kept = f"; kept {job.frames_done} baked frames" if job.frames_done else ""
    return f"cmsc: {job.error}{kept}"


def method_line(job):
    """"Coulomb: DDEF (chosen by AUTO)": the method the job's simulation ran, or "" before."""
    if job.coulomb_method is None:
        return ""
    return f"Coulomb: {methods.describe(job.params.coulomb, job.coulomb_method)}"


def progress_line(job):
    print(f"cmsc: baked frame {job.start_frame + job.frames_done - 1} ({job.frames_done}/{job.frames + 1})", flush=True)


def report_warnings(obj, job, report):
    """Reports (and prints) the job's GPU fallback note and input warnings; the panel shows the
    warnings too (`activity.warnings`)."""
    inputs.keep_warnings(obj, job.warnings)
    for text in ([job.note] if job.note else []) + job.warnings:
        print(f"cmsc: {obj.name}: {text}", flush=True)
        report({"WARNING"}, f"cmsc: {obj.name}: {text}")


def finish(scene, obj, job):
    """Makes what `job` baked play, and records what it was baked from (`watch`)."""
    cache.finish(obj, job)
    if job.frames_done:
        watch.record(scene, obj)


def bake(context, obj, report):
    """The whole bake on the calling thread, printing progress lines; returns the job (its
    `frames_done` samples written)."""
    job = collect(context, obj)
    report_warnings(obj, job, report)
    try:
        run(job, on_frame=progress_line)
    finally:
        finish(context.scene, obj, job)
    if job.coulomb_method is not None:
        print(f"cmsc: {method_line(job)}", flush=True)
    if job.error:
        report({"ERROR"}, error_line(job))
    return job


class ModalBake:
    """The modal bake apart from Blender's event loop: constructing it gathers the inputs on
    the main thread and starts a worker thread that sees only numpy arrays; `update(event_type)`
    is what each event does (Esc asks the worker to stop after its current frame) and says
    whether the worker is done; `finish(report)` writes the result back to Blender on the main
    thread."""

    def __init__(self, context, obj):
        self.obj, self.scene = obj, context.scene
        self.job = collect(context, obj)
        self.failure = None
        self.thread = threading.Thread(target=self._work, name="cmsc bake", daemon=True)
        activity.bake_started(obj, self.job)
        self.thread.start()

    def _work(self):
        try:
            run(self.job)
        except Exception as e:  # noqa: BLE001 - reported on the main thread
            self.failure = e

    def update(self, event_type):
        """Handles one event; True once the worker has finished."""
        if event_type == "ESC":
            self.job.cancel.set()
        return not self.thread.is_alive()

    def finish(self, report):
        """Adds the cache to the object and reports; returns the operator's result."""
        self.thread.join()
        activity.bake_ended(self.obj)
        finish(self.scene, self.obj, self.job)
        report_warnings(self.obj, self.job, report)
        if self.failure is not None:
            report({"ERROR"}, f"cmsc: bake failed: {self.failure}")
            return {"CANCELLED"}
        if self.job.error:
            level = "WARNING" if self.job.error.startswith("cancelled") else "ERROR"
            report({level}, error_line(self.job))
            return {"CANCELLED"}
        report({"INFO"}, f"cmsc: baked {self.job.frames_done} frames ({method_line(self.job)})")
        return {"FINISHED"}
