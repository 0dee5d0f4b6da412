"""Does GL sharing work with this CL implementation and this GL? Tried in a child process.

The extension string is not to be trusted either way: NVIDIA's OpenCL lists no cl_khr_gl_sharing
and shares with a GLX context all the same, and an implementation that does not implement the
entry points may abort the process calling them (PoCL on clCreateFromGLBuffer). So the entry
points are tried in a child with a GL context of its own, of the same GL platform and display as
the parent's: the CL context from the GL context's properties, a one-element GL buffer made into
a CL buffer, acquired, written by CL, released, read back through GL. An abort, a crash (signal)
or a hang (timeout) there is a refusal with its reason; glshare itself never calls an entry point
the trial did not see work.

The verdict is kept per (platform, device, driver version, GL vendor, renderer, version, GL
platform) in memory and on disk (``$XDG_CACHE_HOME/glshare``, else ``~/.cache/glshare``; no cache
where that is not writable), so the trial runs once per machine set-up.

Run as ``python -m app.sharing.gl_trial PLATFORM_NAME DEVICE_INDEX GL_PLATFORM``: the child.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass

TIMEOUT_S = 30.0  # a child that has not answered by then is a hang (start-up of a cold child: ~1 s)
VALUE = 42.0  # what CL writes into the GL buffer
CACHE_VERSION = 1
STEP = "step "


@dataclass(frozen=True)
class Verdict:
    works: bool
    reason: str  # why not, or "" when it works
    listed: bool  # whether the platform or device lists cl_khr_gl_sharing
    cached: bool = False  # read from the disk cache (not tried in this run)

    def as_dict(self) -> dict:
        return {"works": self.works, "reason": self.reason, "listed": self.listed}


def _implementation(platform_name: str) -> str:
    """A short name of the implementation for the refusal's sentence."""
    low = platform_name.lower()
    if "portable computing language" in low:
        return "PoCL"
    if "intel" in low:
        return "Intel's OpenCL"
    return platform_name.strip()


def key_of(env) -> dict:
    choice, gl = env.choice, env.gl_info
    return {"platform": choice.platform.name.strip(), "device": choice.device.name.strip(),
            "driver": choice.device.driver_version.strip(), "gl_vendor": gl.vendor, "gl_renderer": gl.renderer,
            "gl_version": gl.version, "gl_platform": env.surface.gl_platform}


def cache_path() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "glshare", "gl-sharing-trials.json")


def _load() -> dict:
    try:
        with open(cache_path()) as f:
            data = json.load(f)
        return data if data.get("version") == CACHE_VERSION else {}
    except (OSError, ValueError, AttributeError):
        return {}


def _store(key: str, verdict: Verdict) -> None:
    """Keep the verdict; silently nothing where the cache folder is not writable."""
    data = _load() or {"version": CACHE_VERSION, "verdicts": {}}
    data.setdefault("verdicts", {})[key] = verdict.as_dict()
    path = cache_path()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        pass


_memo: dict[str, Verdict] = {}


def verdict(env) -> Verdict:
    """The trial's verdict for ``env`` (from memory, the disk cache, or a child run now)."""
    from app.cl.device import GL_SHARING_EXTENSIONS

    key = json.dumps(key_of(env), sort_keys=True)
    if key in _memo:
        return _memo[key]
    exts = env.device_extensions | frozenset(env.choice.platform.extensions.split())
    listed = any(e in exts for e in GL_SHARING_EXTENSIONS)
    found = _load().get("verdicts", {}).get(key)
    if found is not None:
        result = Verdict(bool(found["works"]), str(found["reason"]), listed, cached=True)
    else:
        result = run_child(env, listed)
        _store(key, result)
    _memo[key] = result
    return result


def child_command(env) -> list[str]:
    return [sys.executable, "-m", "app.sharing.gl_trial", env.choice.platform.name.strip(), str(env.choice.index),
            env.surface.gl_platform]


def child_environment(env) -> dict:
    """The child's environment: the parent's, with this copy of ``app`` importable and EGL's display
    kind (surfaceless, device) the parent's own."""
    out = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out["PYTHONPATH"] = os.pathsep.join([root] + [p for p in out.get("PYTHONPATH", "").split(os.pathsep) if p])
    egl = getattr(env.surface, "egl_platform", "")
    if env.surface.gl_platform == "egl" and egl:
        out["GLSHARE_EGL_PLATFORM"] = egl
    return out


def run_child(env, listed: bool, timeout: float = TIMEOUT_S, command: list[str] | None = None) -> Verdict:
    """Run the trial in a child; its exit, signal or silence becomes the verdict."""
    impl = _implementation(env.choice.platform.name)
    try:
        done = subprocess.run(command or child_command(env), env=child_environment(env), capture_output=True,
                              text=True, timeout=timeout)
        out, err, rc = done.stdout, done.stderr, done.returncode
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return Verdict(False, f"{impl} hung in the probe process in {_last_step(out)} (no answer within "
                              f"{timeout:.0f} s; killed)", listed)
    except OSError as exc:
        return Verdict(False, f"the GL-sharing probe process could not start: {exc}", listed)
    return judge(impl, out, err, rc, listed)


def _last_step(out: str) -> str:
    steps = [line[len(STEP):] for line in out.splitlines() if line.startswith(STEP)]
    return steps[-1] if steps else "its start-up"


def judge(impl: str, out: str, err: str, rc: int, listed: bool) -> Verdict:
    """The verdict from a child's stdout (its steps, then ``ok`` or ``refused: ...``), stderr and exit."""
    lines = out.splitlines()
    if rc == 0 and lines and lines[-1] == "ok":
        return Verdict(True, "", listed)
    refused = [line for line in lines if line.startswith("refused: ")]
    if rc == 0 and refused:
        return Verdict(False, refused[-1][len("refused: "):], listed)
    step = _last_step(out)
    said = next((line.strip() for line in reversed(err.splitlines()) if line.strip()), "")
    cause = f": {said[:200]}" if said else ""
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        verb = "aborted" if name == "SIGABRT" else "crashed"
        return Verdict(False, f"{impl} {verb} the probe process in {step} ({name}){cause}", listed)
    return Verdict(False, f"{impl} ended the probe process in {step} (exit status {rc}){cause}", listed)


def describe(v: Verdict, env) -> str:
    """A success's words: where the implementation does not list the extension, that it works all the same."""
    if v.listed:
        return ""
    choice = env.choice
    return (f"works, though {choice.platform.name.strip()} {choice.device.driver_version.strip()} does not "
            "list cl_khr_gl_sharing")


# -- the child ---------------------------------------------------------------------------------------
def _step(name: str) -> None:
    print(STEP + name, flush=True)


def _gl_context(gl_platform: str):
    """A GL context of its own, current: EGL as the parent's headless surface, or a hidden GLFW
    window on the parent's X display (GLX)."""
    from app.window import select_platform

    if gl_platform == "egl":
        select_platform(True)
        from app.window.egl_headless import EglSurface

        return EglSurface((16, 16))
    select_platform(False)
    import glfw

    if not glfw.init():
        raise RuntimeError("glfwInit failed (no X display?)")
    glfw.window_hint(glfw.VISIBLE, False)
    glfw.window_hint(glfw.CONTEXT_VERSION_MAJOR, 3)
    glfw.window_hint(glfw.CONTEXT_VERSION_MINOR, 3)
    glfw.window_hint(glfw.OPENGL_PROFILE, glfw.OPENGL_CORE_PROFILE)
    glfw.window_hint(glfw.OPENGL_FORWARD_COMPAT, True)
    glfw.window_hint(glfw.CONTEXT_CREATION_API, glfw.NATIVE_CONTEXT_API)
    window = glfw.create_window(16, 16, "glshare gl-sharing probe", None, None)
    if not window:
        raise RuntimeError("glfwCreateWindow gave no GL 3.3 core context")
    glfw.make_context_current(window)
    return window


def child_main(platform_name: str, index: int, gl_platform: str) -> int:
    import ctypes

    import numpy as np

    _step("the GL context")
    _gl_context(gl_platform)
    import pyopencl as cl
    from OpenGL import GL

    from app.cl import gl_sharing as glcl

    _step("the CL platform")
    platform = next(p for p in cl.get_platforms() if p.name.strip() == platform_name)
    device = platform.get_devices()[index]
    fns = glcl.GlSharingFunctions(platform)
    props = glcl.context_properties(glcl.current_gl_pairs(gl_platform), platform)
    try:
        _step("clGetGLContextInfoKHR")
        named = fns.devices_for_gl_context(props)
        if named and device.int_ptr not in named:
            other = glcl.device_by_handle(platform, named[0])
            print(f"note: the GL context's device is {other.name.strip() if other else hex(named[0])}", flush=True)
            device = other or device
    except cl.Error as exc:  # optional: the context creation below is the test
        print(f"note: clGetGLContextInfoKHR: {exc}", flush=True)
    try:
        _step("clCreateContext")
        ctx = fns.create_context(props, [device])
        _step("glBufferData")
        buf = GL.glGenBuffers(1)
        GL.glBindBuffer(GL.GL_ARRAY_BUFFER, buf)
        GL.glBufferData(GL.GL_ARRAY_BUFFER, 4, np.zeros(1, np.float32), GL.GL_DYNAMIC_DRAW)
        GL.glBindBuffer(GL.GL_ARRAY_BUFFER, 0)
        GL.glFinish()
        _step("clCreateFromGLBuffer")
        mem = fns.create_from_gl_buffer(ctx, cl.mem_flags.READ_WRITE, int(buf))
        queue = cl.CommandQueue(ctx, device)
        acquire, release = fns.hand_over_calls()
        _step("clEnqueueAcquireGLObjects")
        acquire(queue, [mem])
        _step("clEnqueueWriteBuffer")
        cl.enqueue_copy(queue, mem, np.array([VALUE], np.float32))
        _step("clEnqueueReleaseGLObjects")
        release(queue, [mem])
        _step("clFinish")
        queue.finish()
        _step("glGetBufferSubData")
        out = np.zeros(1, np.float32)
        GL.glBindBuffer(GL.GL_ARRAY_BUFFER, buf)
        GL.glGetBufferSubData(GL.GL_ARRAY_BUFFER, 0, 4, out.ctypes.data_as(ctypes.c_void_p))
        GL.glBindBuffer(GL.GL_ARRAY_BUFFER, 0)
    except cl.Error as exc:
        from app.errors import cl_error_name

        routine = getattr(exc, "routine", "") or "a GL-sharing call"
        print(f"refused: {routine} returned {cl_error_name(exc.code)} ({exc.code})", flush=True)
        return 0
    if float(out[0]) != VALUE:
        print(f"refused: GL read {float(out[0])} back from the buffer CL wrote {VALUE} into (no sharing)", flush=True)
        return 0
    print("ok", flush=True)
    return 0



if __name__ == "__main__":
    if len(sys.argv) != 4:
        print("usage: python -m app.sharing.gl_trial PLATFORM_NAME DEVICE_INDEX GL_PLATFORM", file=sys.stderr)
        sys.exit(2)
    sys.exit(child_main(sys.argv[1], int(sys.argv[2]), sys.argv[3]))

