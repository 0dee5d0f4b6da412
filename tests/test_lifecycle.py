"""Resizes, backend and scene switches: no GL or CL error, no growth in live objects."""
from __future__ import annotations

import numpy as np

from app.config import RunConfig
from app.diagnostics import live
from app.runtime import Runtime
from app.window.egl_headless import EglSurface


def _cfg(**kw):
    base = dict(headless=True, overlay=False, frames=10_000)
    base.update(kw)
    return RunConfig(**base)


def test_50_resizes_including_zero(gl):
    surface = EglSurface((200, 150))
    before = live.snapshot()
    try:
        with Runtime(_cfg(scene="image"), surface=surface) as rt:
            rt.tick()
            baseline = live.snapshot()
            sizes = [(0, 0) if i % 10 == 5 else (64 + 13 * i, 48 + 7 * (i % 9)) for i in range(50)]
            for w, h in sizes:
                surface.resize(w, h)
                rec = rt.tick()
                assert rec is not None and rec.errors == [], rec.errors
                if w and h:
                    assert rt.scene.image_size == (w, h)
                    assert rt.scene.texture.gl.width == w and rt.scene.texture.mem.shape == (w, h)
            assert rt.loop_errors == []
            assert live.snapshot() == baseline  # one texture + one CL image, whatever the size
            last = rt.surface.read_pixels()
            assert last.shape == (sizes[-1][1], sizes[-1][0], 4) and last[..., :3].std() > 1
    finally:
        surface.close()
    assert live.snapshot() == before


def test_backend_and_scene_switch_leave_nothing_behind(gl):
    surface = EglSurface((160, 120))
    before = live.snapshot()
    try:
        with Runtime(_cfg(scene="particles", size=2048), surface=surface) as rt:
            for _ in range(3):
                rt.tick()
            baseline = live.snapshot()
            n_host_copy = live.count(owner="host_copy")
            assert n_host_copy > 0
            assert rt.switch(backend="host_copy")  # re-created: old objects must all be gone
            rt.tick()
            assert live.snapshot() == baseline
            assert rt.switch(scene="image")
            rt.tick()
            assert rt.switch(scene="particles")
            rt.tick()
            assert live.snapshot() == baseline
            assert not rt.switch(backend="gl_sharing")  # refused, recorded, old set-up goes on
            assert "cl_khr_gl_sharing" in rt.loop_errors[-1].message
            rec = rt.tick()
            assert rec.backend == "host_copy" and rec.errors == []
            assert [s["what"] for s in rt.switches] == ["backend", "scene", "scene"]
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
            with Runtime(_cfg(scene=scene, size=size, seed=5), surface=surface) as rt:
                combos = [(b, m) for b in rt.registry.available for m in ("finish", "gl_event", "semaphore", "none")]
            for backend, sync in combos:
                with Runtime(_cfg(scene=scene, size=size, seed=5), surface=surface) as rt:
                    if rt.backend.sync_unavailable_reason(sync):
                        continue
                    if (backend, sync) != (rt.backend_name, rt.cfg.sync):
                        assert rt.switch(backend=backend) if backend != rt.backend_name else True
                        assert rt.switch(sync=sync) if sync != rt.cfg.sync else True
                    for _ in range(12):
                        rt.tick()
                    rt.scheduler.finish()
                    rt.surface.bind_target()
                    rt.scene.render(rt.surface.framebuffer_size)
                    shots[(backend, sync)] = rt.surface.read_pixels()
        finally:
            surface.close()
        ref = shots[("host_copy", "finish")]
        assert len(shots) >= 2 and ref[..., :3].std() > 1
        for key, px in shots.items():
            assert np.array_equal(px, ref), (scene, key)


def test_report_counts_every_frame_beyond_the_history(gl):
    import collections

    surface = EglSurface((64, 48))
    try:
        with Runtime(_cfg(scene="particles", size=256), surface=surface) as rt:
            rt.scheduler.records = collections.deque(maxlen=5)  # a short history
            for _ in range(12):
                rt.tick()
            rt.switch(sync="none")
            for _ in range(3):
                rt.tick()
            assert rt.totals["frames"] == 15 and rt.totals["acquire"] == 15 and rt.totals["release"] == 15
            assert len(rt.all_records) == 5 + 3
    finally:
        surface.close()
