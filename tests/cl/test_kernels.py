"""A kernel that fails to build says where, with which options, the compiler's log and a saved copy."""
from __future__ import annotations

import pathlib

import pytest

from app.errors import KernelBuildError


def test_build_failure_carries_its_context(host_copy, tmp_path, monkeypatch):
    import app.cl.programs as kernels

    (tmp_path / "broken.cl").write_text("__kernel void k(__global float* p) { p[0] = undefined_name; }\n")
    monkeypatch.setattr(kernels, "KERNELS_DIR", tmp_path)
    with pytest.raises(KernelBuildError) as exc:
        kernels.KernelProgram(host_copy.context, "broken.cl", options=["-DX=1"])
    err = exc.value
    assert err.source_path.endswith("broken.cl") and "-DX=1" in err.options
    assert "undefined_name" in err.log
    assert pathlib.Path(err.saved_copy).read_text().startswith("__kernel void k")
    assert "broken.cl" in err.one_line() and "-DX=1" in err.one_line()


def test_prepared_arguments_and_launch_match_pyopencl(cl_ctx, tmp_path, monkeypatch):
    """RecordingKernel.set_arg (clSetKernelArg through ctypes for numpy scalars and memory objects)
    and .enqueue (a prepared clEnqueueNDRangeKernel) compute what pyopencl's own calls compute,
    record the arguments for a reload, and a bad argument is the driver's error, not a crash."""
    import numpy as np
    import pyopencl as cl

    import app.cl.programs as kernels

    ctx, queue = cl_ctx
    (tmp_path / "axpb.cl").write_text(
        "__kernel void axpb(__global float* out, __global const int* x, float a, int b, uint c) {\n"
        "  size_t i = get_global_id(0); out[i] = a * (float)x[i] + (float)b + (float)c; }\n")
    monkeypatch.setattr(kernels, "KERNELS_DIR", tmp_path)
    prog = kernels.KernelProgram(ctx, "axpb.cl")
    x = np.arange(64, dtype=np.int32)
    xb = cl.Buffer(ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=x)
    out = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, 64 * 4)
    try:
        k = prog.kernel("axpb")
        for i, v in enumerate((out, xb, np.float32(2.5), np.int32(-7), np.uint32(3))):
            k.set_arg(i, v)
        ev = k.enqueue(queue, (64,), None, None)
        got = np.empty(64, np.float32)
        cl.enqueue_copy(queue, got, out, wait_for=[ev])
        assert isinstance(ev, cl.Event) and ev.command_execution_status == cl.command_execution_status.COMPLETE
        assert np.array_equal(got, 2.5 * x - 7 + 3)
        k.set_arg(2, np.float32(-1.0))  # a changed scalar, launched again with a wait list and a local size
        ev2 = k.enqueue(queue, (64,), (16,), [ev])
        cl.enqueue_copy(queue, got, out, wait_for=[ev2])
        assert np.array_equal(got, -1.0 * x - 7 + 3)
        assert [type(v).__name__ for v in k.args.values()] == ["Buffer", "Buffer", "float32", "int32", "uint32"]
        with pytest.raises(cl.Error) as exc:
            k.set_arg(9, np.float32(1.0))  # no argument 9: CL_INVALID_ARG_INDEX from the driver
        assert exc.value.code == -49
    finally:
        prog.release()


def test_event_queries_through_ctypes_match_pyopencl(cl_ctx):
    """app/cl/ext.event_info (the scheduler's harvest and the validator's wait lists): an event's
    context, status and four profiling stamps are pyopencl's own; a queue without profiling is the
    driver's error (CL_PROFILING_INFO_NOT_AVAILABLE), not a crash."""
    import numpy as np
    import pyopencl as cl

    from app.cl.ext import event_info

    ctx, plain = cl_ctx
    queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4096)
    ev = cl.enqueue_fill_buffer(queue, buf, np.uint32(7), 0, 4096)
    ev.wait()
    info = event_info()
    assert info.context(ev.int_ptr) == ctx.int_ptr
    assert info.status(ev.int_ptr) == cl.command_execution_status.COMPLETE == ev.command_execution_status
    stamps = info.profile(ev.int_ptr)
    assert stamps == tuple(ev.get_profiling_info(p) for p in (cl.profiling_info.QUEUED, cl.profiling_info.SUBMIT,
                                                            cl.profiling_info.START, cl.profiling_info.END))
    assert stamps[0] <= stamps[1] <= stamps[2] <= stamps[3]
    # without SUBMIT (a run that records no trace): the other three the same, SUBMIT not asked
    assert info.profile(ev.int_ptr, submit=False) == (stamps[0], None, stamps[2], stamps[3])
    unprofiled = cl.enqueue_fill_buffer(plain, buf, np.uint32(1), 0, 4096)
    unprofiled.wait()
    with pytest.raises(cl.Error) as exc:
        info.profile(unprofiled.int_ptr)
    assert exc.value.code == -7


def test_profile_of_an_unstamped_command_stops_at_its_queued_stamp(cl_ctx):
    """NVIDIA's markers come back with four zero stamps: a QUEUED of 0 is no device time, and the
    other stamps are not asked (one driver call instead of three or four, every such command)."""
    from app.cl.ext import EventInfo

    info = EventInfo()
    asked = []
    stamps = {0x1280: 0, 0x1281: 5, 0x1282: 6, 0x1283: 7}

    def driver(ptr, param, size, ref, ret):  # stands in for clGetEventProfilingInfo
        asked.append(param)
        info._u64.value = stamps[param]
        return 0

    info._profiling = driver
    assert info.profile(1) == (0, 0, 0, 0) and asked == [0x1280]
    asked.clear()
    assert info.profile(1, submit=False) == (0, None, 0, 0) and asked == [0x1280]
    stamps[0x1280] = 4  # stamped: every stamp asked, as the driver gave them
    asked.clear()
    assert info.profile(1) == (4, 5, 6, 7) and asked == [0x1280, 0x1281, 0x1282, 0x1283]
    asked.clear()
    assert info.profile(1, submit=False) == (4, None, 6, 7) and asked == [0x1280, 0x1282, 0x1283]


def test_flush_through_ctypes_flushes_and_says_a_refusal(cl_ctx):
    """app/cl/ext.flush (the semaphore frame's clFlush): a live queue is flushed; a NULL queue is the
    driver's CL_INVALID_COMMAND_QUEUE raised as a pyopencl error, as queue.flush() would raise."""
    import pyopencl as cl

    from app.cl.ext import flush

    _, queue = cl_ctx
    flush(queue)  # no error

    class Null:
        int_ptr = 0

    with pytest.raises(cl.Error) as exc:
        flush(Null())
    assert exc.value.code == -36
