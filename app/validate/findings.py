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

# Where the quotes come from, each with the version of its text. The seed texts are OpenCL 3.0.16
# word for word; only 3.0.16 numbers the GL-sharing section 5.5.15 (3.0.17 onward renders the same
# heading 5.5.13), so 5.5.15 is cited with its version everywhere. Section numbers of the
# OpenCL-Docs sources at 1fb076b (v3.1.1 and 8 commits) are counted from that commit's headings
# (chapter 5 = opencl_runtime_layer.asciidoc, chapter 3 = opencl_architecture.asciidoc).
SEED_GL = "OpenCL 3.0.16 API, ../shared/spec/gl-acquire-release.txt"
SEED_AMD = "cl_amd_planar_yuv 1.0 (draft, 2018), ../shared/spec/cl_amd_planar_yuv.txt"
KHR_GL_3016 = "OpenCL 3.0.16 API, KhronosGroup/OpenCL-Docs api/opencl_runtime_layer.asciidoc @v3.0.16"
KHR_RUNTIME = "OpenCL API, KhronosGroup/OpenCL-Docs api/opencl_runtime_layer.asciidoc @1fb076b (v3.1.1+8)"
KHR_ARCH = "OpenCL API, KhronosGroup/OpenCL-Docs api/opencl_architecture.asciidoc @1fb076b (v3.1.1+8)"
KHR_APPENDIX_A = "OpenCL API, KhronosGroup/OpenCL-Docs api/appendix_a.asciidoc @1fb076b (v3.1.1+8)"
KHR_GL_SHARING = "cl_khr_gl_sharing, KhronosGroup/OpenCL-Docs api/cl_khr_gl_sharing.asciidoc @1fb076b"
# GL's semaphore calls on payloads CL shares (app/validate/semaphores.py, GL_RULES)
EXT_OBJECTS = "EXT_external_objects rev. 13, KhronosGroup/OpenGL-Registry extensions/EXT/EXT_external_objects.txt @305db78"
VK_SUBMIT = "Vulkan, KhronosGroup/Vulkan-Docs chapters/cmdbuffers.adoc @090f1b1"
# the version named wherever a quote is shown (``Source.version``)
VERSIONS = {SEED_GL: "OpenCL 3.0.16", KHR_GL_3016: "OpenCL 3.0.16", SEED_AMD: "cl_amd_planar_yuv 1.0",
            KHR_RUNTIME: "OpenCL-Docs @1fb076b", KHR_ARCH: "OpenCL-Docs @1fb076b",
            KHR_APPENDIX_A: "OpenCL-Docs @1fb076b", KHR_GL_SHARING: "OpenCL-Docs @1fb076b",
            EXT_OBJECTS: "EXT_external_objects rev. 13", VK_SUBMIT: "Vulkan-Docs @090f1b1"}
GL_SECTION = ("5.5.15", "Acquiring, Releasing, and Synchronizing Access to Shared OpenCL/OpenGL Memory Objects")
GL_SYNC_SECTION = ("5.5.15.1", "Synchronizing Access to Memory Objects Shared With EGL or OpenGL")


@dataclass(frozen=True)
class Source:
    """A verbatim English sentence of a specification and where it stands."""

    text: str
    section: str  # "5.5.15"
    title: str  # the section's title
    document: str  # one of the constants above

    @property
    def version(self) -> str:
        """The text's version, as shown beside the section ("OpenCL 3.0.16", "OpenCL-Docs @1fb076b")."""
        return VERSIONS.get(self.document, self.document)

    @property
    def where(self) -> str:
        """Section, title and version: "5.5.15 Acquiring, ... (OpenCL 3.0.16)"."""
        return f"{self.section} {self.title} ({self.version})"

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


@dataclass(frozen=True)
class Hazard:
    """One ownership case of one family: its kind, what it leads to, the sentence it rests on (None
    where no text speaks to it) and glshare's reasoning."""

    case: str
    kind: str  # SPEC or ADVICE
    consequence: str
    source: Source | None
    reasoning: str

    @property
    def spec(self) -> str:
        """The one line shown with a flag: the quote for a spec violation; reasoning and source for advice."""
        if self.kind == SPEC:
            return f"{self.source.text} ({self.source.section}, {self.source.version}; {self.consequence})"
        cite = f" Source: {self.source.cite()}" if self.source else ""
        return f"advice: {self.reasoning}{cite}"
