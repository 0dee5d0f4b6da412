"""The recipe for a new sync mode: copy this module to ``app/sharing/sync/NAME.py``, set ``name`` to
NAME and replace the waits with the mode's own ordering. That one module is the whole mode (and its
tests): ``sync_modes`` imports every module of this package (modules whose name starts with "_",
like this one, are not modes) and the class registers itself by subclassing ``SyncMode`` with a
``name``; ``--sync NAME``, the panel's sync combo, ``info`` and the bench's cells find it there. A
mode that needs one backend's context lives in that backend's module instead (gl_event).

What a mode implements (``SyncMode`` in app/sharing/sync/base.py says each one's contract):

- class attributes: ``name``, ``title``, ``explanation`` (the panel and teaching mode show it),
  ``order`` (where it is listed and cycled); the properties it declares, which the scheduler and
  the tests read instead of its name: ``orders`` (False only for a mode that orders nothing, a
  hazard demonstration), ``waits_on_cpu`` (every frame the CPU waits for GL before the acquire and
  for CL after the release), ``bounded_run_ahead``, ``orders_copies``, ``gl_waits_for_release``;
- ``refusal(backend, env)`` (class method): None where the mode works with that backend class here,
  else the reason (``info``, the panel's combo and ``--sync``'s error show it; nothing is built);
- ``before_acquire(waits, shadow=None)``: GL's work ordered before CL's, returning the events the
  acquire waits on; ``after_release(queue, release_event, waits, shadow=None)``: CL's before GL's.
  Each CPU wait goes through ``timed_wait`` into ``waits``; a mode that ``waits_on_cpu`` flushes and
  calls ``shadow`` (when given) before it waits;
- optional: ``after_gl_use``, ``set_slots`` / ``use_slot`` (per copy of the objects), ``close``,
  and the native frame's ``native_calls`` (None, the default: the frame is made in Python).

This one waits as ``finish`` does before the acquire (glFinish) and for the release's own event
after it (clWaitForEvents), where the release returned one, else for the queue (clFinish).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import pyopencl as cl

from app.sharing.sync.base import SyncMode, timed_wait

if TYPE_CHECKING:
    from app.sharing.base import ProbeEnv, SharingBackend


class TemplateSync(SyncMode):
    name = "template"  # the module's name: app/sharing/sync/template.py
    order = 80
    waits_on_cpu = True
    title = "glFinish / wait for the release (the sync mode recipe)"
    explanation = ("glFinish before the acquire waits until GL's commands are done; after the release the CPU "
                   "waits for the release's event, so GL draws only what CL finished.")

    @classmethod
    def refusal(cls, backend: type["SharingBackend"], env: "ProbeEnv") -> str | None:
        if env.gl_info.version_tuple < (3, 3):
            return f"needs OpenGL 3.3; the context is {env.gl_info.version_tuple}"
        return None

    def __init__(self, backend: "SharingBackend") -> None:
        super().__init__(backend)
        from app.gl.raw import gl_function

        self._gl_finish, self._gl_flush = gl_function("glFinish"), gl_function("glFlush")

    def before_acquire(self, waits: list, shadow=None) -> list[cl.Event]:
        if shadow is not None:
            self._gl_flush()
            shadow()
        timed_wait(waits, "glFinish", self._gl_finish)
        return []

    def after_release(self, queue, release_event, waits, shadow=None) -> None:
        queue.flush()  # the acquire, the kernel and the release run while the CPU goes on
        if shadow is not None:
            shadow()
        if release_event is not None:  # in order: the release completes after every command before it
            timed_wait(waits, "release event", release_event.wait)
        else:
            timed_wait(waits, "clFinish", queue.finish)
