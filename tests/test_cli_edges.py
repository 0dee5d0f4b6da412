"""The command line at its edges: limits checked before any work, messages that name the real
cause, outputs refused before the work, standard output closed or full."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT, pythonpath_with_root


def _lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.strip()]


@pytest.mark.parametrize("args, needle", [
    (["--seed", "-1"], "--seed: expected a whole number from 0 to 2**64-1, got -1"),
    (["--seed", str(2**64)], "--seed"),
    (["--panel-hz", "1e-300"], "--panel-hz: expected 0 (every frame) or at least 0.001"),
    (["--stamps-ms", "-1"], "--stamps-ms: expected 0 (every frame) to 1000 ms, got -1"),
    (["--stamps-ms", "nan"], "--stamps-ms: expected 0 (every frame) to 1000 ms, got nan"),
    (["--stamps-ms", "soon"], "--stamps-ms: expected a number of milliseconds, got 'soon'"),
    (["--cl-device", "portable:-1"], "--cl-device 'portable:-1': INDEX must be a whole number of 0 or more"),
    (["--cl-device", "portable:x"], "INDEX must be a whole number"),
    (["--report", "REPORT_DIR/"], "dir_that_does_not_exist/ names a folder"),
])
def test_limits_checked_before_any_work(glshare, tmp_path, args, needle):
    args = [a.replace("REPORT_DIR", str(tmp_path / "dir_that_does_not_exist")) for a in args]
    res = glshare("run", "--headless", "--frames", "2", *(["--report", str(tmp_path / "r.json")]
                                                        if "--report" not in args else []), *args)
    lines = _lines(res.stderr)
    assert res.returncode == 2 and len(lines) == 1 and needle in lines[0], res.stderr
    assert sorted(os.listdir(tmp_path)) == []


def test_env_selector_is_named_as_the_variable(glshare, tmp_path):
    res = glshare("run", "--headless", "--frames", "1", "--report", str(tmp_path / "r.json"),
                  env={"GLSHARE_CL_DEVICE": "zzz"})
    assert res.returncode == 2 and "GLSHARE_CL_DEVICE='zzz' matches no platform" in res.stderr
    assert "--cl-device" not in res.stderr


def test_pocl_without_a_cache_folder_says_so(tmp_path):
    """PoCL alone (an ICD folder holding only its ICD: another implementation that works would be
    chosen instead, rightly) and no folder for its cache: one line that says so, exit 2."""
    pocl_icd = Path("/etc/OpenCL/vendors/pocl.icd")
    if not pocl_icd.exists():
        pytest.skip(f"{pocl_icd} is not here: PoCL is not installed as a system ICD")
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    (vendors / "pocl.icd").symlink_to(pocl_icd)
    home = tmp_path / "home_is_a_file"
    home.write_text("")
    env = {k: v for k, v in os.environ.items() if k not in ("POCL_CACHE_DIR", "XDG_CACHE_HOME", "PYOPENGL_PLATFORM")}
    env["HOME"] = str(home)
    env["OCL_ICD_VENDORS"] = str(vendors)
    res = subprocess.run([sys.executable, "-m", "app", "info"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    lines = _lines(res.stderr)
    assert res.returncode == 2 and len(lines) == 1, res.stderr
    assert f"cannot create its kernel cache {home}/.cache/pocl/kcache ({home} is not a folder" in lines[0]
    assert "set POCL_CACHE_DIR to a writable folder" in lines[0] and "is an ICD" not in lines[0]


def test_closed_stdout_ends_quietly():
    proc = subprocess.Popen([sys.executable, "-m", "app", "errors"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={k: v for k, v in os.environ.items() if k != "PYOPENGL_PLATFORM"})
    proc.stdout.close()  # like `glshare errors | head -0`: the reader is gone before anything is written
    err = proc.stderr.read()
    proc.wait(120)
    assert proc.returncode == 141 and err == b""


def test_full_stdout_is_one_line(tmp_path):
    """A real refusal of the kernel (RLIMIT_FSIZE on the file standard output is)."""
    code = ("import resource, subprocess, sys;"
            "lim = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64));"
            "out = open(sys.argv[1], 'wb');"
            "r = subprocess.run([sys.executable, '-m', 'app', 'info'], stdout=out, stderr=subprocess.PIPE, "
            "preexec_fn=lim, text=True);"
            "print(r.returncode); print(r.stderr, end='')")
    env = {k: v for k, v in os.environ.items() if k != "PYOPENGL_PLATFORM"}
    res = subprocess.run([sys.executable, "-c", code, str(tmp_path / "out.txt")], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    status, *err = res.stdout.splitlines()
    assert status == "1" and err == ["glshare: error: cannot write to standard output: File too large"], res.stdout


def test_report_on_stdout_is_only_the_report(glshare, tmp_path):
    res = glshare("run", "--headless", "--frames", "3", "--size", "1024", "--report", "-",
                  "--screenshot", str(tmp_path / "s.png"))
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["frames"] == 3  # nothing else on standard output
    assert "wrote screenshot" in res.stderr and "wrote report standard output" in res.stderr


def test_default_out_folder_is_a_file(glshare, tmp_path):
    (tmp_path / "out").write_text("not a folder")
    res = glshare("run", "--headless", "--size", "64", cwd=tmp_path, env={"PYTHONPATH": pythonpath_with_root()})
    lines = _lines(res.stderr)
    assert res.returncode == 2 and len(lines) == 1, res.stderr
    assert lines[0].startswith("glshare: error: the default screenshot out/glshare-particles.png: ")
    assert lines[0].endswith(f"{tmp_path}/out is a file, not a folder")


def test_two_outputs_one_path(glshare, tmp_path):
    same = str(tmp_path / "x.json")
    res = glshare("run", "--headless", "--frames", "2", "--report", same, "--trace", same)
    assert res.returncode == 2 and "--report and --trace both write" in res.stderr
    assert os.listdir(tmp_path) == []


def test_bench_json_checked_before_the_bench(glshare, tmp_path):
    (tmp_path / "FILE").write_text("")
    res = glshare("bench", "--quick", "--json", str(tmp_path / "FILE" / "b.json"))
    assert res.returncode == 2 and len(_lines(res.stderr)) == 1 and "is a file, not a folder" in res.stderr
    # refused before the bench started: no progress line, no cell measured
    assert "glshare bench: [" not in res.stderr and "cells in" not in res.stdout


def test_bench_json_and_plot_one_path(glshare, tmp_path):
    same = str(tmp_path / "b.out")
    res = glshare("bench", "--quick", "--json", same, "--plot", same)
    assert res.returncode == 2 and "--json and --plot both write" in res.stderr


def _nv12(path, w, h):
    from app.yuv.formats import pack, yuv_format
    from app.yuv.pattern import pattern_frame

    fmt = yuv_format("nv12")
    path.write_bytes(pack(fmt, *pattern_frame(fmt, w, h, 0)))
    return path


def test_convert_out_inside_a_file(glshare, tmp_path):
    src = _nv12(tmp_path / "f.nv12", 64, 36)
    (tmp_path / "FILE").write_text("")
    res = glshare("convert", "--format", "nv12", "--size", "64x36", str(src), str(tmp_path / "FILE" / "o.png"))
    lines = _lines(res.stderr)
    assert res.returncode == 2 and len(lines) == 1 and "OUT" in lines[0] and "is a file, not a folder" in lines[0]


def test_convert_size_past_the_device_image_limit(glshare, tmp_path):
    from app.cl.device import select_device
    from app.config import MAX_IMAGE_SIDE

    device = select_device(os.environ.get("GLSHARE_CL_DEVICE")).device
    w = int(device.image2d_max_width) + 2  # PoCL sizes its limits from the memory free at start-up
    if w > MAX_IMAGE_SIDE:
        pytest.skip(f"this device's 2D images reach {w - 2}, past what --size takes ({MAX_IMAGE_SIDE})")
    src = tmp_path / "wide.nv12"
    src.write_bytes(bytes(w * 2 * 3 // 2))
    res = glshare("convert", "--format", "nv12", "--size", f"{w}x2", str(src), str(tmp_path / "o.png"))
    lines = _lines(res.stderr)
    assert res.returncode == 2 and len(lines) == 1, res.stderr
    assert f"{w}x2: larger than the device's 2D images can be ({device.image2d_max_width}x" in lines[0]
    assert not (tmp_path / "o.png").exists()


def test_convert_image_limits_are_the_device_s():
    from types import SimpleNamespace

    from app.commands.convert import check_image_limits
    from app.errors import UsageError

    pocl = SimpleNamespace(image2d_max_width=8192, image2d_max_height=8192, max_mem_alloc_size=2**31)
    check_image_limits(pocl, 8192, 2, "PoCL")
    with pytest.raises(UsageError, match=r"16384x2: larger than the device's 2D images can be \(8192x8192 on PoCL\)"):
        check_image_limits(pocl, 16384, 2, "PoCL")
    small = SimpleNamespace(image2d_max_width=16384, image2d_max_height=16384, max_mem_alloc_size=2**20)
    with pytest.raises(UsageError, match="its RGBA output"):
        check_image_limits(small, 1024, 1024, "a small device")


def test_convert_wrong_size_input_is_not_read(tmp_path):
    """A 3 GB input of the wrong size is refused from stat, without reading it (a sparse file)."""
    big = tmp_path / "big.nv12"
    with open(big, "wb") as f:
        f.truncate(3 * 1024**3)
    code = ("import resource, subprocess, sys;"
            "r = subprocess.run([sys.executable, '-m', 'app', 'convert', '--format', 'nv12', '--size', '1920x1080',"
            " sys.argv[1], sys.argv[2]], capture_output=True, text=True);"
            "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); print(r.stderr, end='')")
    env = {k: v for k, v in os.environ.items() if k != "PYOPENGL_PLATFORM"}
    res = subprocess.run([sys.executable, "-c", code, str(big), str(tmp_path / "o.png")], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    head, *err = res.stdout.splitlines()
    status, rss_kb = (int(v) for v in head.split())
    assert status == 2 and err == [f"glshare: error: {big}: 3221225472 bytes, but one 1920x1080 NV12 frame is "
                                   "3110400 bytes"], res.stdout
    assert rss_kb < 500 * 1024  # the 3 GB were never read into memory


def test_no_x_server_is_one_line_with_the_way_out(glshare, tmp_path):
    display = next(f":{n}" for n in range(987, 1100) if not os.path.exists(f"/tmp/.X11-unix/X{n}"))
    res = glshare("run", "--frames", "2", "--report", str(tmp_path / "r.json"), env={"DISPLAY": display})
    lines = _lines(res.stderr)
    # exit 2, as a run that cannot start as asked (a bad option, a refused backend): nothing was done
    assert res.returncode == 2 and len(lines) == 1, res.stderr
    assert f"cannot open the X display '{display}'" in lines[0] and "--headless" in lines[0]


def test_info_json_without_opencl_still_says_what_it_knows(glshare, tmp_path):
    """No OpenCL implementation at all: `info --json` prints the reason, where the ICD loader looked
    and GL's facts as JSON on stdout, and exits 2 (before, stdout was empty)."""
    empty = tmp_path / "vendors"
    empty.mkdir()
    res = glshare("info", "--json", env={"OCL_ICD_VENDORS": str(empty)})
    assert res.returncode == 2, res.stderr
    data = json.loads(res.stdout)
    assert data["opencl"]["error"].startswith("no OpenCL device found")
    assert data["opencl"]["folder"] == str(empty) and data["opencl"]["icd_files"] == []
    assert data["devices"] == [] and data["gl"]["renderer"]


def test_video_on_another_scene_is_said(glshare, tmp_path):
    """--video with a scene that does not play it: one line says so (before, it was ignored silently)."""
    from test_reliability import _video

    video = _video(tmp_path / "v.mkv")
    res = glshare("run", "--headless", "--scene", "image", "--video", str(video), "--frames", "2",
                  "--report", str(tmp_path / "r.json"), "--quiet")
    assert res.returncode == 0, res.stderr
    said = [line for line in _lines(res.stderr) if "--video" in line]
    assert said == ["glshare: --video plays in the yuv scene only; the image scene runs first, and a switch to yuv "
                    "plays it"], res.stderr
