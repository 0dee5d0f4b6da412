"""Every way a user acts on a run, in one table of commands: keys, panel buttons, teaching steps
and hazard demonstrations all become ``Controls.run(name, **args)``.

A command returns a status line (what happened, or why it was refused), which the panel shows.
Panel buttons never act in the middle of an ImGui frame: they are queued (``request``) and run
after it (``apply``). Mouse drags and wheel steps over the scene (``mouse``) become the camera's
``orbit`` and ``zoom`` commands.

The scenes' commands are not written here: each scene declares its own (``@scene_command`` in
``app/scenes/``: name, title, keys, handler), and the table takes every scene's declarations. A
command of one scene (round points, the Julia constant, the post-process filter) answers with a
status line in the other scenes; the options a command changes are kept in the session's
configuration (``SceneCommand.keeps``), so a switch away and back keeps them.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Protocol

from app.errors import GlshareError, UsageError
from app.scenes import scene_classes
from app.scenes.base import Scene, SceneCommand
from app.session.session import Session
from app.session.views import DemoView
from app.validate.findings import stops_on

log = logging.getLogger(__name__)


class UiFlags(Protocol):
    """What the controls change in the UI host."""

    show_panel: bool

    def mark_dirty(self) -> None: ...

    def clear_findings(self) -> str:
        """Forget the errors and hazards the panel shows (the report keeps them); a status line."""

    def takes_key(self, key: str) -> bool:
        """Whether the UI acts on ``key`` itself now instead of the run (the panel walking its kept
        frames with "right" while one older than the newest is chosen)."""


@dataclass(frozen=True)
class Command:
    name: str
    title: str
    keys: tuple[str, ...] = ()
    paused_only: bool = False  # its keys act only while paused (stepping)
    scene: type[Scene] | None = None  # a scene's command: the class that declares it (Scene: every scene)
    declared: SceneCommand | None = None  # ... and its declaration (the handler)


@dataclass(frozen=True)
class Demo:
    """A hazard demonstration: break the hand-over on purpose and see what it does."""

    name: str
    key: str
    title: str
    flags: str  # the tracker's cases it sets off


DEMOS: tuple[Demo, ...] = (
    Demo("skip_acquire", "1", "skip the acquire",
         "use_without_acquire every frame, release_without_acquire at every release"),
    Demo("skip_release", "2", "skip the release", "gl_use_while_acquired at every draw, double_acquire at every acquire"),
    Demo("sync_none", "3", "skip glFinish/clFinish (sync none)",
         "nothing: the tracker checks who owns an object, not whether the other side finished with it"),
    Demo("wrong_delete_order", "4", "delete GL before CL (once)", "delete_gl_while_shared, once"),
    Demo("unordered_render", "5", "GL renders while CL reads (postprocess)",
         "gl_use_while_acquired on postprocess.rendered every frame (GL draws into an object CL holds)"),
)

CORE_COMMANDS: tuple[Command, ...] = (
    Command("quit", "quit", ("escape", "q")),
    Command("pause", "pause / resume", ("p", "space")),
    Command("step", "one frame (or phase) while paused", ("right", "n"), paused_only=True),
    Command("next_scene", "next scene", ("s",)),
    Command("next_backend", "next available backend", ("b",)),
    Command("next_sync", "next sync mode this backend offers", ("y",)),
    Command("toggle_panel", "full panel / minimal overlay", ("h",)),
    Command("toggle_vsync", "vertical sync on / off", ("v",)),
    Command("teach", "teaching mode on / off", ("t",)),
    Command("teach_finish", "teaching: finish the frame", ("f",)),
    Command("switch", "switch scene, backend or sync mode"),
    Command("set_size", "change the workload size"),
    Command("set_paused", "pause or resume"),
    Command("write_trace", "write a Chrome/Perfetto trace"),
    Command("demo", "toggle a hazard demonstration"),
    Command("run_lab", "run the error lab"),
    Command("clear_findings", "clear the panel's errors and hazards (the report keeps them)"),
    *(Command(f"demo_{d.name}", d.title, (d.key,)) for d in DEMOS),
)


def scene_commands(classes) -> tuple[Command, ...]:
    """The commands every scene answers (``Scene``'s: the camera, the local size), then those each
    scene class of ``classes`` declares itself."""
    return tuple(Command(d.name, d.title, d.keys, scene=cls, declared=d)
                 for cls in (Scene, *classes) for d in cls.own_commands())


def checked(commands: tuple[Command, ...]) -> tuple[Command, ...]:
    """``commands``, where no two share a name or a key (a scene declaring a taken one is refused)."""
    for what, names in (("name", [c.name for c in commands]), ("key", [k for c in commands for k in c.keys])):
        taken = sorted({n for n in names if names.count(n) > 1})
        if taken:
            raise RuntimeError(f"commands sharing a {what}: {', '.join(taken)}")
    return commands


COMMANDS = checked(CORE_COMMANDS + scene_commands(scene_classes().values()))
BY_NAME = {c.name: c for c in COMMANDS}
BY_KEY = {k: c for c in COMMANDS for k in c.keys}


class Controls:
    """Runs commands on a session (and the UI flags they change)."""

    def __init__(self, session: Session, ui: UiFlags | None = None, *,
                 write_trace: Callable[[str | None], str] | None = None,
                 run_lab: Callable[[], str] | None = None, commands: tuple[Command, ...] = COMMANDS) -> None:
        self.by_name = {c.name: c for c in commands}  # the table (the module's: every scene's commands)
        self.by_key = {k: c for c in commands for k in c.keys}
        self.session = session
        self.ui = ui
        self._write_trace = write_trace
        self._run_lab = run_lab
        self.pending: list[tuple[str, dict]] = []
        self.close_requested = False
        self.sync_before_none = "finish"
        self.deletes = 0

    # -- input ---------------------------------------------------------------------------------
    def key(self, key: str) -> str | None:
        """Run the command bound to ``key``; None when no command takes it now."""
        cmd = self.by_key.get(key)
        if cmd is None or (cmd.paused_only and not self.session.paused):
            return None
        if self.ui is not None and self.ui.takes_key(key):
            return None
        try:
            return self.run(cmd.name)
        except Exception as exc:  # noqa: BLE001 - a key never stops the loop, except a --strict finding
            if stops_on(self.session.cfg.strict, exc):
                raise  # the loop stops (or pauses) on it
            self.session.record_error(exc, f"key {key}")
            return None

    def mouse(self, event) -> str | None:
        """A mouse event over the scene (app.window.MouseEvent: "drag" by dx, dy pixels, "scroll" by
        dy steps) as the camera's command; None for other kinds. The caller passes only events the
        panel does not want (``ui.wants_mouse``)."""
        if event.kind == "drag":
            return self.run("orbit", dx=event.dx, dy=event.dy)
        if event.kind == "scroll":
            return self.run("zoom", steps=event.dy)
        return None

    def request(self, name: str, /, **args) -> None:
        """Queue a command to run after the UI frame (panel buttons)."""
        self.pending.append((name, args))

    def apply(self) -> None:
        """Run the queued commands; a failure is recorded and the loop goes on."""
        pending, self.pending = self.pending, []
        for command, args in pending:
            try:
                self.run(command, **args)
            except Exception as exc:  # noqa: BLE001
                if stops_on(self.session.cfg.strict, exc):
                    raise  # a --strict finding: the loop stops (or pauses) on it
                self.session.record_error(exc, f"panel control {command}")

    def run(self, name: str, /, **args) -> str:
        """Run command ``name``; returns its status line (also kept as ``session.status``)."""
        command = self.by_name.get(name)
        if command is None:
            raise KeyError(f"unknown command {name!r}")
        if self.ui is not None:
            self.ui.mark_dirty()  # the panel shows the change at once
        if command.declared is not None:
            status = self._run_scene_command(command, **args)
        else:
            status = getattr(self, f"_do_{name}")(**args) or ""
        if status:
            self.session.status = status
        return status

    # -- the commands ---------------------------------------------------------------------------
    def _do_quit(self) -> str:
        self.close_requested = True
        return "quitting"

    def _do_pause(self) -> str:
        return self._do_set_paused(not self.session.paused)

    def _do_set_paused(self, paused: bool) -> str:
        s = self.session
        if s.stepper.active and not paused:
            return "teaching mode keeps the run paused: leave it with t"
        s.paused = bool(paused)
        return "paused" if s.paused else "running"

    def _do_step(self) -> str:
        s = self.session
        s.step_once = True
        if s.stepper.active:
            return f"step: the {s.stepper.next_phase} of frame {s.stepper.frame if s.stepper.mid_frame else s.frame}"
        return f"step: frame {s.frame}"

    def _do_next_scene(self) -> str:
        return self._do_switch(scene=self.session.next_choice("scene"))

    def _do_next_backend(self) -> str:
        return self._do_switch(backend=self.session.next_choice("backend"))

    def _do_next_sync(self) -> str:
        return self._do_switch(sync=self.session.next_choice("sync"))

    def _do_switch(self, **what) -> str:
        return self.session.switch(**what).message

    def _do_set_size(self, size) -> str:
        return self.session.set_size(size).message

    def _do_toggle_panel(self) -> str:
        if self.ui is None:
            return "no panel in this run (--no-overlay)"
        self.ui.show_panel = not self.ui.show_panel
        return "panel shown" if self.ui.show_panel else "minimal overlay"

    def _do_toggle_vsync(self) -> str:
        s = self.session
        s.cfg = s.cfg.with_(vsync=not s.cfg.vsync)
        s.surface.set_vsync(s.cfg.vsync)
        return f"vsync {'on' if s.cfg.vsync else 'off'}"

    def _do_teach(self) -> str:
        s = self.session
        s.set_teaching(not s.stepper.active)
        return "teaching mode: n steps one phase, f finishes the frame" if s.stepper.active else "teaching mode off"

    def _do_teach_finish(self) -> str:
        if not self.session.stepper.active:
            return "not in teaching mode (t starts it)"
        self.session.finish_teaching_frame()
        return "frame finished"

    def _do_write_trace(self, path: str | None = None) -> str:
        if self._write_trace is None:
            return "no trace writer in this run"
        return self._write_trace(path)

    def _do_clear_findings(self) -> str:
        if self.ui is None:
            return "no panel in this run (--no-overlay)"
        return self.ui.clear_findings()

    def _do_run_lab(self) -> str:
        if self._run_lab is None:
            return "no error lab in this run"
        self.session.finish_teaching_frame()
        return self._run_lab()

    # -- the scenes' own commands (declared in app/scenes/) ------------------------------------------
    def _scene_with(self, scene_class: type[Scene], what: str) -> tuple[Scene | None, str]:
        """(the running scene, "") where it is a ``scene_class``, else (None, a status line)."""
        s = self.session.scene
        if s is not None and isinstance(s, scene_class):
            return s, ""
        if scene_class is Scene:
            return None, f"{what}: no scene"
        return None, f"{what}: the {scene_class.name} scene only (this is {self.session.cfg.scene}; s switches)"

    def _run_scene_command(self, command: Command, **args) -> str:
        """A scene's declared command on the running scene: its status line, or the refusal's; the
        options it changes (``keeps``) go into the session's configuration."""
        declared = command.declared
        scene, refusal = self._scene_with(command.scene, declared.what)
        if refusal:
            return refusal
        try:
            status = declared.run(scene, **args)
        except UsageError as exc:
            return f"{declared.what} refused: {exc.one_line()}"
        if declared.keeps:
            kept = scene.kept_options()
            self.session.cfg = self.session.cfg.with_(**{f: kept[f] for f in declared.keeps})
        return status

    # -- hazard demonstrations ------------------------------------------------------------------
    def _do_demo(self, demo: str) -> str:
        return getattr(self, f"_do_demo_{demo}")()

    def _skip(self, phase: str) -> str:
        sched = self.session.scheduler
        sched.skip ^= {phase}
        log.info("hazard demo: skip %s", sorted(sched.skip))
        if phase in sched.skip:
            return f"hazard demo: skipping the {phase}"
        message = f"hazard demo: no longer skipping the {phase}"
        if phase == "release":
            # what the skipped frames acquired and never released goes back now, once per acquisition
            # where the driver nests them (SharingBackend.hand_back); a stepped frame in progress runs
            # to its end first, its own release included (a failure of it is said, the hand-back goes on)
            try:
                if sched.current is not None:
                    self.session.finish_teaching_frame()
            except GlshareError as exc:
                message += f"; the stepped frame failed: {exc.one_line()}"
            try:
                calls = self.session.backend.hand_back(gl=True, why="the skip-release demonstration ended")
            except GlshareError as exc:
                return f"{message}; handing back what CL kept failed: {exc.one_line()}"
            if calls:
                message += f"; {calls} release call(s) handed back what CL kept"
        return message

    def _do_demo_skip_acquire(self) -> str:
        return self._skip("acquire")

    def _do_demo_skip_release(self) -> str:
        return self._skip("release")

    def _do_demo_sync_none(self) -> str:
        s = self.session
        skip = set(s.scheduler.skip)
        if s.cfg.sync != "none":
            self.sync_before_none = s.cfg.sync
            message = s.switch(sync="none").message
        else:
            message = s.switch(sync=self.sync_before_none or "finish").message
        if s.scheduler is not None:
            s.scheduler.skip |= skip  # a sync switch keeps the other demonstrations on
        return f"hazard demo: {message}"

    def _do_demo_wrong_delete_order(self) -> str:
        """A scratch shared buffer deleted GL-first: flags delete_gl_while_shared on the frame about
        to run (its record carries the flag). Raises HazardError under strict."""
        s = self.session
        backend = s.backend
        obj = backend.create_buffer("demo.delete_order", 256)
        backend.tracker.frame = s.frame
        self.deletes += 1
        try:
            backend.delete_gl_first(obj)
        finally:
            backend.destroy(obj)  # idempotent: whatever delete_gl_first did not get to
        return "hazard demo: a scratch buffer's GL object was deleted before its CL memory object"

    def _do_demo_unordered_render(self) -> str:
        """The postprocess scene renders its 3-D image in the compute phase, after the acquire and
        right before the kernel, with nothing ordering it before the kernel; its GL pass is timed
        on the frame's record (the timeline's GL row)."""
        s = self.session
        scene, refusal = self._scene_with(scene_classes()["postprocess"], "hazard demo")
        if refusal:
            return refusal
        scene.unordered_render = not scene.unordered_render
        sched = s.scheduler
        if scene.unordered_render and sched is not None and scene.pass_timer is None:
            scene.pass_timer = lambda name: sched.gl_timer.span(sched.current, name)
        log.info("hazard demo: unordered render %s", scene.unordered_render)
        if scene.unordered_render:
            return "hazard demo: GL renders the 3-D image while CL holds it and the kernel reads it"
        return "hazard demo: GL renders ahead again, between the release and the next acquire"

    def demo_views(self) -> tuple[DemoView, ...]:
        s = self.session
        skip = s.scheduler.skip if s.scheduler is not None else set()
        on = {"skip_acquire": "acquire" in skip, "skip_release": "release" in skip,
              "sync_none": s.cfg.sync == "none", "wrong_delete_order": False,
              "unordered_render": isinstance(s.scene, scene_classes()["postprocess"]) and s.scene.unordered_render}
        effects = s.backend.hazard_effects if s.backend is not None else {}
        return tuple(DemoView(d.name, d.key, d.title, on[d.name], d.flags, effects.get(d.name, ""))
                     for d in DEMOS)
