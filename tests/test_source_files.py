"""Kernel and shader files: every way one can be missing or wrong is one line naming the file and
the cause; a failed build shows the failing line and the compiler's log and keeps a private copy;
hot reload rebuilds what changed, keeps the last good program on a failed build, and sets the
kernel arguments that scenes set once again on the rebuilt kernels."""
from __future__ import annotations

import errno
import os
import shutil
import stat
import threading

import numpy as np
import pytest

from app.config import ROOT, RunConfig
from app.errors import KernelBuildError, KernelNameError, ShaderBuildError, SourceFileError
from app.sharing.backends.host_copy import HostCopy

JULIA_LINE = "(float4)(LANE(r, k), LANE(s, k), 1.0f, 1.0f)"  # what julia() writes per pixel


def _put(path, text: str) -> None:
    """Write ``text`` and give the file a new mtime for certain (a poll compares signatures)."""
    st = os.stat(path) if os.path.exists(path) else None
    path.write_text(text) if isinstance(text, str) else path.write_bytes(text)
    if st is not None:
        t = st.st_mtime_ns + 1_000_000_000
        os.utime(path, ns=(t, t))


@pytest.fixture
def kernels(tmp_path, monkeypatch):
    """A copy of kernels/ the programs are built from."""
    import app.cl.programs as programs

    folder = tmp_path / "kernels"
    shutil.copytree(ROOT / "kernels", folder)
    monkeypatch.setattr(programs, "KERNELS_DIR", folder)
    return folder


@pytest.fixture
def shaders(tmp_path, monkeypatch):
    import app.gl.shaders as shader_mod

    folder = tmp_path / "shaders"
    shutil.copytree(ROOT / "shaders", folder)
    monkeypatch.setattr(shader_mod, "SHADERS_DIR", folder)
    return folder


# -- the files themselves --------------------------------------------------------------------------
@pytest.mark.parametrize("spoil, cause", [
    (lambda p: p.unlink(), "missing: no such kernel file"),
    (lambda p: (p.unlink(), p.mkdir()), "is a folder, not a file"),
    (lambda p: p.write_bytes(b"// caf\xe9\n__kernel void julia() {}\n"), "is not UTF-8 text (byte 0xe9 at line 1"),
    (lambda p: (p.unlink(), os.mkfifo(p)), "is a fifo, not a regular file"),
    (lambda p: (p.unlink(), p.symlink_to(p.parent / "gone.cl")), "missing (a symlink to"),
])
def test_unusable_kernel_file_is_one_line(host_copy, kernels, spoil, cause):
    from app.cl.programs import KernelProgram

    spoil(kernels / "julia.cl")
    with pytest.raises(SourceFileError) as exc:
        KernelProgram(host_copy.context, "julia.cl")  # a fifo must not block: nobody ever writes it
    line = exc.value.one_line()
    assert "julia.cl" in line and cause in line and "\n" not in line, line


def test_unreadable_kernel_file(host_copy, kernels, monkeypatch):
    """No permission (as root every file is readable, so the refusal is the kernel's answer made here)."""
    from app.cl.programs import KernelProgram

    real_open = os.open
    target = str(kernels / "julia.cl")

    def refusing(path, flags, *a):
        if str(path) == target:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *a)

    monkeypatch.setattr(os, "open", refusing)
    with pytest.raises(SourceFileError, match=r"julia.cl: cannot be read \(no permission\)"):
        KernelProgram(host_copy.context, "julia.cl")


def test_renamed_kernel_function(host_copy, kernels):
    from app.cl.programs import KernelProgram

    path = kernels / "julia.cl"
    path.write_text(path.read_text().replace("__kernel void julia(", "__kernel void julia_renamed("))
    program = KernelProgram(host_copy.context, "julia.cl")
    try:
        with pytest.raises(KernelNameError) as exc:
            program.kernel("julia")
    finally:
        program.release()
    line = exc.value.one_line()
    assert "julia.cl has no kernel named 'julia' (CL_INVALID_KERNEL_NAME)" in line
    assert "julia_buffer, julia_renamed" in line and exc.value.code == -46


def test_build_error_names_the_line_keeps_a_private_copy(host_copy, kernels):
    from app.cl.programs import KernelProgram

    path = kernels / "julia.cl"
    broken = path.read_text().replace("const int w = get_image_width(out);", "const int w = get_image_width(out) +;")
    path.write_text(broken)
    n = broken.splitlines().index("    const int w = get_image_width(out) +;") + 1
    with pytest.raises(KernelBuildError) as exc:
        KernelProgram(host_copy.context, "julia.cl")
    err = exc.value
    first = err.one_line()
    assert f"julia.cl: build failed at line {n}: 'const int w = get_image_width(out) +;'" in first
    assert "\n" not in first and err.saved_copy in first
    assert f"julia.cl:{n}:" in err.details  # the compiler's log, pointing at the file by its name
    copy = err.saved_copy
    assert open(copy).read() == broken
    folder = os.path.dirname(copy)
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700 and os.path.basename(folder).startswith("glshare-failed-")
    shutil.rmtree(folder)


def test_shader_compile_error_quotes_the_line(gl, shaders):
    from app.gl.shaders import Program

    path = shaders / "quad.frag"
    path.write_text(path.read_text().replace("frag_color = texture(image, uv);", "frag_color = texture(image, uv) +;"))
    with pytest.raises(ShaderBuildError) as exc:
        Program("t", "quad.vert", "quad.frag")
    err = exc.value
    assert "quad.frag failed to compile at line 6: 'frag_color = texture(image, uv) +;'" in err.one_line()
    assert "error" in err.details.lower() and open(err.saved_copy).read() == path.read_text()
    shutil.rmtree(os.path.dirname(err.saved_copy))


def test_missing_shader_is_one_line(gl, shaders):
    from app.gl.shaders import Program

    (shaders / "quad.vert").unlink()
    with pytest.raises(SourceFileError, match=r"quad.vert: missing: no such shader file"):
        Program("t", "quad.vert", "quad.frag")


# -- the command line: run and convert --------------------------------------------------------------
def _copy(tmp_path, name: str):
    folder = tmp_path / name
    shutil.copytree(ROOT / name, folder)
    return folder


def test_run_with_a_missing_kernel_says_one_line(glshare, tmp_path):
    folder = _copy(tmp_path, "kernels")
    (folder / "julia.cl").unlink()
    res = glshare("run", "--headless", "--scene", "image", "--frames", "2", "--report", str(tmp_path / "r.json"),
                  env={"GLSHARE_KERNELS_DIR": str(folder)}, timeout=120)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 1 and len(lines) == 1, res.stderr
    assert lines[0].endswith("julia.cl: missing: no such kernel file") and "Traceback" not in res.stderr
    assert not (tmp_path / "r.json").exists()


def test_run_with_a_broken_kernel_shows_line_and_log(glshare, tmp_path):
    folder = _copy(tmp_path, "kernels")
    path = folder / "particles.cl"
    path.write_text(path.read_text().replace("float life = v.w - dt;", "float life = v.w - ;"))
    res = glshare("run", "--headless", "--frames", "2", "--size", "64", "--report", str(tmp_path / "r.json"),
                  env={"GLSHARE_KERNELS_DIR": str(folder)}, timeout=120)
    assert res.returncode == 1 and "Traceback" not in res.stderr
    first = res.stderr.splitlines()[0]
    assert "particles.cl: build failed at line 15: 'float life = v.w - ;'" in first, res.stderr
    assert "particles.cl:15:" in res.stderr  # the compiler's log follows, indented
    copy = first.rsplit("kept at ", 1)[1].strip()
    assert open(copy).read() == path.read_text()
    shutil.rmtree(os.path.dirname(copy))


def test_run_with_a_broken_shader(glshare, tmp_path):
    folder = _copy(tmp_path, "shaders")
    (folder / "particles.frag").write_bytes(b"\xff\xfe not text")
    res = glshare("run", "--headless", "--frames", "2", "--size", "64", "--report", str(tmp_path / "r.json"),
                  env={"GLSHARE_SHADERS_DIR": str(folder)}, timeout=120)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 1 and len(lines) == 1, res.stderr
    assert "particles.frag: is not UTF-8 text (byte 0xff at line 1, offset 0)" in lines[0]


def test_convert_with_a_renamed_kernel(glshare, tmp_path):
    from app.yuv.formats import pack, yuv_format
    from app.yuv.pattern import pattern_frame

    folder = _copy(tmp_path, "kernels")
    path = folder / "yuv.cl"
    path.write_text(path.read_text().replace("void yuv420_to_rgba(", "void yuv420_to_rgba_v2("))
    fmt = yuv_format("nv12")
    src = tmp_path / "f.nv12"
    src.write_bytes(pack(fmt, *pattern_frame(fmt, 64, 36, 0)))
    res = glshare("convert", "--format", "nv12", "--size", "64x36", str(src), str(tmp_path / "o.png"),
                  env={"GLSHARE_KERNELS_DIR": str(folder)}, timeout=120)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 1 and len(lines) == 1, res.stderr
    assert "yuv.cl has no kernel named 'yuv420_to_rgba' (CL_INVALID_KERNEL_NAME)" in lines[0]
    assert not (tmp_path / "o.png").exists()


# -- hot reload -------------------------------------------------------------------------------------
@pytest.fixture
def watch(monkeypatch):
    """A watcher driven by the test; the loop's own one never looks (an hour between polls)."""
    from app.session import reload

    monkeypatch.setattr(reload, "_watch", reload.SourceWatch(interval_s=3600))
    monkeypatch.setattr(reload._watch, "_next", float("inf"))
    return reload.SourceWatch(interval_s=0)


def _settle(watch, session) -> list[str]:
    """Two polls: the first sees the change, the second (the file unchanged since) rebuilds."""
    first = watch.poll(session)
    return first + watch.poll(session)


def _solid(px: np.ndarray, rgb) -> bool:
    return bool((px[..., :3] == np.array(rgb, np.uint8)).all())


def test_kernel_and_shader_reload_keep_the_last_good_build(gl, kernels, shaders, watch):
    from app.run import Run

    cfg = RunConfig(scene="image", size=(64, 64), headless=True, overlay=False, frames=10_000,
                    backend=HostCopy.name)  # host_copy: CL writes an image, julia() (the line replaced)
    julia, frag = kernels / "julia.cl", shaders / "quad.frag"
    original = julia.read_text()
    with Run(cfg, surface=gl) as rt:
        session = rt.session
        rt.tick()
        assert not _solid(session.surface.read_pixels(), (255, 0, 0))
        assert watch.poll(session) == []  # nothing changed
        _put(julia, original.replace(JULIA_LINE, "(float4)(1.0f, 0.0f, 0.0f, 1.0f)"))
        assert watch.poll(session) == []  # changed, maybe still being written: the next poll decides
        assert watch.poll(session) == [f"reloaded {julia}"]
        rt.tick()
        assert _solid(session.surface.read_pixels(), (255, 0, 0))  # the rebuilt kernel, arguments set again

        _put(julia, original.replace(JULIA_LINE, "(float4)(0.0f, 1.0f, 0.0f 1.0f)"))
        lines = _settle(watch, session)
        assert lines == [f"{julia} changed but cannot be used; the last good build keeps running"]
        err = session.history.loop_errors[-1]
        assert err.where == f"reload {julia}" and err.name == "KernelBuildFailed"
        assert "build failed at line" in err.message and f"{julia}:" in err.meaning  # the log, for the panel
        assert session.status == lines[0]
        assert watch.poll(session) == []  # the same broken version is not tried again
        for _ in range(2):
            rec = rt.tick()
            assert rec.errors == [] and _solid(session.surface.read_pixels(), (255, 0, 0))  # the last good one

        _put(julia, original.replace(JULIA_LINE, "(float4)(0.0f, 1.0f, 0.0f, 1.0f)"))
        assert _settle(watch, session) == [f"reloaded {julia}"]
        rt.tick()
        assert _solid(session.surface.read_pixels(), (0, 255, 0))  # the fixed file resumes
        assert session.scene.program.generation == 2

        _put(frag, frag.read_text().replace("frag_color = texture(image, uv);", "frag_color = vec4(0.0, 0.0, 1.0, 1.0);"))
        assert _settle(watch, session) == [f"reloaded {frag}"]
        rt.tick()
        assert _solid(session.surface.read_pixels(), (0, 0, 255))
        _put(frag, "#version 330 core\nout vec4 frag_color;\nvoid main() { frag_color = nope; }\n")
        assert "cannot be used" in _settle(watch, session)[0]
        assert "line 3" in session.history.loop_errors[-1].message
        rt.tick()
        assert _solid(session.surface.read_pixels(), (0, 0, 255))  # the last good shader
        assert session.history.totals["errors"] == 0  # reload failures are loop errors, frames ran clean


def test_reload_sets_the_arguments_set_once_again(gl, kernels, watch):
    """particles sets all seven kernel arguments once, at build: the rebuilt kernel gets them all."""
    from app.run import Run

    n = 1024
    cfg = RunConfig(scene="particles", size=n, headless=True, overlay=False, frames=10_000)
    path = kernels / "particles.cl"
    with Run(cfg, surface=gl) as rt:
        rt.tick()
        _put(path, path.read_text().replace("position[i] = p;", "position[i] = (float4)((float)i, (float)count, dt, 1.0f);"))
        assert _settle(watch, rt.session) == [f"reloaded {path}"]
        rec = rt.tick()
        assert rec.errors == []
        got = rt.session.scene.position.gl.read().reshape(n, 4)
        want = np.stack([np.arange(n), np.full(n, n), np.full(n, 0.005), np.ones(n)], -1).astype(np.float32)
        np.testing.assert_array_equal(got, want)


def test_renamed_or_deleted_kernel_at_reload(gl, kernels, watch):
    from app.run import Run

    cfg = RunConfig(scene="image", size=(32, 32), headless=True, overlay=False, frames=10_000,
                    backend=HostCopy.name)
    julia = kernels / "julia.cl"
    original = julia.read_text()
    with Run(cfg, surface=gl) as rt:
        rt.tick()
        _put(julia, original.replace("__kernel void julia(", "__kernel void julia_v2("))
        assert "cannot be used" in _settle(watch, rt.session)[0]
        assert "has no kernel named 'julia' (CL_INVALID_KERNEL_NAME)" in rt.session.history.loop_errors[-1].message
        julia.unlink()
        assert "cannot be used" in _settle(watch, rt.session)[0]
        assert rt.session.history.loop_errors[-1].message.endswith("julia.cl: missing: no such kernel file")
        assert watch.poll(rt.session) == [] and len(rt.session.history.loop_errors) == 2  # said once
        assert rt.tick().errors == []  # the last good program still runs
        julia.write_text(original)
        assert _settle(watch, rt.session) == [f"reloaded {julia}"]
        assert rt.tick().errors == []


def test_polling_costs_one_clock_read_between_looks(kernels, monkeypatch):
    """Between looks a poll reads the clock and returns: no stat, whatever the number of frames."""
    import app.session.reload as reload

    clock = [0]
    w = reload.SourceWatch(interval_s=0.25, clock=lambda: clock[0])
    looks = []
    monkeypatch.setattr(w, "check", lambda session: looks.append(clock[0]) or [])
    for frame in range(1000):  # 1000 frames at 1 ms: four looks a second
        clock[0] = frame * 1_000_000
        w.poll(None)
    assert looks == [0, 250_000_000, 500_000_000, 750_000_000]


def test_fifo_kernel_does_not_block(host_copy, kernels):
    """A fifo in place of a kernel is refused at once (opened non-blocking), even with a writer waiting."""
    from app.cl.programs import KernelProgram

    path = kernels / "julia.cl"
    path.unlink()
    os.mkfifo(path)
    done = threading.Event()

    def build():
        with pytest.raises(SourceFileError):
            KernelProgram(host_copy.context, "julia.cl")
        done.set()

    t = threading.Thread(target=build, daemon=True)
    t.start()
    t.join(20)
    assert done.is_set()


WINDOW_SCRIPT = r"""
import os, sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np
from app.window import select_platform
select_platform(False)
from app.config import KERNELS_DIR, RunConfig
from app.run import Run

julia = KERNELS_DIR / "julia.cl"
original = julia.read_text()
line = "(float4)(LANE(r, k), LANE(s, k), 1.0f, 1.0f)"


def put(text):
    t = os.stat(julia).st_mtime_ns + 1_000_000_000
    julia.write_text(text)
    os.utime(julia, ns=(t, t))


def run_until(rt, test, seconds=20):
    t0, n = time.monotonic(), 0
    while time.monotonic() - t0 < seconds:
        rt.tick()
        n += 1
        if test():
            return n
    raise SystemExit(f"not within {seconds} s")


solid = lambda rt, rgb: bool((rt.session.scene.texture.gl.read()[..., :3] == rgb).all())
cfg = RunConfig(scene="image", size=(64, 64), overlay=False, backend="host_copy")
with Run(cfg) as rt:
    assert rt.session.surface.kind == "window"
    rt.tick()
    put(original.replace(line, "(float4)(1.0f, 0.0f, 0.0f, 1.0f)"))
    run_until(rt, lambda: solid(rt, (255, 0, 0)))
    print("red", flush=True)
    put(original.replace(line, "(float4)(0.0f, 1.0f, 0.0f 1.0f)"))
    run_until(rt, lambda: bool(rt.session.history.loop_errors))
    err = rt.session.history.loop_errors[-1]
    assert "build failed at line" in err.message and "julia.cl:" in err.meaning, err
    for _ in range(10):
        rt.tick()
    assert solid(rt, (255, 0, 0))
    print("kept", flush=True)
    put(original.replace(line, "(float4)(0.0f, 1.0f, 0.0f, 1.0f)"))
    run_until(rt, lambda: solid(rt, (0, 255, 0)))
    print("green", rt.session.history.totals["frames"], rt.session.history.totals["errors"], flush=True)
"""


@pytest.mark.window
@pytest.mark.skipif(not os.environ.get("DISPLAY"), reason="no DISPLAY: run under Xvfb (make test does)")
def test_reload_while_the_window_runs(tmp_path):
    """The loop's own poll (four looks a second) rebuilds an edited kernel in a real window."""
    import subprocess
    import sys

    folder = _copy(tmp_path, "kernels")
    env = {k: v for k, v in os.environ.items() if k != "PYOPENGL_PLATFORM"}
    env["GLSHARE_KERNELS_DIR"] = str(folder)
    res = subprocess.run([sys.executable, "-c", WINDOW_SCRIPT, str(ROOT)], env=env, capture_output=True, text=True,
                         timeout=180)
    assert res.returncode == 0, res.stderr[-3000:]
    out = res.stdout.split()
    assert out[:3] == ["red", "kept", "green"] and out[4] == "0", res.stdout  # no frame failed meanwhile
