"""One error family for glshare: every error carries its context (code, CL name, spec meaning, where).

CL error names follow the Khronos headers. A code's meaning is generic (what the code says in any
call); where a call's own error list gives the code a meaning of its own, ``CALL_MEANINGS`` holds
it for that call only: clEnqueueAcquireGLObjects / clEnqueueReleaseGLObjects quote OpenCL 3.0.16's
section 5.5.15 (../shared/spec/gl-acquire-release.txt).
"""
from __future__ import annotations

import sys

# code -> (name, generic meaning). Names are the Khronos headers' (tests/test_error_codes.py checks
# every one against Debian's opencl-headers); no meaning names one call's arguments.
CL_ERRORS: dict[int, tuple[str, str]] = {
    0: ("CL_SUCCESS", "the call was executed successfully"),
    -1: ("CL_DEVICE_NOT_FOUND", "no device matched"),
    -2: ("CL_DEVICE_NOT_AVAILABLE", "the device is not available"),
    -3: ("CL_COMPILER_NOT_AVAILABLE", "no compiler for this device"),
    -4: ("CL_MEM_OBJECT_ALLOCATION_FAILURE", "failed to allocate memory for a memory object"),
    -5: ("CL_OUT_OF_RESOURCES", "failure to allocate resources required by the OpenCL implementation on the device"),
    -6: ("CL_OUT_OF_HOST_MEMORY", "failure to allocate resources required by the OpenCL implementation on the host"),
    -7: ("CL_PROFILING_INFO_NOT_AVAILABLE", "profiling information is not available"),
    -11: ("CL_BUILD_PROGRAM_FAILURE", "the program failed to build"),
    -14: ("CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST", "the execution status of an event in event_wait_list is a negative integer value"),
    -30: ("CL_INVALID_VALUE", "an argument's value is not valid for the call (its error list says which)"),
    -33: ("CL_INVALID_DEVICE", "the device is not valid"),
    -34: ("CL_INVALID_CONTEXT", "the context is not valid, or not the context the call's objects belong to"),
    -36: ("CL_INVALID_COMMAND_QUEUE", "command_queue is not a valid command-queue"),
    -38: ("CL_INVALID_MEM_OBJECT", "a memory object is not valid (or not of the kind the call takes)"),
    -39: ("CL_INVALID_IMAGE_FORMAT_DESCRIPTOR", "the image format is not valid"),
    -40: ("CL_INVALID_IMAGE_SIZE", "the image size is not valid"),
    -46: ("CL_INVALID_KERNEL_NAME", "the program has no kernel of that name"),
    -48: ("CL_INVALID_KERNEL", "the kernel is not valid"),
    -52: ("CL_INVALID_KERNEL_ARGS", "the kernel arguments are not all set"),
    -54: ("CL_INVALID_WORK_GROUP_SIZE", "the work-group size is not valid"),
    -57: ("CL_INVALID_EVENT_WAIT_LIST", "event_wait_list is NULL and num_events_in_wait_list > 0, or event_wait_list is not NULL and num_events_in_wait_list is 0, or event objects in event_wait_list are not valid events"),
    -58: ("CL_INVALID_EVENT", "the event is not valid"),
    -59: ("CL_INVALID_OPERATION", "the operation is not valid here (NVIDIA answers a GL-property context with this)"),
    -60: ("CL_INVALID_GL_OBJECT", "a memory object was not created from an OpenGL object, or the GL object is not valid"),
    -61: ("CL_INVALID_BUFFER_SIZE", "the buffer size is not valid"),
    -63: ("CL_INVALID_GLOBAL_WORK_SIZE", "the global work size is not valid"),
    -64: ("CL_INVALID_PROPERTY", "a property name or value is not valid"),
    -1000: ("CL_INVALID_GL_SHAREGROUP_REFERENCE_KHR", "the GL context or share group given is not valid for CL sharing (typically a hybrid-GPU laptop whose GL runs on the other GPU); on macOS the same value is CL_INVALID_GL_CONTEXT_APPLE"),
    -1001: ("CL_PLATFORM_NOT_FOUND_KHR", "no OpenCL platform was found by the ICD loader"),
    -1007: ("CL_INVALID_D3D11_RESOURCE_KHR", "the memory object is not a valid interop image from a YUV texture allocated in D3D11 (cl_amd_planar_yuv)"),
    -1093: ("CL_INVALID_EGL_OBJECT_KHR", "the EGL object is not valid"),
    -1142: ("CL_INVALID_SEMAPHORE_KHR", "a semaphore object in sema_objects is not valid"),
}

# Other names of a value above (a vendor header spelling the same number differently).
CL_ERROR_ALIASES: dict[str, int] = {
    "CL_INVALID_GL_CONTEXT_APPLE": -1000,  # Apple's OpenCL/cl_gl_ext.h, not in the Khronos headers
}

# (entry point, code) -> the meaning that call's own error list gives the code
_GL_CALL_MEANINGS = {
    -30: "num_objects is zero and mem_objects is not a NULL value, or num_objects > 0 and mem_objects is NULL",
    -34: "the context associated with command_queue was not created from an OpenGL context",
    -38: "memory objects in mem_objects are not valid OpenCL memory objects",
    -60: "memory objects in mem_objects have not been created from an OpenGL object(s)",
}
CALL_MEANINGS: dict[tuple[str, int], str] = {
    (call, code): meaning for call in ("clEnqueueAcquireGLObjects", "clEnqueueReleaseGLObjects")
    for code, meaning in _GL_CALL_MEANINGS.items()}

CL_CODES: dict[str, int] = {**{name: code for code, (name, _) in CL_ERRORS.items()}, **CL_ERROR_ALIASES}


def cl_error_name(code: int) -> str:
    """The CL name of an error code, or ``CL_ERROR(<code>)`` when it is not in the table."""
    entry = CL_ERRORS.get(code)
    return entry[0] if entry else f"CL_ERROR({code})"


def cl_error_meaning(code: int, call: str = "") -> str:
    """The code's meaning in ``call`` (an entry point, optionally followed by "(...)"): that call's
    own where its error list gives one, else the generic meaning."""
    own = CALL_MEANINGS.get((call.split("(", 1)[0].strip(), code)) if call else None
    if own:
        return own
    entry = CL_ERRORS.get(code)
    return entry[1] if entry else "no meaning recorded for this code"


class GlshareError(Exception):
    """Base of every error glshare raises on purpose. ``where`` names the call or phase."""

    exit_code = 1

    def __init__(self, message: str, *, where: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.where = where

    def one_line(self) -> str:
        text = " ".join(self.message.split())
        return f"{self.where}: {text}" if self.where else text


class UsageError(GlshareError):
    """Bad input from the user: one clear line, exit status 2, nothing lost."""

    exit_code = 2


class DisplayUnavailable(GlshareError):
    """No window can be opened here (no X display, or one that refuses the connection): the run
    cannot start as asked, as with a bad option; ``--headless`` is the way out."""

    exit_code = 2


class SharingUnavailable(GlshareError):
    """A sharing backend or sync mode cannot be used here; ``reason`` says why in plain words."""

    exit_code = 2

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"{name} is unavailable: {reason}", where=name)
        self.name = name
        self.reason = reason


class ClError(GlshareError):
    """An OpenCL error with its code, CL name and the spec's meaning."""

    def __init__(self, code: int, *, where: str, detail: str = "") -> None:
        self.code = int(code)
        self.name = cl_error_name(self.code)
        self.meaning = cl_error_meaning(self.code, where)
        msg = f"{self.name} ({self.code}): {detail or self.meaning}"
        super().__init__(msg, where=where)

    @classmethod
    def from_pyopencl(cls, exc: Exception, where: str) -> "ClError":
        """Wrap a ``pyopencl.Error`` (whose ``code`` is the CL status) with glshare's context."""
        try:
            value = int(getattr(exc, "code", -9999))
        except (TypeError, ValueError):
            value = -9999
        routine = getattr(exc, "routine", "") or ""
        return cls(value, where=where, detail=f"{routine} failed: {cl_error_meaning(value, routine)}" if routine else "")


class GlError(GlshareError):
    """An OpenGL error (glGetError) or a failed GL operation."""

    NAMES = {
        0x0500: "GL_INVALID_ENUM", 0x0501: "GL_INVALID_VALUE", 0x0502: "GL_INVALID_OPERATION",
        0x0503: "GL_STACK_OVERFLOW", 0x0504: "GL_STACK_UNDERFLOW", 0x0505: "GL_OUT_OF_MEMORY",
        0x0506: "GL_INVALID_FRAMEBUFFER_OPERATION",
    }

    def __init__(self, code: int, *, where: str, detail: str = "") -> None:
        self.code = int(code)
        self.name = self.NAMES.get(self.code, f"GL_ERROR(0x{self.code:04X})")
        super().__init__(f"{self.name}{': ' + detail if detail else ''}", where=where)

    @classmethod
    def from_pyopengl(cls, exc: Exception, where: str) -> "GlError":
        """Wrap PyOpenGL's ``OpenGL.error.GLError`` (``err``: the glGetError code, ``baseOperation``:
        the call) with glshare's context."""
        try:
            code = int(getattr(exc, "err", 0) or 0)
        except (TypeError, ValueError):
            code = 0
        op = getattr(getattr(exc, "baseOperation", None), "__name__", "")
        return cls(code, where=where, detail=f"{op} failed" if op else "")


class GlCallError(GlError):
    """The glGetError code a call through ``app.gl.api`` left (``call``: the entry point), raised
    where it happened; ``as_glshare_error`` re-raises it naming the phase, as PyOpenGL's GLError."""

    def __init__(self, code: int, *, call: str) -> None:
        self.call = call
        super().__init__(code, where=call, detail=f"{call} failed")


def as_glshare_error(exc: BaseException, where: str) -> BaseException:
    """``exc`` in glshare's error family: a ``pyopencl.Error`` as ClError, PyOpenGL's GLError and a
    checked call's GlCallError as GlError, each naming ``where`` (the phase or call); a GlshareError or any other exception is
    returned as it is. Neither library is imported here: an exception of one that was never
    imported cannot occur."""
    if isinstance(exc, GlCallError):  # a checked GL call's error: named by the phase, the call in its text
        wrapped: GlshareError = GlError(exc.code, where=where, detail=f"{exc.call} failed")
        wrapped.__cause__ = exc
        return wrapped
    if isinstance(exc, GlshareError):
        return exc
    cl = sys.modules.get("pyopencl")
    if cl is not None and isinstance(exc, cl.Error):
        wrapped = ClError.from_pyopencl(exc, where)
    else:
        gl_error = sys.modules.get("OpenGL.error")
        if gl_error is None or not isinstance(exc, gl_error.GLError):
            return exc
        wrapped = GlError.from_pyopengl(exc, where)
    wrapped.__cause__ = exc
    return wrapped


class KernelBuildError(GlshareError):
    """An OpenCL program failed to build: carries the log, the options and the source path."""

    def __init__(self, *, source_path: str, options: list[str], log: str, saved_copy: str = "") -> None:
        self.source_path, self.options, self.log, self.saved_copy = source_path, options, log, saved_copy
        super().__init__(
            f"build of {source_path} failed (options {' '.join(options) or 'none'}):\n{log.strip()}",
            where="clBuildProgram",
        )


class ShaderError(GlshareError):
    """A GLSL shader failed to compile or link; the message quotes the failing source line."""


class ValidationError(ClError):
    """The validator refused a call before the driver saw it: a spec violation with its CL code.

    ``rule`` names the rule, ``quote`` is the spec's sentence (verbatim), ``section`` where it
    stands, ``basis`` "listed" (the call's own error list) or "general rule".
    """

    kind = "spec"

    def __init__(self, code: int, *, where: str, detail: str = "", rule: str = "", quote: str = "",
                 section: str = "", document: str = "", basis: str = "listed") -> None:
        super().__init__(code, where=where, detail=detail)
        self.rule, self.quote, self.section, self.document, self.basis = rule, quote, section, document, basis

    @property
    def spec(self) -> str:
        return self.quote


class SpecViolation(GlshareError):
    """The validator refused a call that breaks a requirement the spec gives no error code for.

    ``code`` is None and ``name`` says so: glshare invents no code. ``consequence`` is the
    text's ("undefined behaviour", "implementation-defined behaviour").
    """

    kind = "spec"
    code = None
    name = "no CL code (spec violation)"

    def __init__(self, rule: str, quote: str, section: str, *, where: str, consequence: str,
                 detail: str = "", document: str = "", note: str = "") -> None:
        self.rule, self.quote, self.section, self.document = rule, quote, section, document
        self.consequence, self.meaning = consequence, f"the spec names no error code: {consequence}"
        text = f"{detail}: " if detail else ""
        text += f"{quote} [{section}; rule {rule}] (no error code in the spec: {consequence}"
        text += f"; {note})" if note else ")"
        super().__init__(f"spec violation without a CL code: {text}", where=where)

    @property
    def spec(self) -> str:
        return self.quote


class HazardError(GlshareError):
    """A finding of the ownership tracker, raised under strict (``app/validate/findings.py``):
    ``kind`` "spec" (a requirement of the spec broken, no CL code) or "advice" (glshare's)."""

    def __init__(self, case: str, label: str, spec: str, *, where: str, kind: str = "advice") -> None:
        self.case, self.label, self.spec, self.kind = case, label, spec, kind
        super().__init__(f"{case} on {label}: {spec}", where=where)


# -- outputs, source files, faults made on purpose -------------------------------------------------
class OutputError(GlshareError):
    """An output (report, trace, screenshot, bench JSON or plot, convert's OUT) could not be written;
    the file that was there, if any, is left as it was."""


class SourceFileError(GlshareError):
    """A kernel or shader file that cannot be used as it is (missing, unreadable, not UTF-8 text,
    a folder, too large): one line naming the file and the cause."""

    def __init__(self, path: str, cause: str) -> None:
        super().__init__(f"{path}: {cause}")
        self.path, self.cause = path, cause


class KernelNameError(GlshareError):
    """A program built, but has no kernel of the name glshare asks for (CL_INVALID_KERNEL_NAME,
    OpenCL 3.0 section 5.9.1, clCreateKernel): the function was renamed or removed."""

    code = -46
    name = "CL_INVALID_KERNEL_NAME"

    def __init__(self, path: str, kernel: str, available: list[str]) -> None:
        have = ", ".join(available) if available else "none"
        super().__init__(f"{path} has no kernel named {kernel!r} (CL_INVALID_KERNEL_NAME); its kernels: {have}")
        self.path, self.kernel, self.available = path, kernel, list(available)


class KernelBuildFailed(KernelBuildError):
    """A failed build as glshare reports it: the file and the failing line on the first line, the
    compiler's log in ``details``, and where the copy of the failed source was saved."""

    def __init__(self, *, source_path: str, options: list[str], log: str, saved_copy: str = "",
                 line: str = "") -> None:
        super().__init__(source_path=source_path, options=options, log=log, saved_copy=saved_copy)
        self.line = line
        at = f" at {line}" if line else ""
        copy = f"; the failed source is kept at {saved_copy}" if saved_copy else ""
        self.message = (f"{source_path}: build failed{at} (options {' '.join(options) or 'none'}){copy}")
        self.args = (self.message,)
        self.details = log.strip()
        self.where = ""  # the message starts with the file; a loop error names where it happened


class ShaderBuildError(ShaderError):
    """A GLSL file that failed to compile or a program that failed to link: the file and the failing
    line on the first line, the driver's log in ``details``, and where the failed source was saved."""

    def __init__(self, path: str, log: str, *, line: str = "", saved_copy: str = "", where: str) -> None:
        at = f" at {line}" if line else ""
        copy = f"; the failed source is kept at {saved_copy}" if saved_copy else ""
        verb = "failed to link" if where == "glLinkProgram" else "failed to compile"
        super().__init__(f"{path} {verb}{at}{copy}")
        self.path, self.log, self.line, self.saved_copy = path, log, line, saved_copy
        self.call = where  # glCompileShader or glLinkProgram
        self.details = log.strip()


class InjectedFault(GlshareError):
    """A fault made on purpose by ``glshare run --inject KIND@FRAME`` (app/schedule/faults.py);
    ``code`` and ``name`` are those of the failure it stands for."""

    def __init__(self, message: str, *, where: str, code: int | None = None, name: str = "",
                 meaning: str = "") -> None:
        super().__init__(message, where=where)
        self.code, self.name, self.meaning = code, name or type(self).__name__, meaning


class ContextLost(InjectedFault):
    """The GL context is gone (GL_CONTEXT_LOST, 0x0507, OpenGL 4.6 section 2.3.2 / KHR_robustness):
    nothing more can be drawn; the run ends at the frame boundary."""


class QueueStalled(InjectedFault):
    """The command queue did not complete a command within the stall timeout."""
