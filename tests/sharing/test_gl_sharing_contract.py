"""gl_sharing's own logic on the CPU machine, its C entry points emulated (tests/gl_emulation.py).

What glshare controls: the context properties it builds for the current EGL context, that GL
objects are shared through clCreateFromGLBuffer / clCreateFromGLTexture called through ctypes and
handed to pyopencl, that acquire and release go to clEnqueue{Acquire,Release}GLObjects with the
kernel's event in the wait list, that a CL error of the driver is named, and that the validator
and the ownership tracker run as on every other backend. pyopencl's own GL support is never used.
"""
from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest
from gl_emulation import EmulatedGlSharingDriver

from app.cl import gl_sharing as glcl
from app.errors import ValidationError
from app.sharing.backends.gl_sharing import KhrGlSharing
from app.sharing.base import ProbeEnv
from app.validate.liveness import REGISTRY


class GlSharingEnv(ProbeEnv):
    @property
    def device_extensions(self):
        return super().device_extensions | {"cl_khr_gl_event"}


@pytest.fixture
def driver(probe_env, monkeypatch):
    emulated = EmulatedGlSharingDriver()
    emulated.install(monkeypatch)
    monkeypatch.setattr(cl, "have_gl", lambda: False)  # the PyPI wheel's answer: nothing may need it
    yield GlSharingEnv(probe_env.choice, probe_env.surface, probe_env.gl_info), emulated
    assert not emulated.errors, emulated.errors


def test_probe_context_and_hand_over(driver, gl):
    from app.sharing.backends.gl_sharing import KhrGlSharing

    env, emulated = driver
    probe = KhrGlSharing.probe(env)
    assert probe.available, probe.reason
    keys = emulated.context_keys[0]
    assert keys == [glcl.CL_GL_CONTEXT_KHR, glcl.CL_EGL_DISPLAY_KHR, glcl.CL_CONTEXT_PLATFORM]
    assert ("clGetGLContextInfoKHR", glcl.CL_CURRENT_DEVICE_FOR_GL_CONTEXT_KHR) in emulated.calls
    backend = KhrGlSharing(env, strict=True)
    try:
        obj = backend.create_buffer("b", 1024)
        assert ("clCreateFromGLBuffer", obj.gl.name) in emulated.calls
        assert isinstance(obj.mem, cl.Buffer) and obj.mem.size == 1024
        assert backend.functions.gl_object_info(obj.mem) == (glcl.CL_GL_OBJECT_BUFFER, obj.gl.name)
        tex = backend.create_texture("t", 8, 4)
        assert isinstance(tex.mem, cl.Image) and tex.mem.shape == (8, 4)
        q = backend.queue
        ev_a = backend.acquire(q, [obj])
        marker = cl.enqueue_marker(q, wait_for=[ev_a])
        backend.release(q, [obj], [marker])
        assert ("clEnqueueAcquireGLObjects", 1, 0) in emulated.calls
        assert ("clEnqueueReleaseGLObjects", 1, 1) in emulated.calls
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
        backend.destroy(tex)
        backend.destroy(obj)
    finally:
        backend.close()


def test_data_round_trip_through_the_entry_points(driver, gl):
    """What CL writes between acquire and release is what GL reads: the calls' arguments (the
    handle arrays, the wait lists) reach the driver intact, exact values."""
    from app.sharing.backends.gl_sharing import KhrGlSharing

    env, _ = driver
    backend = KhrGlSharing(env, strict=True)
    try:
        obj = backend.create_buffer("b", 64)
        q = backend.queue
        ev = backend.acquire(q, [obj])
        written = np.arange(16, dtype=np.float32)
        cl.enqueue_copy(q, obj.mem, written, wait_for=[ev], is_blocking=True)
        backend.release(q, [obj], [])
        q.finish()
        assert np.array_equal(obj.gl.read(np.float32), written)
    finally:
        backend.close()


def test_context_failure_names_the_cl_error(driver):
    from app.sharing.backends.gl_sharing import KhrGlSharing

    env, emulated = driver
    emulated.fail["clCreateContext"] = -59  # NVIDIA's answer for an EGL context
    probe = KhrGlSharing.probe(env)
    assert not probe.available and "CL_INVALID_OPERATION (-59)" in probe.reason


def test_shared_object_failure_is_a_cl_error(driver, gl):
    from app.sharing.backends.gl_sharing import KhrGlSharing

    env, emulated = driver
    backend = KhrGlSharing(env, strict=True)
    try:
        emulated.fail["clCreateFromGLBuffer"] = -60
        with pytest.raises(Exception) as exc:
            backend.create_buffer("b", 64)
        assert "-60" in str(exc.value) or "CL_INVALID_GL_OBJECT" in str(exc.value)
    finally:
        backend.close()


@pytest.mark.parametrize("in_flight", [1, 3])
def test_gl_event_orders_the_release_and_frees_each_fence_once_used(driver, gl, monkeypatch, in_flight):
    """gl_event: every acquire waits on a CL event made from a GL fence (on gl_sharing's own context),
    a fence is deleted only once the release after its acquire completed, and without GL_ARB_cl_event
    (Mesa here) the release's completion is waited for on the CPU before GL's use: the picture is the
    reference's."""
    from app.config import RunConfig
    from app.run import Run
    from app.scenes.particles import initial_state, reference_steps

    _, emulated = driver
    emulated.install(monkeypatch, gl_event=True)
    cfg = RunConfig(scene="particles", backend=KhrGlSharing.name, sync="gl_event", size=4096, headless=True,
                    overlay=False, frames=10_000, seed=4, strict=True, frames_in_flight=in_flight)
    from app.window.egl_headless import EglSurface

    surface = EglSurface((64, 48))  # the test's own: a run may resize its surface
    try:
        with Run(cfg, surface=surface) as run:
            s = run.session
            assert not s.gl_info.has("GL_ARB_cl_event")
            for _ in range(5):
                rec = run.tick()
                assert rec.errors == [] and rec.hazards == []
            s.finish()
            sync = s.scheduler.sync
            assert len(sync._fences) <= in_flight
            waits = {w[0] for r in s.scheduler.records for w in r.waits}
            assert "clWaitForEvents(release)" in waits and "glFinish" not in waits, waits
            ref = reference_steps(initial_state(s.scene.n, 4), 5)  # tests/contract/references.py's check, 5e-4
            assert np.abs(s.scene.position.gl.read().reshape(-1, 4) - ref["position"]).max() < 5e-4
    finally:
        surface.close()
    assert emulated.calls.count(("clCreateEventFromGLsyncKHR",)) == 5


def _gl_event_run(monkeypatch, emulated, in_flight: int, frames: int = 5, before_exit=None):
    """A gl_event run of ``frames`` frames on the emulated driver, on a surface of its own; returns
    the session (torn down) and its sync mode. ``before_exit(session)``: called after the frames."""
    from app.config import RunConfig
    from app.run import Run
    from app.window.egl_headless import EglSurface

    emulated.install(monkeypatch, gl_event=True)
    cfg = RunConfig(scene="particles", backend=KhrGlSharing.name, sync="gl_event", size=4096, headless=True,
                    overlay=False, frames=10_000, seed=4, strict=True, frames_in_flight=in_flight)
    surface = EglSurface((64, 48))
    try:
        with Run(cfg, surface=surface) as run:
            s = run.session
            for _ in range(frames):
                rec = run.tick()
                assert rec.errors == [] and rec.hazards == []
            sync = s.scheduler.sync
            if before_exit is not None:
                before_exit(s)
    finally:
        surface.close()
    return s, sync


@pytest.mark.parametrize("in_flight", [1, 3])
def test_gl_event_teardown_never_waits_on_a_spent_linked_event(driver, gl, monkeypatch, in_flight):
    """A linked event goes to the acquire and to nothing else (cl_khr_gl_event: "may only be consumed
    by clEnqueueAcquireGLObjects"); NVIDIA 580 answered clWaitForEvents on one with CL_INVALID_EVENT at
    teardown, then the process crashed. The emulation spends each linked event at its acquire: the run
    ends without an error, each fence outlives its acquire (checked there) and is deleted by the end."""
    _, emulated = driver
    emulated.spent_linked_events = True
    s, sync = _gl_event_run(monkeypatch, emulated, in_flight)
    assert sync.close_failures == [] and sync._fences == []
    assert s.backend is None and s.scene is None  # the teardown went to the end
    syncs = [sync_ for _, sync_ in emulated.linked.values()]
    assert len(syncs) == 5 and not any(_is_sync(x) for x in syncs)


def _is_sync(sync) -> bool:
    from OpenGL import GL

    return bool(GL.glIsSync(sync))


def test_gl_event_close_failure_is_recorded_and_the_teardown_goes_on(driver, gl, monkeypatch, caplog):
    """A driver call failing in the sync mode's close is one logged line and a record; the scene and
    the backend are torn down after it all the same (never a traceback out of the teardown)."""
    from app.errors import GlError
    from app.gl import api
    from app.sharing.backends import gl_sharing

    _, emulated = driver

    class FailingDelete:
        def __getattr__(self, name):
            return getattr(api, name)

        @staticmethod
        def glDeleteSync(sync):
            raise GlError(0x0502, where="glDeleteSync")

    s, sync = _gl_event_run(monkeypatch, emulated, 1,
                            before_exit=lambda s: monkeypatch.setattr(gl_sharing, "GL", FailingDelete()))
    assert len(sync.close_failures) == 1 and "deleting the GL fences" in sync.close_failures[0]
    assert any("gl_event sync at teardown" in r.getMessage() for r in caplog.records)
    assert s.backend is None and s.scene is None
