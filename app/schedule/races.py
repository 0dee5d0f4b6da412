"""Races found from the stamps: GL using a shared object before CL's release of it completed, and
CL using it before GL's last use of it completed.

The ownership tracker (app/validate/ownership.py) judges the calls in the order the CPU made them;
a sync mode that orders nothing (``--sync none``) makes every call in a legal order while the
devices run them out of it. The stamps show it: each frame's CL commands carry device START and END
stamps (``FrameRecord.cl_profile``) and its GL passes GL_TIMESTAMP stamps (``gl_passes``), both put
on the host clock (app/trace/clock.py, whose ``uncertainty_ns`` bounds the error of each offset).

- ``gl_before_release_complete``: a GL pass of the frame (the panel's own excepted: it draws no
  shared object) ran while CL held the frame's objects, after the acquire's START and before the
  release's END (5.5.15: "These objects need to be released before they can be used by OpenGL.");
- ``cl_before_gl_complete``: the frame's first CL command (the acquire, or the kernel where the
  acquire enqueued nothing) started before the previous frame's last GL pass ended (5.5.15: GL
  commands issued before the acquire "will complete before execution of any OpenCL commands
  following the clEnqueueAcquireGLObjects"; on the copying backends the acquire reads what GL wrote).

A race is reported only where the overlap is larger than the two clocks' uncertainty together.
What cannot be seen is said (``blind``): a frame not timed, a command without device stamps, a
batch stamped as one span (the release has no END of its own: the kernel's stands in), GL passes
not timed. A frame is checked once, when its CL stamps are read (RunHistory.harvested), so that
the panel, which folds a frame's findings once its CL events are read, counts what the report
counts; GL passes whose results come in later than that count as not timed (software GL times one
frame in a few and reads it later; ``--trace`` times every frame).
"""
from __future__ import annotations

from dataclasses import dataclass

from app.schedule.owners import BATCH, DEVICE, command_span
from app.validate.findings import SEED_GL, SPEC, Source
from app.validate.ownership import HazardFlag

GL_BEFORE_RELEASE = "gl_before_release_complete"
CL_BEFORE_GL = "cl_before_gl_complete"
UNUSED_BY_SCENE = ("gl panel",)  # GL passes that draw no shared object
_SECTION = ("5.5.15", "Acquiring, Releasing, and Synchronizing Access to Shared OpenCL/OpenGL Memory Objects")
SOURCES = {
    GL_BEFORE_RELEASE: Source("These objects need to be released before they can be used by OpenGL.", *_SECTION,
                              SEED_GL),
    CL_BEFORE_GL: Source("If an OpenGL context is bound to the current thread, then any OpenGL commands which affect "
                         "or access the contents of a memory object listed in the mem_objects list, and were issued "
                         "on that OpenGL context prior to the call to clEnqueueAcquireGLObjects will complete before "
                         "execution of any OpenCL commands following the clEnqueueAcquireGLObjects which affect or "
                         "access any of those memory objects.", *_SECTION, SEED_GL),
}
WHAT = {GL_BEFORE_RELEASE: "GL used the object before CL's release of it completed (seen in the stamps)",
        CL_BEFORE_GL: "CL used the object before GL's last use of it completed (seen in the stamps)"}


@dataclass
class RaceFlag(HazardFlag):
    """A race seen in the stamps: ``gl_ns`` and ``cl_ns`` the two intervals (host clock) that
    overlap, by ``overlap_ns`` (more than ``uncertainty_ns``, the clocks' error together)."""

    gl_ns: tuple[int, int] = (0, 0)
    cl_ns: tuple[int, int] = (0, 0)
    gl_what: str = ""
    cl_what: str = ""
    overlap_ns: int = 0
    uncertainty_ns: int = 0
    source_of_times: str = DEVICE

    def as_dict(self) -> dict:
        return {"case": self.case, "kind": self.kind, "label": self.label, "frame": self.frame, "where": self.where,
                "gl": {"what": self.gl_what, "start_ns": self.gl_ns[0], "end_ns": self.gl_ns[1]},
                "cl": {"what": self.cl_what, "start_ns": self.cl_ns[0], "end_ns": self.cl_ns[1]},
                "overlap_us": round(self.overlap_ns / 1e3, 3), "uncertainty_us": round(self.uncertainty_ns / 1e3, 3),
                "times": self.source_of_times}


def _flag(case: str, label: str, frame: int, where: str, gl, cl, overlap: int, unc: int, source: str) -> RaceFlag:
    src = SOURCES[case]
    return RaceFlag(case, label, frame, f"{src.text} ({src.section}; undefined)", where, SPEC,
                    "undefined", src, WHAT[case], gl_ns=(gl[1], gl[2]), cl_ns=(cl[1], cl[2]), gl_what=gl[0],
                    cl_what=cl[0], overlap_ns=overlap, uncertainty_ns=unc, source_of_times=source)


def _scene_passes(rec, gl_offset: int) -> list[tuple[str, int, int]]:
    return [(name, s + gl_offset, e + gl_offset) for name, s, e in rec.gl_passes if name not in UNUSED_BY_SCENE]


def _held_by_cl(rec) -> list[str]:
    """The objects CL held at some boundary of the frame."""
    return [label for k, label in enumerate(rec.owner_labels) if any(o[k] == "cl" for _b, _t, o in rec.owners)]


NOT_TIMED = "frame not timed"  # what a frame without stamps cannot show


@dataclass
class RaceCheck:
    """What the stamps of one frame showed: the races, and what they could not show (``blind``)."""

    races: list[RaceFlag]
    blind: tuple[str, ...] = ()
    checked: bool = True  # False: the frame handed nothing over (nothing to check)


def find_races(rec, prev, cl_offset: int, gl_offset: int, uncertainty_ns: int) -> RaceCheck:
    """The races of ``rec`` (and between ``prev``, the frame before it or None, and ``rec``)."""
    labels = _held_by_cl(rec)
    if not labels:
        return RaceCheck([], checked=False)
    if not rec.sampled:
        return RaceCheck([], (NOT_TIMED,))
    blind: list[str] = []
    races: list[RaceFlag] = []
    passes = _scene_passes(rec, gl_offset)
    first_cl = next((n for n in ("acquire", "compute") if n in rec.cl_profile), None)
    release = command_span(rec, "release", cl_offset) if "release" in rec.phases else None
    if not rec.gl_passes:
        blind.append("GL passes not timed")
    if release is None or release[2] not in (DEVICE, BATCH):
        blind.append("no device stamps for the release")
    elif first_cl is None:
        blind.append("no device stamps for the acquire or the kernel")
    elif passes:
        held_from = rec.cl_profile[first_cl][2] + cl_offset
        held = (f"{'acquire' if first_cl == 'acquire' else 'kernel'} start to release end", held_from, release[1])
        for gl in passes:
            overlap = min(gl[2], release[1]) - max(gl[1], held_from)
            if overlap > uncertainty_ns:
                compute = rec.phases.get("compute")
                where = "compute" if compute is not None and compute[0] <= gl[1] <= compute[1] else "render"
                races += [_flag(GL_BEFORE_RELEASE, label, rec.index, where, gl, held, overlap, uncertainty_ns,
                                release[2]) for label in labels]
                break  # one finding per object per frame: the first pass that raced
    if release is not None and release[2] == BATCH:
        blind.append("release stamped with its batch (the kernel's END stands in for its own)")
    if prev is not None and prev.index == rec.index - 1 and first_cl is not None:
        prev_passes = _scene_passes(prev, gl_offset)
        if prev_passes:
            last = max(prev_passes, key=lambda p: p[2])
            st, en = rec.cl_profile[first_cl][2] + cl_offset, rec.cl_profile[first_cl][3] + cl_offset
            overlap = last[2] - st
            if overlap > uncertainty_ns:
                cl = (f"{first_cl} command" if first_cl == "acquire" else "kernel", st, en)
                races += [_flag(CL_BEFORE_GL, label, rec.index, first_cl, last, cl, overlap, uncertainty_ns, DEVICE)
                          for label in labels]
        elif prev.sampled:
            blind.append("previous frame's GL passes not timed")
    return RaceCheck(races, tuple(blind))
