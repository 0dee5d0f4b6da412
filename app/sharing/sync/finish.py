"""The portable sync mode: glFinish before the acquire, clFinish after the release."""
from __future__ import annotations

from typing import TYPE_CHECKING

import pyopencl as cl

from app.sharing.sync.base import SyncMode, timed_wait

if TYPE_CHECKING:
    from app.sharing.base import SharingBackend


class FinishSync(SyncMode):
    """The portable rule of cl_khr_gl_sharing: glFinish before the acquire, clFinish after the release."""

    name = "finish"
    order = 10
    waits_on_cpu = True
    title = "glFinish / clFinish"
    explanation = ("glFinish before the acquire waits until GL's commands are done; clFinish after the release "
                   "waits until CL's are: the portable rule when no shared sync object exists.")

    def __init__(self, backend: "SharingBackend") -> None:
        super().__init__(backend)
        from app.gl.raw import gl_function

        # every frame: straight through ctypes (app/gl/raw.py)
        self._gl_finish, self._gl_flush = gl_function("glFinish"), gl_function("glFlush")

    def before_acquire(self, waits: list, shadow=None) -> list[cl.Event]:
        if shadow is not None:
            self._gl_flush()  # GL runs the frame before's draw while glshare does its bookkeeping
            shadow()
        timed_wait(waits, "glFinish", self._gl_finish)
        return []

    def after_release(self, queue, release_event, waits, shadow=None) -> None:
        if shadow is not None:
            queue.flush()  # the acquire, the kernel and the release run while glshare does its bookkeeping
            shadow()
        timed_wait(waits, "clFinish", queue.finish)

    def native_calls(self, queue, variant):
        from app.cl.ext import prepared_core
        from app.native.calls import Call

        return ([Call(self._gl_finish, (), "glFinish", status=False, wait="glFinish")],
                [prepared_core("clFinish", queue.int_ptr, wait="clFinish")])

    def native_shadow(self, queue, shadow, before: bool) -> None:
        if before:
            self._gl_flush()
        else:
            queue.flush()
        shadow()
