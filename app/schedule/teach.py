"""Teaching mode: the frame one phase at a time (GL draw -> acquire -> kernel -> release -> GL draw).

``TeachingStepper`` drives ``FrameScheduler.frame_phases()`` by hand: each step runs exactly one
phase of the same code a normal frame runs, so stepping a frame through leaves the same result
as ``run_frame``. Between the steps the objects belong to whoever the last phase handed them to;
while CL owns them GL does not draw them (the screen shows a plain background: "These objects
need to be released before they can be used by OpenGL"). ``teaching_snapshot`` is the plain data
``app/ui/teaching.py`` draws: the phase strip, who owns each object, and the spec text of the step.
The spec sentences are quoted from ../shared/spec/gl-acquire-release.txt (5.5.15).
"""
from __future__ import annotations

import collections
import logging

from app.validate.ownership import CL

log = logging.getLogger(__name__)

PHASES = ("acquire", "compute", "release", "render")  # what frame_phases() yields, in order
STEPS = ("GL draw", "acquire", "kernel", "release", "GL draw")  # the strip shown to the user
STEP_OF_PHASE = {"acquire": 1, "compute": 2, "release": 3, "render": 4}
NEXT_PHASE = {"render": "acquire", "acquire": "compute", "compute": "release", "release": "render"}
PHASE_TITLE = {"acquire": "acquire", "compute": "kernel", "release": "release", "render": "GL draw"}

SPEC: dict[str, str] = {
    "render": "These objects need to be released before they can be used by OpenGL. (GL owns every shared "
              "object now: it may draw from them, upload into them, or delete them after CL released its "
              "memory objects.)",
    "acquire": "If an OpenGL context is bound to the current thread, then any OpenGL commands which 1. affect or "
               "access the contents of a memory object listed in the mem_objects list, and 2. were issued on that "
               "OpenGL context prior to the call to clEnqueueAcquireGLObjects will complete before execution of "
               "any OpenCL commands following the clEnqueueAcquireGLObjects which affect or access any of those "
               "memory objects.",
    "compute": "These objects need to be acquired before they can be used by any OpenCL commands queued to a "
               "command-queue or the behaviour is undefined. The OpenGL objects are acquired by the OpenCL context "
               "associated with command_queue and can therefore be used by all command-queues associated with the "
               "OpenCL context.",
    "release": "If an OpenGL context is bound to the current thread, then any OpenGL commands which 1. affect or "
               "access the contents of the memory objects listed in the mem_objects list, and 2. are issued on that "
               "context after the call to clEnqueueReleaseGLObjects will not execute until after execution of any "
               "OpenCL commands preceding the clEnqueueReleaseGLObjects which affect or access any of those memory "
               "objects.",
}

DOES: dict[str, dict[str, str]] = {  # what the backend did in the phase that just ran
    "host_copy": {
        "acquire": "host_copy: copied GL -> CL where GL changed the data since CL's last copy (write-only "
                   "objects: nothing to copy). Sync 'finish' waited in glFinish first.",
        "compute": "The kernel ran on CL's own buffers/images.",
        "release": "host_copy: copied CL's result into a mapped GL buffer (textures: a pixel-unpack buffer, then "
                   "glTexSubImage2D). Sync 'finish' waited in clFinish after.",
        "render": "GL drew the scene from the objects it owns again.",
    },
    "gl_sharing": {
        "acquire": "clEnqueueAcquireGLObjects: the driver hands the GL storage itself to CL (zero-copy).",
        "compute": "The kernel wrote into the GL object's storage.",
        "release": "clEnqueueReleaseGLObjects: the storage goes back to GL.",
        "render": "GL drew straight from the storage the kernel wrote.",
    },
    "external_memory": {
        "acquire": "clEnqueueAcquireExternalMemObjectsKHR on the Vulkan-exported memory GL and CL both imported.",
        "compute": "The kernel wrote into the shared device memory.",
        "release": "clEnqueueReleaseExternalMemObjectsKHR (textures: then GL copies the buffer into the texture).",
        "render": "GL drew from the imported memory.",
    },
}


class TeachingStepper:
    """Runs a frame phase by phase. Held by ``Runtime`` (``runtime.stepper``); while ``active`` the
    runtime is paused and each step request (``n``, right arrow, the panel's button) runs one phase."""

    def __init__(self) -> None:
        self.active = False
        self.last = "render"  # the phase that ran last; "render": between frames, GL owns everything
        self.visited: list[str] = []  # phases of the frame in progress (or of the last frame)
        self.history: collections.deque[tuple[int, str]] = collections.deque(maxlen=32)
        self.frame: int | None = None  # the frame in progress
        self._gen = None
        self._scheduler = None

    @property
    def mid_frame(self) -> bool:
        return self._gen is not None

    @property
    def next_phase(self) -> str:
        return NEXT_PHASE[self.last]

    # -- on / off -----------------------------------------------------------------------------
    def start(self, runtime) -> None:
        self.active = True
        runtime.paused = True

    def stop(self, runtime) -> None:
        """Leave teaching mode: the frame in progress is finished first, then the loop runs on."""
        self.finish_frame(runtime)
        self.active = False
        runtime.paused = False

    def toggle(self, runtime) -> None:
        self.stop(runtime) if self.active else self.start(runtime)

    # -- stepping -----------------------------------------------------------------------------
    def advance(self, scheduler, frame: int, render_target):
        """Run the next phase of ``scheduler``'s frame ``frame``.

        Returns:
            (phase, FrameRecord when this phase completed the frame, else None).
        Raises:
            whatever the phase raises under strict (the frame is then abandoned).
        """
        if self._gen is not None and self._scheduler is not scheduler:
            self._drop()  # the scheduler was replaced (switch): its frame went with it
        if self._gen is None:
            self._gen = scheduler.frame_phases(frame, render_target)
            self._scheduler, self.frame, self.visited = scheduler, frame, []
        try:
            phase = next(self._gen)
        except BaseException:
            self._drop()
            raise
        self.visited.append(phase)
        self.history.append((frame, phase))
        self.last = phase
        if phase != "render":
            return phase, None
        self._drop()
        return phase, scheduler.records[-1]

    def step(self, runtime):
        """``Runtime.step`` while teaching: one phase; the frame counter moves when a frame completes.
        Returns the completed FrameRecord or None."""
        _, rec = self.advance(runtime.scheduler, runtime.frame, runtime._render_target)
        if rec is not None:
            runtime.frame += 1
        elif runtime.surface.bind_target():
            self.idle_render(runtime.scene, runtime.surface.framebuffer_size)
        return rec

    def finish_frame(self, runtime) -> None:
        """Run the rest of the frame in progress, if any (before a switch, a teardown, leaving)."""
        while self._gen is not None and self._scheduler is runtime.scheduler and runtime.scheduler is not None:
            self.step(runtime)
        self._drop()

    def idle_render(self, scene, size) -> None:
        """What the paused loop draws: the scene, except in the middle of a stepped frame while CL
        owns a shared object (after the acquire, until the release): then only the background."""
        backend = getattr(scene, "backend", None)
        tracker = backend.tracker if backend is not None else None
        if self._gen is None or tracker is None or all(tracker.owner_of(o) != CL for o in scene.shared):
            scene.render(size)
            return
        from OpenGL import GL

        GL.glClearColor(0.08, 0.08, 0.10, 1.0)
        GL.glClear(GL.GL_COLOR_BUFFER_BIT)

    def _drop(self) -> None:
        gen, self._gen, self._scheduler = self._gen, None, None
        if gen is not None:
            gen.close()


def teaching_snapshot(runtime) -> dict:
    """Plain data for ``app/ui/teaching.py``: no GL or CL object crosses."""
    st: TeachingStepper | None = getattr(runtime, "stepper", None)
    if st is None:
        return {"active": False}
    backend = runtime.backend
    shared = list(runtime.scene.shared) if runtime.scene is not None else []
    tracker = backend.tracker if backend is not None else None
    objects = []
    for obj in shared:
        state = tracker.states.get(id(obj)) if tracker is not None else None
        objects.append({"label": obj.label, "kind": obj.kind, "owner": state.owner if state else "?",
                        "since_frame": state.since_frame if state else None,
                        "acquires": state.acquires if state else 0, "releases": state.releases if state else 0})
    last = st.last
    step_index = STEP_OF_PHASE[last] if (st.visited or st.mid_frame) else 0
    name = getattr(runtime, "backend_name", "") or (backend.name if backend else "")
    skip = sorted(runtime.scheduler.skip) if runtime.scheduler is not None else []
    return {
        "active": st.active, "paused": runtime.paused, "frame": st.frame if st.mid_frame else runtime.frame,
        "mid_frame": st.mid_frame, "last": last, "last_title": PHASE_TITLE[last] if step_index else "GL draw",
        "next": st.next_phase, "next_title": PHASE_TITLE[st.next_phase],
        "steps": list(STEPS), "step_index": step_index, "visited": list(st.visited),
        "objects": objects, "gl_may_draw": all(o["owner"] != CL for o in objects),
        "spec": SPEC[last], "next_spec": SPEC[st.next_phase],
        "does": DOES.get(name, DOES["host_copy"])[last] if step_index else "",
        "backend": name, "sync": runtime.cfg.sync, "skip": skip,
        "keys": {"t": "teaching mode on/off", "n / right arrow": "next phase"},
    }
