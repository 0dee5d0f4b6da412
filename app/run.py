"""``glshare run``: the loop (poll -> controls -> step -> UI -> present) over a session, its
controls and its UI host, and the outputs written from the run history when it ends.

Every way a run ends goes through one door: its frames done, a quit command or the window
closed, SIGINT (Ctrl-C), SIGTERM, SIGHUP and SIGQUIT (app/signals.py: a flag read at each frame
boundary, the first one's included), and a ``--strict`` stop all end at a frame boundary; the
session is torn down in reverse order of creation and the report, trace and screenshot of what was
recorded are written (the report says how and at which frame the run stopped, ``Stop``: for a
``--strict`` stop and a fault, the frame that failed). Under ``--strict`` in a window the run
pauses on the offending frame instead, the finding shown, and ends with exit status 1 when the
user quits. ``--strict`` stops only on findings (``findings.stops_on``); every other error met in
an iteration (a CL or GL error, a failed reload, a panel that could not be drawn) is recorded, shown
in the panel, and the loop goes on. The frame a user sees is present to present. A screenshot
is the last frame presented, read before its present (after a swap the back buffer is undefined):
the loop reads it in the iteration it knows to be the last (the frames done, a quit, the window
closing, a fault that ends the run, a signal that came in time); a signal that came after that
iteration's present gets one more iteration, whose frame is read, then the run ends.
"""
from __future__ import annotations

import contextlib
import logging
import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app import native, signals
from app.config import DEFAULT_HEADLESS_FRAMES, RunConfig
from app.errors import GlshareError, OutputError
from app.gl.context import check_gl
from app.outputs import STDOUT, check_output, write_text
from app.schedule.faults import stop_reason
from app.schedule.frame import FrameRecord
from app.session.controls import Controls
from app.session.reload import poll_sources
from app.session.session import Session
from app.session.views import StopView
from app.trace.chrome import write_trace
from app.trace.png import write_png
from app.trace.report import RunFacts, build_report, write_report
from app.ui.bundle import complete as complete_imgui_bundle
from app.validate.findings import stops_on

log = logging.getLogger(__name__)
ns = time.perf_counter_ns
FPS_EVERY_S = 2.0


@dataclass(frozen=True)
class Stop:
    """How and where a run ended."""

    how: str  # "frames", "quit", "window closed", a signal's (signals.HOWS), "strict", "fault", "error"
    frame: int
    message: str = ""

    @property
    def exit_code(self) -> int:
        if self.how in signals.HOWS:
            return signals.exit_code(self.how)
        return {"strict": 1, "fault": 1, "error": 1}.get(self.how, 0)

    def as_dict(self) -> dict:
        return {"how": self.how, "frame": self.frame, "message": self.message, "exit_code": self.exit_code}


def process_age_ns() -> int | None:
    """Nanoseconds since this process started (Linux: /proc/self/stat against CLOCK_BOOTTIME)."""
    try:
        fields = open("/proc/self/stat").read().rsplit(")", 1)[1].split()
        start_ticks = int(fields[19])  # field 22: starttime, in clock ticks since boot
        return time.clock_gettime_ns(time.CLOCK_BOOTTIME) - start_ticks * 1_000_000_000 // os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


class Run:
    """One ``glshare run``. ``with Run(cfg) as run: run.loop(); run.finish()``."""

    def __init__(self, cfg: RunConfig, surface=None) -> None:
        self.cfg = cfg
        self.session = Session(cfg, surface)
        self.ui = None
        self.controls: Controls | None = None
        self.loop_count = 0
        self.frames_target = cfg.frames if cfg.frames is not None else (
            DEFAULT_HEADLESS_FRAMES if cfg.headless else None)
        self.screenshot_pixels: np.ndarray | None = None
        self._shot_at = -1  # loop_count of the iteration whose frame screenshot_pixels holds
        self._extra_for_shot = False  # the one more iteration a late stop gets, for its screenshot
        self.failed_outputs: list[tuple[str, BaseException]] = []  # (kind, why) of outputs not written
        self.trace_written: dict = {}
        self.stop: Stop | None = None  # set when the run ends (or, in a window, when --strict paused it)
        self.strict_stop: Stop | None = None
        self.stop_view: StopView | None = None  # what the panel shows of a --strict stop
        self._stack = contextlib.ExitStack()
        self._last_present = 0  # the last present that ended a frame run right after the one before
        self._fps_at = 0
        self._fps_frames: list[float] = []
        self.fps_lines = cfg.fps_lines
        self.startup: dict = {}
        self._gl_gone = False  # the display's connection lost: no GL call may be made (_connection_lost)
        self.said = None  # run()'s ``said``: how the outputs are said
        # what a third signal would lose (app/signals.py), until finish() writes them
        signals.SIGNALS.pending[:] = [k for k in ("screenshot", "report", "trace") if getattr(cfg, k, None)]
        self._t0 = ns()
        self._age0 = process_age_ns()

    def _mark(self, what: str) -> None:
        """Start-up: ms since the process started (where known) at each step of the build."""
        age = self._age0 if self._age0 is not None else 0
        self.startup[what] = round((age + ns() - self._t0) / 1e6, 1)

    def __enter__(self) -> "Run":
        try:
            self._mark("run_started")
            if self.cfg.overlay and not self.cfg.headless and self.session.surface is None:
                # imgui_bundle's whole import before the window's: it points pyGLFW at its own GLFW
                # library, so that the window and ImGui's GLFW backend share one (app/window/glfw_window.py)
                complete_imgui_bundle()
            self._stack.enter_context(self.session)
            self._mark("session_built")
            if self.cfg.overlay:
                from app.ui.host import UiHost  # optional: imgui_bundle, only with the panel or overlay

                self.ui = UiHost(self.session.surface, self.session.gl_info, show_panel=self.cfg.panel,
                                 panel_hz=self.cfg.panel_hz)
                self._stack.callback(self.ui.close)
                if not self.session.surface.kind == "headless":
                    self.session.scene_viewport = self.ui.scene_viewport
            self.controls = Controls(self.session, self.ui, write_trace=self.write_trace, run_lab=self.run_lab)
            lost = getattr(self.session.surface, "on_connection_lost", None)
            if lost is not None:  # the display gone: the outputs that need no GL, then the end
                lost(self._connection_lost)
            self._mark("ui_ready")
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self._stack.close()

    # -- the loop ------------------------------------------------------------------------------
    @property
    def _signal(self) -> str | None:
        """How the first ending signal received names the stop (app/signals.py), or None."""
        return signals.SIGNALS.how

    def loop(self) -> Stop:
        """Until the frames are done, a quit, the window closing, a signal or a strict stop."""
        session = self.session
        held = signals.SIGNALS
        with held.held():
            reasserted = ns()
            while self.stop is None:
                self.stop = self._should_stop()
                if self.stop is None:
                    self.tick()
                    if ns() - reasserted > 1e9:  # a driver's handlers put in front since (app/signals.py)
                        held.reassert()
                        reasserted = ns()
        session.finish()
        return self.stop

    def _should_stop(self) -> Stop | None:
        stop = self._stop_now()
        if stop is None or not self.cfg.screenshot or self.session.surface.kind == "headless":
            return stop
        if self._shot_at == self.loop_count or self._extra_for_shot or self.session.scheduler is None:
            return stop
        if stop.how in ("quit", "window closed", *signals.HOWS):
            # the last frame presented was not read before its present (a signal after it, a quit
            # from outside an iteration): one more iteration, read before its present, then the stop
            self._extra_for_shot = True
            return None
        return stop

    def _ending(self, last: bool) -> bool:
        """Whether this iteration's frame is the run's last one shown: its screenshot is read
        before its present."""
        if last or self.controls.close_requested or self._signal:
            return True
        s = self.session
        return s.surface.kind != "headless" and (s.surface.should_close() or self._extra_for_shot
                                                 or stop_reason(s.scheduler) is not None)

    def _stop_now(self) -> Stop | None:
        frame = self.session.frame
        if self._signal:
            return Stop(self._signal, frame, signals.message(self._signal))
        if self.session.scheduler is None:  # a failed switch whose old set-up could not be rebuilt either
            return Stop("error", frame, f"no set-up left to run: {self.session.lost or 'it was torn down'}")
        if self.controls.close_requested:
            return self.strict_stop or Stop("quit", frame)
        if self.session.surface.should_close():
            return self.strict_stop or Stop("window closed", frame)
        if self.strict_stop is not None and self.session.surface.kind == "headless":
            return self.strict_stop
        fault = stop_reason(self.session.scheduler)  # a fault the run cannot go on after (--inject)
        if fault:
            reason, failed = fault
            return Stop("fault", failed, f"the run stopped early: {reason}")
        if self.frames_target is not None and self.loop_count >= self.frames_target:
            return self.strict_stop or Stop("frames", frame)
        return None

    def _strict(self, exc: GlshareError) -> None:
        """A --strict finding: record it; headless the run stops, in a window it pauses on the frame
        (the panel shows that frame and why: ``stop_view``)."""
        s = self.session
        s.record_error(exc, "strict")
        current = s.scheduler.current if s.scheduler is not None else None
        self.stop_view = StopView.from_error(current.index if current is not None else s.frame, exc)
        self.strict_stop = Stop("strict", s.frame, exc.one_line())
        s.status = f"--strict stopped frame {s.frame}: {exc.one_line()}"
        s.paused = True

    def _failed(self, exc: Exception, where: str) -> None:
        """An error met in a loop iteration: a finding ``--strict`` stops on is a strict stop; any
        other error is recorded (the panel's Errors tab, the report) and the loop goes on."""
        if stops_on(self.cfg.strict, exc):
            self._strict(exc)
        else:
            self.session.record_error(exc, where)

    def tick(self) -> FrameRecord | None:
        """One loop iteration: poll -> controls -> step -> UI -> present. Returns the record of
        the frame that completed, or None (paused, or a teaching step mid-frame)."""
        session, controls, ui = self.session, self.controls, self.ui
        was_paused = session.paused and not session.step_once
        try:
            for ev in session.surface.poll_events():
                if not (ui is not None and ui.wants_keyboard):
                    controls.key(ev.key)
            for ev in session.surface.mouse_events():
                if not (ui is not None and ui.wants_mouse):
                    controls.mouse(ev)
            was_paused = session.paused and not session.step_once
            rec = session.step()
        except Exception as exc:  # noqa: BLE001 - recorded (or a --strict stop); the loop goes on
            self._failed(exc, "loop step")
            rec, was_paused = None, True
        last = self.frames_target is not None and self.loop_count + 1 >= self.frames_target
        if last and self.cfg.screenshot and ui is not None:
            ui.mark_dirty()  # the screenshot shows the panel of its own frame, not the last redraw's
        t0 = ns()
        try:
            self.draw_ui(rec)
            if ui is not None:  # without a UI nothing was drawn: no GL error of its own to ask for
                check_gl("panel")
        except Exception as exc:  # noqa: BLE001
            self._failed(exc, "panel")
        t1 = ns()
        # between the panel and the present, in the frame's period but in neither phase (the phase
        # model has no name for them, app/schedule/frame.py LOOP_PHASES): the panel's queued commands,
        # the hot-reload poll and the screenshot's read
        try:
            controls.apply()
        except Exception as exc:  # noqa: BLE001 - Controls.apply records all but --strict findings
            self._failed(exc, "panel controls")
        try:
            poll_sources(session)  # hot reload: one clock read, a few stats a second (app/session/reload.py)
        except Exception as exc:  # noqa: BLE001 - a failed rebuild is recorded there; the last good build runs
            self._failed(exc, "hot reload")
        self.loop_count += 1
        if self.cfg.screenshot and self._ending(last):
            try:  # the back buffer as drawn, before the present leaves it undefined
                self.screenshot_pixels = session.surface.read_pixels()
                self._shot_at = self.loop_count
            except Exception as exc:  # noqa: BLE001 - finish() reports the screenshot as not written
                self._failed(exc, "screenshot")
        t2 = ns()
        session.surface.present()
        t3 = ns()
        if rec is not None:
            rec.phases["panel"] = (t0, t1)
            rec.phases["present"] = (t2, t3)
            rec.presented_ns = t3
            rec.stepped = session.stepper.active
            if self._last_present and not rec.stepped:
                rec.period_ns = t3 - self._last_present
            self._last_present = 0 if rec.stepped else t3
            if not self.startup.get("first_frame_presented"):
                self._mark("first_frame_presented")
            self._fps(rec, t3)
        elif was_paused:
            self._last_present = 0  # the time paused is no frame's
        return rec

    def _fps(self, rec: FrameRecord, now: int) -> None:
        """One line on stdout every FPS_EVERY_S, as the classic samples print (off with --quiet)."""
        if not self.fps_lines:
            return
        if rec.period_ns:
            self._fps_frames.append(rec.period_ns / 1e6)
        if not self._fps_at:
            self._fps_at = now
            return
        if now - self._fps_at < FPS_EVERY_S * 1e9 or not self._fps_frames:
            return
        med = statistics.median(self._fps_frames)
        s = self.session.setup_view()
        line = (f"glshare: {1000 / med:.1f} fps ({med:.2f} ms/frame, median of {len(self._fps_frames)} frames), "
                f"{s.scene_title}, {s.backend}, sync {s.sync}, frame {self.session.frame}\n")
        self._fps_at, self._fps_frames = now, []
        try:  # as every output to standard output: whole or failed (app/outputs.py)
            write_text(STDOUT, line)
        except OutputError as exc:  # (the reader went away, a full disk): the run goes on without them
            self.fps_lines = False
            log.warning("frame-rate lines stopped: %s", exc)

    def draw_ui(self, rec: FrameRecord | None = None) -> None:
        """The overlay or the panel over the frame; the session's view is taken only when the cached
        layer is redrawn (app/ui/imgui_layer.py)."""
        session, ui = self.session, self.ui
        if ui is None or not session.surface.bind_target():
            return
        timed = rec is not None and "panel" not in rec.phases  # this frame's record, not a paused one
        scheduler = session.scheduler

        def span():  # the GL pass of a redraw; the copy of the cached layer is not timed
            return scheduler.gl_timer.span(rec, "gl panel") if timed else contextlib.nullcontext()

        def view():
            if scheduler is not None:
                scheduler.harvest(gl=False)  # the profiles of the frames since the last batch
            return session.view(demos=self.controls.demo_views(), trace_written=self.trace_written,
                                stop=self.stop_view)

        ui.draw(view, self.controls.request, span=span, scene_rect=session.scene_rect)

    # -- commands that write or run something ---------------------------------------------------
    def write_trace(self, path=None) -> str:
        """The panel's "write trace": to ``path``, ``--trace`` or out/glshare-trace-<time>.json."""
        target = Path(path or self.cfg.trace or f"out/glshare-trace-{time.strftime('%Y%m%d-%H%M%S')}.json")
        try:
            check_output("trace", target)
            written = self._write_trace(target)
            self.trace_written = {"path": str(Path(written).resolve()), "frame": self.session.frame}
            return f"wrote trace {self.trace_written['path']}"
        except Exception as exc:  # noqa: BLE001
            self.trace_written = {"error": f"{type(exc).__name__}: {exc}", "frame": self.session.frame}
            self.session.record_error(exc, "write trace")
            return f"trace not written: {exc}"

    def run_lab(self) -> str:
        from app.lab.lab import run_lab  # start-up: the error lab's modules only when it runs

        results = run_lab(self.session.backend)
        if self.ui is not None:
            self.ui.lab_results = results
        s = results.get("summary", {})
        return f"error lab: validator {s.get('validator_agrees')}/{s.get('cases')} agree with the spec"

    # -- outputs -------------------------------------------------------------------------------
    def facts(self):
        s = self.session
        scene = s.scene
        choice = s.choice
        size = scene.current_size if scene is not None else None
        extra = {"stopped": self.stop.as_dict() if self.stop else None, "startup_ms": dict(self.startup)}
        return RunFacts(
            extra=extra,
            scene=s.cfg.scene, backend=s.backend_name, sync=s.cfg.sync, headless=s.surface.kind == "headless",
            size=size if isinstance(size, int) else (f"{size[0]}x{size[1]}" if size else None),
            bytes_per_frame=scene.bytes_per_frame if scene else 0,
            gl={**{k: s.gl_info.as_dict()[k] for k in ("vendor", "renderer", "version")},
                "allocator": s.allocator},
            cl={"platform": choice.platform.name.strip(), "device": choice.device.name.strip(),
                "version": choice.device.version.strip(), "extensions": sorted(choice.device.extensions.split()),
                "stamps": native.describe()},
            backends=s.registry.as_list())

    def _connection_lost(self, why: str) -> None:
        """The display's connection is gone (app/window/x_errors.py): no GL call can be made; the
        report and the trace are written and said (a screenshot only where its frame was read)."""
        self.stop = Stop("error", self.session.frame, why)
        self._gl_gone = True
        written = self.finish()
        if self.said is not None:
            self.said(written, self.failed_outputs)

    def _write_trace(self, path) -> str:
        s = self.session
        if s.scheduler is not None:
            s.scheduler.harvest(gl=not self._gl_gone)  # the CL profiles since the last batch, and GL results in
        meta = {"glshare_scene": s.cfg.scene, "backend": s.backend_name, "sync": s.cfg.sync,
                "switches": s.history.switches, "hand_backs": s.history.hand_backs, "cl_device": s.choice.label,
                "gl_renderer": s.gl_info.renderer, "findings": s.history.findings()}
        return write_trace(path, list(s.history.records), s.clock, meta)

    def finish(self) -> dict:
        """Write the screenshot, the report and the trace of what was recorded; returns {kind: where
        it went}. Runs however the loop ended (an error too), while the GL context is still current.
        Every output is attempted: one that cannot be written costs none of the others and raises
        nothing; it is listed in ``failed_outputs`` as (kind, the error)."""
        out = {}
        cfg, s = self.cfg, self.session
        if not self._gl_gone:
            with contextlib.suppress(Exception):
                s.finish()  # the queue drained, every profile read (already done where the loop ended well)

        def screenshot():
            if self._gl_gone and self.screenshot_pixels is None:
                raise OutputError("the display is gone: no frame was read before it went")
            if self.screenshot_pixels is None and self.loop_count == 0:
                raise OutputError(f"no frame was drawn before the run stopped ({self.stop.how if self.stop else 'error'} "
                                  "before the first frame)")
            # the last frame presented, read before its present (the loop's last iteration); only a
            # loop that raised, or a strict stop headless, leaves none: then what the target holds
            # (headless: the FBO, unchanged by a present; a window: a back buffer kept by a copy
            # swap on some drivers, undefined on others)
            pixels = self.screenshot_pixels if self.screenshot_pixels is not None else s.surface.read_pixels()
            return write_png(cfg.screenshot, pixels[:, :, :3])

        writers = {"screenshot": (cfg.screenshot, screenshot),
                   "report": (cfg.report, lambda: write_report(cfg.report, build_report(s.history, self.facts()))),
                   "trace": (cfg.trace, lambda: self._write_trace(cfg.trace))}
        self.failed_outputs = []
        held = signals.SIGNALS  # a second signal from here waits for the outputs; a third names those lost
        held.pending[:] = [kind for kind, (path, _) in writers.items() if path is not None]
        held.writing = True
        for kind, (path, write) in writers.items():
            if path is None:
                continue
            try:  # each output on its own: one that cannot be written does not cost the others
                out[kind] = write()
            except Exception as exc:  # noqa: BLE001
                log.debug("%s not written: %s", kind, exc)
                self.failed_outputs.append((kind, exc))
            held.pending.remove(kind)
        return out


def run(cfg: RunConfig, said=None) -> tuple[dict, Stop, list[tuple[str, BaseException]]]:
    """Run, then write the outputs (also when the loop raised). Returns ({kind: where it went}, how
    the run stopped, [(kind, error) of each output not written]).

    ``said(written, failed)``, where given, is called with the outputs once they are written,
    however the loop ended: when the loop raised, before its error goes on up (that error, not an
    output's, is the one raised)."""
    with signals.SIGNALS.held(), Run(cfg) as r:
        r.said = said
        try:
            stop = r.loop()
        except BaseException as exc:
            r.stop = Stop("error", r.session.frame, str(exc))
            written = r.finish()
            if said is not None:
                said(written, r.failed_outputs)
            raise
        written = r.finish()
        if said is not None:
            said(written, r.failed_outputs)
    return written, stop, r.failed_outputs
