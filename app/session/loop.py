"""``glshare run``: the loop (poll -> controls -> step -> UI -> present) over a session, its
controls and its UI host, and the outputs written from the run history when it ends."""
from __future__ import annotations

import contextlib
import logging
import time

import numpy as np

from app.config import DEFAULT_HEADLESS_FRAMES, RunConfig
from app.gl.context import check_gl
from app.schedule.faults import stop_reason
from app.schedule.frame import FrameRecord
from app.session.controls import Controls
from app.session.reload import poll_sources
from app.session.session import Session

log = logging.getLogger(__name__)
ns = time.perf_counter_ns


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
        self.trace_written: dict = {}
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> "Run":
        try:
            self._stack.enter_context(self.session)
            if self.cfg.overlay:
                from app.ui.host import UiHost

                self.ui = UiHost(self.session.surface, self.session.gl_info, show_panel=self.cfg.panel,
                                 panel_hz=self.cfg.panel_hz)
                self._stack.callback(self.ui.close)
            self.controls = Controls(self.session, self.ui, write_trace=self.write_trace, run_lab=self.run_lab)
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self._stack.close()

    # -- the loop ------------------------------------------------------------------------------
    def loop(self) -> None:
        """Until the window closes, a quit command, or ``cfg.frames`` loop iterations."""
        session = self.session
        while not self.controls.close_requested and not session.surface.should_close():
            if self.frames_target is not None and self.loop_count >= self.frames_target:
                break
            if stop_reason(session.scheduler):  # a fault the run cannot go on after (app/schedule/faults.py)
                break
            self.tick()
        session.finish()

    def tick(self) -> FrameRecord | None:
        """One loop iteration: poll -> controls -> step -> UI -> present. Returns the record of
        the frame that completed, or None (paused, or a teaching step mid-frame)."""
        session, controls, ui = self.session, self.controls, self.ui
        for ev in session.surface.poll_events():
            if not (ui is not None and ui.wants_keyboard):
                controls.key(ev.key)
        rec = session.step()
        last = self.frames_target is not None and self.loop_count + 1 >= self.frames_target
        if last and self.cfg.screenshot and ui is not None:
            ui.mark_dirty()  # the screenshot shows the panel of its own frame, not the last redraw's
        t0 = ns()
        try:
            self.draw_ui(rec)
            check_gl("panel")
        except Exception as exc:  # noqa: BLE001
            session.loop_error(exc, "panel")
        if rec is not None:
            rec.phases["panel"] = (t0, ns())
        controls.apply()
        poll_sources(session)  # hot reload: one clock read, a few stats a second (app/session/reload.py)
        self.loop_count += 1
        if last and self.cfg.screenshot:
            self.screenshot_pixels = session.surface.read_pixels()
        session.surface.present()
        return rec

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
            return session.view(demos=self.controls.demo_views(), trace_written=self.trace_written)

        ui.draw(view, self.controls.request, span=span)

    # -- commands that write or run something ---------------------------------------------------
    def write_trace(self, path=None) -> str:
        """The panel's "write trace": to ``path``, ``--trace`` or out/glshare-trace-<time>.json."""
        from pathlib import Path

        from app.outputs import check_output

        target = Path(path or self.cfg.trace or f"out/glshare-trace-{time.strftime('%Y%m%d-%H%M%S')}.json")
        try:
            check_output("trace", target)
            written = self._write_trace(target)
            self.trace_written = {"path": str(Path(written).resolve()), "frame": self.session.frame}
            return f"wrote trace {self.trace_written['path']}"
        except Exception as exc:  # noqa: BLE001
            self.trace_written = {"error": f"{type(exc).__name__}: {exc}", "frame": self.session.frame}
            self.session.loop_error(exc, "write trace")
            return f"trace not written: {exc}"

    def run_lab(self) -> str:
        from app.lab.lab import run_lab

        results = run_lab(self.session.backend)
        if self.ui is not None:
            self.ui.lab_results = results
        s = results.get("summary", {})
        return f"error lab: validator {s.get('validator_agrees')}/{s.get('cases')} agree with the spec"

    # -- outputs -------------------------------------------------------------------------------
    def facts(self):
        from app.trace.report import RunFacts

        s = self.session
        scene = s.scene
        choice = s.choice
        size = scene.current_size if scene is not None else None
        return RunFacts(
            scene=s.cfg.scene, backend=s.backend_name, sync=s.cfg.sync, headless=s.surface.kind == "headless",
            size=size if isinstance(size, int) else (f"{size[0]}x{size[1]}" if size else None),
            bytes_per_frame=scene.bytes_per_frame if scene else 0,
            gl={k: s.gl_info.as_dict()[k] for k in ("vendor", "renderer", "version")},
            cl={"platform": choice.platform.name.strip(), "device": choice.device.name.strip(),
                "version": choice.device.version.strip(), "extensions": sorted(choice.device.extensions.split())},
            backends=s.registry.as_list())

    def _write_trace(self, path) -> str:
        from app.trace.chrome import write_trace

        s = self.session
        if s.scheduler is not None:
            s.scheduler.harvest()  # the CL profiles of the frames since the last batch, and GL results in
        meta = {"glshare_scene": s.cfg.scene, "backend": s.backend_name, "sync": s.cfg.sync,
                "switches": s.history.switches, "cl_device": s.choice.label, "gl_renderer": s.gl_info.renderer}
        return write_trace(path, list(s.history.records), s.clock, meta)

    def finish(self) -> dict:
        """Write the screenshot, the report and the trace; returns {kind: where it went}."""
        from app.trace.png import write_png
        from app.trace.report import build_report, write_report

        out = {}
        cfg, s = self.cfg, self.session
        if cfg.screenshot:
            pixels = self.screenshot_pixels if self.screenshot_pixels is not None else s.surface.read_pixels()
            out["screenshot"] = write_png(cfg.screenshot, pixels[:, :, :3])
        if cfg.report:
            out["report"] = write_report(cfg.report, build_report(s.history, self.facts()))
        if cfg.trace:
            out["trace"] = self._write_trace(cfg.trace)
        return out


def run(cfg: RunConfig) -> dict:
    """Run, then write the outputs. Returns {kind: where it went}."""
    with Run(cfg) as r:
        r.loop()
        return r.finish()
