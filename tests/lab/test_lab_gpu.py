"""The error lab against NVIDIA's driver (the H200 machine): every cl_khr_external_memory and
cl_khr_semaphore case called with raw pointers, spec, glshare and NVIDIA side by side.

Run there with ``bash .ci/gpu-run.sh`` or ``python -m pytest -m gpu tests/lab/test_lab_gpu.py -s``; the
lab's JSON and table are written to ``$GLSHARE_LAB_OUT`` (default: the test's tmp_path) as lab-nvidia.json /
lab-nvidia.txt. What is asserted is what must hold whatever the driver answers: every case that
may be called was called, none blocked the queue, the validator agrees with the spec; the
driver's own disagreements are the measurement, recorded, not asserted.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

# read through NULL, or undefined / implementation-defined (a double wait can block): never called
NOT_GIVEN_TO_A_DRIVER = {("semaphore", "sema_list_null"), ("semaphore", "same_semaphore_twice"),
                         ("external_memory", "same_object_twice")}


def _out_dir(tmp_path) -> Path:
    out = Path(os.environ["GLSHARE_LAB_OUT"]) if os.environ.get("GLSHARE_LAB_OUT") else tmp_path
    out.mkdir(parents=True, exist_ok=True)
    return out


def test_errors_calls_nvidia_for_every_external_memory_and_semaphore_case(glshare, tmp_path):
    res = glshare("errors", "--json", "--cl-device", "NVIDIA", timeout=600)
    assert res.returncode in (0, 1), (res.returncode, res.stderr[-3000:])  # 1: a disagreement, recorded
    data = json.loads(res.stdout)
    out = _out_dir(tmp_path)
    (out / "lab-nvidia.json").write_text(json.dumps(data, indent=2))
    from app.lab.lab import format_text

    (out / "lab-nvidia.txt").write_text(format_text(data))
    print(format_text(data))
    assert data["implementation_key"] == "nvidia" and data["backend"] == "external_memory"
    assert data["families"] == ["external_memory", "semaphore", "planar"]
    for fam in ("external_memory", "semaphore"):
        assert data["driver_policy"][fam].startswith("called"), data["driver_policy"]
    # a row that needs two devices (a sub-device queue) is not provoked where the GPU cannot partition
    skipped = {(p["family"], p["id"]): p["why"] for p in data["not_provokable"]}
    assert all(why for why in skipped.values())
    for r in data["cases"]:
        assert {"case", "call", "spec_code", "validator_code", "driver_called", "driver_code"} <= set(r)
        assert r["validator_agrees"] or r["deviation"], r  # planar's declared deviations
        assert r["agrees"], r
        assert "did not drain" not in r["driver_note"], r
        if r["family"] == "planar":  # clGetPlaneFromImageAMD takes only Direct3D 11 interop images
            assert not r["driver_called"]
        elif (r["family"], r["case"]) in NOT_GIVEN_TO_A_DRIVER or "stand-in" in r["driver_note"]:
            assert not r["driver_called"]
        else:
            assert r["driver_called"], r
    assert all(h["ok"] for h in data["hazards"]), data["hazards"]


def test_raw_entry_points_hand_over_and_signal(nvidia_choice):
    """The lab's raw entry points work on the driver: a semaphore made, signalled and waited on; an
    imported buffer acquired and released (each call CL_SUCCESS)."""
    import ctypes

    import pyopencl as cl

    from app.lab.drivers import RawEntryPoints

    ctx = cl.Context([nvidia_choice.device])
    q = cl.CommandQueue(ctx, nvidia_choice.device)
    entry = RawEntryPoints(nvidia_choice.platform, ("external_memory", "semaphore"))
    sem = entry.create_semaphore(ctx.int_ptr)
    try:
        arr = (ctypes.c_void_p * 1)(sem)
        assert entry("semaphore", "signal", q.int_ptr, 1, ctypes.addressof(arr), 0, None, None) == 0
        assert entry("semaphore", "wait", q.int_ptr, 1, ctypes.addressof(arr), 0, None, None) == 0
        q.finish()
    finally:
        entry.release_semaphore(sem)


@pytest.fixture
def nvidia_choice():
    from app.cl.device import select_device

    return select_device("NVIDIA")
