"""The contract every sharing backend keeps, on every scene: frame counts, the ownership of each
shared object at each phase, pixels against the numpy reference, switching in and out, and a
teardown that leaves no live GL or CL object and no file descriptor behind.

Parametrized over every registered backend (``contract_backend`` in conftest.py: real where the
machine offers it, gl_sharing through an emulated driver, the rest skipped with the reason).
"""
from __future__ import annotations

import pytest
from references import BEFORE, CHECKS, SIZES

from app.cl.ext import open_fds
from app.config import RunConfig
from app.diagnostics import live
from app.run import Run
from app.scenes import scene_classes
from app.sharing.backends.host_copy import HostCopy
from app.validate.ownership import CL, GL
from app.window.egl_headless import EglSurface

SCENES = list(scene_classes())
FRAMES = 5


def _cfg(scene: str, backend: str) -> RunConfig:
    return RunConfig(scene=scene, backend=backend, size=SIZES.get(scene), headless=True, overlay=False,
                     frames=10_000, seed=4, strict=True)


@pytest.fixture
def small_surface(gl):
    surface = EglSurface((64, 48))
    yield surface
    surface.close()


def test_every_scene_has_a_reference():
    assert set(SCENES) <= set(CHECKS), "add the new scene's reference to tests/contract/references.py"


@pytest.mark.parametrize("scene", SCENES)
def test_counts_ownership_and_pixels(contract_backend, scene, small_surface):
    with Run(_cfg(scene, contract_backend), surface=small_surface) as run:
        s = run.session
        assert s.backend_name == contract_backend
        for _ in range(FRAMES - 1):
            rec = run.tick()
            assert rec is not None and rec.errors == [] and rec.hazards == []
        # the last frame one phase at a time: who owns each shared object after each phase
        before = BEFORE[scene](s) if scene in BEFORE else None
        owners = []
        for phase in s.scheduler.frame_phases(s.frame, s.render_target):
            owners.append((phase, {s.backend.tracker.owner_of(o) for o in s.scene.shared}))
        s.frame += 1
        assert owners == [("acquire", {CL}), ("compute", {CL}), ("release", {GL}), ("render", {GL})]
        s.finish()
        totals = s.history.totals
        assert (totals["frames"], totals["acquire"], totals["compute"], totals["release"]) == (FRAMES,) * 4
        assert totals["errors"] == 0 and s.history.loop_errors == []
        for state in s.backend.tracker.states.values():
            assert (state.acquires, state.releases) == (FRAMES, FRAMES)
        if s.backend.zero_copy:
            # nothing moves, except what GL rendered into a texture whose texels CL reads from a
            # buffer (the post-process scene's rendering): only a GL-made CL image avoids that copy
            rendered = getattr(s.scene, "rendered", None)
            allowed = {0} | ({rendered.nbytes} if rendered is not None and rendered.storage is not None else set())
            assert {r.bytes_moved for r in s.history.records} <= allowed
        CHECKS[scene](s, FRAMES, *(() if before is None else (before,)))


@pytest.mark.parametrize("scene", SCENES)
def test_switch_in_and_out_leaves_nothing(contract_backend, scene, small_surface):
    """host_copy -> the backend -> host_copy: the same live objects as before, no error."""
    with Run(_cfg(scene, HostCopy.name), surface=small_surface) as run:
        s = run.session
        run.tick()
        baseline = live.snapshot()
        assert s.switch(backend=contract_backend), s.status
        for _ in range(3):
            rec = run.tick()
            assert rec.errors == [] and rec.backend == contract_backend
        assert s.switch(backend=HostCopy.name), s.status
        rec = run.tick()
        assert rec.errors == [] and s.history.loop_errors == []
        assert live.snapshot() == baseline


@pytest.mark.parametrize("scene", SCENES)
def test_teardown_leaves_no_object_and_no_fd(contract_backend, scene, small_surface):
    with Run(_cfg(scene, contract_backend), surface=small_surface) as run:  # the driver's first-use set-up
        run.tick()
    fds = open_fds()
    before = live.snapshot()
    with Run(_cfg(scene, contract_backend), surface=small_surface) as run:
        for _ in range(3):
            run.tick()
        assert live.count(owner=contract_backend) > 0
    assert live.snapshot() == before
    assert open_fds() == fds
