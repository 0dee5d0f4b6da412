"""app/native/calls.py: a list of prepared foreign calls made in one native call must make every call
in order with exactly its arguments (integers, NULL, the addresses of prepared values), stamp the clock
before and after each one on time.perf_counter_ns's time line, stop at the first CL status that is not
zero (naming its call, making none after it), and go on from any call it is asked to; and where it
cannot be used the reason is said. Real CL calls (a kernel's scalar argument set from a value the
caller rewrites, the launch, clFinish) must compute what pyopencl computes."""
from __future__ import annotations

import ctypes
import os
import time

import numpy as np
import pyopencl as cl
import pytest

from app import native
from app.cl.ext import NDRangeCall, call_error, prepared_core, prepared_scalar_arg
from app.native.calls import ARGS, Call, CallList, reason

pytestmark = pytest.mark.skipif(not os.path.exists(native.LIBRARY) and native.compiler() is None,
                                reason=f"app/native could not be built here: {native.reason()}")

U64 = ctypes.c_uint64
STATUS_FN = ctypes.CFUNCTYPE(ctypes.c_int32, *([U64] * ARGS))
VOID_FN = ctypes.CFUNCTYPE(None, *([U64] * ARGS))


@pytest.fixture(autouse=True, scope="module")
def _built():
    if native.reason() and native.compiler() is not None:
        native.build()
    if reason():
        pytest.skip(reason())


def _recorder(log: list, name: str, status: int = 0, void: bool = False):
    """A C-callable function that logs (name, its ARGS words, the clock) and returns ``status``."""
    def fn(*words):
        log.append((name, words, time.perf_counter_ns()))
        return None if void else status

    return VOID_FN(fn) if void else STATUS_FN(fn)


def test_the_calls_are_made_in_order_with_their_arguments_and_stamped():
    log: list = []
    value = ctypes.c_float(1.5)
    array = (ctypes.c_uint32 * 3)(7, 8, 9)
    args_a = (1, 2**40 + 3, None, value, array, -1, 6, 7, 8, 9)
    calls = CallList([Call(_recorder(log, "a"), args_a, "a"),
                      Call(_recorder(log, "gl", void=True), (0x8D40,), "gl", status=False),
                      Call(_recorder(log, "b"), (), "b")])
    before = time.perf_counter_ns()
    assert calls.run() == 0
    after = time.perf_counter_ns()
    assert calls.failed == -1
    assert [name for name, *_ in log] == ["a", "gl", "b"]
    words = log[0][1]
    assert words[:2] == (1, 2**40 + 3) and words[2] == 0  # an integer as it is, None as NULL
    assert words[3] == ctypes.addressof(value) and words[4] == ctypes.addressof(array)
    assert words[5] == 2**64 - 1 and words[6:] == (6, 7, 8, 9)
    assert ctypes.c_float.from_address(words[3]).value == 1.5  # (the address is the value's own)
    assert log[1][1] == (0x8D40,) + (0,) * (ARGS - 1)  # the unused words are 0
    stamps = list(calls.stamps)
    assert before <= stamps[0] <= log[0][2] <= stamps[1] <= log[1][2] <= stamps[2] <= log[2][2] <= stamps[3] <= after


def test_a_failing_status_stops_the_list_and_the_list_goes_on_where_asked():
    log: list = []
    calls = CallList([Call(_recorder(log, "a"), (), "a"), Call(_recorder(log, "b", status=-5), (), "b"),
                      Call(_recorder(log, "c"), (), "c"), Call(_recorder(log, "d"), (), "d")])
    assert calls.run() == -5
    assert calls.failed == 1 and [n for n, *_ in log] == ["a", "b"]
    log.clear()
    assert calls.run(2, 3) == 0 and [n for n, *_ in log] == ["c"]  # from call 2 up to call 3
    log.clear()
    assert calls.run(2) == 0 and [n for n, *_ in log] == ["c", "d"] and calls.failed == -1
    # a GL call (void) never stops the list, whatever its return register holds
    log.clear()
    calls = CallList([Call(_recorder(log, "gl", void=True), (), "gl", status=False), Call(_recorder(log, "e"), (), "e")])
    assert calls.run() == 0 and [n for n, *_ in log] == ["gl", "e"]


def test_an_entry_replaced_is_called_instead():
    log: list = []
    calls = CallList([Call(_recorder(log, "real"), (), "real")])
    calls.replace_entry(0, _recorder(log, "failing", status=-36))
    assert calls.run() == -36 and [n for n, *_ in log] == ["failing"]


def test_too_many_arguments_are_refused():
    with pytest.raises(ValueError, match="11 arguments"):
        CallList([Call(_recorder([], "x"), tuple(range(ARGS + 1)), "x")])


def test_a_prepared_kernel_launch_computes_what_pyopencl_computes(cl_impl):
    """clSetKernelArg from a C value rewritten between runs, the launch and clFinish, as one list,
    on every CPU OpenCL implementation present: the buffer equals numpy's reference exactly."""
    ctx = cl.Context([cl_impl.device])
    q = cl.CommandQueue(ctx, cl_impl.device)
    src = "__kernel void scale(__global float *a, float s) { size_t i = get_global_id(0); a[i] = a[i] * s; }"
    kernel = cl.Kernel(cl.Program(ctx, src).build(), "scale")
    host = np.arange(1024, dtype=np.float32)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=host)
    kernel.set_arg(0, buf)
    s = ctypes.c_float()
    out = ctypes.c_void_p()
    calls = CallList([prepared_scalar_arg(kernel, 1, s), NDRangeCall.prepared(q, kernel, (1024,), None, out),
                      prepared_core("clFinish", q.int_ptr, wait="clFinish")])
    expect = host.copy()
    for factor in (2.0, 0.5, 3.0):
        s.value = factor
        assert calls.run() == 0
        expect *= np.float32(factor)
        event = cl.Event.from_int_ptr(out.value, retain=False)
        assert event.command_execution_status == cl.command_execution_status.COMPLETE
    got = np.empty_like(host)
    cl.enqueue_copy(q, got, buf)
    np.testing.assert_array_equal(got, expect)
    # a refused call comes back as the error its ctypes form raises (the argument named)
    bad = CallList([prepared_scalar_arg(kernel, 7, s)])
    status = bad.run()
    assert status != 0 and bad.failed == 0
    err = call_error(status, bad.calls[0])
    assert isinstance(err, cl.Error) and err.code == status and "argument 7" in str(err)
