"""Frames in flight: where the sync mode has no CPU wait per frame, the scheduler lets the CPU run
at most N frames ahead of the GPU (the wait is recorded on the frame that waited)."""
from __future__ import annotations

import pytest

from app.config import RunConfig
from app.scenes.particles import ParticlesScene
from app.schedule.scheduler import FrameScheduler
from app.sharing.sync import SyncMode


class NoWaitSync(SyncMode):
    """A mode that, like semaphores, orders nothing on the CPU (a test stand-in: unregistered name)."""

    bounded_run_ahead = True

    def __init__(self, backend) -> None:
        super().__init__(backend)
        self.name = "test-no-wait"  # on the instance: the class stays out of the registry


@pytest.mark.parametrize("n", [1, 2, 3])
def test_cpu_runs_at_most_n_frames_ahead(host_copy, surface, n):
    scene = ParticlesScene(RunConfig(size=1024, seed=2))
    scene.build(host_copy, surface.framebuffer_size)
    sched = FrameScheduler(host_copy, scene, NoWaitSync(host_copy), strict=True, frames_in_flight=n)
    target = lambda: surface.framebuffer_size if surface.bind_target() else None  # noqa: E731
    try:
        recs = [sched.run_frame(f, target) for f in range(8)]
        assert len(sched._in_flight) == n  # the newest n frames may still be running
        waited = [any(name == f"{n} frames in flight" for name, _, _ in r.waits) for r in recs]
    finally:
        sched.finish()
        sched.close()
        scene.teardown()
    assert waited == [False] * n + [True] * (8 - n)  # from frame n on, each waits for frame i - n
    assert all(r.errors == [] for r in recs)
    assert sched._in_flight == type(sched._in_flight)()  # close() deleted every fence


def test_modes_that_wait_are_not_bounded(host_copy, surface):
    scene = ParticlesScene(RunConfig(size=256, seed=2))
    scene.build(host_copy, surface.framebuffer_size)
    sched = FrameScheduler(host_copy, scene, host_copy.make_sync("finish"), strict=True, frames_in_flight=1)
    target = lambda: surface.framebuffer_size if surface.bind_target() else None  # noqa: E731
    try:
        recs = [sched.run_frame(f, target) for f in range(3)]
    finally:
        sched.finish()
        sched.close()
        scene.teardown()
    assert [name for r in recs for name, _, _ in r.waits] == ["glFinish", "clFinish"] * 3
