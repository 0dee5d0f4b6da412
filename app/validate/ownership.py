"""Who owns each shared object (GL or CL), and what breaking the hand-over is: spec or advice.

The tracker sees the hand-overs the validator lets through and every use the scheduler reports
(``cl_use`` before a kernel, ``gl_use`` before a draw or upload). Each case is classified per call
family (``app/validate/findings.py``), with its sentence and section:

| case | gl_sharing (5.5.15, seed) | external_memory (5.5.1.1) |
| --- | --- | --- |
| use_without_acquire | spec: undefined behaviour | spec: undefined behaviour |
| gl_use_while_acquired | spec: a requirement, no consequence given (undefined) | spec: undefined behaviour |
| double_acquire | advice: 5.5.15 does not forbid it | spec: implementation-defined |
| release_without_acquire | advice | spec: implementation-defined |
| release_on_other_queue | advice: allowed ("can therefore be used by all command-queues") | advice: allowed |
| delete_gl_while_shared | advice: the delete is allowed, later CL use is undefined (3.3.4) | advice |

Every finding is recorded (``flags``, ``counts``) and shown in the panel; ``strict`` ("off",
"spec", "all"; True = "all") decides which are raised as HazardError.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.errors import HazardError
from app.validate.findings import (
    ADVICE,
    HAZARD,
    IMPLEMENTATION_DEFINED,
    KHR_ARCH,
    KHR_RUNTIME,
    SEED_GL,
    SPEC,
    UNDEFINED,
    Source,
    normalize_strict,
    raises,
)
from app.validate.liveness import REGISTRY

GL, CL = "gl", "cl"
FAMILIES = ("gl_sharing", "external_memory")


@dataclass(frozen=True)
class Hazard:
    """One case of one family: its kind, what it leads to, the sentence it rests on (None where
    no text speaks to it) and glshare's reasoning."""

    case: str
    kind: str  # SPEC or ADVICE
    consequence: str
    source: Source | None
    reasoning: str

    @property
    def spec(self) -> str:
        """The one line shown with a flag: the quote for a spec violation; reasoning and source for advice."""
        if self.kind == SPEC:
            return f"{self.source.text} ({self.source.section}; {self.consequence})"
        cite = f" Source: {self.source.cite()}" if self.source else ""
        return f"advice: {self.reasoning}{cite}"


def _gl(text: str) -> Source:
    return Source(text, "5.5.15", "Acquiring, Releasing, and Synchronizing Access to Shared OpenCL/OpenGL Memory "
                  "Objects", SEED_GL)


def _em(text: str) -> Source:
    return Source(text, "5.5.1.1", "Acquiring and Releasing External Memory Objects", KHR_RUNTIME)


_GL_LIFETIME = Source(
    "If the OpenGL object is deleted through the OpenGL API (e.g. glDeleteBuffers, glDeleteTextures, or "
    "glDeleteRenderbuffers), subsequent use of the OpenCL buffer or image object will result in undefined "
    "behavior, including but not limited to possible OpenCL errors and data corruption, but may not result in "
    "program termination.", "3.3.4", "Lifetime of Shared OpenCL/OpenGL Memory Objects", KHR_ARCH)
_GL_ALL_QUEUES = _gl("The OpenGL objects are acquired by the OpenCL context associated with command_queue and can "
                     "therefore be used by all command-queues associated with the OpenCL context.")
_ORDERING = ("a release on another queue does not wait for the commands of the queue that acquired the object and "
             "ran the kernels (an in-order queue orders only its own commands), so GL may get the object before "
             "those commands finish; pass the last command's event in the release's wait list, or release on the "
             "acquiring queue")

HAZARDS_BY_FAMILY: dict[str, dict[str, Hazard]] = {
    "gl_sharing": {
        "use_without_acquire": Hazard("use_without_acquire", SPEC, UNDEFINED, _gl(
            "These objects need to be acquired before they can be used by any OpenCL commands queued to a "
            "command-queue or the behaviour is undefined."),
            "a CL command used a shared object GL still owns"),
        "double_acquire": Hazard("double_acquire", ADVICE, HAZARD, None,
            "5.5.15 does not forbid acquiring an object CL already holds (the seed has no sentence on it; "
            "cl_khr_external_memory forbids it for its objects, 5.5.1.1); glshare flags it because the bracket "
            "is unbalanced: the first release hands the object to GL while the second acquirer still uses it"),
        "release_without_acquire": Hazard("release_without_acquire", ADVICE, HAZARD, None,
            "5.5.15 neither forbids nor lists an error for releasing an object CL does not hold (the seed has no "
            "sentence on it; cl_khr_external_memory forbids it for its objects, 5.5.1.1); glshare flags it "
            "because a release without its acquire means the program's idea of who owns the object is wrong"),
        "release_on_other_queue": Hazard("release_on_other_queue", ADVICE, HAZARD, _GL_ALL_QUEUES, _ORDERING),
        "gl_use_while_acquired": Hazard("gl_use_while_acquired", SPEC,
            "undefined: the text states the requirement and no consequence", _gl(
            "These objects need to be released before they can be used by OpenGL."),
            "GL used a shared object CL still owns"),
        "delete_gl_while_shared": Hazard("delete_gl_while_shared", ADVICE, HAZARD, _GL_LIFETIME,
            "deleting the GL object is allowed and the seed (5.5.15) says nothing about it; any later use of "
            "the CL object is undefined (3.3.4), so glshare releases the CL object first, leaving nothing that "
            "could use it"),
    },
    "external_memory": {
        "use_without_acquire": Hazard("use_without_acquire", SPEC, UNDEFINED, _em(
            "Behavior is undefined if a memory object created from an external memory handle is used by an "
            "OpenCL command queued to a command-queue without being acquired."),
            "a CL command used an imported object that was not acquired"),
        "double_acquire": Hazard("double_acquire", SPEC, IMPLEMENTATION_DEFINED, _em(
            "Each memory object must be acquired only once. Acquiring a memory object multiple times without "
            "releasing it results in implementation-defined behavior."),
            "an object CL holds was acquired again; NVIDIA's driver (580, H200) nests the acquisitions, each "
            "needing its own release, and destroying the context with one outstanding hung there: glshare "
            "hands back every one when the demonstration ends and before a backend closes"),
        "release_without_acquire": Hazard("release_without_acquire", SPEC, IMPLEMENTATION_DEFINED, _em(
            "Each memory object must be released only once. Releasing a memory object multiple times without "
            "acquiring it results in implementation-defined behavior."),
            "a release of an object CL does not hold; glshare applies the sentence to a never-acquired object "
            "too: imported memory starts outside OpenCL, as if released"),
        "release_on_other_queue": Hazard("release_on_other_queue", ADVICE, HAZARD, _em(
            "If CL_MEM_DEVICE_HANDLE_LIST_KHR was not specified, the release can be performed on a command-queue "
            "associated with any device in the context."), _ORDERING),
        "gl_use_while_acquired": Hazard("gl_use_while_acquired", SPEC, UNDEFINED, _em(
            "Applications must release memory objects that were acquired using clEnqueueReleaseExternalMemObjectsKHR "
            "before using any external memory handles that were specified when the memory objects were created or "
            "accessing the external memory that these handles represent outside of OpenCL, otherwise behavior is "
            "undefined."),
            "GL accessed imported memory CL still holds"),
        "delete_gl_while_shared": Hazard("delete_gl_while_shared", ADVICE, HAZARD, Source(
            "The imported memory object holds a reference to its payload.", "5.5.2.1",
            "File Descriptor Handle Types", KHR_RUNTIME),
            "harmless to CL here (the CL import keeps the payload alive), but a GL object deleted while CL may "
            "still write the memory leaves GL's side of the hand-over undefined; glshare keeps one teardown order "
            "on every backend: CL object first"),
    },
}
HAZARDS: dict[str, Hazard] = HAZARDS_BY_FAMILY["gl_sharing"]  # the case names (the same in every family)


@dataclass(slots=True)
class Ownership:
    label: str
    owner: str = GL
    since_frame: int = 0
    queue: Any = None  # the queue that acquired it
    acquires: int = 0
    releases: int = 0
    # acquire calls not yet matched by a release call. A driver may nest acquisitions: NVIDIA's
    # (580, H200) does, and destroying a context whose imported memory is still acquired hangs there
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
        if family not in HAZARDS_BY_FAMILY:
            raise ValueError(f"unknown family {family!r} (one of {', '.join(FAMILIES)})")
        self.strict = strict
        self.family = family
        self.hazards = HAZARDS_BY_FAMILY[family]
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
