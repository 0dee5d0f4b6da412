"""One run's objects, built in data order and torn down in reverse: surface -> device -> registry
-> backend -> scene -> scheduler (an ExitStack), and the switches between set-ups.

A switch of scene, backend, sync mode or size tears down the scene and the backend (CL objects
before GL objects) and builds the new set-up; on failure what the new one built is torn down, the
old one is rebuilt (at its own size) and the refusal is recorded, then raised where ``--strict``
stops on it (a finding). ``step()`` runs one frame (or, in teaching mode, one phase of it);
``view()`` is the read-only picture of the session the UI and the outputs get.
"""
from __future__ import annotations

import contextlib
import dataclasses
import gc
import logging
from dataclasses import dataclass

import pyopencl as cl

from app import native
from app.cl.device import CL_SHARING_EXTENSIONS, select_device
from app.config import RunConfig
from app.errors import GlshareError, SharingUnavailable, as_glshare_error
from app.gl import api as GL
from app.gl.allocator import keep_freed_memory
from app.gl.context import check_gl, gl_info
from app.gl.raw import gl_function as raw_gl
from app.gl.timer import default_every
from app.scenes import scene_class, scene_classes
from app.schedule.clock import ClockMap
from app.schedule.faults import FaultPlan
from app.schedule.frame import ErrorRecord, FrameRecord
from app.schedule.history import RunHistory
from app.schedule.scheduler import FrameScheduler, error_record
from app.schedule.teach import TeachingStepper, teaching_view
from app.session import views
from app.sharing.backends.external_memory import ExternalMemory, import_handle_types
from app.sharing.backends.external_memory.handles import handle_table
from app.sharing.backends.external_memory.lifetime import KMT_NOTE
from app.sharing.base import ProbeEnv
from app.sharing.registry import Registry, backend_class
from app.sharing.sync import sync_modes
from app.validate.findings import stops_on
from app.window import open_surface
from app.window.layout import PANEL_ROOM, fit

log = logging.getLogger(__name__)
_KEEP = object()  # Session._switch: the scene's size stays as it is

@dataclass(frozen=True)
class SwitchOutcome:
    ok: bool
    what: str
    message: str  # what happened, or why the choice was refused or fell back

    def __bool__(self) -> bool:
        return self.ok


def _one_line(exc: BaseException) -> str:
    return exc.one_line() if isinstance(exc, GlshareError) else f"{type(exc).__name__}: {exc}"


def window_size_for(cfg: RunConfig) -> tuple[int, int]:
    """The window a run of ``cfg`` opens (image scenes show their image 1:1 up to 2048 pixels, beside
    the panel in a window that shows it)."""
    cls = scene_class(cfg.scene)
    room = PANEL_ROOM if not cfg.headless and cfg.overlay and cfg.panel else 0
    return cls.window_size(cls.size_of(cfg), cfg.window_size, panel_room=room)


class Session:
    """One ``glshare run``'s objects. Use as a context manager."""

    def __init__(self, cfg: RunConfig, surface=None) -> None:
        """``surface``: an already open surface to draw on (tests, bench); it is not closed here."""
        self.cfg = cfg
        self.history = RunHistory()
        self.requested_sync = cfg.sync  # kept across backend switches that must fall back
        self.sizes: dict[str, object] = {cfg.scene: cfg.size}  # the size chosen per scene
        self.surface = surface
        self._given_surface = surface
        self._stack = contextlib.ExitStack()
        self.backend = None
        self.scene = None
        self.scheduler = None
        self.stepper = TeachingStepper()
        self.frame = 0  # simulation frame (what the kernels see)
        self.paused = False
        self.step_once = False
        self.status = ""
        self.lost = ""  # why the session has no set-up left (a switch that failed, and so did the rebuild)
        self._last_size = (0, 0)
        self._caps_key = None
        self._caps: views.CapsView | None = None
        # where the UI wants the scene drawn (UiHost.scene_viewport), and where it was this frame
        self.scene_viewport = None
        self.scene_rect: tuple[int, int, int, int] | None = None

    # -- building ----------------------------------------------------------------------------
    def __enter__(self) -> "Session":
        try:
            if self._given_surface is None:
                self.surface = open_surface(self.cfg.headless, window_size_for(self.cfg),
                                            title=f"glshare - {self.cfg.scene}", vsync=self.cfg.vsync)
                self._stack.callback(self.surface.close)
            self.choice = select_device(self.cfg.cl_device)
            self.gl_info = gl_info()
            self.allocator = keep_freed_memory(self.gl_info.software)  # llvmpipe's per-frame memory: kept
            self.registry = Registry(ProbeEnv(self.choice, self.surface, self.gl_info))
            self._build(self.cfg.scene, self.registry.choose(self.cfg.backend), self.cfg.sync)
            self._stack.callback(self._teardown)
            self.clock = ClockMap.calibrate(self.choice.device, self.backend.queue)
            self.history.on_harvested = self.clock.observe_frame  # each record's stamps, once
            self.history.clock = self.clock  # and checked for races against it (app/schedule/races.py)
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self._stack.close()

    @property
    def backend_name(self) -> str:
        return self.backend.name if self.backend is not None else ""

    def _build(self, scene: str, backend: str, sync: str) -> None:
        cls = scene_class(scene)
        size = self.sizes.get(scene)
        cfg = self.cfg.with_(scene=scene, backend=backend, sync=sync, size=size if cls.accepts(size) else None)
        new_backend = self.registry.open(backend, strict=self.cfg.strict)
        strategy = new_scene = scheduler = None
        segments = len(self.history.segments)
        try:
            strategy = new_backend.make_sync(sync)
            new_scene = cls(cfg)
            # frames in flight on copies of the scene's shared objects, where the sync mode lets the
            # CPU run ahead and the scene allows copies (Scene.max_slots): CL writes one while GL
            # still draws another, instead of each frame waiting on the GPU for the one before
            new_scene.slots = self._slots_for(cls, strategy, self.cfg.frames_in_flight)
            new_scene.realtime = self.surface.kind == "window"  # a video plays at its file's rate there
            new_scene.build(new_backend, self._scene_size())
            strategy.set_slots(new_scene.slots)
            check_gl(f"build {scene} on {backend}")
            self.history.begin_segment(scene, backend, sync, self.frame)
            # a trace gets every frame's GL passes; else software GL times one frame in a few (gl/timer.py)
            every = 1 if self.cfg.trace else default_every(self.gl_info.renderer)
            scheduler = FrameScheduler(new_backend, new_scene, strategy, history=self.history,
                                       strict=self.cfg.strict, gl_timer_every=every,
                                       frames_in_flight=self.cfg.frames_in_flight,
                                       profile_submit=bool(self.cfg.trace),  # a trace's args show it
                                       # a trace shows every frame's CL commands and GL passes: each frame is timed
                                       stamps_interval_ns=0 if self.cfg.trace else round(self.cfg.stamps_ms * 1e6))
            new_scene.pass_timer = lambda name, s=scheduler: s.gl_timer.span(s.current, name)
            scheduler.faults = FaultPlan.for_config(cfg, new_backend)  # --inject: None when no fault is asked for
        except BaseException:
            del self.history.segments[segments:]
            self._undo_build(new_backend, new_scene, strategy, scheduler)
            raise
        new_backend.on_hand_back = lambda calls, why: self.history.handed_back(calls, self.frame, why)
        self.backend, self.scene, self.scheduler = new_backend, new_scene, scheduler
        self.cfg = cfg
        self._last_size = self._scene_size()

    @staticmethod
    def _slots_for(scene_cls, strategy, frames_in_flight: int) -> int:
        """Copies of the scene's shared objects: one per frame in flight where the sync mode lets the
        CPU run ahead and orders each copy on its own (``SyncMode.orders_copies``: semaphores) and the
        scene allows copies (``Scene.max_slots``), else one."""
        if not (strategy.bounded_run_ahead and strategy.orders_copies):
            return 1
        return max(1, min(scene_cls.max_slots, int(frames_in_flight)))

    @staticmethod
    def _undo_build(backend, scene, strategy, scheduler) -> None:
        """What a failed ``_build`` made, in reverse: the scheduler (its sync mode with it) or the
        sync mode alone, the scene (its teardown is idempotent and takes a partial build: CL objects
        before GL objects), then the backend. Errors here are logged, never raised: the build's own
        error is the one that counts."""
        steps = [("queue finish", backend.queue.finish)]
        if scheduler is not None:
            steps.append(("scheduler", scheduler.close))
        elif strategy is not None:
            steps.append(("sync mode", strategy.close))
        if scene is not None:
            steps.append(("scene teardown", scene.teardown))
        steps.append(("backend", backend.close))
        for what, undo in steps:
            try:
                undo()
            except Exception as exc:  # noqa: BLE001 - the build's error is raised, not this one
                log.warning("undoing a failed build: %s: %s", what, exc)
        gc.collect()  # the failed set-up's CL context goes now, as a teardown's does

    def _teardown(self) -> None:
        """Reverse build order; CL memory objects before their GL objects (scene.teardown). Objects
        a stopped frame left with CL are released first."""
        with contextlib.suppress(Exception):
            self.finish_teaching_frame()
        if self.scheduler is not None:
            with contextlib.suppress(Exception):
                self.scheduler.finish()  # first: it lets go of a queue stalled on purpose (the fault lab)
        if self.backend is not None:
            with contextlib.suppress(Exception):
                self.backend.hand_back(why="its set-up was torn down (a switch, the end of the run)")
        if self.scheduler is not None:
            self.scheduler.close()
            self.scheduler = None
        if self.scene is not None:
            self.scene.teardown()
            self.scene = None
        if self.backend is not None:
            self.backend.close()
            self.backend = None
            gc.collect()  # the old CL context (a CUDA context on NVIDIA) goes now, not at a later collection

    # -- switching -----------------------------------------------------------------------------
    def _sync_for(self, backend: str, current: str) -> tuple[str, str]:
        """The sync mode a switch to ``backend`` runs: the one the user chose last where the backend
        offers it, else the current one, else finish; and a note when it fell back."""
        env = self.registry.env
        cls = backend_class(backend)
        for mode in (self.requested_sync, current, "finish"):
            if cls.sync_refusal(env, mode) is None:
                note = "" if mode == self.requested_sync else (
                    f"; sync {self.requested_sync} is not available on {backend} "
                    f"({cls.sync_refusal(env, self.requested_sync)}), using {mode}")
                return mode, note
        return "finish", ""

    def switch(self, *, scene: str | None = None, backend: str | None = None,
               sync: str | None = None) -> SwitchOutcome:
        """Re-create resources for a new scene / backend / sync mode; on failure keep the old set-up.

        Refusals are recorded (panel, report) and returned, not raised, unless ``--strict`` stops
        on them (a finding: ``findings.stops_on``); the old set-up is running again either way.

        Raises:
            GlshareError: the new set-up failed and the old one could not be rebuilt either (the
                session then has no set-up; the loop ends).
        """
        return self._switch(scene=scene, backend=backend, sync=sync)

    def _switch(self, *, scene: str | None = None, backend: str | None = None, sync: str | None = None,
                size=_KEEP, what: str = "") -> SwitchOutcome:
        """``switch``; ``size``: the new scene's size (``set_size``), kept only where the new set-up builds."""
        old = (self.cfg.scene, self.backend_name, self.cfg.sync)
        note = ""
        asked_sync = sync
        if not sync and backend:
            sync, note = self._sync_for(backend, old[2])
        new = (scene or old[0], backend or old[1], sync or old[2])
        what = what or ("scene" if scene else "backend" if backend else "sync")
        try:
            if scene:
                scene_class(scene)
            if backend:
                self.registry.choose(backend)
            if sync and new[1] == old[1]:
                reason = self.backend.sync_unavailable_reason(new[2])
                if reason:
                    raise SharingUnavailable(f"sync {new[2]}", reason)
        except GlshareError as exc:
            return self._refused(exc, what)
        if self.scheduler is not None:
            self.scheduler.finish()
        self._teardown()
        sizes = dict(self.sizes)
        if size is not _KEEP:
            self.sizes[new[0]] = size
        try:
            self._build(*new)
        except Exception as exc:  # noqa: BLE001 - fall back to what ran before
            self.sizes = sizes  # the old set-up at the size it had, not the one that failed
            try:
                self._build(*old)
            except Exception as again:  # noqa: BLE001 - nothing left to run: said, and raised
                self.record_error(exc, f"switch {what}")
                self.lost = (f"{what}: {' / '.join(new)} failed ({_one_line(exc)}) and the set-up before it, "
                             f"{' / '.join(old)}, could not be rebuilt: {_one_line(again)}")
                raise GlshareError(self.lost, where=f"switch {what}") from again
            return self._refused(exc, what)  # recorded once; raised only where --strict stops on it
        if asked_sync:
            self.requested_sync = asked_sync  # the user's choice, once it ran (backend switches keep it)
        self.history.switches.append({"frame": self.frame, "what": what,
                                      "from": dict(zip(("scene", "backend", "sync"), old)),
                                      "to": dict(zip(("scene", "backend", "sync"), new))})
        message = f"{what}: {' / '.join(old)} -> {' / '.join(new)}{note}"
        log.info("switched %s", message)
        self.status = message
        return SwitchOutcome(True, what, message)

    def set_size(self, size) -> SwitchOutcome:
        """A new workload size for the scene (a count, (W, H), or None for its default), rebuilt like
        a switch; on failure the old size is rebuilt and the error recorded."""
        scene = self.cfg.scene
        outcome = self._switch(scene=scene, size=size, what="size")
        if outcome.ok:
            return SwitchOutcome(True, "size", f"size: {scene_class(scene).size_label(size)}")
        return outcome

    def _refused(self, exc: BaseException, what: str) -> SwitchOutcome:
        """A refused switch, the old set-up running: recorded once, then raised where --strict stops on it."""
        self.record_error(exc, f"switch {what}")
        message = f"{what} refused: {_one_line(exc)}"
        self.status = message
        if stops_on(self.cfg.strict, exc):
            raise exc
        return SwitchOutcome(False, what, message)

    def next_choice(self, what: str) -> str:
        """The next scene, available backend or offered sync mode after the current one."""
        if what == "scene":
            options, current = list(scene_classes()), self.cfg.scene
        elif what == "backend":
            options, current = self.registry.available, self.backend_name
        else:
            options = [m for m in sync_modes() if not self.backend.sync_unavailable_reason(m)]
            current = self.cfg.sync
        i = options.index(current) if current in options else -1
        return options[(i + 1) % len(options)]

    def record_error(self, exc: BaseException, where: str) -> ErrorRecord:
        """An error outside a frame, kept in the history (panel, report); a raw CL or GL error as
        glshare's (ClError, GlError)."""
        rec = error_record(self.frame, as_glshare_error(exc, where), where)
        self.history.loop_error(rec)
        log.warning("%s: %s", where, rec.message)
        return rec

    def loop_error(self, exc: BaseException, where: str) -> ErrorRecord:
        """``record_error``, then raised again where ``--strict`` stops on it (a finding of the
        mode's kinds, ``findings.stops_on``); any other error is only recorded: the loop goes on."""
        rec = self.record_error(exc, where)
        if stops_on(self.cfg.strict, exc):
            raise exc
        return rec

    # -- stepping ------------------------------------------------------------------------------
    def render_target(self):
        """Bind the frame for the scene; its size, or None (no pixels). Beside the panel the scene
        is kept to the viewport the UI gives (viewport and scissor), and ``scene_rect`` says so."""
        if not self.surface.bind_target():
            return None
        # every frame straight through ctypes (raw_gl; checked after the draw)
        fb = tuple(self.surface.framebuffer_size)
        rect = self.scene_viewport(fb) if self.scene_viewport is not None else None
        self.scene_rect = rect
        if rect is None:
            raw_gl("glDisable")(GL.GL_SCISSOR_TEST)
            return fb
        x, y, w, h = rect
        raw_gl("glScissor")(x, y, w, h)
        raw_gl("glEnable")(GL.GL_SCISSOR_TEST)
        scene = self.scene
        if scene is not None and scene.size_kind == "image" and not scene.follow_window:
            # an image that keeps its size: undistorted, between bars
            raw_gl("glClearColor")(0.0, 0.0, 0.0, 1.0)
            raw_gl("glClear")(GL.GL_COLOR_BUFFER_BIT)
            x, y, w, h = fit(rect, scene.current_size)
            raw_gl("glScissor")(x, y, w, h)
        raw_gl("glViewport")(x, y, w, h)
        return (w, h)

    def _scene_size(self) -> tuple[int, int]:
        fb = tuple(self.surface.framebuffer_size)
        rect = self.scene_viewport(fb) if self.scene_viewport is not None else None
        return fb if rect is None else (rect[2], rect[3])

    def _check_resize(self) -> None:
        size = self._scene_size()
        if size == self._last_size:
            return
        self._last_size = size
        try:
            self.scene.resize(size)
            check_gl("resize")
        except Exception as exc:  # noqa: BLE001
            self.loop_error(exc, "resize")

    def step(self) -> FrameRecord | None:
        """One loop iteration's work: a frame (acquire -> compute -> release -> render), one phase
        of it in teaching mode, or, while paused, the scene redrawn. Returns the record of a frame
        that completed, else None."""
        self.scene_rect = None
        self._check_resize()
        if self.paused and not self.step_once:
            self.idle_render()
            return None
        self.step_once = False
        if self.stepper.active:
            _, rec = self.stepper.advance(self.scheduler, self.frame, self.render_target)
            if rec is not None:
                self.frame += 1
            else:
                self.idle_render()
            return rec
        rec = self.scheduler.run_frame(self.frame, self.render_target)
        rec.paused = self.paused  # one frame stepped while paused: out of the statistics
        self.frame += 1
        return rec

    def idle_render(self) -> None:
        """What a paused loop draws: the scene, except in the middle of a stepped frame while CL owns
        a shared object (after the acquire, until the release): then only the background."""
        size = self.render_target()
        if size is None:
            return
        scene, tracker = self.scene, self.backend.tracker
        if self.stepper.covers(scene.shared, tracker.owner_of):
            GL.glClearColor(0.08, 0.08, 0.10, 1.0)
            GL.glClear(GL.GL_COLOR_BUFFER_BIT)
            return
        scene.render(size)

    def finish_teaching_frame(self) -> None:
        """Run the rest of a stepped frame (before a switch, a teardown, leaving teaching mode)."""
        self.frame += self.stepper.finish_frame(self.scheduler, self.frame, self.render_target)

    def set_teaching(self, on: bool) -> None:
        if on:
            self.stepper.start()
            self.paused = True
        else:
            self.finish_teaching_frame()
            self.stepper.stop()
            self.paused = False

    def finish(self) -> None:
        """Drain the queue and read every profile (the end of a run, before its outputs)."""
        if self.scheduler is not None:
            self.scheduler.finish()

    # -- views ---------------------------------------------------------------------------------
    def owners(self) -> tuple[views.OwnerView, ...]:
        """Each shared object: GL, CL, or in transition (its acquire / release enqueued, not complete)."""
        backend, scheduler = self.backend, self.scheduler
        if backend is None:
            return ()
        rec = None
        if scheduler is not None:
            rec = scheduler.current or self.history.last
        pending = {}
        if rec is not None:
            for name in ("acquire", "release"):
                ev = rec.events.get(name)
                if ev is not None:
                    try:
                        pending[name] = ev.command_execution_status != cl.command_execution_status.COMPLETE
                    except Exception:  # noqa: BLE001 - a bad event is shown as settled, never raised
                        pending[name] = False
        out = []
        for obj in (self.scene.shared if self.scene is not None else ()):
            st = backend.tracker.states.get(id(obj))
            if st is None:
                continue
            state = st.owner.upper()
            if st.owner == "cl" and pending.get("acquire"):
                state = "GL -> CL"
            elif st.owner == "gl" and pending.get("release"):
                state = "CL -> GL"
            out.append(views.OwnerView(st.label, obj.kind, st.owner, state, st.since_frame, st.acquires, st.releases))
        return tuple(out)

    def caps(self) -> views.CapsView:
        """Platform, device, GL, sharing extensions and every backend's verdict (cached per set-up),
        with the Memory tab's lifetime of the backend's payload read now (its counters move: fds
        closed, open fds, bytes copied)."""
        fixed = self._fixed_caps()
        life = self.backend.memory_tab() if self.backend is not None else None
        return dataclasses.replace(fixed, memory={**fixed.memory, "lifetime": life})

    def _fixed_caps(self) -> views.CapsView:
        """What caps() says that does not change within a set-up (built once per set-up)."""
        key = (self.backend_name, self.cfg.sync, self.cfg.scene)
        if self._caps is not None and key == self._caps_key:
            return self._caps
        choice = self.choice
        cl_exts = set(choice.device.extensions.split()) | set(choice.platform.extensions.split())
        info = self.gl_info.as_dict()
        types = import_handle_types(choice.device)
        ext_probe = self.registry.probes.get(ExternalMemory.name)
        memory = {"handle_types": handle_table(types), "import_types": [f"0x{t:04X}" for t in types or []],
                  "lifetime": None, "kmt_note": KMT_NOTE,  # the lifetime: read at each caps()
                  "unavailable": ext_probe.reason if ext_probe is not None and not ext_probe.available else ""}
        sync = tuple(views.Choice(m, not r, r or "") for m, r in
                     ((m, self.backend.sync_unavailable_reason(m)) for m in sync_modes()))
        self._caps_key = key
        self._caps = views.CapsView(
            platform=f"{choice.platform.name.strip()} ({choice.platform.version.strip()})",
            device=f"{choice.device.name.strip()} ({choice.device.version.strip()})",
            gl=f"{info['renderer']} | {info['version']}", gl_vendor=info["vendor"],
            surface=getattr(self.surface, "label", self.surface.kind),
            cl_extensions=tuple((e, e in cl_exts) for e in CL_SHARING_EXTENSIONS),
            gl_extensions=tuple(info["sharing_extensions"].items()),
            backends=tuple(self.registry.as_list()), chosen=self.backend_name, sync=sync, memory=memory,
            stamps=native.describe())
        return self._caps

    def controls_view(self) -> views.ControlsView:
        caps = self._fixed_caps()
        cls = scene_class(self.cfg.scene)
        size = cls.size_of(self.cfg)
        if size is None and cls.follows_window:
            current = "window"
        else:
            size = cls.default_size if size is None else size
            current = str(size) if isinstance(size, int) else f"{size[0]}x{size[1]}"  # as --size takes it
        sizes = list(cls.panel_sizes)
        if current not in sizes:
            sizes.insert(0, current)
        return views.ControlsView(
            scenes=tuple(views.Choice(s, True) for s in scene_classes()),
            backends=tuple(views.Choice(b["name"], b["available"], b["reason"]) for b in caps.backends),
            syncs=caps.sync, sizes=tuple(sizes), size=current)

    def setup_view(self) -> views.SetupView:
        cls = scene_class(self.cfg.scene)
        scene = self.scene
        return views.SetupView(
            scene=self.cfg.scene, scene_title=scene.describe() if scene else "", backend=self.backend_name,
            sync=self.cfg.sync, size_label=cls.size_label(scene.current_size if scene else None),
            size_kind=cls.size_kind, vsync=bool(self.cfg.vsync), headless=self.surface.kind == "headless",
            strict=self.cfg.stops_on_findings)

    def gl_timer_view(self) -> views.GlTimerView:
        timer = self.scheduler.gl_timer if self.scheduler is not None else None
        if timer is None:
            return views.GlTimerView(False, 1, "off", None, 0, 0)
        interval, frames_timed = self.scheduler.stamps_interval_ns, "every frame, CL and GL"
        if interval:  # (FrameScheduler: frames shorter than the interval are timed one in a few)
            ms = f"{interval / 1e6:g} ms"
            frames_timed = f"frames shorter than {ms}: one per {ms} of frame time, CL and GL"
        return views.GlTimerView(timer.enabled, timer.every, timer.sampling, timer.oldest_pending_frame,
                                 timer.timed, timer.dropped, frames_timed)

    def teaching_view(self, owners: tuple) -> object:
        backend = self.backend
        skip = self.scheduler.skip if self.scheduler is not None else ()
        return teaching_view(self.stepper, frame=self.frame, paused=self.paused, objects=owners,
                             backend=self.backend_name, does=backend.teaching if backend else {},
                             sync=self.cfg.sync, skip=skip, rule_set=backend.rule_set if backend else "gl_sharing")

    def view(self, *, demos: tuple = (), trace_written: dict | None = None,
             stop: views.StopView | None = None) -> views.SessionView:
        """The read-only picture of the session (``stop``: why the run stopped on a frame, from the
        loop). While paused no frame runs, so the GL timer results of the last frames are read here:
        the panel then describes the frame stepped last with its GL passes."""
        scheduler = self.scheduler
        if self.paused and scheduler is not None:
            try:
                scheduler.gl_timer.harvest()
            except Exception as exc:  # noqa: BLE001 - a view never raises for a timer
                log.debug("GL timer harvest while paused: %s", exc)
        owners = self.owners()
        tracker = self.backend.tracker if self.backend is not None else None
        return views.SessionView(
            setup=self.setup_view(), frame=self.frame, paused=self.paused, history=self.history,
            current=self.scheduler.current if self.scheduler is not None else None, owners=owners,
            teaching=self.teaching_view(owners), demos=demos,
            hazard_counts=dict(tracker.counts) if tracker is not None else {},
            clock=self.clock.as_dict(), clock_map=self.clock, caps=self.caps(), controls=self.controls_view(),
            gl_timer=self.gl_timer_view(), status=self.status, trace_written=dict(trace_written or {}), stop=stop,
            scene_options=self.scene.options() if self.scene is not None else ())
