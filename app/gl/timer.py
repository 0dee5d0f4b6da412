"""GL pass timing with GL_TIMESTAMP queries, read back frames later without ever stalling.

``with timer.span(record, "gl render"): scene.render(size)`` puts ``glQueryCounter(GL_TIMESTAMP)``
before and after the pass. The query pairs come from a small ring; ``harvest()`` (once a frame)
reads only the pairs whose result is already there (``GL_QUERY_RESULT_AVAILABLE``, or from GL 4.4 the
end stamp read with ``GL_QUERY_RESULT_NO_WAIT``), oldest first,
and appends ``(name, start, end)`` in GL time to ``FrameRecord.gl_passes``. When every pair of the
ring is still in flight, the pass goes untimed (``dropped`` counts it) instead of waiting for the
GPU. ``harvest(wait=True)`` (end of a run) waits for all of them. Timer queries are core in GL 3.3
(ARB_timer_query). A GL error in here turns the timer off with one warning: timing never stops the
loop. ``live`` counts each ring as one ``gl_query`` object. ``app/schedule/clock.py`` maps GL time
onto the host clock.

What the stamps mean depends on the driver: on a GPU, when the GPU reached the command; Mesa
llvmpipe stamps them as it processes its command stream, so there a pass looks almost instant and
the rasterization cost shows up in the next glFinish or buffer swap instead. So there the timer
times one frame in ``SOFTWARE_EVERY`` unless told otherwise (``glshare run --trace`` times every
frame).
"""
from __future__ import annotations

import collections
import contextlib
import ctypes
import logging

from app import native
from app.diagnostics import live
from app.gl import api as GL
from app.gl.context import is_software_renderer
from app.gl.raw import gl_function

log = logging.getLogger(__name__)

GL_TIMESTAMP = 0x8E28
GL_QUERY_RESULT = 0x8866
GL_QUERY_RESULT_AVAILABLE = 0x8867
GL_QUERY_RESULT_NO_WAIT = 0x9194  # OpenGL 4.4 (ARB_query_buffer_object): the result if it is there, else nothing
_UNWRITTEN = (1 << 64) - 1  # left in the output by a NO_WAIT read whose result is not there (no stamp is this)
USE_NO_WAIT = True  # read with QUERY_RESULT_NO_WAIT where GL has it (False: the availability query, to compare)


_UNTIMED = contextlib.nullcontext()
SOFTWARE_EVERY = 8


def default_every(renderer: str) -> int:
    """1 on a GPU; ``SOFTWARE_EVERY`` on a software rasterizer, where a pass's stamps say little
    (see the module text) and the queries cost the frame more than anything else glshare adds."""
    return SOFTWARE_EVERY if is_software_renderer(renderer) else 1


class GlTimer:
    """A ring of GL_TIMESTAMP query pairs. Needs the GL context current; ``release()`` is idempotent."""

    def __init__(self, label: str = "gl timer", slots: int = 16, owner: str = "", every: int = 1) -> None:
        self.label, self.owner = label, owner
        # time the passes of one frame in ``every`` (by record index; 1: every frame). Software
        # rasterizers get more than 1 (``default_every``): there the stamps mark when the command
        # was recorded, and each query pair costs the frame CPU time there
        self.every = max(1, int(every))
        self.dropped = 0
        self.timed = 0
        # harvest() reads results every ``harvest_every``-th call (sooner when the ring runs low):
        # on llvmpipe each availability query inside a frame makes it flush. When
        # frames are sampled, once per sampling period: then about one query per timed frame
        self.harvest_every = max(4, self.every)
        self._calls = 0
        self.enabled = False
        self.reason = ""
        self._free: list[tuple[int, int]] = []
        self._all: list[int] = []
        self._pending: collections.deque = collections.deque()  # (record, name, q_start, q_end)
        self._ival = ctypes.c_int()
        self._uval = ctypes.c_uint64()
        self._no_wait = False
        self._batch = None
        self._batch_pairs = self._batch_stamps = None  # (made at the first batch: the ring's size)
        try:
            self._gl = GL
            major, minor = int(GL.glGetIntegerv(GL.GL_MAJOR_VERSION)), int(GL.glGetIntegerv(GL.GL_MINOR_VERSION))
            if (major, minor) < (3, 3):
                self.reason = f"GL {major}.{minor} has no timer queries (core in 3.3)"
                return
            # from GL 4.4 a finished pass is read with two calls, not three: GetQueryObject with
            # QUERY_RESULT_NO_WAIT (core in 4.4, from ARB_query_buffer_object) writes the result only
            # if it is available and leaves params unchanged otherwise, so the end stamp says by
            # itself whether it is there
            self._no_wait = USE_NO_WAIT and (major, minor) >= (4, 4)
            # a timed pass's stamps and reads, every frame on a GPU: straight through ctypes
            self._query_counter = gl_function("glQueryCounter")
            self._get_iv, self._get_ui64v = gl_function("glGetQueryObjectiv"), gl_function("glGetQueryObjectui64v")
            self._ival_ref, self._uval_ref = ctypes.byref(self._ival), ctypes.byref(self._uval)
            # the passes in flight read in one call where app/native is built (stamps.c)
            try:
                self._batch = native.load().glshare_read_query_pairs
                self._get_ui64v_addr = ctypes.cast(self._get_ui64v, ctypes.c_void_p).value
                self._get_iv_addr = ctypes.cast(self._get_iv, ctypes.c_void_p).value
            except native.NativeUnavailable:
                self._batch = None
            names = [int(q) for q in GL.glGenQueries(2 * slots)]
            self._all = names
            self._free = [(names[2 * i], names[2 * i + 1]) for i in range(slots)]
            self.enabled = True
            live.created("gl_query", owner)
        except Exception as exc:  # noqa: BLE001 - no context, or no query support: run untimed
            self.reason = f"timer queries unavailable: {type(exc).__name__}: {exc}"
            log.info("%s: %s", self.label, self.reason)

    def _disable(self, exc: BaseException) -> None:
        self.enabled = False
        self.reason = f"turned off after {type(exc).__name__}: {exc}"
        log.warning("%s %s", self.label, self.reason)
        self._pending.clear()

    def span(self, rec, name: str):
        """Time the GL commands issued inside the block as one pass of ``rec`` (a context manager;
        a frame the timer does not sample gets a shared no-op one)."""
        if not self.enabled or rec is None or not rec.sampled or (self.every > 1 and rec.index % self.every):
            return _UNTIMED
        return self._timed_span(rec, name)

    def _timed_span(self, rec, name: str) -> "_Span":
        """``span`` for a frame the timer samples (``span`` checked that the timer is on)."""
        return _Span(self, rec, name)

    def _end_if_there(self, query: int) -> int | None:
        """The end stamp of a pass if GL has it, else None (never waiting)."""
        if self._no_wait:
            self._uval.value = _UNWRITTEN
            self._get_ui64v(query, GL_QUERY_RESULT_NO_WAIT, self._uval_ref)
            value = self._uval.value
            return None if value == _UNWRITTEN else int(value)
        return self._result(query) if self._available(query) else None

    def _available(self, query: int) -> bool:
        self._get_iv(query, GL_QUERY_RESULT_AVAILABLE, self._ival_ref)
        return bool(self._ival.value)

    def _result(self, query: int) -> int:
        self._get_ui64v(query, GL_QUERY_RESULT, self._uval_ref)
        return int(self._uval.value)

    def harvest(self, wait: bool = False) -> None:
        """Move finished results onto their records, oldest first; ``wait`` blocks for all of them.
        Once a frame: without ``wait`` it reads only when ``due``."""
        if not self.enabled or not (wait or self.due()):
            return
        self._read(wait)

    def due(self) -> bool:
        """Count one frame's harvest, and say whether it reads now: passes in flight, and this the
        ``harvest_every``-th call or the ring running low (each check costs; collect every few
        frames). ``harvest`` asks it; a caller that asks it itself calls ``read`` when it says so."""
        self._calls += 1
        return bool(self._pending) and not (self._calls % self.harvest_every and len(self._free) > 2)

    def read(self) -> None:
        """``harvest``'s reading, whether due or not (the timer on)."""
        self._read(False)

    def _read(self, wait: bool) -> None:
        try:
            if self._batch is not None and not wait:
                self._harvest_batch()
                return
            while self._pending:
                rec, name, q0, q1 = self._pending[0]
                # GL answers queries in order: when the end stamp is there, the start stamp is too
                end = self._result(q1) if wait else self._end_if_there(q1)
                if end is None:
                    return
                rec.gl_passes.append((name, self._result(q0), end))
                self.timed += 1
                self._pending.popleft()
                self._free.append((q0, q1))
        except Exception as exc:  # noqa: BLE001
            self._disable(exc)

    def _harvest_batch(self) -> None:
        """``harvest`` in one call to app/native: every pass in flight is handed over, and the C
        code reads them oldest first up to the first whose end stamp is not there yet."""
        pending = self._pending
        n = len(pending)
        if self._batch_pairs is None or len(self._batch_pairs) < 2 * n:
            size = 2 * max(n, len(self._all) // 2)  # the ring's pairs: never more in flight
            self._batch_pairs, self._batch_stamps = (ctypes.c_uint32 * size)(), (ctypes.c_uint64 * size)()
        pairs = self._batch_pairs
        i = 0
        for _, _, q0, q1 in pending:
            pairs[i], pairs[i + 1] = q0, q1
            i += 2
        # no availability query where the end stamp is read with QUERY_RESULT_NO_WAIT (as _end_if_there)
        done = self._batch(self._get_ui64v_addr, None if self._no_wait else self._get_iv_addr, pairs, n,
                           self._batch_stamps)
        if not done:
            return
        stamps, free = self._batch_stamps[:2 * done], self._free
        for i in range(0, 2 * done, 2):
            rec, name, q0, q1 = pending.popleft()
            rec.gl_passes.append((name, stamps[i], stamps[i + 1]))
            free.append((q0, q1))
        self.timed += done

    @property
    def batched(self) -> bool:
        """Whether ``harvest`` reads the passes in flight in one call to app/native."""
        return self._batch is not None

    @contextlib.contextmanager
    def call_by_call(self):
        """Inside the block ``harvest`` reads each pass with its own GL calls, as where app/native
        is missing (the bench compares the two); the batch is back afterwards, also on error."""
        batch, self._batch = self._batch, None
        try:
            yield
        finally:
            self._batch = batch

    @property
    def sampling(self) -> str:
        """What the panel says about the timer: on every frame, or one in N, or why off."""
        if not self.enabled:
            return self.reason or "off"
        return "every frame" if self.every == 1 else f"one frame in {self.every}"

    @property
    def oldest_pending_frame(self) -> int | None:
        """The frame index of the oldest pass still in flight (its record's gl_passes are not final)."""
        return self._pending[0][0].index if self._pending else None

    def release(self) -> None:
        """Delete the queries (context current). Results still in flight are dropped."""
        names, self._all = self._all, []
        self._pending.clear()
        self._free = []
        self.enabled = False
        if names:
            live.released("gl_query", self.owner)
            try:
                self._gl.glDeleteQueries(len(names), names)
            except Exception as exc:  # noqa: BLE001
                log.info("%s: glDeleteQueries failed: %s", self.label, exc)

    def __repr__(self) -> str:
        return f"<GlTimer {self.label!r} {'on' if self.enabled else 'off: ' + self.reason}>"


class _Span:
    """One timed pass: a GL_TIMESTAMP query before the block and one after (a plain class: entered
    every frame on a GPU, where a generator-based context manager costs more than the queries)."""

    __slots__ = ("timer", "rec", "name", "pair")

    def __init__(self, timer: GlTimer, rec, name: str) -> None:
        self.timer, self.rec, self.name, self.pair = timer, rec, name, None

    def __enter__(self) -> None:
        timer = self.timer
        if timer._free:
            pair = timer._free.pop()
            try:
                timer._query_counter(pair[0], GL_TIMESTAMP)
                self.pair = pair
            except Exception as exc:  # noqa: BLE001
                timer._disable(exc)
        else:
            timer.dropped += 1

    def __exit__(self, *exc) -> None:
        pair, timer = self.pair, self.timer
        if pair is not None and timer.enabled:
            try:
                timer._query_counter(pair[1], GL_TIMESTAMP)
                timer._pending.append((self.rec, self.name, pair[0], pair[1]))
            except Exception as err:  # noqa: BLE001
                timer._disable(err)
