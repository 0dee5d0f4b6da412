"""The frame's plan: its steps, each with what it calls, what it does to the owners and what a
failure of it does to the steps after it, and what a frame needs of one set of shared objects.

The steps (``STEPS``) are the same for every frame and every executor (app/schedule/executors.py);
the runner (app/schedule/runner.py) walks them in this order and applies their failure rules
(cl_khr_gl_sharing's bracket, ../shared/spec/gl-acquire-release.txt, 5.5.15: CL uses the objects
only between an acquire and its release):

- a failed sync wait before the acquire, or a failed acquire, skips the compute and the release
  (nothing changed hands: the objects stay GL's);
- a failed kernel still releases (what CL took is handed back);
- a failed release leaves the objects CL's (the draw is flagged for using them);
- the sync mode's part after the release runs wherever its part before the acquire was reached
  (each frame's pair of the sync's operations stays whole: a binary semaphore signalled again
  before its wait was flushed hangs the queue, Vulkan's vkQueueSubmit rule).

``FramePlan`` is built once per set of shared objects (one per copy of them where the scene keeps
copies: ``Scene.slots``), while the backend's objects are the same (``objects_version``).
"""
from __future__ import annotations

from dataclasses import dataclass

from app.validate.ownership import CL, GL


@dataclass(frozen=True)
class Step:
    name: str
    phase: str  # the record's phase it is timed in (``FrameRecord.phases``)
    calls: str  # what it calls
    owners: str  # the owners once it went through: "gl", "cl" or "" (unchanged)
    on_failure: str  # what its failure does to the steps after it


STEPS = (
    Step("sync before", "acquire", "the run-ahead bound, GL's side of the hand-over, SyncMode.before_acquire", "",
         "skips acquire, compute and release; sync after still runs unless before_acquire itself failed"),
    Step("acquire", "acquire", "clEnqueueAcquire*", CL, "skips compute and release; the objects stay GL's"),
    Step("compute", "compute", "the scene's kernel", "", "the release still runs"),
    Step("release", "release", "clEnqueueRelease*", GL, "the objects stay CL's; sync after still runs"),
    Step("sync after", "release", "SyncMode.after_release, GL's side of the hand-over", "", "recorded only"),
    Step("render", "render", "the scene's draw, the run-ahead fence, glGetError", "", "recorded only"),
)
FAILING_STEPS = ("sync before", "acquire", "compute", "release", "sync after")  # the CL side's


class FramePlan:
    """What a frame on one set of shared objects needs, looked up once: the tracker's states of the
    scene's shared objects (changed in place by acquire and release: a boundary's sample is one
    tuple of their owners) and their labels, the scene's uses then, whether every tracked object
    they use is a shared one (``covered``: the steady frame's uses cannot flag; else the uses are
    kept as None, which no scene's are), the owners' samples of its steady case (every object GL's, every one CL's) and its executor once made
    (``remembered``)."""

    __slots__ = ("key", "owned", "labels", "shared", "cl_uses", "gl_uses", "covered", "remembered", "gl_owns",
                 "cl_owns")

    def __init__(self, key: tuple, scene, handover) -> None:
        self.key = key  # (the backend's objects_version, the ids of the shared objects): held with them
        self.shared = list(scene.shared)
        self.owned = handover.states_of(self.shared)
        self.labels = tuple(s.label for s in self.owned)
        # the owners' sample where the steady case holds: every object GL's, or every one CL's
        self.gl_owns, self.cl_owns = (GL,) * len(self.owned), (CL,) * len(self.owned)
        self.cl_uses, self.gl_uses = scene.cl_uses, scene.gl_uses
        ids = {id(o) for o in self.shared}
        self.covered = all(id(o) in ids or not handover.tracks(o) for o in (*self.cl_uses, *self.gl_uses))
        if not self.covered:  # (no scene's list is None: the runner's check of the uses fails at once)
            self.cl_uses = self.gl_uses = None
        self.remembered = None
