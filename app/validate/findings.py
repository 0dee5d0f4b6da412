"""Two kinds of finding, never mixed, and what ``--strict`` raises.

- A *spec violation* breaks a sentence of a specification text: either a listed error (the call
  returns a CL code, quoted with its section) or a requirement whose breach the text leaves
  undefined or implementation-defined (no CL code exists; glshare names none).
- *Advice* is glshare's own: a hand-over the specification allows but that is easy to get wrong
  (an acquire of an object CL already holds under cl_khr_gl_sharing, a release on another queue).
  Each piece of advice carries its reasoning and, where one exists, the real sentence it rests on.

Strict modes (``OwnershipTracker.strict``, ``FrameScheduler``; ``normalize_strict`` in app/config.py): ``"off"`` records everything and
raises nothing; ``"spec"`` (the CLI's ``--strict``) raises spec violations only; ``"all"``
(``--strict=all``) raises advice too. ``True`` means ``"all"`` and ``False`` ``"off"``: the
Python API's boolean always raised every flag, and tests written against it keep that meaning.
Only findings stop a run (``stops_on``): a failure that is not one (a CL or GL error, a failed
build or reload, a fault made on purpose) is recorded and the loop goes on, in every mode.
"""
from __future__ import annotations

from dataclasses import dataclass

from app.config import normalize_strict
from app.errors import HazardError, SpecViolation, ValidationError

SPEC, ADVICE = "spec", "advice"

# what breaking a rule leads to, in the words the texts use
ERROR_CODE = "the call fails with this code"
UNDEFINED = "undefined behaviour"
IMPLEMENTATION_DEFINED = "implementation-defined behaviour"
HAZARD = "allowed by the specification; glshare advises against it"

# Where the quotes come from. Section numbers of the OpenCL-Docs sources are counted from the
# headings of that commit (chapter 5 = opencl_runtime_layer.asciidoc, chapter 3 =
# opencl_architecture.asciidoc); the seed texts keep their own numbers (the seed's 5.5.15 is
# 5.5.13 when counted from the same source: rendered versions differ, the titles do not).
SEED_GL = "OpenCL 3.0 API, ../shared/spec/gl-acquire-release.txt"
SEED_AMD = "cl_amd_planar_yuv, ../shared/spec/cl_amd_planar_yuv.txt"
KHR_RUNTIME = "OpenCL API, KhronosGroup/OpenCL-Docs api/opencl_runtime_layer.asciidoc @1fb076b"
KHR_ARCH = "OpenCL API, KhronosGroup/OpenCL-Docs api/opencl_architecture.asciidoc @1fb076b"
KHR_APPENDIX_A = "OpenCL API, KhronosGroup/OpenCL-Docs api/appendix_a.asciidoc @1fb076b"


@dataclass(frozen=True)
class Source:
    """A verbatim English sentence of a specification and where it stands."""

    text: str
    section: str  # "5.5.15"
    title: str  # the section's title
    document: str  # one of the constants above

    def cite(self) -> str:
        return f"\"{self.text}\" ({self.section} {self.title}; {self.document})"


def raises(strict: object, kind: str) -> bool:
    """Whether a finding of ``kind`` is raised under ``strict`` (any form ``normalize_strict`` takes)."""
    mode = normalize_strict(strict)
    return mode == "all" or (mode == "spec" and kind == SPEC)


def is_finding(exc: BaseException) -> bool:
    """Whether ``exc`` is a finding of the validator or the tracker (ValidationError, SpecViolation,
    HazardError), as opposed to a failure (a CL or GL error, a failed build, a fault made on purpose)."""
    return isinstance(exc, (ValidationError, SpecViolation, HazardError))


def stops_on(strict: object, exc: BaseException) -> bool:
    """Whether ``--strict`` (``strict``, any form ``normalize_strict`` takes) stops the run on ``exc``:
    a finding whose kind the mode raises ("spec": spec violations; "all": advice too). Every other
    error is recorded and the loop goes on, whatever the mode."""
    return is_finding(exc) and raises(strict, getattr(exc, "kind", SPEC))
