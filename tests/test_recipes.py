"""The recipes for a new scene, panel tab, sharing backend and sync mode (app/scenes/_template.py,
app/ui/tabs/_template.py, app/sharing/backends/_template.py, app/sharing/sync/_template.py) work as
written: the template scene runs frames on every available backend and shows the colour it says, its
declared commands reach the keys and the panel; the template tab builds its part from a read-only
view and draws it in the panel; the template backend passes the backend contract suite on every
scene; the template sync mode orders frames whose pixels match the reference."""
from __future__ import annotations

import contextlib
import importlib
from pathlib import Path

import numpy as np
import pytest

from app.config import RunConfig
from app.errors import SharingUnavailable
from app.sharing.backends.external_memory import ExternalMemory
from app.sharing.backends.gl_sharing import KhrGlSharing
from app.sharing.backends.host_copy import HostCopy
from app.sharing.backends.host_mapped import HostMapped


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


@pytest.mark.parametrize("backend", [HostCopy.name, KhrGlSharing.name, HostMapped.name, ExternalMemory.name])
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
    cfg = RunConfig(scene="particles", size=2048, headless=True, frames=10_000, backend=HostCopy.name, panel_hz=0)
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


@pytest.fixture
def template_backend(monkeypatch):
    """The template backend, registered for this test only (its module is not a backend: "_")."""
    from app.sharing.backends import backend_module_names
    from app.sharing.base import SharingBackend
    from app.sharing.registry import backend_classes

    assert "_template" not in backend_module_names()  # not found by the backends' discovery
    backend_classes()  # every backend imported (and registered) before the registry is copied
    monkeypatch.setattr(SharingBackend, "registry", dict(SharingBackend.registry))
    module = importlib.import_module("app.sharing.backends._template")
    SharingBackend.registry["template"] = module.TemplateCopy
    return module.TemplateCopy


def test_the_template_backend_keeps_the_contract(template_backend):
    from app.sharing.contract import check_backend

    check_backend(template_backend)  # what registering checks; a changed hook signature fails:
    broken = type("Broken", (template_backend,), {"_enqueue_release": lambda self, queue, objects: None})
    with pytest.raises(TypeError, match="_enqueue_release"):
        check_backend(broken)


def test_the_template_backend_probes_with_its_reason(template_backend, probe_env, monkeypatch):
    from app.sharing.registry import Registry

    reg = Registry(probe_env)
    order = reg.order  # probed after every backend of a lower probe_order, never auto's pick
    assert order.index("template") > order.index(HostCopy.name) and reg.choose("auto") != "template"
    assert reg.probes["template"].available and reg.choose("template") == "template"
    monkeypatch.setattr(type(probe_env.choice.device), "image_support", property(lambda d: 0))
    probe = template_backend.probe(probe_env)
    assert not probe.available and "no image support" in probe.reason


@pytest.mark.parametrize("scene", ["particles", "image", "yuv", "postprocess"])
def test_the_template_backend_passes_the_contract_suite(template_backend, scene, gl, monkeypatch):
    """The contract suite's own test (tests/contract/) on the template backend: counts, owners per
    phase, pixels against the numpy reference."""
    from app.window.egl_headless import EglSurface

    monkeypatch.syspath_prepend(str(Path(__file__).parent / "contract"))
    contract = importlib.import_module("test_backend_contract")
    surface = EglSurface((64, 48))
    try:
        contract.test_counts_ownership_and_pixels("template", scene, surface)
    finally:
        surface.close()


@pytest.fixture
def template_sync(monkeypatch):
    """The template sync mode, registered for this test only (its module is not a mode: "_")."""
    from app.sharing.sync import sync_modes
    from app.sharing.sync.base import SyncMode

    assert "_template" not in sync_modes() and "template" not in sync_modes()
    monkeypatch.setattr(SyncMode, "registry", dict(SyncMode.registry))
    module = importlib.import_module("app.sharing.sync._template")
    SyncMode.registry["template"] = module.TemplateSync
    return module.TemplateSync


@pytest.mark.parametrize("scene", ["particles", "image"])
def test_the_template_sync_mode_runs_frames_that_match_the_reference(template_sync, scene, gl, monkeypatch):
    """Offered by host_copy here (its refusal says None), it waits on the CPU as it declares, and the
    frames it orders show the scene's reference (the contract suite's checks)."""
    from app.run import Run
    from app.sharing.sync import sync_modes
    from app.window.egl_headless import EglSurface

    monkeypatch.syspath_prepend(str(Path(__file__).parent / "contract"))
    references = importlib.import_module("references")
    assert list(sync_modes())[-2:] == ["template", "none"]  # listed by its order
    surface = EglSurface((64, 48))
    cfg = RunConfig(scene=scene, backend=HostCopy.name, sync="template", size=references.SIZES[scene],
                    headless=True, overlay=False, frames=10_000, seed=4, strict=True)
    try:
        with Run(cfg, surface=surface) as run:
            s = run.session
            assert s.backend.sync_unavailable_reason("template") is None and isinstance(s.scheduler.sync, template_sync)
            for _ in range(5):
                rec = run.tick()
                assert rec.errors == [] and rec.hazards == []
                assert {w[0] for w in rec.waits} >= {"glFinish"}, rec.waits
            s.finish()
            references.CHECKS[scene](s, 5)
    finally:
        surface.close()
