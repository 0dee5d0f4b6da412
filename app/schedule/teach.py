"""Teaching mode: the frame one phase at a time, acquire -> compute -> release -> render, with the
same phase names as the panel's timeline.

``TeachingStepper`` drives ``FrameScheduler.frame_phases()`` by hand: each step runs exactly one
phase of the same code a normal frame runs, so stepping a frame through leaves the same result
as ``run_frame``; its record is marked ``stepped`` (the pauses between its phases are the user's,
kept out of the statistics). Between the steps the objects belong to whoever the last phase handed
them to; while CL owns them GL does not draw them (the screen shows a plain background).
``teaching_view`` is the read-only data ``app/ui/teaching.py`` draws: the phase strip, who owns
each object, what glshare did (the backend's own text, ``SharingBackend.teaching``, and a note of
its own), and the specification's words for the step, quoted and cited with the version of their
text from the family the backend is validated against (``SharingBackend.rule_set``): each family
registers its teaching texts (``app/validate/families.py``; GL sharing's in app/validate/gl.py,
whose acquire and release words depend on the sync mode: cl_khr_gl_event's paragraphs only under
gl_event).
"""
from __future__ import annotations

import collections
import logging
from dataclasses import dataclass
from typing import Mapping

from app.schedule.frame import PHASES
from app.validate import families
from app.validate.ownership import CL

log = logging.getLogger(__name__)

STEPS = PHASES  # the strip shown to the user: the timeline's names, in frame_phases()' order
STEP_OF_PHASE = {"acquire": 1, "compute": 2, "release": 3, "render": 4}
NEXT_PHASE = {"render": "acquire", "acquire": "compute", "compute": "release", "release": "render"}
# glshare's own explanation of each step, kept apart from the quotes
NOTES: dict[str, str] = {
    "acquire": "CL owns the objects now; the sync mode made GL's earlier work on them finish first.",
    "compute": "the kernel ran on objects CL owns (checked before the enqueue).",
    "release": "GL owns the objects again once the release completes; CL must not use them any more.",
    "render": "GL drew from the objects it owns; it may also upload into them, or delete them once CL released "
              "its memory objects.",
}
def quote(phase: str, rule_set: str = "gl_sharing", sync: str = "") -> str:
    """The specification's words for a step, from the family ``rule_set`` names, under ``sync``."""
    return families.get(rule_set).quote(phase, sync)[0]


def citation(phase: str, rule_set: str = "gl_sharing", sync: str = "") -> str:
    """Where a step's quote comes from: the text's version and section, and the entry point."""
    return families.get(rule_set).quote(phase, sync)[1]


class TeachingStepper:
    """Runs a frame phase by phase. Held by the session (``session.stepper``); while ``active`` the
    session is paused and each step request (``n``, right arrow, the panel's button) runs one phase."""

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
    def start(self) -> None:
        self.active = True

    def stop(self) -> None:
        """Leave teaching mode (the caller finishes the frame in progress first: ``finish_frame``)."""
        self.active = False

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
        starting = self._gen is None
        if starting:
            self._gen = scheduler.frame_phases(frame, render_target, stepped=True)
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

    def finish_frame(self, scheduler, frame: int, render_target) -> int:
        """Run the rest of the frame in progress, if any (before a switch, a teardown, leaving).
        Returns how many frames completed (0 or 1)."""
        done = 0
        while self._gen is not None and self._scheduler is scheduler and scheduler is not None:
            _, rec = self.advance(scheduler, frame, render_target)
            done += rec is not None
        self._drop()
        return done

    def covers(self, shared, owner_of) -> bool:
        """Whether GL must not draw ``shared`` now: mid-frame while CL owns one of them."""
        return self._gen is not None and any(owner_of(o) == CL for o in shared)

    def _drop(self) -> None:
        gen, self._gen, self._scheduler = self._gen, None, None
        if gen is not None:
            gen.close()


@dataclass(frozen=True)
class TeachingView:
    """What the teaching section shows (read-only)."""

    active: bool
    paused: bool
    frame: int
    mid_frame: bool
    last: str
    last_title: str
    next: str
    next_title: str
    steps: tuple[str, ...]
    step_index: int
    visited: tuple[str, ...]
    objects: tuple  # OwnerView rows
    gl_may_draw: bool
    spec: str  # the specification's words for the step just run (a quote)
    cite: str  # where they come from (section of the seed text, entry point)
    note: str  # glshare's own explanation of the step
    next_spec: str
    next_cite: str
    does: str  # what the backend did in the step (its own text)
    backend: str
    sync: str
    skip: tuple[str, ...]


def teaching_view(st: TeachingStepper, *, frame: int, paused: bool, objects: tuple, backend: str,
                  does: Mapping[str, str], sync: str, skip, rule_set: str = "gl_sharing") -> TeachingView:
    """The teaching section's data from the stepper and the owners of the shared objects; the quotes
    are those of ``rule_set``, the rules the backend follows."""
    last = st.last
    step_index = STEP_OF_PHASE[last] if (st.visited or st.mid_frame) else 0
    return TeachingView(
        active=st.active, paused=paused, frame=st.frame if step_index and st.frame is not None else frame,
        mid_frame=st.mid_frame,
        last=last, last_title=last, next=st.next_phase,
        next_title=st.next_phase, steps=STEPS, step_index=step_index, visited=tuple(st.visited),
        objects=objects, gl_may_draw=all(o.owner != CL for o in objects), spec=quote(last, rule_set, sync),
        cite=citation(last, rule_set, sync), note=NOTES[last], next_spec=quote(st.next_phase, rule_set, sync),
        next_cite=citation(st.next_phase, rule_set, sync),
        does=does.get(last, "") if step_index else "", backend=backend, sync=sync, skip=tuple(sorted(skip)))
