"""The running application: surface -> device -> backend -> scene -> scheduler -> panel -> trace.

Built in that order and torn down in reverse (an ExitStack); a runtime switch of scene, backend or
sync mode tears down the scene and the backend (CL objects before GL objects) and builds them anew.
"""
from __future__ import annotations

import collections
import contextlib
import gc
import itertools
import logging
import statistics
import time

import numpy as np

from app.cl.device import select_device
from app.config import DEFAULT_HEADLESS_FRAMES, SCENES, SYNC_MODES, RunConfig
from app.errors import GlshareError, SharingUnavailable
from app.gl.context import check_gl, gl_info
from app.gl.timer import default_every
from app.scenes import scene_class
from app.schedule.frame import ErrorRecord
from app.schedule.scheduler import FrameScheduler, error_record
from app.schedule.teach import TeachingStepper
from app.sharing.base import ProbeEnv
from app.sharing.registry import Registry
from app.validate.demos import HazardDemos
from app.window import open_surface

log = logging.getLogger(__name__)


def default_window_size(cfg: RunConfig) -> tuple[int, int]:
    if cfg.scene in ("image", "yuv"):
        if isinstance(cfg.size, tuple) and max(cfg.size) <= 2048:
            return tuple(cfg.size)
        return (640, 360) if cfg.scene == "yuv" else (512, 512)  # yuv: app/scenes/yuv.py DEFAULT_YUV_SIZE
    return cfg.window_size


class Runtime:
    """One ``glshare run``. Use as a context manager: ``with Runtime(cfg) as rt: rt.run()``."""

    def __init__(self, cfg: RunConfig, surface=None) -> None:
        """``surface``: an already open surface to draw on (tests, bench); it is not closed here."""
        self.cfg = cfg
        self._given_surface = surface
        self.requested_sync = cfg.sync  # kept across backend switches that must fall back to finish
        self._stack = contextlib.ExitStack()
        self.surface = None
        self.scene = None
        self.backend = None
        self.scheduler = None
        self.overlay = None
        self.records_done: list = []  # records of schedulers already torn down
        self.totals_done = collections.Counter()  # their frame and call counts (records are capped)
        self.switches: list[dict] = []
        self.loop_errors: list[ErrorRecord] = []
        self.frame = 0  # simulation frame (what the kernels see)
        self.loop_count = 0
        self.paused = False
        self.show_panel = cfg.panel
        self.screenshot_pixels: np.ndarray | None = None
        self._last_size = (0, 0)
        self._close_requested = False
        self.step_once = False
        self.frames_target: int | None = cfg.frames
        self.panel_state = None  # ui/panel.py keeps its own state here
        self.stepper = TeachingStepper()  # teaching mode: one phase per step (app/schedule/teach.py)
        self.demos = HazardDemos()  # hazard demonstrations, keys 1-4 (app/validate/demos.py)
        self.clock = None  # app/trace/clock.py ClockMap: CL and GL time on the host clock
        self.ui_actions: list = []  # panel controls, run after the ImGui frame (draw_ui)
        self.trace_written: dict = {}  # the panel's "write trace": {"path": ..., "error": ...}
        self._trace_request = None
        self._panel_data = None

    # -- building ----------------------------------------------------------------------------
    def __enter__(self) -> "Runtime":
        try:
            if self._given_surface is not None:
                self.surface = self._given_surface
            else:
                self.surface = open_surface(self.cfg.headless, default_window_size(self.cfg),
                                            title=f"glshare - {self.cfg.scene}", vsync=self.cfg.vsync)
                self._stack.callback(self.surface.close)
            self.choice = select_device(self.cfg.cl_device)
            self.gl_info = gl_info()
            self.registry = Registry(ProbeEnv(self.choice, self.surface, self.gl_info))
            self.backend_name = self.registry.choose(self.cfg.backend)
            self._build(self.cfg.scene, self.backend_name, self.cfg.sync)
            self._stack.callback(self._teardown)
            from app.trace.clock import ClockMap

            self.clock = ClockMap.calibrate(self.choice.device, self.backend.queue)
            if self.cfg.overlay:
                from app.ui.imgui_layer import ImGuiLayer, default_panel_hz

                self.overlay = ImGuiLayer(self.surface, redraw_hz=default_panel_hz(self.gl_info)
                                          if self.cfg.panel_hz is None else self.cfg.panel_hz)
                self._stack.callback(self.overlay.close)
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self._stack.close()

    def _build(self, scene: str, backend: str, sync: str) -> None:
        size = self.cfg.size
        if isinstance(size, int) != (scene == "particles"):
            size = None  # a particle count means nothing to an image scene, and WxH nothing to particles
        cfg = self.cfg.with_(scene=scene, backend=backend, sync=sync, size=size)
        new_backend = self.registry.open(backend, strict=self.cfg.strict)
        try:
            strategy = new_backend.make_sync(sync)
            new_scene = scene_class(scene)(cfg)
            new_scene.build(new_backend, self.surface.framebuffer_size)
            check_gl(f"build {scene} on {backend}")
        except BaseException:
            new_backend.close()
            raise
        self.backend, self.scene, self.backend_name = new_backend, new_scene, backend
        # a trace gets every frame's GL passes; else software GL times one frame in a few (gltimer.py)
        every = 1 if self.cfg.trace else default_every(self.gl_info.renderer)
        self.scheduler = FrameScheduler(new_backend, new_scene, strategy, strict=self.cfg.strict,
                                        gl_timer_every=every)
        self.cfg = cfg

    def _teardown(self) -> None:
        """Reverse build order; CL memory objects before their GL objects (scene.teardown)."""
        with contextlib.suppress(Exception):
            self.stepper.finish_frame(self)  # teaching: release what the stepped frame acquired
        if self.scheduler is not None:
            with contextlib.suppress(Exception):
                self.scheduler.finish()
            self.scheduler.close()
            self.records_done.extend(self.scheduler.records)
            self.totals_done.update(self.scheduler.totals)
            self.scheduler = None
        if self.scene is not None:
            self.scene.teardown()
            self.scene = None
        if self.backend is not None:
            self.backend.close()
            self.backend = None
            gc.collect()  # the old CL context (a CUDA context on NVIDIA) goes now, not at a later collection

    @property
    def totals(self) -> collections.Counter:
        """Frames run and acquire/compute/release counts over the whole run (not only the history)."""
        out = collections.Counter(self.totals_done)
        if self.scheduler is not None:
            out.update(self.scheduler.totals)
        return out

    @property
    def all_records(self) -> list:
        return self.records_done + (list(self.scheduler.records) if self.scheduler else [])

    # -- switching -----------------------------------------------------------------------------
    def switch(self, *, scene: str | None = None, backend: str | None = None, sync: str | None = None) -> bool:
        """Re-create resources for a new scene / backend / sync mode; on failure keep the old set-up.

        Returns True when the switch took effect. Refusals are recorded (panel, report), not raised,
        unless ``strict``.
        """
        old = (self.cfg.scene, self.backend_name, self.cfg.sync)
        if sync:
            self.requested_sync = sync
        elif backend:
            from app.sharing.registry import backend_class

            # the mode the user chose last, where the new backend has it; else the portable rule
            wanted = getattr(self, "requested_sync", old[2])
            modes = backend_class(backend).sync_modes
            sync = wanted if wanted in modes else (old[2] if old[2] in modes else "finish")
        new = (scene or old[0], backend or old[1], sync or old[2])
        what = "scene" if scene else "backend" if backend else "sync"
        try:
            if backend:
                self.registry.choose(backend)
            if new[1] == old[1] and self.backend is not None and sync:
                reason = self.backend.sync_unavailable_reason(new[2])
                if reason:
                    raise SharingUnavailable(f"sync {new[2]}", reason)
        except GlshareError as exc:
            self._loop_error(exc, f"switch {what}")
            return False
        self.scheduler and self.scheduler.finish()
        records_before = len(self.all_records)
        self._teardown()
        try:
            self._build(*new)
        except Exception as exc:  # noqa: BLE001 - fall back to what ran before
            self._loop_error(exc, f"switch {what}")
            self._build(*old)
            return False
        self.switches.append({"frame": self.frame, "loop": self.loop_count, "what": what,
                              "from": dict(zip(("scene", "backend", "sync"), old)),
                              "to": dict(zip(("scene", "backend", "sync"), new)),
                              "records_before": records_before})
        log.info("switched %s: %s -> %s", what, old, new)
        return True

    def next_choice(self, what: str) -> str:
        if what == "scene":
            options = list(SCENES)
            current = self.cfg.scene
        elif what == "backend":
            options, current = self.registry.available, self.backend_name
        else:
            options = [m for m in SYNC_MODES if not self.backend.sync_unavailable_reason(m)]
            current = self.cfg.sync
        i = options.index(current) if current in options else -1
        return options[(i + 1) % len(options)]

    def _loop_error(self, exc: BaseException, where: str) -> None:
        rec = error_record(self.frame, exc, where)
        self.loop_errors.append(rec)
        log.warning("%s: %s", where, rec.message)
        if self.cfg.strict:
            raise exc

    # -- the loop ------------------------------------------------------------------------------
    def handle_key(self, key: str) -> None:
        if self.overlay is not None:
            self.overlay.mark_dirty()  # the panel shows the change at once
        if key in ("escape", "q"):
            self.request_close()
        elif key in ("p", "space"):
            self.paused = not self.paused
        elif key == "s":
            self.switch(scene=self.next_choice("scene"))
        elif key == "b":
            self.switch(backend=self.next_choice("backend"))
        elif key == "y":
            self.switch(sync=self.next_choice("sync"))
        elif key == "h":
            self.show_panel = not self.show_panel
        elif key == "v":
            self.cfg = self.cfg.with_(vsync=not self.cfg.vsync)
            self.surface.set_vsync(self.cfg.vsync)
        elif key in ("right", "n") and self.paused:
            self.step_once = True  # teaching mode: the next phase (see step())
        elif key == "t":
            self.stepper.toggle(self)
        elif key == "f" and self.stepper.active:
            self.stepper.finish_frame(self)
        elif self.demos.handle(self, key):  # 1 skip acquire, 2 skip release, 3 sync none, 4 delete GL first
            pass

    def request_close(self) -> None:
        self._close_requested = True

    def _render_target(self):
        return self.surface.framebuffer_size if self.surface.bind_target() else None

    def step(self):
        """Advance one simulation frame (acquire -> compute -> release -> render); in teaching
        mode one phase of it (the record is returned when the frame completes, else None)."""
        if self.stepper.active:
            return self.stepper.step(self)
        rec = self.scheduler.run_frame(self.frame, self._render_target)
        self.frame += 1
        return rec

    def snapshot(self) -> dict:
        """Plain data for the panel: no GL or CL object crosses into ui/."""
        panel = self._panel_snapshot()
        snap = {"scene": self.cfg.scene, "scene_desc": self.scene.describe() if self.scene else "",
                "backend": self.backend_name, "sync": self.cfg.sync, "frame": self.frame, "paused": self.paused}
        if "timing" in panel:  # the panel data's running figures: no pass over the records per frame
            errors = panel["errors"]
            snap |= {"frame_ms_median": panel["timing"]["stats"]["frame"][0], "error_count": panel["errors_total"],
                     "last_error": errors[0]["message"] if errors else ""}
        else:  # the minimal overlay (--no-panel): a few figures, cheap enough for every frame
            records = self.scheduler.records if self.scheduler else ()
            recent = [r.frame_us / 1e3 for r in itertools.islice(reversed(records), 120)]
            last = self.loop_errors[-1] if self.loop_errors else next(
                (r.errors[-1] for r in itertools.islice(reversed(records), 120) if r.errors), None)
            if len(self.records_done) != getattr(self, "_done_errors", (-1, 0))[0]:
                self._done_errors = (len(self.records_done), sum(len(r.errors) for r in self.records_done))
            snap |= {"frame_ms_median": statistics.median(recent) if recent else 0.0,
                     "error_count": self._done_errors[1] + sum(len(r.errors) for r in records) + len(self.loop_errors),
                     "last_error": last.message if last else ""}
        return snap | panel

    def _panel_snapshot(self) -> dict:
        """The full panel's keys (app/ui/model.py), only while the panel is shown; a failure
        there never stops the loop."""
        if not self.show_panel:
            return {}
        try:
            if self._panel_data is None:
                from app.ui.model import PanelData

                self._panel_data = PanelData()
            if self.scheduler is not None:
                self.scheduler.harvest(gl=False)  # the profiles of the frames since the last batch
            return self._panel_data.update(self) | {"trace_written": self.trace_written}
        except Exception as exc:  # noqa: BLE001
            log.debug("panel data failed: %s", exc, exc_info=True)
            return {"panel_data_error": f"{type(exc).__name__}: {exc}"}

    def request_trace(self, path=None) -> None:
        """The panel's "write trace": written after this frame's panel, to ``path``, ``--trace`` or
        out/glshare-trace-<time>.json."""
        from pathlib import Path

        self._trace_request = Path(path or self.cfg.trace or f"out/glshare-trace-{time.strftime('%Y%m%d-%H%M%S')}.json")

    def set_size(self, size) -> bool:
        """A new workload size (particle count, (W, H), or None for the scene's default), rebuilt like
        a switch; on failure the old size is rebuilt and the error recorded."""
        old_size = self.cfg.size
        self.cfg = self.cfg.with_(size=size)
        if self.switch(scene=self.cfg.scene):
            self.switches[-1]["what"] = "size"
            return True
        if self.cfg.size != old_size:
            self.cfg = self.cfg.with_(size=old_size)
            self.switch(scene=self.cfg.scene)
        return False

    def _run_ui_actions(self) -> None:
        actions, self.ui_actions = self.ui_actions, []
        for action in actions:
            try:
                action()
            except Exception as exc:  # noqa: BLE001
                self._loop_error(exc, "panel control")
        if self._trace_request is not None:
            path, self._trace_request = self._trace_request, None
            try:
                from app.trace.chrome import write_trace

                self.trace_written = {"path": str(write_trace(path, self)), "frame": self.frame}
            except Exception as exc:  # noqa: BLE001
                self.trace_written = {"error": f"{type(exc).__name__}: {exc}", "frame": self.frame}
                self._loop_error(exc, "write trace")

    def draw_ui(self) -> None:
        """The overlay or the panel over the frame. The panel's snapshot is taken only when the
        cached layer is redrawn (app/ui/imgui_layer.py: 5 Hz, 2 Hz on software GL, at once after input)."""
        if self.overlay is None or not self.surface.bind_target():
            return
        from app.ui import overlay

        rec = self.scheduler.records[-1] if self.scheduler and self.scheduler.records else None
        timed = rec is not None and "panel" not in rec.phases  # this frame's record, not a paused one

        def span():  # the GL pass of a redraw; the blit of the cached layer is not timed
            return self.scheduler.gl_timer.span(rec, "gl panel") if timed else contextlib.nullcontext()

        def build() -> None:
            snap = self.snapshot()
            if self.show_panel:
                try:
                    from app.ui.panel import draw_panel
                except ImportError:
                    draw_panel = None
                if draw_panel:
                    draw_panel(snap, self)
                    return
            overlay.draw_overlay(snap)

        self.overlay.draw(build, span=span)
        self._run_ui_actions()

    def run(self) -> None:
        """The loop: until the window closes, Escape, or ``cfg.frames`` loop iterations."""
        cfg = self.cfg
        self.frames_target = cfg.frames if cfg.frames is not None else (DEFAULT_HEADLESS_FRAMES if cfg.headless else None)
        while not self._close_requested and not self.surface.should_close():
            if self.frames_target is not None and self.loop_count >= self.frames_target:
                break
            self.tick()
        if self.scheduler:
            self.scheduler.finish()

    def tick(self):
        """One loop iteration: events, resize, one frame (unless paused), panel, present.

        Returns the FrameRecord of the frame run, or None while paused.
        """
        for ev in self.surface.poll_events():
            if not (self.overlay and self.overlay.wants_keyboard):
                self.handle_key(ev.key)
        size = self.surface.framebuffer_size
        if size != self._last_size:
            self._last_size = size
            try:
                self.scene.resize(size)
                check_gl("resize")
            except Exception as exc:  # noqa: BLE001
                self._loop_error(exc, "resize")
        if self.paused and not self.step_once:
            if self.surface.bind_target():
                self.stepper.idle_render(self.scene, size)  # not the scene while a stepped frame's CL owns it
            rec = None
        else:
            self.step_once = False
            rec = self.step()
        last = self.frames_target is not None and self.loop_count + 1 >= self.frames_target
        if last and self.cfg.screenshot and self.overlay is not None:
            self.overlay.mark_dirty()  # the screenshot shows the panel of its own frame, not the last redraw's
        t0 = time.perf_counter_ns()
        try:
            self.draw_ui()
            check_gl("panel")
        except Exception as exc:  # noqa: BLE001
            self._loop_error(exc, "panel")
        if rec is not None:
            rec.phases["panel"] = (t0, time.perf_counter_ns())
        self.loop_count += 1
        if last and self.cfg.screenshot:
            self.screenshot_pixels = self.surface.read_pixels()
        self.surface.present()
        return rec

    def scene_size_field(self):
        if self.cfg.scene == "particles":
            return self.cfg.particle_count
        scene = self.scene
        size = getattr(scene, "image_size", None) if scene else None
        return f"{size[0]}x{size[1]}" if size else None

    def finish(self) -> dict:
        """Write the screenshot and the report; returns the paths written."""
        from app.trace.png import write_png
        from app.trace.report import build_report, write_report

        out = {}
        if self.cfg.screenshot:
            pixels = self.screenshot_pixels if self.screenshot_pixels is not None else self.surface.read_pixels()
            out["screenshot"] = write_png(self.cfg.screenshot, pixels[:, :, :3])
        if self.cfg.report:
            out["report"] = write_report(self.cfg.report, build_report(self))
        if self.cfg.trace:
            from app.trace.chrome import write_trace

            out["trace"] = write_trace(self.cfg.trace, self)
        return out


def run(cfg: RunConfig) -> dict:
    """Run, then write the outputs. Returns {kind: path}."""
    with Runtime(cfg) as rt:
        rt.run()
        return rt.finish()

