"""app/native: the CL profiling stamps of a batch of events read in one C call must be exactly what
the ctypes reads call by call give (the same driver queries), a refused query must come back as
the same CL error at the same event with the others still read, and a library built from other
source or turned off must not be used (the reason said). Run on every CPU OpenCL implementation
present and on the machine's own device (the H200's NVIDIA)."""
from __future__ import annotations

import os

import numpy as np
import pyopencl as cl
import pytest

from app import native
from app.cl.ext import EventInfo
from app.sharing.backends.host_copy import HostCopy

# where there is no C compiler and no library, make setup could not build it: skipped, the reason
# printed; a library that was built (or carried, as to the H200) must load and be used, and where a
# compiler is there the library must build (pytest run without make setup builds it here)
pytestmark = pytest.mark.skipif(not os.path.exists(native.LIBRARY) and native.compiler() is None,
                                reason=f"app/native could not be built here: {native.reason()}")


@pytest.fixture(autouse=True, scope="module")
def _built():
    if native.reason() and native.compiler() is not None:
        native.build()
    assert native.reason() == "", native.reason()

_SRC = "__kernel void twice(__global float *a) { size_t i = get_global_id(0); a[i] = 2.0f * a[i]; }"


def _commands(device):
    """A profiled queue's markers and kernels (finished), and an event of a queue without profiling."""
    ctx = cl.Context([device])
    q = cl.CommandQueue(ctx, device, properties=cl.command_queue_properties.PROFILING_ENABLE)
    plain = cl.CommandQueue(ctx, device)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=np.ones(4096, np.float32))
    twice = cl.Kernel(cl.Program(ctx, _SRC).build(), "twice")
    events = []
    for _ in range(5):
        events.append(twice(q, (4096,), None, buf))
        events.append(cl.enqueue_marker(q))
    unprofiled = twice(plain, (4096,), None, buf)
    q.finish()
    plain.finish()
    return events, unprofiled, (ctx, q, plain, buf, twice)


def _both():
    batched, by_call = EventInfo(), EventInfo()
    by_call._batch = None
    assert batched.batched and not by_call.batched
    return batched, by_call


def _check(device):
    events, unprofiled, keep = _commands(device)
    batched, by_call = _both()
    ptrs = [e.int_ptr for e in events]
    for submit in (True, False):
        got, want = batched.profiles(ptrs, submit), by_call.profiles(ptrs, submit)
        assert got == want and len(got) == len(events)
        assert all((p[1] is None) != submit for p in got)
        stamped = [p for p in got if p[0]]  # a driver may leave markers unstamped (NVIDIA): zeros both ways
        assert stamped and all(p[0] <= p[2] <= p[3] for p in stamped)
    # refused queries (first, in the middle, two in a row, last): the same error at the same places,
    # every other event read
    bad = unprofiled.int_ptr
    mixed = [bad] + ptrs[:3] + [bad, bad] + ptrs[3:] + [bad]
    got, want = batched.profiles(mixed, True), by_call.profiles(mixed, True)
    refused = [i for i, p in enumerate(mixed) if p == bad]
    assert len(got) == len(want) == len(mixed)
    for i in refused:
        assert isinstance(got[i], cl.Error) and isinstance(want[i], cl.Error)
        assert got[i].code == want[i].code == -7  # CL_PROFILING_INFO_NOT_AVAILABLE (clGetEventProfilingInfo)
    assert [g for i, g in enumerate(got) if i not in refused] == [w for i, w in enumerate(want) if i not in refused]
    # a batch bigger than the buffers kept, and an empty one
    many = ptrs * 20
    assert batched.profiles(many, False) == by_call.profiles(many, False)
    assert batched.profiles([], True) == []
    del keep


def test_stamps_read_in_c_are_the_ctypes_stamps(device_choice):
    _check(device_choice.device)


def test_stamps_read_in_c_on_every_cpu_implementation(cl_impl):
    _check(cl_impl.device)


def test_a_library_of_other_source_or_turned_off_is_not_used(monkeypatch):
    try:
        monkeypatch.setattr(native, "source_crc", lambda: 12345)
        native.load.cache_clear()
        assert "built from another stamps.c" in native.reason()
        assert not EventInfo().batched
        monkeypatch.undo()
        monkeypatch.setenv("GLSHARE_NATIVE", "0")
        native.load.cache_clear()
        assert native.reason() == "turned off (GLSHARE_NATIVE=0)"
        assert "call by call" in native.describe()
    finally:
        monkeypatch.undo()
        native.load.cache_clear()
    assert native.reason() == "" and EventInfo().batched


def test_the_scheduler_records_the_same_profiles_either_way(gl):
    """The same headless frames harvested through the C batch and call by call: every command of
    every frame gets stamps (or is unstamped) the same way, in frame order."""
    from app.cl.ext import event_info
    from app.config import RunConfig
    from app.run import Run

    info = event_info()
    kept = info._batch
    assert kept is not None, "the session's EventInfo reads through ctypes: nothing would be compared"
    shapes = []
    try:
        for batch in (kept, None):
            info._batch = batch
            cfg = RunConfig(scene="particles", size=4096, headless=True, frames=10_000, overlay=False,
                            backend=HostCopy.name, stamps_ms=0)
            with Run(cfg, surface=gl) as rt:
                for _ in range(20):
                    rt.tick()
                rt.session.scheduler.harvest(wait=True)
                recs = list(rt.session.history.records)
            shapes.append([(r.index, sorted(r.cl_profile), r.unstamped, len(r.errors)) for r in recs])
            assert all(all(p[0] <= p[2] <= p[3] for p in r.cl_profile.values()) for r in recs)
    finally:
        info._batch = kept
    assert shapes[0] == shapes[1] and len(shapes[0]) == 20 and all(s[1] for s in shapes[0])


def test_gl_timer_passes_read_in_c_are_the_ctypes_reads(gl):
    """The GL timer's batch read gives each pass the stamps the call-by-call reads give (the same
    queries read twice: a query's result does not change), with GL 4.4's NO_WAIT read and with the
    availability query, and leaves a pass whose end is not there in flight."""
    from app.gl import api as GL
    from app.gl.timer import GlTimer
    from app.schedule.frame import FrameRecord

    for no_wait in (True, False):
        timer = GlTimer("test", every=1)
        try:
            assert timer.enabled and timer.batched
            timer._no_wait = timer._no_wait and no_wait  # False: the availability query, read at harvest time
            recs = [FrameRecord(i, "t", "b", "finish") for i in range(6)]
            for rec in recs:
                with timer.span(rec, "pass"):
                    GL.glClear(GL.GL_COLOR_BUFFER_BIT)
            pairs = [(q0, q1) for _, _, q0, q1 in timer._pending]
            GL.glFinish()
            timer._calls = timer.harvest_every - 1  # this call reads
            timer.harvest()
            assert timer.timed == 6 and not timer._pending
            by_call = [(timer._result(q0), timer._result(q1)) for q0, q1 in pairs]
            assert [r.gl_passes for r in recs] == [[("pass", s, e)] for s, e in by_call]
            assert all(0 < s <= e for s, e in by_call)
            # a pass in flight: a query never issued has no result, so the batch stops before it
            never = int(np.atleast_1d(GL.glGenQueries(1))[0])
            timer._pending.append((recs[0], "never", never, never))
            timer._calls = timer.harvest_every - 1
            timer.harvest()
            assert len(timer._pending) == 1 and timer.timed == 6
            timer._pending.clear()
            while GL.glGetError():  # the reads of a query never issued: GL_INVALID_OPERATION, by design
                pass
            GL.glDeleteQueries(1, [never])
            with pytest.raises(RuntimeError), timer.call_by_call():  # the bench's comparison: no batch inside
                assert not timer.batched
                raise RuntimeError
            assert timer.batched  # and the batch back after it, also on error
        finally:
            timer.release()
