"""The sync mode's contract: how GL's work is ordered before CL's (before the acquire) and CL's
before GL's (after the release). Each mode is a class in its own module of this package (or of the
one backend whose capability it needs), with its own probe (``refusal``), and registers itself by
name; a backend offers a mode when the mode's probe accepts it.

``waits`` collects (name, start_ns, end_ns) CPU waits for the frame record.

``shadow``: work of glshare's own that needs no order with this frame's GPU commands (reading the
stamps of earlier frames), handed to a mode's CPU waits. A mode that blocks the CPU flushes first,
so the GPU already runs what the wait is for, then calls ``shadow()``, then waits: the bookkeeping
runs in the time the CPU would spend blocked (NVIDIA's glFinish and clFinish spin on a core, so
there it was CPU time too). The wait recorded is the blocking call alone. The scheduler passes
``shadow`` to a mode that ``waits_on_cpu`` only when some bookkeeping is due (a flush costs the
calling thread too), else None: then the mode neither flushes nor calls anything before its wait.
A mode with no CPU wait never calls it; the scheduler then does that work at the end of the frame.
"""
from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING, ClassVar, Iterator

import pyopencl as cl

if TYPE_CHECKING:
    from app.sharing.base import ProbeEnv, SharingBackend


class SyncMode:
    """Base of every sync mode. Subclasses set ``name``, ``order``, ``title`` and ``explanation``."""

    name: ClassVar[str]
    order: ClassVar[int] = 50  # the order modes are listed and cycled in
    title: ClassVar[str] = ""
    explanation: ClassVar[str] = ""  # what it does, for the panel and teaching mode
    # without a CPU wait per frame the CPU may run ahead of the GPU: the scheduler bounds it to
    # ``--frames-in-flight`` frames (a mode that waits every frame, or none at all, is not bounded)
    bounded_run_ahead: ClassVar[bool] = False
    # the mode orders each copy of the shared objects on its own (``set_slots``), so frames in flight
    # can run on copies (Scene.max_slots): CL writes one copy while GL still draws another. A mode
    # whose GPU wait covers every earlier GL command gains nothing from copies and gets none.
    orders_copies: ClassVar[bool] = False
    # GL's commands after the sync wait on the GPU for CL's release (a semaphore CL signals after it):
    # a GL fence past the frame's draw then says the release completed, and the run-ahead bound
    # needs no CL event status. False where that is not certain.
    gl_waits_for_release: ClassVar[bool] = False
    # every frame the CPU waits until GL is done before the acquire and until CL is done after the
    # release (glFinish, clFinish), calling ``shadow`` before each wait: when ``after_release``
    # returns, the frame's CL commands have completed, so on an in-order queue nothing needs their
    # events unless they are read (FrameScheduler leaves them out of untimed frames)
    waits_on_cpu: ClassVar[bool] = False
    # GL's reads of the shared objects are ordered after CL's writes, and CL's after GL's: False for
    # a mode that orders nothing (a hazard demonstration), whose pictures may differ run to run
    orders: ClassVar[bool] = True
    registry: ClassVar[dict[str, type["SyncMode"]]] = {}

    def __init_subclass__(cls, **kw) -> None:
        super().__init_subclass__(**kw)
        if "name" in cls.__dict__:
            SyncMode.registry[cls.name] = cls

    @classmethod
    def refusal(cls, backend: type["SharingBackend"], env: "ProbeEnv") -> str | None:
        """None when this mode works with ``backend`` here, else why not (nothing is built)."""
        return None

    def __init__(self, backend: "SharingBackend") -> None:
        self.backend = backend

    def before_acquire(self, waits: list, shadow=None) -> list[cl.Event]:
        """GL's work on the shared objects ordered before CL's; returns events the acquire waits on.
        ``shadow``: called, if at all, while the CPU would wait for GL (module text)."""
        return []

    def after_release(self, queue: cl.CommandQueue, release_event: cl.Event | None, waits: list,
                      shadow=None) -> None:
        """CL's work ordered before GL's; ``shadow`` as in ``before_acquire``, while the CPU would wait for CL."""
        queue.flush()

    def after_gl_use(self, waits: list) -> None:
        return None

    # -- the native frame (app/schedule/native.py) -------------------------------------------------
    def native_variant(self):
        """Which form of ``native_calls`` this frame needs, for a mode whose calls depend on its state
        (None where they do not)."""
        return None

    def native_calls(self, queue: cl.CommandQueue, variant) -> tuple[list, list] | None:
        """(the calls ``before_acquire`` makes, the calls ``after_release`` makes) on the in-order
        ``queue``, as prepared calls for a native call list (``app.native.calls.Call``), where those
        are all the two do besides ``native_before``, ``native_after`` and ``native_shadow``; None
        where this mode's frame is made in Python (the default: a mode says so itself)."""
        return None

    def native_before(self, queue: cl.CommandQueue, variant) -> None:
        """What ``before_acquire`` does besides its calls, right before the native list's first call
        (raising where it would, before any of them)."""
        return None

    def native_after(self, queue: cl.CommandQueue) -> None:
        """What ``after_release`` does besides its calls, once the native list made them."""
        return None

    def native_shadow(self, queue: cl.CommandQueue, shadow, before: bool) -> None:
        """A mode that waits on the CPU: what ``before_acquire`` (``before``) or ``after_release`` does
        with ``shadow`` ahead of its wait, right before the native list makes the wait."""
        return None

    @contextlib.contextmanager
    def unchecked(self) -> Iterator[None]:
        """The mode's own validator checks left out inside the block (the bench's bare loop, which
        validates nothing); a mode without checks of its own changes nothing."""
        yield

    def set_slots(self, slots: int) -> None:
        """The scene keeps ``slots`` copies of its shared objects (``Scene.max_slots``), frame n using
        copy n % slots. A mode that orders each frame on the CPU needs nothing per copy."""
        return None

    def use_slot(self, slot: int, objects=()) -> None:
        """The frame about to run uses copy ``slot`` of the shared objects, ``objects`` (the scene's
        shared objects of that copy)."""
        return None

    def close(self) -> None:
        return None


def timed_wait(waits: list, name: str, fn) -> None:
    t0 = time.perf_counter_ns()
    fn()
    waits.append((name, t0, time.perf_counter_ns()))
