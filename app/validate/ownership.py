"""Who owns each shared object (GL or CL), and what breaking the hand-over is: spec or advice.

The tracker sees the hand-overs the validator lets through and every use the scheduler reports
(``cl_use`` before a kernel, ``gl_use`` before a draw or upload). Each case is classified per call
family (each family's module registers its hazards: ``app/validate/families.py``), with its
sentence and section:

| case | gl_sharing (OpenCL 3.0.16, 5.5.15) | external_memory (5.5.1.1) |
| --- | --- | --- |
| use_without_acquire | spec: undefined behaviour | spec: undefined behaviour |
| gl_use_while_acquired | spec: undefined behaviour (5.5.15.1) | spec: undefined behaviour |
| double_acquire | advice: 5.5.15 does not forbid it | spec: implementation-defined |
| release_without_acquire | advice (5.5.15.1: CL access after the release is undefined) | spec: implementation-defined |
| release_on_other_queue | advice: allowed ("can therefore be used by all command-queues") | advice: allowed |
| delete_gl_while_shared | advice: the delete is allowed (Issue 3: the data store stays), later CL use is undefined (3.3.4) | advice |

Every finding is recorded (``flags``, ``counts``) and shown in the panel; ``strict`` ("off",
"spec", "all"; True = "all") decides which are raised as HazardError.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.errors import HazardError
from app.validate import families
from app.validate.findings import ADVICE, Hazard, Source, normalize_strict, raises
from app.validate.liveness import REGISTRY

GL, CL = "gl", "cl"
__all__ = ["CL", "GL", "Hazard", "OwnershipTracker"]  # each family's hazards: app/validate/families.py




@dataclass(slots=True)
class Ownership:
    label: str
    owner: str = GL
    since_frame: int = 0
    queue: Any = None  # the queue that acquired it
    acquires: int = 0
    releases: int = 0
    # acquire calls not yet matched by a release call. A driver may nest acquisitions: NVIDIA's
    # driver 580 does, and destroying a context whose imported memory is still acquired hangs there
    # (bench/probes/gpu_hazard_demos_probe.py); ``SharingBackend.hand_back`` releases them all
    depth: int = 0


@dataclass
class HazardFlag:
    """One finding of the tracker (the report and the panel keep ``case``, ``label``, ``frame``,
    ``spec`` and ``where``; ``kind``, ``consequence``, ``source`` and ``reasoning`` say which kind
    it is and why)."""

    case: str
    label: str
    frame: int
    spec: str
    where: str
    kind: str = ADVICE
    consequence: str = ""
    source: Source | None = None
    reasoning: str = ""

    def as_dict(self) -> dict:
        return {"case": self.case, "label": self.label, "frame": self.frame, "where": self.where, "kind": self.kind,
                "consequence": self.consequence, "spec": self.spec, "reasoning": self.reasoning,
                "source": self.source.cite() if self.source else None}


class OwnershipTracker:
    """Ownership of every shared object, and the findings of breaking the hand-over.

    Args:
        strict: "off", "spec" or "all" (True = "all", False = "off"): which findings raise.
        family: the backend's rule set ("gl_sharing" or "external_memory").
    """

    def __init__(self, strict: object = "off", family: str = "gl_sharing", frame: int = 0) -> None:
        if family not in families.rule_sets():
            raise ValueError(f"unknown family {family!r} (one of {', '.join(families.rule_sets())})")
        self.strict = strict
        self.family = family
        self.hazards = families.get(family).hazards
        self.frame = frame
        self.states: dict[int, Ownership] = {}  # id(shared object) -> state
        self.flags: list[HazardFlag] = []
        self.counts: dict[str, int] = {}

    @property
    def strict(self) -> str:
        return self._strict

    @strict.setter
    def strict(self, value: object) -> None:
        self._strict = normalize_strict(value)

    def add(self, obj) -> None:
        self.states[id(obj)] = Ownership(obj.label, since_frame=self.frame)

    def remove(self, obj) -> None:
        """``obj`` is no longer shared; its CL memory object is about to be released."""
        self.states.pop(id(obj), None)
        mem = getattr(obj, "mem", None)
        if mem is not None:
            REGISTRY.released(mem)  # the validator refuses it from now on (CL_INVALID_MEM_OBJECT)

    def state(self, obj) -> Ownership:
        return self.states[id(obj)]

    def _flag(self, case: str, label: str, where: str, first: HazardError | None) -> HazardError | None:
        """Record a finding; returns the error to raise once the call's bookkeeping is done: ``first``
        where there is one already, else this finding's HazardError where ``strict`` raises its kind,
        else None. The transitions raise only after every object's state is updated: the driver
        acquired or released them all, and a teardown must not hand them over a second time."""
        h = self.hazards[case]
        flag = HazardFlag(case, label, self.frame, h.spec, where, h.kind, h.consequence, h.source, h.reasoning)
        self.flags.append(flag)
        del self.flags[:-256]
        self.counts[case] = self.counts.get(case, 0) + 1
        if first is None and raises(self._strict, h.kind):
            return HazardError(case, label, h.spec, where=where, kind=h.kind)
        return first

    # -- transitions ------------------------------------------------------------------------
    def acquired(self, objects, queue) -> None:
        """Every object in ``objects`` is CL's now; then the first finding that ``strict`` raises."""
        err = None
        for obj in objects:
            st = self.states.get(id(obj))
            if st is None:
                continue
            if st.owner == CL:
                err = self._flag("double_acquire", st.label, "acquire", err)
            st.owner, st.since_frame, st.queue = CL, self.frame, queue
            st.acquires += 1
            st.depth += 1
        if err is not None:
            raise err

    def released(self, objects, queue) -> None:
        """Every object in ``objects`` is GL's now; then the first finding that ``strict`` raises."""
        err = None
        for obj in objects:
            st = self.states.get(id(obj))
            if st is None:
                continue
            if st.owner != CL:
                err = self._flag("release_without_acquire", st.label, "release", err)
            elif st.queue is not None and queue is not st.queue and queue != st.queue:
                err = self._flag("release_on_other_queue", st.label, "release", err)
            st.owner, st.since_frame, st.queue = GL, self.frame, None
            st.releases += 1
            if st.depth:
                st.depth -= 1
        if err is not None:
            raise err

    # -- the steady frame's transitions (FrameScheduler's steady frame) ------------------------
    def gl_owns_all(self, states) -> bool:
        """Every state in ``states`` (the tracker's, of shared objects) is GL's with no acquisition
        outstanding: the case in which ``acquired`` and then ``released`` on one queue can flag nothing."""
        for st in states:
            if st.owner != GL or st.depth:
                return False
        return True

    def acquired_states(self, states, queue) -> None:
        """``acquired`` of the objects whose states these are, where ``gl_owns_all(states)`` held:
        the same transition, with nothing to look up or flag (no double acquire is possible)."""
        frame = self.frame
        for st in states:
            st.owner, st.since_frame, st.queue = CL, frame, queue
            st.acquires += 1
            st.depth += 1

    def released_states(self, states) -> None:
        """``released`` of the same objects on the queue that ``acquired_states`` named: the same
        transition, nothing to flag (each is CL's, acquired on that queue)."""
        frame = self.frame
        for st in states:
            st.owner, st.since_frame, st.queue = GL, frame, None
            st.releases += 1
            st.depth -= 1

    def handed_over_states(self, states) -> None:
        """``acquired_states`` then ``released_states`` in one pass, for a frame whose acquire and
        release both went through with nothing of glshare's between them (the native executor's one
        call, app/schedule/executors.py): the same end state of each, GL's again."""
        frame = self.frame
        for st in states:
            st.since_frame = frame  # (owner GL, queue None and depth 0 before, as after: gl_owns_all)
            st.acquires += 1
            st.releases += 1

    def handed_back(self, objects, *, all_of_them: bool = False) -> None:
        """One release call reached the driver for ``objects`` to match an acquisition left
        unmatched (``SharingBackend.hand_back``); ``all_of_them``: it matched them all (a hand-over
        that does not nest). GL's again once nothing is outstanding; nothing is flagged."""
        for obj in objects:
            st = self.states.get(id(obj))
            if st is None or not st.depth:
                continue
            st.releases += 1  # release calls, as the transitions count them
            st.depth -= st.depth if all_of_them else 1
            if not st.depth:
                st.owner, st.since_frame, st.queue = GL, self.frame, None

    def unreleased(self, obj) -> int:
        """Acquire calls on ``obj`` that no release call matched yet (0 for an object not tracked)."""
        st = self.states.get(id(obj))
        return st.depth if st is not None else 0

    # -- uses -------------------------------------------------------------------------------
    def cl_use(self, objects, where: str = "kernel") -> None:
        """Every use flagged (one flag per object), then the first finding that ``strict`` raises."""
        err = None
        for obj in objects:
            st = self.states.get(id(obj))
            if st is not None and st.owner != CL:
                err = self._flag("use_without_acquire", st.label, where, err)
        if err is not None:
            raise err

    def gl_use(self, objects, where: str = "draw") -> None:
        """Every use flagged (one flag per object), then the first finding that ``strict`` raises."""
        err = None
        for obj in objects:
            st = self.states.get(id(obj))
            if st is not None and st.owner == CL:
                err = self._flag("gl_use_while_acquired", st.label, where, err)
        if err is not None:
            raise err

    def gl_delete(self, obj, where: str = "glDelete") -> None:
        """Called before a GL object that is still shared is deleted."""
        st = self.states.get(id(obj))
        if st is not None:
            err = self._flag("delete_gl_while_shared", st.label, where, None)
            if err is not None:
                raise err

    def owner_of(self, obj) -> str | None:
        st = self.states.get(id(obj))
        return st.owner if st is not None else None

    def flagged(self, case: str) -> int:
        """How many times ``case`` was flagged."""
        return self.counts.get(case, 0)
