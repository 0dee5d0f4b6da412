"""gl_sharing: cl_khr_gl_sharing, zero-copy, through ctypes (app/cl/gl_sharing.py).

The CL context is created with the properties naming the current GL context (GLX or EGL); its
device is the one clGetGLContextInfoKHR (CL_CURRENT_DEVICE_FOR_GL_CONTEXT_KHR) names. Acquire and
release are clEnqueueAcquireGLObjects / clEnqueueReleaseGLObjects. Nothing here is called unless
the trial in a child process saw the entry points work (app/sharing/gl_trial.py): the extension
string is not trusted either way (NVIDIA lists none and shares with GLX; PoCL aborts the process
on clCreateFromGLBuffer).
"""
from __future__ import annotations

import logging

import pyopencl as cl

from app.cl import gl_sharing as glcl
from app.errors import ClError, SharingUnavailable, UsageError, cl_error_name
from app.gl import api as GL
from app.gl.objects import GlBuffer, GlTexture
from app.sharing import gl_trial
from app.sharing.base import ACCESS_FLAGS, Capabilities, Probe, ProbeEnv, SharingBackend
from app.sharing.sync import SyncMode

log = logging.getLogger(__name__)


def gl_context_properties(env: ProbeEnv) -> list[tuple[int, int]]:
    """CL context properties for the current GL context: the surface's pairs and the platform."""
    return glcl.context_properties(env.surface.gl_sharing_properties(), env.choice.platform)


def gl_device_decision(chosen, named, explicit: bool):
    """Which device drives sharing: ``named`` (what clGetGLContextInfoKHR returns for the GL context,
    or None where it does not answer) over ``chosen``; an explicit --cl-device naming another device
    is refused in one line naming both (cl_khr_gl_sharing: a device that is not the GL context's
    gives CL_INVALID_GL_SHAREGROUP_REFERENCE_KHR at context creation)."""
    if named is None or named == chosen:
        return chosen
    if explicit:
        raise UsageError(f"--cl-device names {_label(chosen)}, but the GL context runs on {_label(named)}: "
                         "cl_khr_gl_sharing needs the GL context's device (CL_INVALID_GL_SHAREGROUP_REFERENCE_KHR); "
                         "choose that one or leave --cl-device out")
    return named


def _label(device) -> str:
    name = getattr(device, "name", str(device))
    platform = getattr(getattr(device, "platform", None), "name", "")
    return f"{name.strip()!r}" + (f" ({platform.strip()})" if platform else "")


class KhrGlSharing(SharingBackend):
    name = "gl_sharing"
    title = "cl_khr_gl_sharing: CL images and buffers made from GL objects, zero-copy"
    probe_order = 10
    capabilities = Capabilities(zero_copy=True, gl_context=True)
    teaching = {
        "acquire": "clEnqueueAcquireGLObjects: the driver hands the GL storage itself to CL (zero-copy).",
        "compute": "The kernel wrote into the GL object's storage.",
        "release": "clEnqueueReleaseGLObjects: the storage goes back to GL.",
        "render": "GL drew straight from the storage the kernel wrote.",
    }
    hazard_effects = {
        "skip_acquire": "Undefined behaviour ('These objects need to be acquired before they can be used by any "
                        "OpenCL commands ... or the behaviour is undefined'): many drivers keep drawing normally, "
                        "others show stale or torn frames or fail the kernel; GL's pending work is no longer "
                        "ordered before the kernel.",
        "skip_release": "GL draws objects CL still owns (undefined): with shared storage the picture often keeps "
                        "moving, but GL's reads are not ordered after the kernel: torn or stale frames.",
        "sync_none": "Without glFinish before the acquire (and no cl_khr_gl_event) the spec's ordering does not "
                     "hold: GL commands may still run when the kernel starts, and GL may draw before the kernel "
                     "ends: torn or stale frames where the driver does not synchronise implicitly.",
        "wrong_delete_order": "A scratch shared buffer's GL object is deleted before its CL memory object: the GL "
                              "name goes, the data store stays while the CL object refers to it (cl_khr_gl_sharing, "
                              "Issue 3), and any later use of the CL object is undefined behaviour (3.3.4).",
        "unordered_render": "The kernel reads the texture's storage while GL is still rendering into it (nothing "
                            "orders GL's pass before the kernel: not glFinish, not the acquire): edges of a half "
                            "drawn frame, objects missing or doubled, bands of the background where the driver "
                            "does not serialise GL and CL by itself; the tracker flags the draw into an object "
                            "CL holds.",
    }

    null_events = True  # its calls take the C API's NULL event (app.cl.ext.MemObjectsCall)

    @classmethod
    def probe(cls, env: ProbeEnv) -> Probe:
        verdict = gl_trial.verdict(env)
        if not verdict.works:
            device = f"device {env.choice.device.name.strip()!r} ({env.choice.platform.name.strip()})"
            listed = "lists cl_khr_gl_sharing, but" if verdict.listed else "does not list cl_khr_gl_sharing, and"
            return Probe(cls.name, False, f"{device} {listed} glshare's trial of it in a child process failed: "
                                          f"{verdict.reason}")
        try:
            context, device = cls._make_context(env)  # dropped at once: the backend makes its own
        except SharingUnavailable as exc:
            return Probe(cls.name, False, exc.reason)
        except UsageError as exc:
            return Probe(cls.name, False, str(exc))
        del context
        said = gl_trial.describe(verdict, env)
        return Probe(cls.name, True, f"cl_khr_gl_sharing with a {env.surface.gl_platform.upper()} context on "
                                     f"{device.name.strip()}, zero-copy" + (f" ({said})" if said else ""))

    @staticmethod
    def gl_device(env: ProbeEnv, props: list) -> cl.Device:
        """The device clGetGLContextInfoKHR names for the current GL context (where it answers), else
        the chosen one; a --cl-device naming another one is refused (``gl_device_decision``)."""
        fns = glcl.GlSharingFunctions(env.choice.platform)
        named = None
        try:
            handles = fns.devices_for_gl_context(props)
        except cl.Error as exc:
            log.info("clGetGLContextInfoKHR: %s; using the chosen device", cl_error_name(exc.code))
            handles = []
        if handles:
            named = glcl.device_by_handle(env.choice.platform, handles[0])
        return gl_device_decision(env.choice.device, named, getattr(env.choice, "explicit", False))

    @classmethod
    def _make_context(cls, env: ProbeEnv) -> tuple[cl.Context, cl.Device]:
        props = gl_context_properties(env)
        device = cls.gl_device(env, props)
        try:
            return glcl.GlSharingFunctions(env.choice.platform).create_context(props, [device]), device
        except cl.Error as exc:
            raise SharingUnavailable("gl_sharing", f"clCreateContext with {env.surface.gl_platform.upper()} GL "
                                     f"properties failed: {cl_error_name(exc.code)} ({exc.code})") from exc

    def _create_context(self) -> cl.Context:
        self.functions = glcl.GlSharingFunctions(self.env.choice.platform)
        self._acquire_call, self._release_call = self.functions.hand_over_calls()  # prepared once
        context, self.device = self._make_context(self.env)
        return context

    def _share_buffer(self, gl: GlBuffer, access: str):
        GL.glFinish()
        return self.functions.create_from_gl_buffer(self.context, ACCESS_FLAGS[access], gl.name)

    def _share_texture(self, gl: GlTexture, access: str):
        GL.glFinish()
        return self.functions.create_from_gl_texture(self.context, ACCESS_FLAGS[access], GL.GL_TEXTURE_2D, 0,
                                                     gl.name)

    def _enqueue_acquire(self, queue, objects, wait_for, event=True):
        return self._acquire_call(queue, [o.mem for o in objects], wait_for, event)

    def _enqueue_release(self, queue, objects, wait_for, event=True):
        return self._release_call(queue, [o.mem for o in objects], wait_for, event)

    def native_hand_over(self, queue, objects, event):
        from app.cl.ext import vp

        mems = [o.mem for o in objects]
        acquire_out, release_out = (vp(), vp()) if event else (None, None)
        return ([self._acquire_call.prepared(queue, mems, acquire_out)],
                [self._release_call.prepared(queue, mems, release_out)], acquire_out, release_out)


def gl_event_release_order(gl_info) -> str:
    """How gl_event orders the release's completion before GL's use of the objects, in words."""
    if gl_info.has("GL_ARB_cl_event"):
        return ("GL_ARB_cl_event: GL waits on the release's event on the GPU (glCreateSyncFromCLeventARB, "
                "glWaitSync); the CPU does not wait")
    return ("a CL-side wait: the CPU waits for the release's event (clWaitForEvents) before GL's use, as GL "
            "offers no GL_ARB_cl_event")


class GlEventSync(SyncMode):
    """cl_khr_gl_event: a GL fence becomes a CL event in acquire's wait list (no glFinish); the
    release's completion is ordered before GL's use by GL itself where it offers GL_ARB_cl_event
    (a GL sync object made from the release's event, waited on with glWaitSync: on the GPU), else
    by a CL-side wait on the release's event (``gl_event_release_order`` says which).

    clCreateEventFromGLsyncKHR is only called on gl_sharing's context (one created from the GL
    context: "context is a valid OpenCL context created from an OpenGL context", cl_khr_gl_event);
    on a plain context NVIDIA's driver 580 crashes the process.

    A linked event (one made from a GL fence) goes to clEnqueueAcquireGLObjects's wait list and to
    nothing else of CL's: cl_khr_gl_event as first published says "Events returned from
    clCreateEventFromGLsyncKHR may only be consumed by clEnqueueAcquireGLObjects. Passing such events
    to any other CL API will generate a CL_INVALID_EVENT error" (NVIDIA 580 answers clWaitForEvents on
    one so). When a linked event is spent is read from the queue instead: the queue is in order, so
    once the release that followed the frame's acquire completed (its own event's status), or the
    queue finished, that acquire has consumed the event. Only then is our reference to the event
    dropped and, after it, the GL fence deleted: the event holds a reference on its GL sync object
    while it lives (cl_khr_gl_event), and the sync must stay valid while the event is in use."""

    name = "gl_event"
    order = 20
    title = "GL fence as a CL event (cl_khr_gl_event)"
    explanation = ("A GL fence becomes a CL event the acquire waits on (no glFinish on the CPU); GL waits on the "
                   "release's event on the GPU where GL_ARB_cl_event allows, else the CPU waits for the release.")

    bounded_run_ahead = True

    @classmethod
    def refusal(cls, backend, env) -> str | None:
        if not backend.capabilities.gl_context:
            return (f"gl_event needs cl_khr_gl_event on a CL context created from the GL context; {backend.name} "
                    "uses a plain context (and clCreateEventFromGLsyncKHR crashed NVIDIA's driver on one)")
        if "cl_khr_gl_event" not in env.device_extensions:
            return "the device does not list cl_khr_gl_event"
        return None

    def __init__(self, backend: KhrGlSharing) -> None:
        from app.cl.ext import event_info

        super().__init__(backend)
        self.functions = backend.functions
        self.gl_waits = backend.env.gl_info.has("GL_ARB_cl_event")  # else the CPU waits for the release
        self._status = event_info().status
        # [GLsync, its linked event, the event of a later command on the queue (the frame's release):
        # None until after_release], oldest first
        self._fences: list[list] = []
        self.close_failures: list[str] = []  # what went wrong at close (logged; the teardown goes on)

    def _retire(self, upto: int) -> None:
        """The first ``upto`` fences are spent: each linked event's reference dropped, then its fence."""
        spent, self._fences = self._fences[:upto], self._fences[upto:]
        for entry in spent:
            entry[1] = entry[2] = None  # (pyopencl's clReleaseEvent) before the GL sync it refers to goes
            GL.glDeleteSync(entry[0])

    def _drop_spent_fences(self) -> None:
        """Retire the fences up to the newest whose frame's release has completed (the queue is in
        order: every earlier acquire has completed too). A release event the driver will not answer
        for keeps its fence until close."""
        upto = 0
        for i, (_, _, after) in enumerate(self._fences):
            if after is None:
                break
            status = self._status(after.int_ptr)
            if status is not None and status <= 0:  # CL_COMPLETE (0), or failed (negative): it ran
                upto = i + 1
        if upto:
            self._retire(upto)

    def before_acquire(self, waits: list, shadow=None) -> list[cl.Event]:
        self._drop_spent_fences()
        fence = GL.glFenceSync(GL.GL_SYNC_GPU_COMMANDS_COMPLETE, 0)
        GL.glFlush()
        address = fence or 0  # app.gl.api's glFenceSync: the GLsync as an int (None: no fence)
        try:
            event = self.functions.create_event_from_gl_sync(self.backend.context, address)
        except cl.Error as exc:
            GL.glDeleteSync(fence)
            raise ClError.from_pyopencl(exc, "clCreateEventFromGLsyncKHR") from exc
        self._fences.append([fence, event, None])
        return [event]

    def after_release(self, queue, release_event, waits, shadow=None) -> None:
        from app.cl.ext import flush
        from app.sharing.sync import timed_wait

        flush(queue)
        if release_event is not None:
            for entry in self._fences:  # this frame's fence (and any whose frame enqueued no release)
                if entry[2] is None:
                    entry[2] = release_event
        if self.gl_waits and release_event is not None:
            sync = GL.glCreateSyncFromCLeventARB(self.backend.context.int_ptr, release_event.int_ptr, 0)
            GL.glWaitSync(sync, 0, GL.GL_TIMEOUT_IGNORED)
            GL.glDeleteSync(sync)
        elif release_event is not None:
            timed_wait(waits, "clWaitForEvents(release)", release_event.wait)
        else:
            timed_wait(waits, "clFinish", queue.finish)
            self._retire(len(self._fences))  # the queue finished: every acquire consumed its event

    def close(self) -> None:
        """Finish the queue (every acquire has then consumed its linked event), then retire every
        fence. Never raises: a failure is logged and kept in ``close_failures``, and the teardown
        goes on; where the queue did not finish the fences are left to the GL context's end (a
        linked event may still be in use), their events released."""
        fences, self._fences = self._fences, []
        try:
            self.backend.queue.finish()
        except Exception as exc:  # noqa: BLE001 - recorded; the backend and the scene still go
            self._close_failed(f"clFinish before deleting {len(fences)} GL fence(s): {exc}; the fences are left "
                               "to the GL context's end")
            for entry in fences:
                entry[1] = entry[2] = None
            return
        self._fences = fences
        try:
            self._retire(len(fences))
        except Exception as exc:  # noqa: BLE001
            self._close_failed(f"deleting the GL fences: {exc}")
        self._fences = []

    def _close_failed(self, what: str) -> None:
        self.close_failures.append(what)
        log.warning("gl_event sync at teardown: %s", what)
