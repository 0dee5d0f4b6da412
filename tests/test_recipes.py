"""The recipes for a new scene and a new panel tab (app/scenes/_template.py, app/ui/tabs/_template.py)
work as written: the template scene runs frames on every available backend and shows the colour it
says, its declared commands reach the keys and the panel; the template tab builds its part from a
read-only view and draws it in the panel."""
from __future__ import annotations

import contextlib
import importlib

import numpy as np
import pytest

from app.config import RunConfig
from app.errors import SharingUnavailable


@pytest.fixture
def template_scene(monkeypatch):
    """The template scene, registered for this test only (its module is not a scene: its name starts with "_")."""
    from app.scenes import scene_classes, scene_module_names
    from app.scenes.base import Scene

    assert "_template" not in scene_module_names()  # not found by the scenes' discovery
    scene_classes()  # every scene imported (and registered) before the registry is copied
    monkeypatch.setattr(Scene, "registry", dict(Scene.registry))  # its import registers it in this copy
    module = importlib.import_module("app.scenes._template")
    Scene.registry["template"] = module.TemplateScene
    return module


@pytest.mark.parametrize("backend", ["host_copy", "gl_sharing", "host_mapped", "external_memory"])
def test_the_template_scene_runs_and_draws_its_colour(template_scene, gl, backend):
    from app.run import Run
    from app.session.controls import CORE_COMMANDS, Controls, scene_commands

    cfg = RunConfig(scene="template", backend=backend, headless=True, overlay=False, frames=10_000)
    with contextlib.ExitStack() as stack:
        try:
            rt = stack.enter_context(Run(cfg, surface=gl))
        except SharingUnavailable as exc:  # a backend this machine does not offer
            pytest.skip(exc.one_line())
        for _ in range(3):
            rec = rt.tick()
        assert rec.errors == [] and rec.hazards == []
        frame = rec.index
        pixels = rt.session.surface.read_pixels()  # the last frame as drawn: the template's colour over it all
        want = np.array(template_scene.pulse_rgba(frame), np.int16)
        assert np.abs(pixels[..., :4].astype(np.int16) - want).max() <= 1, (pixels[0, 0], want)
        scene = rt.session.scene
        assert isinstance(scene, template_scene.TemplateScene) and scene.held_frame == frame
        # its command from its key, through a table built from its declarations, as the session's is
        c = Controls(rt.session, commands=CORE_COMMANDS + scene_commands([template_scene.TemplateScene]))
        assert c.key("g") == "template: the colour stays" and not scene.cycling
        assert [o.command for o in scene.options()] == ["set_cycling"]
        assert rt.tick().errors == [] and scene.held_frame == frame


def test_the_template_tab_is_built_and_drawn_from_its_module_alone(gl, monkeypatch):
    """The template tab, added to the table as its discovery adds a module: its title in the bar, its
    part built from the described frame while it is shown (not before), its body drawn."""
    from support import panel_snapshot

    from app.run import Run
    from app.ui import tabs

    module = importlib.import_module("app.ui.tabs._template")
    assert "template" not in {t.key for t in tabs.table()}  # "_" modules are not tabs
    table = tabs.table()
    monkeypatch.setattr(tabs, "table", lambda: (*table, module.TAB))
    cfg = RunConfig(scene="particles", size=2048, headless=True, frames=10_000, backend="host_copy", panel_hz=0)
    with Run(cfg, surface=gl) as rt:
        for _ in range(3):
            rt.tick()
        assert "tab_template" in rt.ui.state.rects and "template" not in rt.ui.last_model.tabs  # not shown yet
        rt.ui.state.select = "template"
        for _ in range(2):
            rt.tick()
        assert rt.ui.state.tab == "template" and "tab_body" in rt.ui.state.rects
        model = panel_snapshot(rt)
        part = model.tabs["template"]
        rec = rt.session.history.records[-1]
        assert part.frame == model.header.frame and [name for name, _ in part.phases][:3] == [
            "acquire", "compute", "release"]
        described = next(r for r in rt.session.history.records if r.index == part.frame)
        for name, ms in part.phases:
            s, e = described.phases[name]
            assert ms == pytest.approx((e - s) / 1e6, abs=1e-9)
        assert rec.errors == [] and rt.ui.state.failures == 0
