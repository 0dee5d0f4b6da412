"""The error lab: ``glshare errors`` on PoCL completes without calling an unsafe entry point, its
JSON has the documented shape, and the driver column is compared, marked and marshalled right
(checked with a stand-in for the driver's entry points)."""
from __future__ import annotations

import ctypes
import json
from types import SimpleNamespace

import pytest

from app.errors import CL_CODES
from app.lab import drivers, lab
from app.validate.ownership import HAZARDS

CASES = {"valid", "success_empty", "num_zero_list_given", "num_given_list_null", "invalid_mem_object",
         "invalid_queue", "context_not_from_gl", "not_gl_object", "wait_list_null_n_given",
         "wait_list_given_n_zero", "wait_list_invalid_event", "event_aliases_wait_list"}


def test_errors_json_on_pocl_calls_no_driver(glshare):
    res = glshare("errors", "--json", timeout=120)
    assert res.returncode == 0, (res.returncode, res.stderr[-2000:])  # an abort would be -6 (SIGABRT)
    data = json.loads(res.stdout)
    assert {"implementation", "cases", "hazards"} <= set(data)
    assert "Portable Computing Language" in data["implementation"]
    rows = data["cases"]
    assert {(r["case"], r["call"]) for r in rows} == {(c, k) for c in CASES for k in ("acquire", "release")}
    for r in rows:
        assert {"case", "call", "spec_code", "validator_code", "driver_called", "driver_code"} <= set(r)
        assert r["spec_code"] in CL_CODES and r["validator_code"] in CL_CODES
        assert r["validator_code"] == r["spec_code"], r
        assert r["driver_called"] is False and r["driver_code"] is None
        assert "PoCL" in r["driver_note"] and "abort" in r["driver_note"]
    assert [h["case"] for h in data["hazards"]] == list(HAZARDS)
    for h in data["hazards"]:
        assert h["flagged"] is True and h["strict_raises"] is True and h["spec"] == HAZARDS[h["case"]]


def test_errors_text_table(glshare):
    res = glshare("errors", timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    out = res.stdout
    assert "case" in out and "validator" in out and "driver" in out
    assert "24/24 cases" in out and "6/6" in out and "<< differs" not in out
    assert out.count("not called") == 24


class FakeDriver:
    """Stands in for clEnqueueAcquireGLObjects / clEnqueueReleaseGLObjects: records the raw
    arguments and answers the spec's code, except where ``answers`` says otherwise."""

    def __init__(self, lab_objects_holder: dict, answers: dict | None = None) -> None:
        self.calls: list[dict] = []
        self.answers = answers or {}
        self.holder = lab_objects_holder

    def __call__(self, call, queue, n, mems, nev, evs, event_out):
        def read(addr, count):
            return list((ctypes.c_void_p * count).from_address(addr)) if addr else None

        rec = {"call": call, "queue": queue, "n": n, "mems": read(mems, max(n, 1)), "nev": nev,
               "evs": read(evs, max(nev, 1)), "event_out": event_out, "evs_addr": evs}
        self.calls.append(rec)
        return self.answers.get(len(self.calls) - 1, 0)


def _codes_by_args(calls):
    return [(c["call"], c["n"], c["mems"] is None, c["nev"], c["evs"] is None) for c in calls]


def test_driver_column_marshalling_and_marks(host_copy, monkeypatch):
    fake = FakeDriver({})
    results = lab.run_lab(host_copy, entry=fake)
    rows = {(r["case"], r["call"]): r for r in results["cases"]}
    assert all(r["driver_called"] for r in rows.values())
    # the stand-in answers CL_SUCCESS: every error case differs from the spec, and is marked so
    assert rows["valid", "acquire"]["driver_code"] == "CL_SUCCESS" and not rows["valid", "acquire"]["driver_differs"]
    assert rows["not_gl_object", "release"]["driver_differs"]
    assert results["summary"]["ok"]  # the exit status follows the validator, not the driver
    text = lab.format_text(results)
    assert text.count("<< differs") == 20  # 10 error cases x 2 calls
    # raw arguments: find each case's own call (a release case is preceded by an acquire)
    calls = fake.calls
    null_list = [c for c in calls if c["n"] == 1 and c["mems"] is None]
    assert len(null_list) == 2 and {c["call"] for c in null_list} == {"acquire", "release"}
    null_queue = [c for c in calls if not c["queue"]]
    assert len(null_queue) == 2
    null_events = [c for c in calls if c["nev"] == 1 and c["evs"] is None]
    assert len(null_events) == 2
    alias = [c for c in calls if c["event_out"]]
    assert len(alias) == 2 and all(c["event_out"] == c["evs_addr"] for c in alias)  # points at element 0
    invalid_event = [c for c in calls if c["nev"] == 1 and c["evs"] == [None]]
    assert len(invalid_event) == 2
    invalid_mem = [c for c in calls if c["n"] == 1 and c["mems"] == [None]]  # released: NULL, never dangling
    assert len(invalid_mem) == 2


def test_unsafe_calls_are_not_made(host_copy, monkeypatch):
    rusticl = drivers.IMPLEMENTATIONS[1]
    assert rusticl.key == "rusticl"
    monkeypatch.setattr(drivers, "identify", lambda platform: rusticl)
    fake = FakeDriver({})
    results = lab.run_lab(host_copy, entry=fake)
    for r in results["cases"]:
        if r["case"] == "num_given_list_null":
            assert not r["driver_called"] and "SEGFAULT" in r["driver_note"]
        else:
            assert r["driver_called"]
    assert not [c for c in fake.calls if c["n"] == 1 and c["mems"] is None]


def test_pocl_never_builds_the_entry_points(host_copy, monkeypatch):
    def refuse():
        raise AssertionError("the lab looked up GL-sharing entry points on PoCL")

    from app.diagnostics import live

    monkeypatch.setattr(drivers, "RawEntryPoints", refuse)
    before = live.snapshot()
    results = lab.run_lab(host_copy)
    assert live.snapshot() == before  # every object the lab made is gone again
    assert host_copy.tracker.flags == []  # the backend's own tracker saw none of the lab's hazards
    assert results["implementation_key"] == "pocl"
    assert not any(r["driver_called"] for r in results["cases"]) and results["summary"]["ok"]


@pytest.mark.parametrize("name,key", [("Portable Computing Language", "pocl"), ("rusticl", "rusticl"),
                                      ("NVIDIA CUDA", "nvidia"), ("Intel(R) OpenCL Graphics", "other")])
def test_identify(name, key):
    platform = SimpleNamespace(name=name, vendor="", version="OpenCL 3.0")
    assert drivers.identify(platform).key == key


def test_no_call_without_the_extension():
    platform = SimpleNamespace(name="Some GPU", vendor="", version="OpenCL 3.0", extensions="cl_khr_icd")
    device = SimpleNamespace(name="gpu0", extensions="cl_khr_fp64")
    reason = drivers.no_call_reason(drivers.OTHER, platform, device, "gl_sharing")
    assert reason and "cl_khr_gl_sharing" in reason
    device = SimpleNamespace(name="gpu0", extensions="cl_khr_gl_sharing")
    assert drivers.no_call_reason(drivers.OTHER, platform, device, "gl_sharing") is None
    assert drivers.no_call_reason(drivers.OTHER, platform, device, "host_copy")  # objects not from GL


def test_lab_tab_draws_headless(host_copy, surface):
    """The tab draws from the results alone (no GL or CL call inside); both states."""
    from app.lab.lab import run_lab
    from app.ui.imgui_layer import ImGuiLayer
    from app.ui.lab_tab import draw_hazard_demos, draw_lab_tab

    results = run_lab(host_copy)
    layer = ImGuiLayer(surface)
    try:
        from imgui_bundle import imgui

        pressed = []

        def build():
            imgui.begin("lab")
            pressed.append(draw_lab_tab(None))
            pressed.append(draw_lab_tab(results))
            pressed.append(draw_hazard_demos({"backend": "host_copy", "demos": [
                {"demo": "skip_release", "key": "2", "title": "skip the release", "on": True, "flags": "x",
                 "effect": "frozen frame"}], "hazard_counts": {"double_acquire": 2}}))
            imgui.end()

        surface.bind_target()
        layer.draw(build)
        assert pressed == [False, False, None]
    finally:
        layer.close()


class OwnershipFake(FakeDriver):
    """A driver stand-in that keeps the shared buffer's ownership: the lab must leave it with GL
    after every case, never acquire it twice and never release it unacquired."""

    def __init__(self, lenient: bool) -> None:
        super().__init__({})
        self.lenient, self.owned, self.misuse = lenient, False, []

    def __call__(self, call, queue, n, mems, nev, evs, event_out):
        super().__call__(call, queue, n, mems, nev, evs, event_out)
        rec, first = self.calls[-1], self.calls[0]
        shared, main_queue = first["mems"][0], first["queue"]
        valid = (queue == main_queue and n == 1 and rec["mems"] == [shared]
                 and ((nev == 0 and evs is None) or (nev == 1 and rec["evs"] and rec["evs"][0] and not event_out)))
        if not (valid or self.lenient):
            return -30
        if n >= 1 and rec["mems"] and rec["mems"][0] == shared:
            if (call == "acquire") == self.owned:
                self.misuse.append((len(self.calls) - 1, call))
            self.owned = call == "acquire"
        return 0


@pytest.mark.parametrize("lenient", [False, True])
def test_the_lab_hands_the_buffer_back_after_every_case(host_copy, lenient):
    fake = OwnershipFake(lenient)
    results = lab.run_lab(host_copy, entry=fake)
    assert fake.misuse == [] and fake.owned is False
    rows = {(r["case"], r["call"]): r["driver_code"] for r in results["cases"]}
    if not lenient:
        assert rows["valid", "release"] == "CL_SUCCESS" and rows["not_gl_object", "acquire"] == "CL_INVALID_VALUE"
