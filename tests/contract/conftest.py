"""The backends the contract suite runs on: every backend available here, and gl_sharing through
an emulated driver where the machine has none (PoCL lists no cl_khr_gl_sharing and aborts on its
entry points, so they are never called: pyopencl's GL entry points are replaced by an emulation
that keeps a plain CL object per GL object and copies at acquire and release).

The emulation makes gl_sharing's own code run whole on the CPU machine: the context properties,
the sharing calls, the validator, the ownership tracker, the scenes on it. What it cannot show is
a real driver's zero-copy hand-over; the GPU runs cover external_memory, and no machine at hand
offers cl_khr_gl_sharing.
"""
from __future__ import annotations

import ctypes

import numpy as np
import pyopencl as cl
import pytest
from OpenGL import GL

from app.cl.formats import cl_image_format
from app.gl.formats import FORMATS
from app.sharing.base import ProbeEnv
from app.sharing.registry import backend_classes


class EmulatedGlSharingDriver:
    """pyopencl's GL-sharing entry points, emulated with copies (see the module docstring)."""

    def __init__(self) -> None:
        self.objects: dict[int, tuple] = {}  # id(cl mem) -> ("buffer", name, size) | ("texture", name, w, h, fmt)
        self.calls: list[str] = []

    def context(self, devices=None, properties=None, **kw):
        self.calls.append("clCreateContext(GL properties)")
        return self._real_context(devices)

    def gl_buffer(self, ctx, flags, name):
        GL.glBindBuffer(GL.GL_COPY_READ_BUFFER, name)
        size = int(GL.glGetBufferParameteriv(GL.GL_COPY_READ_BUFFER, GL.GL_BUFFER_SIZE))
        GL.glBindBuffer(GL.GL_COPY_READ_BUFFER, 0)
        mem = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, size)
        self.objects[id(mem)] = ("buffer", name, size)
        self.calls.append("clCreateFromGLBuffer")
        return mem

    def gl_texture(self, ctx, flags, target, level, name, dims):
        GL.glBindTexture(GL.GL_TEXTURE_2D, name)
        w = int(GL.glGetTexLevelParameteriv(GL.GL_TEXTURE_2D, 0, GL.GL_TEXTURE_WIDTH))
        h = int(GL.glGetTexLevelParameteriv(GL.GL_TEXTURE_2D, 0, GL.GL_TEXTURE_HEIGHT))
        internal = int(GL.glGetTexLevelParameteriv(GL.GL_TEXTURE_2D, 0, GL.GL_TEXTURE_INTERNAL_FORMAT))
        GL.glBindTexture(GL.GL_TEXTURE_2D, 0)
        fmt = FORMATS[internal]
        mem = cl.create_image(ctx, cl.mem_flags.READ_WRITE, cl_image_format(fmt), shape=(w, h))
        self.objects[id(mem)] = ("texture", name, w, h, fmt)
        self.calls.append("clCreateFromGLTexture")
        return mem

    def acquire(self, queue, mems, wait_for=None):
        self.calls.append("clEnqueueAcquireGLObjects")
        for mem in mems:
            kind, name, *rest = self.objects[id(mem)]
            if kind == "buffer":
                host = np.empty(rest[0], np.uint8)
                GL.glBindBuffer(GL.GL_COPY_READ_BUFFER, name)
                GL.glGetBufferSubData(GL.GL_COPY_READ_BUFFER, 0, host.nbytes, host.ctypes.data_as(ctypes.c_void_p))
                GL.glBindBuffer(GL.GL_COPY_READ_BUFFER, 0)
                cl.enqueue_copy(queue, mem, host, wait_for=wait_for, is_blocking=True)
            else:
                w, h, fmt = rest
                host = np.empty((h, w, fmt.channels), fmt.numpy_dtype)
                GL.glBindTexture(GL.GL_TEXTURE_2D, name)
                GL.glPixelStorei(GL.GL_PACK_ALIGNMENT, 1)
                GL.glGetTexImage(GL.GL_TEXTURE_2D, 0, fmt.format, fmt.type, host.ctypes.data_as(ctypes.c_void_p))
                GL.glBindTexture(GL.GL_TEXTURE_2D, 0)
                cl.enqueue_copy(queue, mem, host, origin=(0, 0), region=(w, h), wait_for=wait_for, is_blocking=True)
        return cl.enqueue_marker(queue, wait_for=wait_for)

    def release(self, queue, mems, wait_for=None):
        self.calls.append("clEnqueueReleaseGLObjects")
        for mem in mems:
            kind, name, *rest = self.objects[id(mem)]
            if kind == "buffer":
                host = np.empty(rest[0], np.uint8)
                cl.enqueue_copy(queue, host, mem, wait_for=wait_for, is_blocking=True)
                GL.glBindBuffer(GL.GL_COPY_WRITE_BUFFER, name)
                GL.glBufferSubData(GL.GL_COPY_WRITE_BUFFER, 0, host.nbytes, host)
                GL.glBindBuffer(GL.GL_COPY_WRITE_BUFFER, 0)
            else:
                w, h, fmt = rest
                host = np.empty((h, w, fmt.channels), fmt.numpy_dtype)
                cl.enqueue_copy(queue, host, mem, origin=(0, 0), region=(w, h), wait_for=wait_for, is_blocking=True)
                GL.glBindTexture(GL.GL_TEXTURE_2D, name)
                GL.glPixelStorei(GL.GL_UNPACK_ALIGNMENT, 1)
                GL.glTexSubImage2D(GL.GL_TEXTURE_2D, 0, 0, 0, w, h, fmt.format, fmt.type, host)
                GL.glBindTexture(GL.GL_TEXTURE_2D, 0)
        return cl.enqueue_marker(queue, wait_for=wait_for)

    def install(self, monkeypatch) -> None:
        """Give the gl_sharing module (only it) a pyopencl whose GL-sharing entry points are these."""
        from app.sharing.backends import gl_sharing

        self._real_context = cl.Context

        def no_info(*a, **k):
            raise cl.LogicError(cl._cl._ErrorRecord(msg="emulated", code=-30, routine="clGetGLContextInfoKHR"))

        class _Low:
            def __getattr__(self, name):
                return no_info if name == "get_gl_context_info_khr" else getattr(cl._cl, name)

        emulated = {"have_gl": lambda: True, "Context": self.context, "GLBuffer": self.gl_buffer,
                    "GLTexture": self.gl_texture, "enqueue_acquire_gl_objects": self.acquire,
                    "enqueue_release_gl_objects": self.release, "_cl": _Low()}

        class _PyopenclWithGlSharing:
            def __getattr__(self, name):
                return emulated[name] if name in emulated else getattr(cl, name)

        base_exts = ProbeEnv.device_extensions.fget
        monkeypatch.setattr(ProbeEnv, "device_extensions",
                            property(lambda env: base_exts(env) | {"cl_khr_gl_sharing"}))
        monkeypatch.setattr(gl_sharing, "cl", _PyopenclWithGlSharing())


def _available_here(name: str, env: ProbeEnv) -> str | None:
    probe = backend_classes()[name].probe(env)
    return None if probe.available else probe.reason


@pytest.fixture(params=list(backend_classes()))
def contract_backend(request, probe_env, monkeypatch):
    """A backend name the run can choose here: real where its probe accepts this machine,
    gl_sharing through the emulated driver otherwise, anything else skipped with its reason."""
    name = request.param
    reason = _available_here(name, probe_env)
    if reason is None:
        return name
    if name == "gl_sharing":
        if not hasattr(cl.context_properties, "GL_CONTEXT_KHR"):
            pytest.skip(f"gl_sharing is not available here ({reason}), and this pyopencl was built without GL "
                        "support, so not even its context properties can be named for the emulated driver")
        EmulatedGlSharingDriver().install(monkeypatch)
        reason = _available_here(name, probe_env)
        assert reason is None, reason
        return name
    pytest.skip(f"{name} is not available here: {reason}")
