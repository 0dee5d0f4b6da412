"""Bad input: one clear line, exit 2, nothing written."""
from __future__ import annotations

import pytest


@pytest.mark.parametrize("args, needle", [
    (["--cl-device", "NoSuchVendor"], "Portable Computing Language"),  # lists what exists
    (["--cl-device", "Portable:7"], "no device 7"),
    (["--size", "lots"], "--size"),
    (["--frames", "0"], "--frames"),
    (["--scene", "teapot"], "--scene"),
    (["--panel-hz", "-1"], "--panel-hz"),
    (["--panel-hz", "fast"], "--panel-hz"),
])
def test_bad_input_exit_2(glshare, tmp_path, args, needle):
    report = tmp_path / "r.json"
    res = glshare("run", "--headless", "--frames", "2", "--report", str(report), *args)
    assert res.returncode == 2, (res.returncode, res.stderr)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and needle in lines[0], res.stderr
    assert not report.exists()


def test_env_device_selector(glshare, tmp_path):
    bad = glshare("run", "--headless", "--frames", "1", env={"GLSHARE_CL_DEVICE": "Nope"})
    assert bad.returncode == 2 and "matches no platform" in bad.stderr
    good = glshare("run", "--headless", "--frames", "2", "--size", "64", "--report", str(tmp_path / "r.json"),
                   env={"GLSHARE_CL_DEVICE": "Portable:0"})
    assert good.returncode == 0, good.stderr
