"""Resizes, backend and scene switches: no GL or CL error, no growth in live objects."""
from __future__ import annotations

import numpy as np

from app.config import RunConfig
from app.diagnostics import live
from app.run import Run
from app.sharing.backends.gl_sharing import KhrGlSharing
from app.sharing.backends.host_copy import HostCopy
from app.window.egl_headless import EglSurface


def _cfg(**kw):
    base = dict(headless=True, overlay=False, frames=10_000)
    base.update(kw)
    return RunConfig(**base)


def test_50_resizes_including_zero(gl):
    surface = EglSurface((200, 150))
    before = live.snapshot()
    try:
        with Run(_cfg(scene="image"), surface=surface) as rt:
            rt.tick()
            baseline = live.snapshot()
            sizes = [(0, 0) if i % 10 == 5 else (64 + 13 * i, 48 + 7 * (i % 9)) for i in range(50)]
            for w, h in sizes:
                surface.resize(w, h)
                rec = rt.tick()
                assert rec is not None and rec.errors == [], rec.errors
                if w and h:
                    assert rt.session.scene.image_size == (w, h)
                    tex = rt.session.scene.texture  # CL's side: an image, or a pitched buffer (host_mapped)
                    assert tex.gl.width == w and (tex.mem.shape == (w, h) if tex.is_image else tex.mem.size == tex.pitch * h)
            assert rt.session.history.loop_errors == []
            assert live.snapshot() == baseline  # one texture + one CL image, whatever the size
            last = rt.session.surface.read_pixels()
            assert last.shape == (sizes[-1][1], sizes[-1][0], 4) and last[..., :3].std() > 1
    finally:
        surface.close()
    assert live.snapshot() == before


def test_backend_and_scene_switch_leave_nothing_behind(gl):
    surface = EglSurface((160, 120))
    before = live.snapshot()
    try:
        with Run(_cfg(scene="particles", size=2048, backend=HostCopy.name), surface=surface) as rt:
            for _ in range(3):
                rt.tick()
            baseline = live.snapshot()
            n_host_copy = live.count(owner="host_copy")
            assert n_host_copy > 0
            assert rt.session.switch(backend=HostCopy.name)  # re-created: old objects must all be gone
            rt.tick()
            assert live.snapshot() == baseline
            assert rt.session.switch(scene="image")
            rt.tick()
            assert rt.session.switch(scene="particles")
            rt.tick()
            assert live.snapshot() == baseline
            assert not rt.session.switch(backend=KhrGlSharing.name)  # refused, recorded, old set-up goes on
            assert "cl_khr_gl_sharing" in rt.session.history.loop_errors[-1].message
            rec = rt.tick()
            assert rec.backend == "host_copy" and rec.errors == []
            assert [s["what"] for s in rt.session.history.switches] == ["backend", "scene", "scene"]
    finally:
        surface.close()
    assert live.snapshot() == before


def test_sync_modes_give_the_same_pixels(gl):
    """Each available backend x sync mode against host_copy + finish, both scenes, same seed."""
    from app.sharing.registry import Registry  # noqa: F401  (the runtime's registry is used)

    for scene, size in (("particles", 4096), ("image", (96, 72))):
        shots = {}
        surface = EglSurface((96, 72))
        try:
            with Run(_cfg(scene=scene, size=size, seed=5), surface=surface) as rt:
                combos = [(b, m) for b in rt.session.registry.available for m in ("finish", "gl_event", "semaphore", "none")]
            for backend, sync in combos:
                with Run(_cfg(scene=scene, size=size, seed=5), surface=surface) as rt:
                    if rt.session.backend.sync_unavailable_reason(sync):
                        continue
                    if (backend, sync) != (rt.session.backend_name, rt.session.cfg.sync):
                        assert rt.session.switch(backend=backend) if backend != rt.session.backend_name else True
                        assert rt.session.switch(sync=sync) if sync != rt.session.cfg.sync else True
                    for _ in range(12):
                        rt.tick()
                    rt.session.scheduler.finish()
                    rt.session.surface.bind_target()
                    rt.session.scene.render(rt.session.surface.framebuffer_size)
                    shots[(backend, sync)] = rt.session.surface.read_pixels()
        finally:
            surface.close()
        ref = shots[(HostCopy.name, "finish")]
        assert len(shots) >= 2 and ref[..., :3].std() > 1
        for key, px in shots.items():
            assert np.array_equal(px, ref), (scene, key)


def test_one_cap_on_kept_records_across_switches_counts_every_frame(gl):
    """The history keeps at most ``cap`` records for the whole run, whatever the switches; the
    totals still count every frame and the segments say which set-up ran which frames."""
    import collections

    surface = EglSurface((64, 48))
    try:
        with Run(_cfg(scene="particles", size=256), surface=surface) as rt:
            history = rt.session.history
            history.records = collections.deque(history.records, maxlen=5)  # a short history
            for _ in range(12):
                rt.tick()
            assert rt.session.switch(sync="none")
            for _ in range(3):
                rt.tick()
            assert rt.session.switch(scene="image")
            for _ in range(4):
                rt.tick()
            totals = history.totals
            assert totals["frames"] == 19 and totals["acquire"] == 19 and totals["release"] == 19
            kept = list(history.records)
            assert len(kept) == 5 and [r.index for r in kept] == list(range(14, 19))
            assert [r.segment for r in kept] == [1, 2, 2, 2, 2]
            assert [(s.scene, s.sync, s.first_frame, s.frames) for s in history.segments] == [
                ("particles", "finish", 0, 12), ("particles", "none", 12, 3), ("image", "none", 15, 4)]
    finally:
        surface.close()
