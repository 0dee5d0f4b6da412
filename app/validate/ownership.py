"""Who owns each shared object (GL, CL, or in transition) and the hazards of breaking the hand-over.

Each hazard carries the spec sentence it breaks (../shared/spec/gl-acquire-release.txt, 5.5.15).
Flags are recorded and shown in the panel; with ``strict`` they raise HazardError.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.errors import HazardError
from app.validate.spec import retire

GL, CL = "gl", "cl"

HAZARDS: dict[str, str] = {
    "use_without_acquire": "These objects need to be acquired before they can be used by any OpenCL commands "
                           "queued to a command-queue or the behaviour is undefined.",
    "double_acquire": "The OpenGL objects are acquired by the OpenCL context associated with command_queue: an "
                      "object CL already holds was acquired again, so the next release hands GL an object CL may still use.",
    "release_without_acquire": "These objects need to be acquired before they can be used by any OpenCL commands; "
                               "a release of an object CL never acquired has no acquire to pair with.",
    "release_on_other_queue": "GL commands issued after clEnqueueReleaseGLObjects will not execute until after execution "
                              "of any OpenCL commands preceding the clEnqueueReleaseGLObjects: 'preceding' is per queue, so a "
                              "release on another queue does not order the commands of the queue that used the object.",
    "gl_use_while_acquired": "These objects need to be released before they can be used by OpenGL.",
    "delete_gl_while_shared": "A CL memory object made from a GL object refers to that GL object's storage: deleting the "
                              "GL object while the CL memory object exists leaves CL with storage GL may reuse "
                              "(cl_khr_gl_sharing, creating CL objects from GL objects; release the CL object first).",
}


@dataclass
class Ownership:
    label: str
    owner: str = GL
    since_frame: int = 0
    queue: Any = None  # the queue that acquired it
    acquires: int = 0
    releases: int = 0


@dataclass
class HazardFlag:
    case: str
    label: str
    frame: int
    spec: str
    where: str


@dataclass
class OwnershipTracker:
    strict: bool = False
    frame: int = 0
    states: dict[int, Ownership] = field(default_factory=dict)  # id(shared object) -> state
    flags: list[HazardFlag] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def add(self, obj) -> None:
        self.states[id(obj)] = Ownership(obj.label, since_frame=self.frame)

    def remove(self, obj) -> None:
        """``obj`` is no longer shared; its CL memory object is about to be released."""
        self.states.pop(id(obj), None)
        mem = getattr(obj, "mem", None)
        if mem is not None:
            retire(mem)  # the validator refuses it from now on (CL_INVALID_MEM_OBJECT)

    def state(self, obj) -> Ownership:
        return self.states[id(obj)]

    def _flag(self, case: str, label: str, where: str) -> None:
        flag = HazardFlag(case, label, self.frame, HAZARDS[case], where)
        self.flags.append(flag)
        del self.flags[:-256]
        self.counts[case] = self.counts.get(case, 0) + 1
        if self.strict:
            raise HazardError(case, label, HAZARDS[case], where=where)

    # -- transitions ------------------------------------------------------------------------
    def acquired(self, objects, queue) -> None:
        for obj in objects:
            st = self.states.get(id(obj))
            if st is None:
                continue
            if st.owner == CL:
                self._flag("double_acquire", st.label, "acquire")
            st.owner, st.since_frame, st.queue = CL, self.frame, queue
            st.acquires += 1

    def released(self, objects, queue) -> None:
        for obj in objects:
            st = self.states.get(id(obj))
            if st is None:
                continue
            if st.owner != CL:
                self._flag("release_without_acquire", st.label, "release")
            elif st.queue is not None and queue is not st.queue and queue != st.queue:
                self._flag("release_on_other_queue", st.label, "release")
            st.owner, st.since_frame, st.queue = GL, self.frame, None
            st.releases += 1

    # -- uses -------------------------------------------------------------------------------
    def cl_use(self, objects, where: str = "kernel") -> None:
        for obj in objects:
            st = self.states.get(id(obj))
            if st is not None and st.owner != CL:
                self._flag("use_without_acquire", st.label, where)

    def gl_use(self, objects, where: str = "draw") -> None:
        for obj in objects:
            st = self.states.get(id(obj))
            if st is not None and st.owner == CL:
                self._flag("gl_use_while_acquired", st.label, where)

    def gl_delete(self, obj, where: str = "glDelete") -> None:
        """Called before a GL object that is still shared is deleted."""
        st = self.states.get(id(obj))
        if st is not None:
            self._flag("delete_gl_while_shared", st.label, where)

    def owner_of(self, obj) -> str | None:
        st = self.states.get(id(obj))
        return st.owner if st is not None else None

    def flagged(self, case: str) -> int:
        """How many times ``case`` was flagged."""
        return self.counts.get(case, 0)

    def snapshot(self) -> list[dict]:
        return [{"label": s.label, "owner": s.owner, "since_frame": s.since_frame,
                 "acquires": s.acquires, "releases": s.releases} for s in self.states.values()]
