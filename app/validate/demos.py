"""The hazard demonstrations of the window: break the hand-over on purpose, see what it does.

Four toggles (keys 1-4, and the lab tab's buttons): skip the acquire, skip the release (both
``FrameScheduler.skip``), drop the glFinish/clFinish (sync mode ``none``), and delete a GL object
before its CL memory object. The tracker's flag shows in the panel beside the consequence;
under ``--strict`` the first flag is raised as HazardError and the run stops with that one line.
``EFFECTS`` says what the user sees on each backend (the panel and the README quote it).
"""
from __future__ import annotations

import logging

log = logging.getLogger(__name__)

KEYS: dict[str, str] = {"1": "skip_acquire", "2": "skip_release", "3": "sync_none", "4": "wrong_delete_order"}
TITLES: dict[str, str] = {"skip_acquire": "skip the acquire", "skip_release": "skip the release",
                          "sync_none": "skip glFinish/clFinish (sync none)",
                          "wrong_delete_order": "delete GL before CL (once)"}
FLAGS: dict[str, str] = {  # the tracker's cases each demonstration sets off
    "skip_acquire": "use_without_acquire every frame, release_without_acquire at every release",
    "skip_release": "gl_use_while_acquired at every draw, double_acquire at every acquire",
    "sync_none": "nothing: the tracker checks who owns an object, not whether the other side finished with it",
    "wrong_delete_order": "delete_gl_while_shared, once",
}
STRICT = ("With --strict the first flag is raised (HazardError): the run stops with "
          "'glshare: error: <phase>: <case> on <object>: <spec sentence>' and exit status 1.")

EFFECTS: dict[str, dict[str, str]] = {
    "skip_acquire": {
        "host_copy": "Nothing changes on screen. host_copy's acquire only copies GL -> CL when GL changed the "
                     "data (particles: once, at build; the image is write-only), so CL's copy is already current: "
                     "the mistake is invisible here, which is why the flag matters.",
        "gl_sharing": "Undefined behaviour ('These objects need to be acquired before they can be used by any "
                      "OpenCL commands ... or the behaviour is undefined'): many drivers keep drawing normally, "
                      "others show stale or torn frames or fail the kernel; GL's pending work is no longer ordered "
                      "before the kernel.",
        "external_memory": "The kernel runs on memory whose ownership never moved to CL: on NVIDIA the frame "
                           "usually still looks right, but nothing orders GL's last draw before the kernel, so "
                           "stale or torn frames are possible.",
    },
    "skip_release": {
        "host_copy": "Frozen frame: the release is where host_copy copies CL's result into the GL buffer or "
                     "texture, so GL keeps drawing the last released data while the kernel runs on in CL. "
                     "Turn it off and the animation jumps to where CL got to.",
        "gl_sharing": "GL draws objects CL still owns (undefined): with shared storage the picture often keeps "
                      "moving, but GL's reads are not ordered after the kernel: torn or stale frames.",
        "external_memory": "GL reads memory CL never released: no ownership transfer back, so GL may see stale "
                           "data or a half-written frame; the image scene's buffer -> texture copy still runs.",
    },
    "sync_none": {
        "host_copy": "No visible change: host_copy's copies are blocking (enqueue_copy into a mapped GL buffer "
                     "waits for both sides), so they synchronise by themselves; the frame time drops by the "
                     "glFinish/clFinish waits (see the timeline).",
        "gl_sharing": "Without glFinish before the acquire (and no cl_khr_gl_event) the spec's ordering does not "
                      "hold: GL commands may still run when the kernel starts, and GL may draw before the kernel "
                      "ends: torn or stale frames where the driver does not synchronise implicitly.",
        "external_memory": "Nothing orders GL and CL on the shared memory: GL may draw while the kernel writes: "
                           "torn particles or image bands, flicker.",
    },
    "wrong_delete_order": {
        "host_copy": "A scratch shared buffer is made and its GL object deleted before its CL memory object. "
                     "Nothing on screen changes (the scene's objects are untouched); host_copy's CL buffer is "
                     "its own storage, so nothing breaks - the flag is the lesson.",
        "gl_sharing": "As above, but the CL memory object now refers to storage GL may reuse: a kernel using it "
                      "would write into whatever GL allocates there next.",
        "external_memory": "As above; the imported payload stays alive while CL's import holds it, but the GL "
                           "object that names it is gone.",
    },
}


class HazardDemos:
    """The window's toggles. Skips live on the scheduler (a switch of scene, backend or sync mode
    makes a new scheduler and so turns them off), except across the sync-none toggle itself."""

    def __init__(self) -> None:
        self.sync_before_none = "finish"
        self.deletes = 0
        self.last = ""  # the last demonstration started, for the panel

    def handle(self, runtime, key: str) -> bool:
        """Run the demonstration bound to ``key``; False when the key is not one of ours."""
        demo = KEYS.get(key)
        if demo is None:
            return False
        self.toggle(runtime, demo)
        return True

    def toggle(self, runtime, demo: str) -> None:
        sched = runtime.scheduler
        if sched is None:
            return
        self.last = demo
        if demo in ("skip_acquire", "skip_release"):
            sched.skip ^= {demo.split("_", 1)[1]}
            log.info("hazard demo: skip %s", sorted(sched.skip))
        elif demo == "sync_none":
            skip = set(sched.skip)
            if runtime.cfg.sync != "none":
                self.sync_before_none = runtime.cfg.sync
                runtime.switch(sync="none")
            else:
                runtime.switch(sync=self.sync_before_none or "finish")
            if runtime.scheduler is not None:
                runtime.scheduler.skip |= skip
        elif demo == "wrong_delete_order":
            self.wrong_delete_order(runtime.backend, runtime.frame)

    def wrong_delete_order(self, backend, frame: int) -> None:
        """A scratch shared buffer deleted GL-first: flags delete_gl_while_shared on ``frame`` (the
        frame about to run, so its record carries the flag). Raises HazardError under strict."""
        obj = backend.create_buffer("demo.delete_order", 256)
        backend.tracker.frame = frame
        self.deletes += 1
        try:
            backend.delete_gl_first(obj)
        finally:
            backend.destroy(obj)  # idempotent: whatever delete_gl_first did not get to

    def state(self, runtime) -> dict:
        """Plain data for the panel: which toggles are on and what they do on this backend."""
        sched, backend = runtime.scheduler, getattr(runtime, "backend_name", "")
        skip = sched.skip if sched is not None else set()
        on = {"skip_acquire": "acquire" in skip, "skip_release": "release" in skip,
              "sync_none": runtime.cfg.sync == "none", "wrong_delete_order": False}
        tracker = runtime.backend.tracker if runtime.backend is not None else None
        return {
            "backend": backend, "strict": bool(runtime.cfg.strict), "deletes": self.deletes, "last": self.last,
            "demos": [{"demo": d, "key": k, "title": TITLES[d], "on": on[d], "flags": FLAGS[d],
                       "effect": EFFECTS[d].get(backend, EFFECTS[d]["host_copy"])} for k, d in KEYS.items()],
            "hazard_counts": dict(tracker.counts) if tracker is not None else {},
            "strict_text": STRICT,
        }
