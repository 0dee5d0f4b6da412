"""The registry's choices and reasons on PoCL: gl_sharing refused for the right reason, no abort."""
from __future__ import annotations

import json

import pyopencl as cl
import pytest

from app.errors import SharingUnavailable
from app.sharing.backends.external_memory import ExternalMemory
from app.sharing.backends.gl_sharing import KhrGlSharing
from app.sharing.backends.host_copy import HostCopy
from app.sharing.backends.host_mapped import HostMapped
from app.sharing.registry import Registry, backend_classes

ORDER = (KhrGlSharing.name, ExternalMemory.name, HostMapped.name, HostCopy.name)  # the probe order the backends declare


def test_pocl_refusals(probe_env):
    reg = Registry(probe_env)
    probes = {n: reg.probes[n] for n in ORDER}
    assert not probes[KhrGlSharing.name].available
    assert "does not list cl_khr_gl_sharing" in probes[KhrGlSharing.name].reason
    assert not probes[ExternalMemory.name].available
    assert "cl_khr_external_memory" in probes[ExternalMemory.name].reason
    assert probes[HostCopy.name].available
    assert probes[HostMapped.name].available, probes[HostMapped.name].reason  # PoCL + llvmpipe: host memory
    assert reg.available == [HostMapped.name, HostCopy.name]
    assert reg.choose("auto") == HostMapped.name
    with pytest.raises(SharingUnavailable) as exc:
        reg.choose(KhrGlSharing.name)
    assert "cl_khr_gl_sharing" in exc.value.reason
    assert [b["name"] for b in reg.as_list()] == list(ORDER) == list(backend_classes())


def test_pyopencl_without_gl_is_not_a_reason(probe_env, monkeypatch):
    """The GL-sharing entry points are called through ctypes: the PyPI wheel (have_gl() False) is enough."""
    monkeypatch.setattr(cl, "have_gl", lambda: False)
    reason = Registry(probe_env).probes[KhrGlSharing.name].reason
    assert "built without GL" not in reason and "trial of it in a child process failed" in reason


def test_sync_modes_refused_with_reasons(host_copy):
    assert host_copy.sync_unavailable_reason("finish") is None
    assert host_copy.sync_unavailable_reason("none") is None
    assert "cl_khr_gl_event" in host_copy.sync_unavailable_reason("gl_event")
    assert "external_memory" in host_copy.sync_unavailable_reason("semaphore")
    with pytest.raises(SharingUnavailable):
        host_copy.make_sync("gl_event")


@pytest.mark.parametrize("args, needle", [
    (["--backend", "gl_sharing"], "cl_khr_gl_sharing"),
    (["--backend", "external_memory"], "cl_khr_external_memory"),
    (["--sync", "gl_event"], "gl_event"),
    (["--sync", "semaphore"], "semaphore"),
])
def test_cli_refuses_unavailable_backend_and_sync(glshare, tmp_path, args, needle):
    report = tmp_path / "r.json"
    res = glshare("run", "--headless", "--frames", "2", "--size", "64", "--report", str(report), *args)
    assert res.returncode == 2, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("glshare: error:") and needle in lines[0], res.stderr
    assert not report.exists()


def test_info_json_names_pocl_and_every_backend(glshare):
    res = glshare("info", "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert any("Portable Computing Language" in d["platform"] for d in data["devices"])
    assert data["selected_device"]["sharing_extensions"]["cl_khr_gl_sharing"] is False
    names = [b["name"] for b in data["backends"]]
    assert names == ["gl_sharing", "external_memory", "host_mapped", "host_copy"]
    assert all(b["reason"] for b in data["backends"])
    assert data["gl"]["renderer"] and data["gl"]["version"]
    table = {h["name"]: h for h in data["external_memory_handle_types"]}
    assert {h: table[h]["value"] for h in table} == {
        "OPAQUE_FD": 0x2060, "OPAQUE_WIN32": 0x2061, "OPAQUE_WIN32_KMT": 0x2062, "D3D11_TEXTURE": 0x2063,
        "D3D11_TEXTURE_KMT": 0x2064, "D3D12_HEAP": 0x2065, "D3D12_RESOURCE": 0x2066, "DMA_BUF": 0x2067,
        "OPAQUE_WIN32_NAME": 0x2069, "ANDROID_HARDWARE_BUFFER": 0x2070}
    assert "removed in 3.0.17" in table["D3D11_TEXTURE"]["versions"]
    assert table["OPAQUE_WIN32"]["nt_handle"] and table["OPAQUE_WIN32"]["owns_reference"]
    assert "CloseHandle" in table["OPAQUE_WIN32"]["who_closes"]
    assert not table["D3D11_TEXTURE_KMT"]["owns_reference"]
    assert "destroyed" in table["D3D11_TEXTURE_KMT"]["handle_valid_until"]
    assert "resource is destroyed" in table["D3D11_TEXTURE_KMT"]["memory_lives_until"]
    assert "becomes_invalid_when" not in table["OPAQUE_FD"]  # the one key for the two is gone
    assert not any(h["imported_by_device"] for h in table.values())  # PoCL imports nothing
    assert data["external_memory_lifetime_demo"] is None
    text = glshare("info")
    assert text.returncode == 0 and "host_copy" in text.stdout and "external_memory" in text.stdout
