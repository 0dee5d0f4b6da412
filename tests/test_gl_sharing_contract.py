"""gl_sharing's own logic, with pyopencl's GL entry points replaced by recorders.

No machine at hand offers cl_khr_gl_sharing (PoCL would abort the process, NVIDIA lists none), so
this checks what glshare controls: the context properties it builds for the current EGL context,
that GL objects are shared through pyopencl's GLBuffer/GLTexture, that acquire and release go to
enqueue_acquire/release_gl_objects with the kernel's event in the wait list, and that the
validator and the ownership tracker run as on every other backend.
"""
from __future__ import annotations

import pyopencl as cl
import pytest

from app.errors import ValidationError
from app.sharing.base import ProbeEnv
from app.validate.liveness import REGISTRY


class GlSharingEnv(ProbeEnv):
    @property
    def device_extensions(self):
        return super().device_extensions | {"cl_khr_gl_sharing", "cl_khr_gl_event"}


@pytest.fixture
def recorded(probe_env, monkeypatch):
    calls = []
    real_context = cl.Context

    def context(devices=None, properties=None, **kw):
        calls.append(("context", [p for p, _ in properties]))
        return real_context(devices)  # a plain context stands in for the GL-sharing one

    def gl_buffer(ctx, flags, name):
        calls.append(("GLBuffer", name))
        return cl.Buffer(ctx, flags, 1024)

    def acquire(queue, mems, wait_for=None):
        calls.append(("acquire", len(mems), len(wait_for or [])))
        return cl.enqueue_marker(queue, wait_for=wait_for)

    def release(queue, mems, wait_for=None):
        calls.append(("release", len(mems), len(wait_for or [])))
        return cl.enqueue_marker(queue, wait_for=wait_for)

    def no_info(*a, **k):
        raise cl.LogicError(cl._cl._ErrorRecord(msg="not here", code=-30, routine="clGetGLContextInfoKHR"))

    monkeypatch.setattr(cl, "have_gl", lambda: True)
    monkeypatch.setattr(cl, "Context", context)
    monkeypatch.setattr(cl, "GLBuffer", gl_buffer)
    monkeypatch.setattr(cl, "enqueue_acquire_gl_objects", acquire)
    monkeypatch.setattr(cl, "enqueue_release_gl_objects", release)
    monkeypatch.setattr(cl._cl, "get_gl_context_info_khr", no_info)
    env = GlSharingEnv(probe_env.choice, probe_env.surface, probe_env.gl_info)
    return env, calls


def test_probe_context_and_hand_over(recorded):
    from app.sharing.backends.gl_sharing import KhrGlSharing

    env, calls = recorded
    probe = KhrGlSharing.probe(env)
    assert probe.available, probe.reason
    ctx_props = [c for c in calls if c[0] == "context"][0][1]
    assert cl.context_properties.GL_CONTEXT_KHR in ctx_props
    assert cl.context_properties.EGL_DISPLAY_KHR in ctx_props  # built by glshare, not pyopencl's helper
    backend = KhrGlSharing(env, strict=True)
    try:
        obj = backend.create_buffer("b", 1024)
        assert ("GLBuffer", obj.gl.name) in calls
        q = backend.queue
        ev_a = backend.acquire(q, [obj])
        marker = cl.enqueue_marker(q, wait_for=[ev_a])
        backend.release(q, [obj], [marker])
        assert ("acquire", 1, 0) in calls and ("release", 1, 1) in calls
        assert backend.tracker.state(obj).owner == "gl"
        plain = cl.Buffer(backend.context, cl.mem_flags.READ_WRITE, 16)
        with pytest.raises(ValidationError) as exc:
            backend.acquire(q, [plain])  # a buffer glshare never saw: not a valid memory object to it
        assert exc.value.name == "CL_INVALID_MEM_OBJECT"
        REGISTRY.handed(plain, backend.context)  # handed to glshare: live, but not made from a GL object
        with pytest.raises(ValidationError) as exc:
            backend.acquire(q, [plain])
        assert exc.value.name == "CL_INVALID_GL_OBJECT"
        assert backend.sync_unavailable_reason("gl_event") is None
        assert "external_memory" in backend.sync_unavailable_reason("semaphore")
        backend.destroy(obj)
    finally:
        backend.close()


def test_context_failure_names_the_cl_error(recorded, monkeypatch):
    from app.sharing.backends.gl_sharing import KhrGlSharing

    env, _ = recorded

    def refuse(devices=None, properties=None, **kw):
        raise cl.LogicError(cl._cl._ErrorRecord(msg="no", code=-59, routine="clCreateContext"))

    monkeypatch.setattr(cl, "Context", refuse)
    probe = KhrGlSharing.probe(env)
    assert not probe.available and "CL_INVALID_OPERATION (-59)" in probe.reason
