"""Put CL device time and GL time on the host clock (``time.perf_counter_ns``), with a stated error.

Every clock is mapped by an offset only: ``host_ns = other_ns + offset`` (the three clocks all tick
in nanoseconds; over one run their rates differ by parts per million at most, which the
re-calibration below absorbs). The offset is never guessed from one reading: each reading of the
other clock is *bracketed* by two host readings, which bounds the offset to an interval
``[host_before - other, host_after - other]``. Intervals of successive readings are intersected,
so the estimate only gets tighter; the offset used is the middle of the interval and the
uncertainty is half its width. When a new interval does not overlap the current one (a clock
stepped, or drifted further than the uncertainty) the estimate restarts from the new reading and
``resets`` counts it.

How each clock is read:

- CL, ``clGetDeviceAndHostTimer`` (OpenCL 2.1+; used only when the platform reports a non-zero
  ``CL_PLATFORM_HOST_TIMER_RESOLUTION``, PoCL 3.1 reports 0): the device timestamp it returns is
  read inside the call, so ``perf_counter_ns`` before and after the call bracket it.
- CL, a marker (always available): the command's ``CL_PROFILING_COMMAND_QUEUED`` stamp is taken
  by ``clEnqueueMarkerWithWaitList`` itself, so host readings just before and after the enqueue
  bracket it (the marker is then waited for only to read its profile).
- CL, every frame (``observe_frame``): the ``queued`` stamp of each acquire / compute / release
  command falls inside the host phase that enqueued it (FrameRecord.phases), which is one more
  bracket per command for free; on PoCL this alone brings the uncertainty to a few microseconds.
  Each record is observed once, when the scheduler has read its profiles (RunHistory.on_harvested),
  whether or not a panel or a trace reads it.
- GL, ``glGetInteger64v(GL_TIMESTAMP)``: the GL time "after all previous commands have reached the
  GL server" (ARB_timer_query), sampled during the call, so the two host readings around it
  bracket it. It does not wait for the GPU (no glFinish).

On Mesa llvmpipe the GL clock is CLOCK_MONOTONIC (offset ~0, as is ``perf_counter_ns``); PoCL's
device clock has another origin, which is why a mapping is needed.
"""
from __future__ import annotations

import ctypes
import logging
import time
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from app.cl.ext import libopencl
from app.gl import api as GL
from app.gl.timer import GL_TIMESTAMP

log = logging.getLogger(__name__)
ns = time.perf_counter_ns

CL_PLATFORM_HOST_TIMER_RESOLUTION = 0x0905


@dataclass
class OffsetEstimate:
    """``host_ns = other_ns + offset`` with the offset known to lie in ``[lo, hi]``."""

    name: str
    lo: int | None = None
    hi: int | None = None
    samples: int = 0
    resets: int = 0
    method: str = "none"

    def observe(self, host_before: int, host_after: int, other_ns: int) -> None:
        """One reading ``other_ns`` of the other clock, taken between two host readings."""
        lo, hi = int(host_before) - int(other_ns), int(host_after) - int(other_ns)
        if hi < lo:
            lo, hi = hi, lo
        self.samples += 1
        if self.lo is None or lo > self.hi or hi < self.lo:
            if self.lo is not None:
                self.resets += 1
            self.lo, self.hi = lo, hi
            return
        self.lo, self.hi = max(self.lo, lo), min(self.hi, hi)

    @property
    def known(self) -> bool:
        return self.lo is not None

    @property
    def offset(self) -> int:
        return 0 if self.lo is None else (self.lo + self.hi) // 2

    @property
    def uncertainty_ns(self) -> int:
        return 0 if self.lo is None else (self.hi - self.lo + 1) // 2

    def to_host(self, other_ns):
        """Map one timestamp (int) or an array of them (int64) onto the host clock."""
        if isinstance(other_ns, np.ndarray):
            return other_ns.astype(np.int64) + np.int64(self.offset)
        return int(other_ns) + self.offset

    def as_dict(self) -> dict:
        return {"method": self.method, "offset_ns": self.offset, "uncertainty_ns": self.uncertainty_ns,
                "samples": self.samples, "resets": self.resets, "known": self.known}


class ClockMap:
    """The CL device clock and the GL clock, each mapped onto ``perf_counter_ns``."""

    def __init__(self) -> None:
        self.cl = OffsetEstimate("cl")
        self.gl = OffsetEstimate("gl")
        self._seen_frames = 0

    # -- calibration ---------------------------------------------------------------------------
    @classmethod
    def calibrate(cls, device=None, queue=None, *, gl: bool = True, samples: int = 5) -> "ClockMap":
        """A map calibrated now: CL through the device timer or a marker, GL through GL_TIMESTAMP.

        Never raises: a clock that cannot be read stays unknown (offset 0) and says so in
        ``as_dict()``.
        """
        clock = cls()
        try:
            if device is not None and not clock._calibrate_device_timer(device, samples):
                if queue is not None:
                    clock._calibrate_marker(queue, samples)
        except Exception as exc:  # noqa: BLE001 - timing must never stop the run
            log.info("CL clock calibration failed: %s", exc)
        if gl:
            try:
                clock.calibrate_gl(samples)
            except Exception as exc:  # noqa: BLE001
                log.info("GL clock calibration failed: %s", exc)
        return clock

    def _calibrate_device_timer(self, device, samples: int) -> bool:
        """clGetDeviceAndHostTimer when the platform has a host timer (resolution > 0)."""
        try:
            resolution = int(device.platform.get_info(CL_PLATFORM_HOST_TIMER_RESOLUTION))
        except Exception:  # noqa: BLE001 - OpenCL < 2.1: no such query
            return False
        if resolution <= 0:
            return False
        fn = getattr(libopencl(), "clGetDeviceAndHostTimer", None)
        if fn is None:
            return False
        fn.restype = ctypes.c_int32
        fn.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64)]
        dev, host = ctypes.c_uint64(), ctypes.c_uint64()
        for _ in range(samples):
            t0 = ns()
            status = fn(device.int_ptr, ctypes.byref(dev), ctypes.byref(host))
            t1 = ns()
            if status != 0:
                return self.cl.known
            self.cl.observe(t0, t1, dev.value)
        self.cl.method = "clGetDeviceAndHostTimer"
        return True

    def _calibrate_marker(self, queue, samples: int) -> None:
        for _ in range(samples):
            t0 = ns()
            ev = cl.enqueue_marker(queue)
            t1 = ns()
            ev.wait()
            self.cl.observe(t0, t1, ev.profile.queued)
        self.cl.method = "marker (queued stamp bracketed by host reads)"

    def calibrate_gl(self, samples: int = 5) -> None:
        """Bracket ``glGetInteger64v(GL_TIMESTAMP)`` (needs a current GL 3.3 context)."""
        value = ctypes.c_int64()
        for _ in range(samples):
            t0 = ns()
            GL.glGetInteger64v(GL_TIMESTAMP, ctypes.byref(value))
            t1 = ns()
            self.gl.observe(t0, t1, value.value)
        self.gl.method = "glGetInteger64v(GL_TIMESTAMP) bracketed by host reads"

    # -- refinement ----------------------------------------------------------------------------
    def observe_frame(self, rec) -> None:
        """Tighten the CL offset with the frame's own commands: ``queued`` lies inside the host phase
        (acquire / compute / release) that enqueued the command."""
        for name, prof in rec.cl_profile.items():
            span = rec.phases.get(name)
            if span is not None and prof[0] > 0:
                self.cl.observe(span[0], span[1], prof[0])
                if self.cl.method == "none":
                    self.cl.method = "queued stamps inside host phases"
        self._seen_frames += 1

    # -- mapping -------------------------------------------------------------------------------
    def cl_to_host(self, t):
        return self.cl.to_host(t)

    def gl_to_host(self, t):
        return self.gl.to_host(t)

    def as_dict(self) -> dict:
        return {"host_clock": "time.perf_counter_ns (CLOCK_MONOTONIC)", "cl": self.cl.as_dict(),
                "gl": self.gl.as_dict(), "frames_observed": self._seen_frames}
