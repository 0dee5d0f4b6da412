"""Which CL device drives sharing with GL, decided from what the drivers say (fakes, on the CPU):
gl_sharing takes the device clGetGLContextInfoKHR names, external_memory needs the CL device whose
cl_khr_device_uuid is among GL_EXT_memory_object's device UUIDs; a --cl-device naming another
device is refused in one line naming both."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from app.cl.device import uuid_mismatch, uuid_text
from app.errors import UsageError
from app.sharing.backends.gl_sharing import gl_device_decision

IGPU = SimpleNamespace(name="Intel(R) UHD Graphics 620 ", platform=SimpleNamespace(name="Intel(R) OpenCL Graphics"))
DGPU = SimpleNamespace(name="NVIDIA GeForce MX150", platform=SimpleNamespace(name="NVIDIA CUDA"))
U1, U2, U3 = bytes(range(16)), bytes(range(16, 32)), bytes(range(32, 48))


def test_gl_sharing_takes_the_gl_context_s_device():
    assert gl_device_decision(DGPU, IGPU, explicit=False) is IGPU  # glshare's default choice gives way
    assert gl_device_decision(DGPU, DGPU, explicit=True) is DGPU
    assert gl_device_decision(DGPU, None, explicit=True) is DGPU  # the driver did not say: the chosen one


def test_gl_sharing_refuses_an_explicit_other_device_naming_both():
    with pytest.raises(UsageError) as exc:
        gl_device_decision(DGPU, IGPU, explicit=True)
    text = str(exc.value)
    assert "\n" not in text
    assert "'NVIDIA GeForce MX150' (NVIDIA CUDA)" in text and "'Intel(R) UHD Graphics 620' (Intel(R) OpenCL Graphics)" in text
    assert "CL_INVALID_GL_SHAREGROUP_REFERENCE_KHR" in text


def test_uuid_text():
    assert uuid_text(U1) == "00010203-0405-0607-0809-0a0b0c0d0e0f"
    assert uuid_text(None) == "none"


def test_external_memory_uuid_match():
    assert uuid_mismatch("NVIDIA CUDA: H100", U1, [U1], [], explicit=True) is None
    assert uuid_mismatch("NVIDIA CUDA: H100", U1, [U2, U1], [], explicit=False) is None
    assert uuid_mismatch("NVIDIA CUDA: H100", None, [U1], [], explicit=True) is None  # nothing to compare
    assert uuid_mismatch("NVIDIA CUDA: H100", U1, [], [], explicit=True) is None


def test_external_memory_uuid_mismatch_names_both_and_the_right_one():
    why = uuid_mismatch("NVIDIA CUDA: GPU 0", U1, [U2], [("NVIDIA CUDA: GPU 1", U2), ("PoCL: cpu", None)],
                        explicit=True)
    assert why.startswith("--cl-device names NVIDIA CUDA: GPU 0 (UUID 00010203-")
    assert uuid_text(U2) in why and "NVIDIA CUDA: GPU 1 is GL's" in why
    why = uuid_mismatch("NVIDIA CUDA: GPU 0", U1, [U3], [("NVIDIA CUDA: GPU 1", U2)], explicit=False)
    assert why.startswith("glshare chose") and "no CL device has GL's UUID" in why


def test_info_says_which_device_drives_gl_and_how_gl_event_orders(glshare):
    import json

    res = glshare("info", "--json")
    assert res.returncode == 0, res.stderr
    g = json.loads(res.stdout)["gl_device"]
    # gl_sharing is refused here (the trial): clGetGLContextInfoKHR is not asked
    assert g["cl_device_for_gl_context"].startswith("not asked: gl_sharing is refused here")
    assert g["gl_event_release"].startswith("a CL-side wait")  # Mesa offers no GL_ARB_cl_event
    assert g["cl_device_uuid"] == "none"  # PoCL lists no cl_khr_device_uuid
    res = glshare("info")
    assert "The GL context's CL device (clGetGLContextInfoKHR): not asked" in res.stdout
