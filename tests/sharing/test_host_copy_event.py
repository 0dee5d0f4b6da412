"""host_copy's acquire returns an event when the caller asks for one, even when it enqueued nothing:
the spec's event "identifies this command and can be used to query or wait for this command to
complete" (5.5.15), so a wait on the acquire must wait on something."""
from __future__ import annotations

import numpy as np
import pyopencl as cl

COMPLETE = cl.command_execution_status.COMPLETE


def test_acquire_event_on_request(host_copy):
    b, q = host_copy, host_copy.queue
    obj = b.create_buffer("t.event", 64, data=np.arange(16, dtype=np.float32))
    try:
        copied = b.acquire(q, [obj], event=True)  # GL wrote the data: a copy, its own event
        assert isinstance(copied, cl.Event) and not isinstance(copied, cl.UserEvent)
        b.release(q, [obj], [copied])
        before = b.bytes_copied
        nothing = b.acquire(q, [obj], event=True)  # nothing to copy, nothing to wait for
        assert b.bytes_copied == before  # still no copy and no command
        assert isinstance(nothing, cl.UserEvent) and nothing.command_execution_status == COMPLETE
        nothing.wait()  # a wait on the acquire returns (it is complete)
        fill = cl.enqueue_fill_buffer(q, obj.mem, np.float32(4.0), 0, 64, wait_for=[nothing])  # a valid wait list
        b.release(q, [obj], [fill])
        q.finish()
        np.testing.assert_array_equal(obj.gl.read(), np.full(16, 4.0, np.float32))
        assert b.acquire(q, [obj]) is None  # unasked (the scheduler): nothing enqueued, nothing returned
        b.release(q, [obj])
        assert b.tracker.flags == []
    finally:
        q.finish()
        b.destroy(obj)
