"""What the steady frame's Python no longer does each frame (#34's frame cost), held to behaviour: a
frame with nothing to read is harvested at its end and in frame order, an event nobody asked for
is let go, a sync mode's hook that does nothing is not called, and the next frame can be timed on
demand whatever the interval."""
from __future__ import annotations

import numpy as np

from app.config import RunConfig
from app.scenes.particles import ParticlesScene
from app.schedule.executors import bound_hook
from app.schedule.scheduler import FrameScheduler
from app.sharing.sync import FinishSync, NoSync

DAY_NS = 86_400 * 10 ** 9  # a stamps interval no test run reaches: only the first frame is timed


def _scheduler(backend, surface, **kw):
    scene = ParticlesScene(RunConfig(size=256, seed=3))
    scene.build(backend, surface.framebuffer_size)
    sched = FrameScheduler(backend, scene, backend.make_sync("finish"), strict=True, **kw)
    return sched, scene, (lambda: surface.framebuffer_size if surface.bind_target() else None)


def test_a_frame_with_nothing_to_read_is_harvested_at_its_end_in_frame_order(host_copy, surface):
    """Frame 0 is timed (its events wait for their stamps), the next frames are not and make no event
    under finish: they wait behind it until the harvest reads it, then each is harvested as it ends."""
    sched, scene, target = _scheduler(host_copy, surface, stamps_interval_ns=DAY_NS)
    harvested = []
    real = sched.history.harvested
    sched.history.harvested = lambda rec: (harvested.append(rec.index), real(rec))
    try:
        first = sched.run_frame(0, target)
        second = sched.run_frame(1, target)
        assert first.sampled and first.events and not second.sampled and not second.events
        assert harvested == []  # (frame 1 has nothing to read, but frame 0 before it has)
        sched.harvest(wait=True)
        assert harvested == [0, 1]
        for f in range(2, 6):
            sched.run_frame(f, target)
            assert harvested == list(range(f + 1))  # at its end: nothing waits before it
        assert list(sched.profiles.pending) == []
        assert sched.history.totals["frames"] == 6 and all(r.errors == [] for r in sched.records)
    finally:
        del sched.history.harvested
        sched.finish()
        sched.close()
        scene.teardown()


def test_an_event_not_asked_for_is_let_go(host_copy):
    """host_copy's release copies CL's data to GL and its copy makes an event; a caller that asks for
    none (``out=False``: the scheduler's untimed frame under finish) gets none back, and the copy
    is made all the same."""
    b, q = host_copy, host_copy.queue
    obj = b.create_buffer("t.let_go", 64, data=np.arange(16, dtype=np.float32))
    try:
        b.acquire(q, [obj])
        before = b.bytes_copied
        assert b.release(q, [obj], out=False) is None
        assert b.bytes_copied == before + 64  # (the copy CL -> GL was made)
        q.finish()
        np.testing.assert_array_equal(obj.gl.read(), np.arange(16, dtype=np.float32))
        b.acquire(q, [obj])
        assert b.release(q, [obj]) is not None  # asked for: the copy's event
        assert b.tracker.flags == []
    finally:
        q.finish()
        b.destroy(obj)


def test_a_sync_hook_that_does_nothing_is_not_bound(host_copy):
    """``bound_hook``: None where the mode's class keeps SyncMode's hook (documented to do nothing),
    the mode's own bound method where it has one."""

    class Counting(NoSync):  # (no ``name`` of its own: not registered as a mode)
        calls: list = []

        def after_gl_use(self, waits):
            self.calls.append(len(waits))

    finish, counting = FinishSync(host_copy), Counting(host_copy)
    assert bound_hook(finish, "after_gl_use") is None and bound_hook(finish, "native_before") is None
    hook = bound_hook(counting, "after_gl_use")
    assert hook is not None and bound_hook(counting, "native_after") is None
    hook([1, 2])
    assert Counting.calls == [2]


def test_the_next_frame_is_timed_on_demand(host_copy, surface):
    """Frames shorter than the interval are not timed after the first; ``time_next_frame`` times the
    next one (a bench rung's first frame), and an interval of 0 times every frame."""
    sched, scene, target = _scheduler(host_copy, surface, stamps_interval_ns=DAY_NS)
    try:
        timed = [sched.run_frame(f, target).sampled for f in range(3)]
        sched.time_next_frame()
        timed += [sched.run_frame(f, target).sampled for f in range(3, 5)]
        assert timed == [True, False, False, True, False]
        assert sched.stamps_interval_ns == DAY_NS
        sched.stamps_interval_ns = 0
        assert [sched.run_frame(f, target).sampled for f in range(5, 8)] == [True] * 3
    finally:
        sched.finish()
        sched.close()
        scene.teardown()
