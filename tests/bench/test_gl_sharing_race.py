"""The bench's gl_sharing rows (app/bench/gl_sharing_race.py) on the CPU machine: skipped with the
probe's reason where gl_sharing is refused, and, through the emulated driver (tests/gl_emulation.py),
the bare-loop row built from the same calls. Their figures come from the GPU machine."""
from __future__ import annotations

import pytest
from gl_emulation import EmulatedGlSharingDriver

from app.bench.gl_sharing_race import gl_sharing_rows


@pytest.fixture
def own_surface(gl):
    """A surface of the test's own: the race resizes it to each scene's window."""
    from app.window.egl_headless import EglSurface

    surface = EglSurface((64, 48))
    yield surface
    surface.close()


def test_rows_skipped_with_the_reason_where_refused(own_surface):
    out = gl_sharing_rows(own_surface, "portable", frames=2, warmup=1)
    assert out["rows"] == [] and out["skipped"].startswith("gl_sharing is refused here: ")
    assert "clCreateFromGLBuffer" in out["skipped"]


def test_bare_loop_row_on_the_emulated_driver(own_surface, monkeypatch):
    driver = EmulatedGlSharingDriver()
    driver.install(monkeypatch)
    out = gl_sharing_rows(own_surface, "portable", scenes=(("particles", 4096), ("image", (64, 48))), frames=3, warmup=1)
    assert out["skipped"] is None and not driver.errors
    assert "external_memory is refused here" in out["external_memory_skipped"]
    assert [r["race"] for r in out["rows"]] == ["gl_sharing bare loop"] * 2
    for row in out["rows"]:
        assert row["ratio"] > 0 and row["baseline_ms"] > 0 and row["target"] == "<= 1.1"
    # the bare loop made the same calls: acquire and release on the driver beside glshare's frames
    assert driver.calls.count(("clEnqueueAcquireGLObjects", 1, 0)) > 0


def test_gl_event_session_of_the_race_tears_down_cleanly(own_surface, monkeypatch):
    """The race's gl_event session on linked events spent by their acquire (as NVIDIA 580's were: the
    bench died at its teardown there): the rows come back, and no linked event went anywhere but an
    acquire (tests/gl_emulation.py checks it)."""
    driver = EmulatedGlSharingDriver()
    driver.spent_linked_events = True
    driver.install(monkeypatch, gl_event=True)
    out = gl_sharing_rows(own_surface, "portable", scenes=(("particles", 4096),), frames=3, warmup=1)
    assert out["skipped"] is None and not driver.errors, driver.errors
    assert [r["race"] for r in out["rows"]] == ["gl_sharing bare loop"]
    assert driver.calls.count(("clCreateEventFromGLsyncKHR",)) == 4  # the gl_event session's frames
