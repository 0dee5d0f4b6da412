"""What glshare attach's libraries write, and how glshare reads it: one JSON object per line.

The attached program runs with glshare's OpenCL layer (``OPENCL_LAYERS`` names
``app/native/attach/libcl_layer.so``; the ICD loader calls its ``clInitLayer``, cl_khr_... Khronos
"OpenCL ICD loader layers") and its GL preload library (``LD_PRELOAD`` names
``app/native/attach/libgl_preload.so``). Both write records to the file descriptor named by
``GLSHARE_ATTACH_FD`` (a pipe to glshare, inherited; the variable is "FD:DEV:INO", ``channel_text``:
a library records only where descriptor FD is a socket or FIFO with that st_dev and st_ino, and then
writes to a private close-on-exec duplicate of it, ``app/native/attach/channel.h``: a descendant
started with close_fds, or a program that closes FD, may have the number reused for one of its own
files, which must never get a record; ``GLSHARE_ATTACH_VERDICT_FD`` likewise), each record one ``write(2)`` of one line of at
most ``MAX_LINE`` bytes: POSIX makes a pipe write of at most PIPE_BUF (4096) bytes atomic, so the
lines of several threads and of both libraries never interleave. Without ``GLSHARE_ATTACH_FD`` both
libraries do nothing but pass each call on. Both libraries also take a ``SOCK_SEQPACKET`` socket there
(each record one message, sent with MSG_NOSIGNAL: one system call instead of a pipe write guarded
against SIGPIPE, so that a glshare gone never kills the program). The reader should read in large
chunks (64 KiB and more) so writers rarely wait.

Every record has:
  ``k``    its kind: "hello", "call", "ret", "stamps", "clock", "site", "note"
  ``src``  who wrote it: "cl" (the layer), "gl" (the preload library), "py" (the Python site hook)
  ``pid``  the writing process (a program may fork: each process is a separate record stream)
  ``t``    CLOCK_MONOTONIC nanoseconds when it was written (the same clock as glshare's own)

hello   ``{"k":"hello","src":"cl","pid":..,"t":..,"lib":"glshare-cl-layer","version":1}``: first
        record of each library in each process (before any call).
call    written *before* the call reaches the driver (so a call that kills the process is still
        seen): ``id`` (an integer unique per src and pid, increasing; the GL library's ids
        increase in each thread's order, while lines of several threads may come in another order
        than their ids), ``tid`` (gettid), ``fn``
        (the entry point's name, e.g. "clEnqueueAcquireGLObjects", "glXSwapBuffers"), ``site``
        (the caller's return address, "0x..." hex), ``py`` (only in a Python program, on a call
        made while the calling thread holds the GIL: ``{"file": .., "line": .., "func": ..}``, the
        innermost Python frame outside pyopencl, PyOpenGL, glfw, the standard library and the site
        hook, read by the library itself, ``app/native/attach/pysite.h``; it names the program's line
        also for calls the site hook does not wrap, pyopencl's objects built in C; a call made with
        the GIL released, every ctypes call among them, has none) and the call's arguments under
        the names below. Handles (contexts, queues, mem objects, events, kernels, GL/GLX/EGL contexts and
        displays, fences) are "0x..." hex strings, "0x0" for NULL; GL object names are integers.
ret     written after the call returned: ``id`` (the call's), ``t``, ``status`` (the CL status the
        program saw, 0 = CL_SUCCESS; a handle-returning call: its errcode_ret, and the new handle as
        ``handle``; GL calls: absent, see "ret of the GL calls" below), ``event`` (the event the
        call returned to the program, or the layer's own event for the stamps, "0x..."),
        ``verdict`` (strict mode only: the status glshare returned instead of calling the driver).
stamps  the device's CL_PROFILING_COMMAND_{QUEUED,SUBMIT,START,END} of a call's command (OpenCL 3.0
        section 5.14, clGetEventProfilingInfo) once its event completed: ``id`` (the call's),
        ``queued``, ``submit``, ``start``, ``end`` (device nanoseconds), or ``error`` (why none: the
        queue has no profiling, the command failed with status ``status``, the program ended first).
clock   a pair of readings for mapping device time onto ``t``: ``device`` (a CL device handle),
        ``device_ns``, ``host_ns`` (clGetDeviceAndHostTimer, OpenCL 2.1+), or ``error``.
site    the Python file and line of the next call on this thread (``tid``, ``file``, ``line``,
        ``func``), written by glshare's Python site hook in a Python program just before a
        pyopencl or PyOpenGL call that reaches a recorded entry point (a call's own ``py`` comes
        first where it has one).
note    a library's own remark (``text``): a call it could not wrap, a record it had to drop.

Strict mode (``GLSHARE_ATTACH_STRICT=1``): the layer's "call" record of each acquire and release
(GL sharing, external memory, semaphores) has ``"verdict": true``; under one lock per process the
layer then reads one line from ``GLSHARE_ATTACH_VERDICT_FD``: ``{"id": N, "status": S}``. S = 0: the
call goes on to the driver; otherwise the layer returns S to the program (the spec's error for the
violation glshare's validator found) and the driver is never called. Without an answer (glshare
gone: end of file) the call goes on to the driver.

Argument names of the CL calls (as the spec names the parameters, shortened):
  clCreateContext/FromType: ``props`` ([[name, value], ...] as integers: CL_GL_CONTEXT_KHR,
      CL_GLX_DISPLAY_KHR, CL_EGL_DISPLAY_KHR, CL_CONTEXT_PLATFORM ...), ``devices`` ([handles]),
      ``device_type``; ret ``handle`` and, where the context was made, ``devices_info``: one object
      per device of the context (CL_CONTEXT_DEVICES, at most 8): ``device`` (its handle), ``name``,
      ``platform`` and ``platform_version`` (CL_PLATFORM_NAME, CL_PLATFORM_VERSION), ``lists`` (those
      of ``SHARING_EXTENSIONS`` its CL_DEVICE_EXTENSIONS lists; absent where it could not be read).
  clCreateCommandQueue(WithProperties): ``context``, ``device``, ``props`` (as given: the bitfield's
      integer for clCreateCommandQueue), ``profiling`` (true where the layer turned
      CL_QUEUE_PROFILING_ENABLE on itself); ret ``handle``, and ``"profiling": false`` where the
      driver refused it (the queue was then made with the program's own properties).
  clCreateFromGLBuffer/Texture/Renderbuffer: ``context``, ``flags``, ``gl_object`` (the GL name),
      ``target``, ``miplevel``; ret ``handle``.
  clCreateBuffer(WithProperties)/clCreateImage(WithProperties): ``context``, ``flags``, ``size``
      (buffers), ``width`` and ``height`` (images), ``props`` (the WithProperties forms; external
      memory: CL_EXTERNAL_MEMORY_HANDLE_*_KHR, the fd); ret ``handle``.
  clEnqueueAcquire/ReleaseGLObjects, clEnqueueAcquire/ReleaseExternalMemObjectsKHR: ``queue``,
      ``num`` (num_mem_objects), ``mems`` ([handles], as many as ``num`` where the list is not NULL;
      null when NULL), ``num_wait``, ``wait`` ([handles] or null), ``event_out`` (the program asked
      for an event), ``event_in_wait`` (only where the program's ``event`` pointer points into its
      event_wait_list array: the index of that element; every call with a wait list has it).
  clEnqueueWait/SignalSemaphoresKHR: ``queue``, ``num``, ``semaphores``, ``payloads``, ``num_wait``,
      ``wait``, ``event_out``.
  clSetKernelArg: ``kernel``, ``index``, ``mem``; recorded only where the argument is a cl_mem the
      layer saw created (any other argument only updates the layer's table of the kernel's mems).
  clCreateKernel: ``program``, ``name``; ret ``handle``.
  clEnqueueNDRangeKernel/clEnqueueTask: ``queue``, ``kernel``, ``name``, ``mems`` (the mem objects
      set as its arguments), ``dims``, ``gws``, ``lws``, ``num_wait``, ``wait``, ``event_out``.
  clEnqueueRead/Write/Copy/Fill/Map Buffer/Image, clEnqueueUnmapMemObject: ``queue``, ``mems``
      (source first), ``blocking``, ``size`` (bytes, where the call says), wait list as above.
  clFinish, clFlush: ``queue``. clWaitForEvents: ``events``. clRetainMemObject,
      clReleaseMemObject: ``mem``.
  clCreateEventFromGLsyncKHR: ``context``, ``sync``; ret ``handle``.
  clGetGLContextInfoKHR: ``props``, ``param``. clCreateSemaphoreWithPropertiesKHR: ``context``,
      ``props``; ret ``handle``.
Argument names of the GL calls:
  glXSwapBuffers, eglSwapBuffers: ``display``, ``drawable`` (a frame boundary).
  glXMakeCurrent/glXMakeContextCurrent/eglMakeCurrent: ``display``, ``drawable``, ``context``.
  glFinish, glFlush: none. glFenceSync: ret ``handle``. glClientWaitSync, glWaitSync: ``sync``,
      ``timeout``; glDeleteSync: ``sync``.
  glDeleteBuffers, glDeleteTextures, glDeleteRenderbuffers: ``names`` ([integers]).
  glBufferData, glBufferSubData, glTexImage2D, glTexSubImage2D, glMapBuffer(Range), glUnmapBuffer:
      ``target``, ``buffer`` or ``texture`` (the name bound to the target), ``size`` where known.
  draws (glDrawArrays, glDrawElements, their Instanced forms; the GL library also records
      glDrawRangeElements and the BaseVertex / BaseInstance forms, ImGui's OpenGL 3 renderer
      drawing with glDrawElementsBaseVertex): ``mode``, ``count``, ``buffers``
      (the names bound to GL_ARRAY_BUFFER and GL_ELEMENT_ARRAY_BUFFER, and those of the bound
      vertex array's attributes where it can tell), ``textures`` (the names bound to the active
      texture units the library has seen bound).
  Every GL call record also has ``ctx`` (the current GL context, "0x...").
  A list of names longer than the line has room for is cut: ``<key>_left`` (``names_left``,
      ``buffers_left``, ``textures_left``) counts the names left out. glTexImage2D/glTexSubImage2D
      ``size``: width x height x the bytes of one pixel of format and type (unpack row alignment not
      counted), absent for a format or type it does not know.
ret of the GL calls: written for the swaps, the make-currents, glFinish, glFenceSync, glWaitSync,
  glClientWaitSync, glMapBuffer(Range) and glUnmapBuffer; ``result`` is the value the call
  returned, as an integer (eglSwapBuffers' and the make-currents' Bool, glClientWaitSync's
  GL_ALREADY_SIGNALED / TIMEOUT_EXPIRED / CONDITION_SATISFIED / WAIT_FAILED, glUnmapBuffer's
  GLboolean); ``handle`` the pointer it returned (glFenceSync's sync, glMapBuffer(Range)'s mapping).
  The GL library writes its "hello" with its first record: a process that makes no GL call (a shell
  on the way to the program) writes none.
"""
from __future__ import annotations

import json
import json.scanner
import os

MAX_LINE = 4096  # PIPE_BUF on Linux: one write of at most this many bytes is atomic on a pipe
FD_ENV = "GLSHARE_ATTACH_FD"  # the pipe's write end, inherited by the program
STRICT_ENV = "GLSHARE_ATTACH_STRICT"  # "1": acquires and releases wait for glshare's verdict
VERDICT_FD_ENV = "GLSHARE_ATTACH_VERDICT_FD"  # strict mode: the pipe glshare answers on
# the extensions a context's ret record says each device lists or not (app/native/attach/cl_layer.c's
# SHARING_EXTS, in this order): what the sharing entry points need (app/attach/model.py's NEEDS_EXTENSION)
SHARING_EXTENSIONS = ("cl_khr_gl_sharing", "cl_khr_gl_event", "cl_khr_egl_image", "cl_khr_external_memory",
                      "cl_khr_external_memory_opaque_fd", "cl_khr_external_memory_dma_buf", "cl_khr_semaphore",
                      "cl_khr_external_semaphore", "cl_khr_external_semaphore_opaque_fd",
                      "cl_khr_external_semaphore_sync_fd")
KINDS = ("hello", "call", "ret", "stamps", "clock", "site", "note")
REQUIRED = ("k", "src", "pid", "t")  # every record has them (the docstring's list)
SOURCES = ("cl", "gl", "py")


def channel_text(fd: int) -> str:
    """``GLSHARE_ATTACH_FD``'s (and ``GLSHARE_ATTACH_VERDICT_FD``'s) value for descriptor ``fd``:
    "FD:DEV:INO", which the libraries and the site hook compare with their own fstat of FD."""
    st = os.fstat(fd)
    return f"{fd}:{st.st_dev}:{st.st_ino}"


class BadRecord(ValueError):
    """A line that is not a record of this format (one line: why)."""


_DECODER = json.JSONDecoder()
_decode = _DECODER.decode  # (json.loads on bytes guesses their encoding first: the lines are UTF-8)
# the decoder's own scanner (C where json has it): one value from an offset, without decode's two Python
# calls and regular-expression matches around it; a line it does not take whole goes to ``_decode``
_scan = json.scanner.make_scanner(_DECODER)
_CHECKED = {"call", "ret", "stamps"}  # the kinds that carry an id


def parse_line(line: bytes | str) -> dict:
    """One record from one line (its newline optional); BadRecord where it is not JSON, not an
    object, lacks a required key, or has a kind or a writer the format does not name."""
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    try:
        rec, end = _scan(text, 0)
        if end != len(text):
            raise ValueError
    except (ValueError, StopIteration):  # leading or trailing white space, or not JSON: decode's answer
        try:
            rec = _decode(text)
        except ValueError as exc:
            raise BadRecord(f"not JSON: {exc.args[0] if exc.args else exc}") from None
    if not isinstance(rec, dict):
        raise BadRecord(f"not a JSON object: {type(rec).__name__}")
    kind = rec.get("k")
    if kind not in KINDS or rec.get("src") not in SOURCES or type(rec.get("pid")) is not int \
            or type(rec.get("t")) is not int:
        missing = [k for k in REQUIRED if k not in rec]
        if missing:
            raise BadRecord(f"no {', '.join(missing)}")
        if kind not in KINDS:
            raise BadRecord(f"unknown kind {kind!r}")
        if rec["src"] not in SOURCES:
            raise BadRecord(f"unknown writer {rec['src']!r}")
        raise BadRecord("pid and t must be integers")
    if kind in _CHECKED and type(rec.get("id")) is not int:
        raise BadRecord(f"a {kind} record without an integer id")
    return rec


def handle(text) -> int:
    """A handle as the records write it ("0x..." hex; "0x0" and null are NULL): its integer."""
    if text is None:
        return 0
    if isinstance(text, int):
        return text
    try:
        return int(str(text), 16)
    except ValueError:
        raise BadRecord(f"not a handle: {text!r}") from None
