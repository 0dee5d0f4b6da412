"""The semaphore sync mode: binary semaphores exported by Vulkan with external_memory's memory,
imported by GL (GL_EXT_semaphore_fd) and CL (cl_khr_external_semaphore_opaque_fd); the GPU orders GL
and CL, the CPU never waits per frame. Offered only by a backend whose memory comes with exported
semaphores (``Capabilities.semaphores``: external_memory)."""
from __future__ import annotations

import contextlib
import ctypes
import os
from typing import Iterator

import pyopencl as cl

from app.cl import ext as clext
from app.diagnostics import live
from app.errors import ClError
from app.gl import api as GL
from app.gl.context import check_gl
from app.gl.raw import GLenum, gl_function, uint_array
from app.sharing.backends.external_memory import (
    CL_SEMAPHORE_EXTENSIONS,
    GL_HANDLE_TYPE_OPAQUE_FD_EXT,
    GL_SEMAPHORE_EXTENSIONS,
    ExternalMemory,
    _gl_fn,
    _reraise,
)
from app.sharing.backends.external_memory.vulkan import close_fd
from app.sharing.sync.base import SyncMode
from app.validate.liveness import REGISTRY


class _Untracked:
    """The validator's tracking as ``SemaphoreSync.unchecked`` leaves it: nothing checked or followed."""

    checked = 0

    def track(self, *a) -> None: ...
    def untrack(self, *a) -> None: ...
    def undo(self, *a) -> None: ...
    def list_before(self, *a) -> None: ...
    def list_after(self, *a) -> None: ...


class SemaphoreSync(SyncMode):
    """Binary semaphores exported by Vulkan, imported by GL (GL_EXT_semaphore_fd) and CL
    (cl_khr_external_semaphore_opaque_fd). GL signals ``gl_done`` once its commands on the shared
    objects are issued and CL waits on it before the acquire; CL signals ``cl_done`` after the
    release and GL waits on it before using the objects. No CPU wait per frame.

    With one set of shared objects GL signals ``gl_done`` right before the acquire (after whatever
    GL did to the objects in this frame, a post-process scene's rendering say). A GL signal orders
    *every* GL command issued before it, so with copies of the objects (``set_slots``: frame n uses
    copy n % slots) that signal would make CL wait for GL's draw of the frame before, another
    copy's: each copy gets its own pair of semaphores instead, GL signals the copy's ``gl_done``
    right after drawing it, and CL waits on that signal before the copy's next acquire, slots
    frames later, while GL may still be drawing the copies in between. The more copies, the more
    of CL's and GL's work on different copies overlaps and the shorter the frame, in glshare's frame
    as in the bench's bare loop of the same calls (bench/results/README.md, 'Fourth session').

    Every signal and wait on both semaphores of a pair, GL's as CL's, goes through the backend's
    semaphore validator (app/validate/semaphores.py), which tracks each payload's binary state by
    its CL semaphore: CL's calls through ``check_python``, GL's through ``signalled`` / ``waited``
    before each glSignalSemaphoreEXT / glWaitSemaphoreEXT; a call refused by a check is not made, a
    CL call the driver refuses is taken back (``undo``). A GL signal no CL wait took yet (a copy's,
    or the frame's where CL's wait failed) is ``_pending``: the next CL wait on it takes that one,
    GL does not signal again."""

    name = "semaphore"
    order = 30
    title = "exported semaphores (no CPU wait)"
    explanation = ("GL signals a semaphore after its commands on the shared objects and CL waits on it before the "
                   "acquire; CL signals one after the release and GL waits on it: the GPU orders them, the CPU "
                   "never waits.")

    bounded_run_ahead = True
    orders_copies = True  # one semaphore pair per copy (set_slots)
    # GL waits on cl_done, which CL signals after the release on the backend's in-order queue: GL past
    # that wait means every CL command before the signal completed, the release among them
    gl_waits_for_release = True

    @classmethod
    def refusal(cls, backend, env) -> str | None:
        if not backend.capabilities.semaphores:
            return (f"semaphore sync needs memory that comes with exported semaphores (external_memory); "
                    f"{backend.name} has none")
        missing = [e for e in CL_SEMAPHORE_EXTENSIONS if e not in env.device_extensions]
        missing += [e for e in GL_SEMAPHORE_EXTENSIONS if not env.gl_info.has(e)]
        if missing:
            return f"missing {', '.join(missing)}"
        types = clext.device_info_u32_list(env.choice.device, clext.CL_DEVICE_SEMAPHORE_IMPORT_HANDLE_TYPES_KHR) or []
        if clext.CL_SEMAPHORE_HANDLE_OPAQUE_FD_KHR not in types:
            return "the CL device imports no OPAQUE_FD semaphores"
        return None

    def __init__(self, backend: ExternalMemory) -> None:
        """On a failure whatever was made (Vulkan semaphores, CL and GL imports) is released, then
        the error raised."""
        super().__init__(backend)
        self._semaphores = backend.validator.semaphores  # the binary states of both sides (class text)
        self._vk: list = []
        self._cl_sems: list = []  # what close() releases, however far __init__ got
        self._gl_sems: list[int] = []
        self._pairs: list[tuple] = []  # per copy of the shared objects: (gl_done GL, CL, cl_done GL, CL)
        self._lists: list[tuple] = []
        self._slot_names: dict[tuple, tuple] = {}  # (slot, ids) -> (n, GL names, objects), per objects' version
        self._slot_buffers = None  # the copy's (objects' version, n, names) where the frame uses one copy of several
        self._slot_version = -1
        # per copy: gl_done was signalled by GL after the copy's draw and CL has not waited on it yet
        self._pending: list[bool] = []
        self.slot = 0
        self.gl_done_gl = self.cl_done_gl = 0
        try:
            self._add_pair()
            check_gl("semaphore import")
        except BaseException:
            self.close()
            raise
        self.use_slot(0)
        # resolved once, called with prepared arrays every frame (app/gl/raw.py)
        self._signal, self._wait = gl_function("glSignalSemaphoreEXT"), gl_function("glWaitSemaphoreEXT")
        self._flush = gl_function("glFlush")
        self._layouts = (GLenum * 1)(0)
        self._names: tuple = ()
        self._names_array = uint_array(())
        self._names_version = -1
        self._check = self._semaphores.check_python
        self._gl_signalled, self._gl_waited = self._semaphores.signalled, self._semaphores.waited

    @contextlib.contextmanager
    def unchecked(self) -> Iterator[None]:
        """Inside the block no check and no tracking (the bench's bare loop); the binary states are
        set again from the mode's own afterwards (between frames: each copy's gl_done signalled where
        ``_pending``, every cl_done waited on)."""
        kept = self._check, self._gl_signalled, self._gl_waited, self._semaphores
        self._check = self._gl_signalled = self._gl_waited = lambda *a: None
        self._semaphores = _Untracked()
        try:
            yield
        finally:
            self._check, self._gl_signalled, self._gl_waited, self._semaphores = kept
            self._track_pairs()

    def _track_pairs(self) -> None:
        """The binary state of each pair as the mode leaves it between frames."""
        for (_, gl_done_cl, _, cl_done_cl), pending in zip(self._pairs, self._pending):
            self._semaphores.track(gl_done_cl, pending, "glSignalSemaphoreEXT" if pending else None)
            self._semaphores.track(cl_done_cl)

    def _in_order(self, queue) -> bool:
        """Whether ``queue`` is the backend's queue and runs its commands in order (any other queue is
        treated as one that may not)."""
        return queue is self.backend.queue and self.backend.queue_in_order

    def _add_pair(self) -> None:
        suffix = f"[{len(self._pairs)}]" if self._pairs else ""
        gl_done_gl, gl_done_cl = self._make(f"gl_done{suffix}")
        cl_done_gl, cl_done_cl = self._make(f"cl_done{suffix}")
        self._pairs.append((gl_done_gl, gl_done_cl, cl_done_gl, cl_done_cl))
        self._lists.append(([gl_done_cl], [cl_done_cl]))  # the CL calls' semaphore lists, made once
        self._pending.append(False)
        self._semaphores.track(gl_done_cl)  # (Vulkan makes them unsignalled)
        self._semaphores.track(cl_done_cl)

    def set_slots(self, slots: int) -> None:
        """A pair of semaphores for each copy of the shared objects (made here, released by ``close``)."""
        while len(self._pairs) < slots:
            self._add_pair()
        check_gl("semaphore import")

    def use_slot(self, slot: int, objects=()) -> None:
        """The pair of copy ``slot``; with copies the GL semaphore operations name only that copy's
        buffers (``objects``): GL's commands between them use that copy alone, and GL_EXT_semaphore's
        buffer lists say which objects the wait makes visible and the signal hands over (naming every
        copy asks for barriers on all of them each frame; bench/probes/gpu_copies_probe.py's lean
        loop names one: bench/results/README.md, 'Third session')."""
        self.slot = slot
        self.gl_done_gl, self.gl_done_cl, self.cl_done_gl, self.cl_done_cl = self._pairs[slot]
        self._gl_done_list, self._cl_done_list = self._lists[slot]
        if objects and len(self._pairs) > 1:
            version = self.backend.objects_version
            if version != self._slot_version:  # objects made or destroyed: what was kept names old ones
                self._slot_names.clear()
                self._slot_version = version
            key = (slot, *map(id, objects))
            names = self._slot_names.get(key)
            if names is None:
                picked = tuple(o.gl_memory for o in objects)
                names = self._slot_names[key] = (len(picked), uint_array(picked), objects)
            self._slot_buffers = (version, *names[:2])
        else:
            self._slot_buffers = None

    def _make(self, label: str):
        """One Vulkan semaphore imported by CL (a dup of its fd) and by GL (the fd itself); what was
        made is listed for ``close`` as it is made, and ``fd`` is closed here unless GL took it."""
        b = self.backend
        vk_sem, fd = b.exporter.semaphore()
        self._vk.append(vk_sem)
        gl_took_fd = False
        try:
            cl_sem = self._import_cl(fd, label)
            name = GL.GLuint()
            _gl_fn("glGenSemaphoresEXT")(1, ctypes.byref(name))
            check_gl(f"glGenSemaphoresEXT({label})")
            self._gl_sems.append(name.value)
            live.created("gl_semaphore", "external_memory")
            _gl_fn("glImportSemaphoreFdEXT")(name.value, GL_HANDLE_TYPE_OPAQUE_FD_EXT, fd)
            check_gl(f"glImportSemaphoreFdEXT({label})")
            gl_took_fd = True  # GL_EXT_semaphore_fd: a successful import transfers the fd to GL
        except Exception as exc:
            _reraise(exc, f"semaphore import ({label})")
        finally:
            if not gl_took_fd:
                close_fd(fd)
        return name.value, cl_sem

    def _import_cl(self, fd: int, label: str):
        """CL's import of a dup of ``fd`` (clCreateSemaphoreWithPropertiesKHR, OPAQUE_FD)."""
        b = self.backend
        cl_fd = os.dup(fd)
        try:
            cl_sem = clext.Semaphore(b.ext, b.context, b.device, cl_fd, label)
        except cl.Error as exc:
            close_fd(cl_fd)  # a failed import leaves the fd the application's
            raise ClError.from_pyopencl(exc, f"clCreateSemaphoreWithPropertiesKHR({label})") from exc
        REGISTRY.created(cl_sem, b.context, label=label, kind="semaphore")  # live for the validator
        self._cl_sems.append(cl_sem)
        # cl_khr_external_semaphore, "File Descriptor Handle Types" (OpenCL-Docs
        # ext/cl_khr_external_semaphore.asciidoc @02e16e6): "importing a semaphore payload from a file
        # descriptor transfers ownership of the file descriptor from the application to the OpenCL
        # implementation. The application must not perform any operations on the file descriptor
        # after a successful import.": the dup is CL's, never closed here (handles.closer)
        return cl_sem

    def _buffers(self):
        """The GL buffers backed by imported memory that the semaphore operations name, as a prepared
        array: the frame's copy where there are copies (``use_slot``), else every one the backend
        shares (rebuilt only when they change)."""
        version = self.backend.objects_version
        slot = self._slot_buffers
        if slot is not None and slot[0] == version:  # (objects made or destroyed since: every current one)
            return slot[1:]
        if version != self._names_version:
            self._names = tuple(o.gl_memory for o in self.backend.objects)
            self._names_array, self._names_version = uint_array(self._names), version
        return len(self._names), self._names_array

    def before_acquire(self, waits: list, shadow=None) -> list[cl.Event]:
        queue = self.backend.queue
        slot = self.slot
        signal = not self._pending[slot]  # else GL signalled this copy's gl_done already, unwaited
        gl_done = self._gl_done_list
        if signal:
            self._gl_signalled(self.gl_done_cl)  # GL's signal, tracked before it is made
        # cl_khr_semaphore's rules, before the driver and before GL's signal: a refused wait leaves no
        # signal behind that the next frame's would repeat (the plan's failure rules: app/schedule/plan.py)
        try:
            self._check("wait", queue, gl_done, None)
        except BaseException:
            if signal:
                self._semaphores.undo("gl_signal", gl_done)
            raise
        if signal:
            n, bufs = self._buffers()
            self._signal(self.gl_done_gl, n, bufs, 0, None, self._layouts)
            self._flush()
            self._pending[slot] = True  # until CL's wait is enqueued: a refused one leaves GL's signal standing
        try:
            # on an in-order queue the acquire enqueued next runs after the wait completes (OpenCL 3.0,
            # 5.14), so the wait needs no event of its own; a queue that is not in order gets it in the
            # acquire's wait list
            if self._in_order(queue):
                self.gl_done_cl.enqueue_wait(queue, event=False)
                made = []
            else:
                made = [self.gl_done_cl.enqueue_wait(queue)]
        except BaseException:
            self._semaphores.undo("wait", gl_done)  # gl_done keeps GL's signal: the next frame's wait takes it
            raise
        self._pending[slot] = False
        return made

    def after_release(self, queue, release_event, waits, shadow=None) -> None:
        # on the in-order queue the signal runs after the release without naming it (OpenCL 3.0.16, 5.14)
        wait_for = [release_event] if release_event is not None and not self._in_order(queue) else None
        cl_done = self._cl_done_list
        self._check("signal", queue, cl_done, wait_for)
        try:
            self.cl_done_cl.enqueue_signal(queue, wait_for, event=False)  # nothing waits on the signal's own event
        except BaseException:
            self._semaphores.undo("signal", cl_done)
            raise
        clext.flush(queue)
        self._gl_waited(self.cl_done_cl)  # GL's wait, tracked before it is made
        n, bufs = self._buffers()
        self._wait(self.cl_done_gl, n, bufs, 0, None, self._layouts)

    # -- the native frame: the same calls, prepared per copy (app/schedule/native.py) ----------------
    def native_variant(self):
        return self.slot, self._pending[self.slot]

    def native_calls(self, queue, variant):
        """Where the queue is the backend's in-order one and both of the frame's semaphore checks were
        accepted before (so ``check_python``'s remembered verdict answers them): ``before_acquire``'s
        GL signal and flush (unless GL signalled this copy after its last draw: ``variant``) and CL's
        wait; ``after_release``'s CL signal and flush and GL's wait."""
        from app.cl.ext import prepared_core
        from app.native.calls import Call

        slot, pending = variant
        semaphores = self.backend.validator.semaphores
        if slot != self.slot or not self._in_order(queue) or not semaphores.remembers("wait", queue, self._gl_done_list) \
                or not semaphores.remembers("signal", queue, self._cl_done_list):
            return None
        n, bufs = self._buffers()
        before = [] if pending else [
            Call(self._signal, (self.gl_done_gl, n, bufs, 0, None, self._layouts), "glSignalSemaphoreEXT", status=False),
            Call(self._flush, (), "glFlush", status=False)]
        before.append(self.gl_done_cl.prepared(queue, signal=False))
        after = [self.cl_done_cl.prepared(queue, signal=True), prepared_core("clFlush", queue.int_ptr),
                 Call(self._wait, (self.cl_done_gl, n, bufs, 0, None, self._layouts), "glWaitSemaphoreEXT", status=False)]
        return before, after

    def native_before(self, queue, variant) -> None:
        """The wait's check: its verdict was remembered when the list was made (``native_calls``), and
        stays the same for the list's life (the list is made again for a new hand-over, after any
        CL object was released: the registry's generation), so it is counted, as check_python counts
        it. The binary states of the whole list, checked before any of its calls: GL's signal (unless
        the copy's is pending), then gl_done signalled for CL's wait and cl_done not for CL's signal
        (GL's wait follows CL's signal in the list). GL's signal is followed here; CL's wait, CL's
        signal and GL's wait in ``native_after``, which runs only where the list got past CL's wait
        (a failed wait leaves GL's signal pending, as ``before_acquire``'s does)."""
        sems = self._semaphores
        sems.checked += 1
        slot, pending = variant
        sems.list_before(self.gl_done_cl, self.cl_done_cl, not pending)
        self._pending[slot] = True  # (GL's signal stands until CL's wait went through: ``native_after``)

    def native_after(self, queue) -> None:
        sems = self._semaphores
        sems.checked += 1  # the signal's check (as ``native_before``'s)
        self._pending[self.slot] = False
        sems.list_after(self.gl_done_cl, self.cl_done_cl)

    def after_gl_use(self, waits: list) -> None:
        """With copies: GL's draw of this copy is issued, so its gl_done is signalled now, ordering
        only the GL commands so far before the copy's next acquire (``before_acquire``)."""
        if len(self._pairs) > 1 and not self._pending[self.slot]:
            self._gl_signalled(self.gl_done_cl)  # GL's signal, tracked before it is made
            n, bufs = self._buffers()
            self._signal(self.gl_done_gl, n, bufs, 0, None, self._layouts)
            # no glFlush here: CL waits on this signal only when the copy is used again, frames later,
            # and every frame's present flushes GL (a swap, or glFlush headless) before that; the
            # run-ahead bound's fence wait flushes too (GL_SYNC_FLUSH_COMMANDS_BIT)
            self._pending[self.slot] = True

    def close(self) -> None:
        """Idempotent; releases what a partial ``__init__`` made too. GL's signals no CL wait took
        (copies' last draws) complete before their semaphores go."""
        if any(self._pending):
            GL.glFinish()
            self._pending = [False] * len(self._pending)
        cl_sems, self._cl_sems = self._cl_sems, []
        for cl_sem in cl_sems:
            self._semaphores.untrack(cl_sem)
            REGISTRY.released(cl_sem)
            cl_sem.release()
        names, self._gl_sems = self._gl_sems, []
        for name in names:
            _gl_fn("glDeleteSemaphoresEXT")(1, (GL.GLuint * 1)(name))
            live.released("gl_semaphore", "external_memory")
        self.gl_done_gl = self.cl_done_gl = 0
        vk, self._vk = self._vk, []
        for sem in vk:
            self.backend.exporter.destroy_semaphore(sem)
