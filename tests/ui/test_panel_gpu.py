"""GPU-only: the panel's links and arguments on the NVIDIA machine (marker ``gpu``; skipped elsewhere).

Run there with: source .device/activate && python3 -m pytest -m gpu -v tests/ui/test_panel_gpu.py

On external_memory the acquire and the release are the extension's commands: their events say so
(CL_COMMAND_ACQUIRE/RELEASE_EXTERNAL_MEM_OBJECTS_KHR), complete, on the backend's queue; every
command with device stamps is linked to the CPU call that enqueued it, leaving the call at its
QUEUED stamp (held inside the call) and landing at its START.
"""
from __future__ import annotations

import pyopencl as cl
import pytest

from app.config import RunConfig
from app.schedule.flows import ENQUEUE

pytestmark = pytest.mark.gpu

ACQUIRE_EXTERNAL, RELEASE_EXTERNAL = 0x2047, 0x2048  # cl_khr_external_memory's command types


@pytest.mark.parametrize("sync", ["finish", "semaphore"])
def test_external_memory_commands_are_recorded_and_linked(gl, sync):
    from app.run import Run
    from app.ui.model import build_timeline
    from app.ui.tabs.events import frame_events

    cfg = RunConfig(scene="particles", size=16384, backend="external_memory", sync=sync, headless=True,
                    overlay=False, frames=10_000, cl_device="NVIDIA", stamps_ms=0)
    with Run(cfg, surface=gl) as rt:
        for _ in range(12):
            rt.tick()
        rt.session.scheduler.finish()
        queue = rt.session.backend.queue.int_ptr
        records = list(rt.session.history.records)[2:]
        clock = rt.session.clock
    assert records
    for rec in records:
        commands = rec.commands or {}
        assert set(commands) == set(rec.cl_profile), (rec.index, rec.unstamped)
        for name, info in commands.items():
            assert info.queue == queue and info.status == cl.command_execution_status.COMPLETE, name
        if "acquire" in commands:
            assert commands["acquire"].command_type == ACQUIRE_EXTERNAL
        if "release" in commands:
            assert commands["release"].command_type == RELEASE_EXTERNAL
        args = {e.name: dict(e.args) for e in frame_events(rec, clock.cl.offset, clock.gl.offset) if e.source == "CL device"}
        if "release" in commands:
            assert args["release command"]["command type"] == "CL_COMMAND_RELEASE_EXTERNAL_MEM_OBJECTS_KHR"
        tl = build_timeline(rec, clock)
        linked = {tl.names[k.dst] for k in tl.links if k.kind == ENQUEUE}
        assert linked == set(rec.cl_profile), rec.index
        for k in tl.links:
            if k.kind == ENQUEUE:
                assert tl.start[k.src] <= k.from_ms <= tl.end[k.src] and k.to_ms == pytest.approx(tl.start[k.dst])
