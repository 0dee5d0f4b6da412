"""The Events tab's arguments (issue 36): a call chosen in the Events tab shows its arguments as the
scheduler recorded them: a CL command's event handle, queue, command type and execution status (its
event's answers when its stamps were read), its four device stamps and the latencies between them,
the CPU call that enqueued it and what that call returned, the objects the hand-over took, the
bytes moved; nothing rebuilt (what is not recorded says so).

A synthetic record gives exact values; a run on host_copy (software CL and GL) checks the recorded
ones against the driver's objects."""
from __future__ import annotations

import pyopencl as cl
import pytest

from app.schedule.frame import CommandInfo, ErrorRecord, FrameRecord
from app.ui.tabs.events import DEVICE, NOT_RECORDED, command_type_name, frame_events

CL_COMMAND_NDRANGE_KERNEL, CL_COMMAND_RELEASE_GL_OBJECTS = 0x11F0, 0x1200


def _record() -> FrameRecord:
    rec = FrameRecord(9, "particles", "gl_sharing", "finish", start_ns=1_000_000, end_ns=1_100_000)
    rec.phases = {"acquire": (1_000_000, 1_020_000), "compute": (1_020_000, 1_040_000),
                  "release": (1_040_000, 1_070_000), "render": (1_070_000, 1_100_000)}
    rec.cl_profile = {"compute": (1_030_000, 1_031_500, 1_032_000, 1_045_000),
                      "release": (1_046_000, None, 1_048_000, 1_060_000)}
    rec.commands = {"compute": CommandInfo(0x7F00AA10, 0x55501230, CL_COMMAND_NDRANGE_KERNEL, 0),
                    "release": CommandInfo(0x7F00AB20, 0x55501230, CL_COMMAND_RELEASE_GL_OBJECTS, 0)}
    rec.counts = {"acquire": 1, "compute": 1, "release": 1}
    rec.owner_labels = ("particles.position", "particles.color")
    rec.bytes_moved = 4096
    return rec


def _args(events, name: str, source: str = DEVICE) -> dict:
    return dict(next(e for e in events if e.name == name and e.source == source).args)


def test_a_commands_arguments_are_what_was_recorded():
    args = _args(frame_events(_record()), "kernel")
    assert args["event"] == "0x7f00aa10" and args["queue"] == "0x55501230"
    assert args["command type"] == "CL_COMMAND_NDRANGE_KERNEL" and args["execution status"] == "CL_COMPLETE"
    assert args["enqueued by"] == "enqueue kernel (the CPU's call)" and args["returned"] == "CL_SUCCESS"
    assert (args["queued"], args["submit"], args["start"], args["end"]) == (
        "1,030,000 ns", "1,031,500 ns", "1,032,000 ns", "1,045,000 ns")
    assert args["queued -> submit"] == "1.50 us" and args["submit -> start"] == "500 ns"
    assert args["queued -> start"] == "2.00 us" and args["start -> end (ran)"] == "13.00 us"
    assert args["call -> start"] == "12.00 us"  # the CPU's call began at 1_020_000 (offset 0)
    assert args["wait list"] == NOT_RECORDED and "objects" not in args  # the kernel's are not the hand-over's
    assert args["bytes moved (frame)"] == "4,096"


def test_the_release_says_its_objects_its_unread_submit_and_its_error():
    rec = _record()
    rec.errors = [ErrorRecord(9, "gl_sharing.release", -5, "CL_OUT_OF_RESOURCES", "clEnqueueReleaseGLObjects failed")]
    args = _args(frame_events(rec), "release command")
    assert args["objects"] == "particles.position, particles.color"
    assert args["command type"] == "CL_COMMAND_RELEASE_GL_OBJECTS"
    assert args["submit"].startswith("not read") and "queued -> submit" not in args
    assert args["returned"] == "CL_OUT_OF_RESOURCES (-5)"
    assert _args(frame_events(rec), "enqueue release + wait", "CPU")["returned"] == "CL_OUT_OF_RESOURCES (-5)"
    # a command whose event was not asked: said, not made up
    rec.commands = None
    assert _args(frame_events(rec), "kernel")["event, queue, type, status"] == NOT_RECORDED


def test_extension_command_types_are_named():
    assert command_type_name(0x2047) == "CL_COMMAND_ACQUIRE_EXTERNAL_MEM_OBJECTS_KHR"
    assert command_type_name(0x2043) == "CL_COMMAND_SEMAPHORE_SIGNAL_KHR"
    assert command_type_name(0x11FF) == "CL_COMMAND_ACQUIRE_GL_OBJECTS"
    assert command_type_name(0x7777) == "0x7777"


def test_a_run_records_each_commands_event_and_the_tab_shows_it(gl):
    """Every profiled command of a run has its event's answers on its record: the backend's queue,
    the command's type (the kernel an NDRange), complete; the tab shows those values."""
    from app.config import RunConfig
    from app.run import Run

    cfg = RunConfig(scene="particles", size=1024, headless=True, frames=10_000, overlay=False, backend="host_copy",
                    stamps_ms=0)  # every frame timed
    with Run(cfg, surface=gl) as rt:
        for _ in range(5):
            rt.tick()
        rt.session.scheduler.finish()
        queue = rt.session.backend.queue.int_ptr
        records = list(rt.session.history.records)
    assert records and all(r.cl_profile for r in records)
    for rec in records:
        assert rec.commands is not None and set(rec.commands) == set(rec.cl_profile), rec.index
        for info in rec.commands.values():
            assert info.queue == queue and info.status == cl.command_execution_status.COMPLETE and info.event
        assert rec.commands["compute"].command_type == cl.command_type.NDRANGE_KERNEL
        args = _args(frame_events(rec), "kernel")
        info = rec.commands["compute"]
        assert (args["event"], args["queue"]) == (f"0x{info.event:x}", f"0x{queue:x}")
        q, _sub, st, en = rec.cl_profile["compute"]
        assert (args["queued"], args["start"], args["end"]) == (f"{q:,} ns", f"{st:,} ns", f"{en:,} ns")


@pytest.mark.parametrize("name", ["acquire", "compute", "release"])
def test_a_cpu_calls_arguments_name_the_command_it_enqueued(name):
    from app.trace.names import cpu_name, device_name

    args = _args(frame_events(_record()), cpu_name(name), "CPU")
    assert args["host"] == "{:,} -> {:,} ns".format(*_record().phases[name])
    assert args["enqueued"] == (device_name(name) if name in _record().cl_profile else "no command profiled")
