"""The panel and the bake's report show the Coulomb method that ran, as the library reported it:
AUTO is resolved by the library when the simulation starts, never predicted by the add-on."""

import bpy

from scenes import Reports, addon_module, charged_sphere, draw

AUTO_BEFORE = "AUTO chooses the Coulomb method from the vertex count when the bake or preview starts"


def panel_text():
    return draw(addon_module("ui.panels").CMSC_PT_main).text()


def test_before_a_run_auto_is_said_to_be_chosen_when_the_bake_starts(scene):
    sc, tmp = scene
    obj = charged_sphere(tmp, frames=3)
    assert AUTO_BEFORE in panel_text()
    assert "Coulomb: " not in panel_text()
    obj.cmsc.coulomb_method = "DDEF"  # an explicit method: nothing to say before it runs
    assert AUTO_BEFORE not in panel_text() and "Coulomb: " not in panel_text()


def test_after_a_bake_the_panel_and_the_report_show_the_method_that_ran(scene):
    sc, tmp = scene
    obj = charged_sphere(tmp, frames=3)  # 162 vertices, AUTO (Use GPU off: AUTO_CPU)
    bake = addon_module("ui.bake")
    reports = Reports()
    run = bake.ModalBake(bpy.context, obj)
    run.thread.join()
    assert run.job.coulomb_method.name == "DIRECT"
    assert run.finish(reports) == {"FINISHED"}
    assert "baked 3 frames (Coulomb: DIRECT (chosen by AUTO))" in reports.text("INFO")
    assert obj.cmsc.baked_coulomb_method == "DIRECT (chosen by AUTO)"
    assert "Coulomb: DIRECT (chosen by AUTO)" in panel_text() and AUTO_BEFORE not in panel_text()

    # the script bake reports it too; an explicit method is named as itself
    obj.cmsc.coulomb_method = "DDEF"
    _, job = bake.bake(bpy.context, obj, Reports())
    assert job.frames_done == 3 and bake.method_line(job) == "Coulomb: DDEF"
    assert "Coulomb: DDEF" in panel_text() and "chosen by AUTO" not in panel_text()

    # freed: nothing ran any more
    assert bpy.ops.cmsc.free_bake() == {"FINISHED"}
    assert obj.cmsc.baked_coulomb_method == "" and "Coulomb: " not in panel_text()


def test_while_previewing_the_panel_shows_the_method_that_runs(scene):
    sc, tmp = scene
    obj = charged_sphere(tmp, frames=10)
    preview = addon_module("ui.preview")
    sc.frame_set(1)
    sc.frame_set(2)
    assert preview.is_running(obj)
    assert "Coulomb: DIRECT (chosen by AUTO)" in panel_text() and AUTO_BEFORE not in panel_text()
    sc.frame_set(1)  # back at the start: a new preview, the same method
    assert "Coulomb: DIRECT (chosen by AUTO)" in panel_text()
