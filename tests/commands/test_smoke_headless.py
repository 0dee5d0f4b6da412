"""Headless end-to-end: 60 frames of particles, report fields and counts, screenshot not flat."""
from __future__ import annotations

import json

import numpy as np

from app.trace.png import read_png


def test_headless_particles_60_frames(glshare, tmp_path):
    report, shot = tmp_path / "r.json", tmp_path / "s.png"
    res = glshare("run", "--headless", "--frames", "60", "--size", "4096", "--report", str(report),
                  "--screenshot", str(shot))
    assert res.returncode == 0, res.stderr
    r = json.loads(report.read_text())
    for key in ("schema", "scene", "backend", "sync", "headless", "frames", "size", "bytes_per_frame", "gl", "cl",
                "counts", "phases_us", "errors"):
        assert key in r, key
    assert r["scene"] == "particles" and r["backend"] == "host_mapped" and r["sync"] == "finish"
    assert r["headless"] is True and r["frames"] == 60 and r["size"] == 4096
    assert r["bytes_per_frame"] == 32 * 4096  # position + color, float4 each (WORKLOADS.md)
    assert r["counts"] == {"acquire": 60, "compute": 60, "release": 60}
    for phase in ("acquire", "compute", "release", "render", "frame"):
        s = r["phases_us"][phase]
        assert 0 < s["median"] <= s["p95"] <= s["max"], (phase, s)
    assert r["errors"] == []
    assert "Portable Computing Language" in r["cl"]["platform"]
    assert "stamps read" in r["cl"]["stamps"]  # in C, or through ctypes with the reason
    assert r["gl"]["renderer"]
    px = read_png(shot)
    assert px.shape[2] == 3 and px.shape[0] > 100
    assert px.std() > 5 and len(np.unique(px.reshape(-1, 3), axis=0)) > 20  # not flat: particles + overlay
