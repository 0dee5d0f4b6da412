"""The error lab: ``glshare errors`` on PoCL calls no driver and has the documented shape; its
expected answers come from its own data file (verbatim quotes, every validator rule covered); the
driver column is compared, marked and marshalled right, for GL sharing and for the NVIDIA path
(external memory + semaphores), checked with stand-ins for the driver's entry points."""
from __future__ import annotations

import ctypes
import json
import re
from types import SimpleNamespace

import pytest

from app.errors import CL_CODES
from app.lab import drivers, lab
from app.sharing.backends.external_memory import ExternalMemory
from app.sharing.backends.gl_sharing import KhrGlSharing
from app.sharing.backends.host_copy import HostCopy
from app.validate import families
from tests.spec_texts import quote_found, spec_texts

HAZARDS = families.get("gl_sharing").hazards
REQUIRED = {"case", "call", "spec_code", "validator_code", "driver_called", "driver_code"}
GL_CASES = {e.id for e in lab.load_expected()[0]["gl_sharing"]}


def test_errors_json_on_pocl_calls_no_driver(glshare):
    res = glshare("errors", "--json", "--cl-device", "Portable", timeout=120)
    assert res.returncode == 0, (res.returncode, res.stderr[-2000:])  # an abort would be -6 (SIGABRT)
    data = json.loads(res.stdout)
    assert {"implementation", "cases", "hazards", "not_provokable", "families", "deviations"} <= set(data)
    assert "Portable Computing Language" in data["implementation"] and data["families"] == ["gl_sharing", "planar"]
    assert data["gl_context"].startswith("simulated")  # host_copy: a plain context plays the GL one
    rows = [r for r in data["cases"] if r["family"] == "gl_sharing"]
    provoked = {(r["case"], r["call"]) for r in rows}
    skipped = {p["id"] for p in data["not_provokable"] if p["family"] == "gl_sharing" and p["id"] in GL_CASES}
    assert provoked == {(c, k) for c in GL_CASES - skipped for k in ("acquire", "release")}
    assert skipped <= {"sub_device_queue"}  # only where the device cannot partition, with its reason
    for r in rows:
        assert REQUIRED <= set(r)
        assert all(c in CL_CODES for c in r["spec_codes"])
        assert r["validator_code"] is None or r["validator_code"] in CL_CODES
        assert r["validator_agrees"] or r["deviation"], r
        assert r["driver_called"] is False and r["driver_code"] is None
        assert "PoCL" in r["driver_note"] and "abort" in r["driver_note"]
    deviations = [r for r in rows if not r["validator_agrees"]]
    assert {r["case"] for r in deviations} == {"unseen_mem_object"} and all(r["disagreements"] for r in deviations)
    # either listed code is right there and glshare cannot know which: accepted, never counted as agreement
    assert all(r["validator_code"] == "CL_INVALID_MEM_OBJECT" and r["agrees"] and r["basis"] == "unknowable"
               for r in deviations)
    assert all(r["agrees"] for r in data["cases"])
    # every deliberate deviation is a row of the lab and a line of its own
    assert {(d["family"], d["case"]) for d in data["deviations"]} >= {
        ("gl_sharing", "unseen_mem_object"), ("planar", "foreign_context"), ("planar", "returns_new_image")}
    oor = {p["id"]: p for p in data["not_provokable"]}
    assert {"out_of_resources", "out_of_host_memory"} <= set(oor) and all(p["why"] for p in oor.values())
    assert [h["case"] for h in data["hazards"]] == list(HAZARDS)
    for h in data["hazards"]:
        assert h["ok"] and h["flagged"] and h["raises_strict_all"], h
        assert h["raises_strict_spec"] == (h["kind"] == "spec") and h["spec"] == HAZARDS[h["case"]].spec


def test_errors_text_table(glshare):
    res = glshare("errors", "--cl-device", "Portable", timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    out = res.stdout
    assert "case" in out and "validator" in out and "driver" in out and "not provoked" in out
    assert "GL context: simulated" in out and "deliberate deviations glshare keeps:" in out
    m = re.search(r"agrees with the spec in (\d+)/(\d+) calls.*?(\d+)/(\d+) as expected", out)
    assert m and m.group(3) == m.group(4) == m.group(2) and int(m.group(1)) < int(m.group(2))
    assert "6/6" in out and "<< differs" not in out
    assert out.count("<< deliberate") >= 2 + 2  # unseen_mem_object (both calls), planar's foreign context and image
    assert "[planar] clGetPlaneFromImageAMD" in out


# -- the expected answers --------------------------------------------------------------------------
def test_expected_answers_are_independent_and_verbatim():
    """The lab reads its expectations from expected.toml (never from the validator's tables); every
    quote there is the text's own; every rule of every family is exercised by a case."""
    from app.validate import external_memory, gl, semaphores

    source = (lab.EXPECTED_PATH.parent / "lab.py").read_text()
    assert "RULES" not in source and ".rules" not in source
    cases, not_provokable = lab.load_expected()
    texts = spec_texts()
    for fam, exps in cases.items():
        for e in exps:
            assert quote_found(e.quote, texts), (fam, e.id, e.quote)
            assert e.basis in ("listed", "general rule", "combination", "undefined", "no rule", "no order",
                               "unknowable"), e
            assert (e.basis == "undefined") == (e.codes == ()), e
            assert all(c in CL_CODES for c in e.codes), e
            if e.basis in ("combination", "no order", "unknowable"):
                assert len(e.codes) >= 2
    for p in not_provokable:
        assert quote_found(p["quote"], texts) and p["why"], p
    ids = {fam: {e.id for e in exps} for fam, exps in cases.items()}
    assert set(gl.RULES) <= ids["gl_sharing"]
    # a rule whose case id differs: the device rules (sub_device_queue), the doubled objects (same_*_twice)
    renamed = {"queue_other_device", "acquire_twice", "release_twice", "signal_twice", "wait_twice"}
    assert set(external_memory.RULES) - renamed <= ids["external_memory"]
    assert set(semaphores.RULES) - {"sema_list_short"} - renamed <= ids["semaphore"]
    assert {"sema_list_null", "sub_device_queue", "same_semaphore_twice"} <= ids["semaphore"]
    assert {"sub_device_queue", "same_object_twice"} <= ids["external_memory"]
    for fam in cases:
        assert ids[fam] == set(families.get(fam).lab_cases), fam  # each case has its registered arguments
    for fam in ("gl_sharing", "external_memory", "semaphore"):  # out-of-resources not provokable for each
        assert {"out_of_resources", "out_of_host_memory"} <= {p["id"] for p in not_provokable if p["family"] == fam}


def test_every_case_has_its_arguments(host_copy):
    cases, _ = lab.load_expected()
    with lab.LabObjects(host_copy) as objs:
        objs.make_semaphores(with_driver=False)
        for fam, exps in cases.items():
            if families.get(fam).validator == "planar":
                continue  # (context, mem, plane): run_planar resolves them
            for e in exps:
                try:
                    assert isinstance(objs.args(fam, e.id), lab.CallArgs)
                except lab.LabSetupError as exc:  # only the sub-device queue may be missing, with its reason
                    assert e.id == "sub_device_queue" and str(exc), exc


# -- the driver column, GL sharing ----------------------------------------------------------------
class FakeDriver:
    """Stands in for the driver's entry points: records the raw arguments and answers CL_SUCCESS,
    except where ``answers`` (call index -> code) says otherwise."""

    def __init__(self, answers: dict | None = None, families=("gl_sharing",)) -> None:
        self.calls: list[dict] = []
        self.answers = answers or {}
        self.families = set(families)
        self.semaphores = 0

    def offers(self, family):
        return family in self.families

    def __call__(self, family, call, queue, n, objs, nev, evs, event_out):
        def read(addr, count):
            return list((ctypes.c_void_p * count).from_address(addr)) if addr else None

        rec = {"family": family, "call": call, "queue": queue, "n": n, "objs": read(objs, max(n, 1)), "nev": nev,
               "evs": read(evs, max(nev, 1)), "event_out": event_out, "evs_addr": evs}
        self.calls.append(rec)
        return self.answers.get(len(self.calls) - 1, 0)

    def create_semaphore(self, context):
        self.semaphores += 1
        return 0x5E3A0000 + self.semaphores

    def release_semaphore(self, handle):
        self.semaphores -= 1


NOT_GIVEN = {"same_object_twice", "same_semaphore_twice", "sema_list_null"}  # never given to a driver (driver = false)


def test_driver_column_marshalling_and_marks(host_copy):
    fake = FakeDriver()
    results = lab.run_lab(host_copy, entry=fake, families=("gl_sharing",))
    rows = {(r["case"], r["call"]): r for r in results["cases"]}
    assert all(r["driver_called"] != (r["case"] in NOT_GIVEN) for r in rows.values())
    # the stand-in answers CL_SUCCESS: every error case differs from the spec, and is marked so
    assert rows["valid", "acquire"]["driver_code"] == "CL_SUCCESS" and not rows["valid", "acquire"]["driver_differs"]
    assert rows["not_gl_object", "release"]["driver_differs"]
    assert rows["event_aliases_wait_list", "acquire"]["driver_agrees"]  # undefined: any answer is allowed
    assert results["summary"]["ok"]  # the exit status follows the validator, not the driver
    text = lab.format_text(results)
    errors = [c for c in GL_CASES if c not in ("valid", "success_empty", "success_empty_bad_wait_list",
                                                "event_aliases_wait_list", "empty_null_queue",
                                                "empty_plain_context_queue", "wait_list_failed_event")
              and c not in NOT_GIVEN]
    assert text.count("<< differs") == 2 * len(errors)
    calls = [c for c in fake.calls if c["queue"] != fake.calls[0]["queue"] or c["n"] != 1 or c["nev"]
             or c["objs"] != fake.calls[0]["objs"]]  # the case calls (not the lab's own valid ones)
    null_list = [c for c in calls if c["n"] == 1 and c["objs"] is None]
    assert len(null_list) == 4 and {c["call"] for c in null_list} == {"acquire", "release"}  # incl. a combination
    assert len([c for c in calls if not c["queue"]]) == 6  # incl. the empty call's
    assert len([c for c in calls if c["nev"] == 1 and c["evs"] is None]) == 4  # incl. the empty call's
    alias = [c for c in fake.calls if c["event_out"]]
    assert len(alias) == 2 and all(c["event_out"] == c["evs_addr"] for c in alias)  # points at element 0
    assert len([c for c in calls if c["nev"] == 1 and c["evs"] == [None]]) == 4
    released = [c for c in calls if c["n"] == 1 and c["objs"] == [None]]  # released: NULL, never dangling
    assert len(released) == 6  # glshare's release, pyopencl's and a combination, both calls


def test_counts_past_a_list_read_nulls(host_copy):
    """The driver never reads beyond an array: a count larger than the list reads NULL handles."""
    fake = FakeDriver()
    with lab.LabObjects(host_copy, fake) as objs:
        runner = lab.DriverRunner(objs, fake, "gl_sharing")
        runner._raw("acquire", objs.queue.int_ptr, [objs.shared.mem], 3, [objs.event], 2)
    c = fake.calls[-1]  # the recorder read n and nev elements from the arrays it was given
    assert c["n"] == 3 and c["objs"][1:] == [None, None] and c["nev"] == 2 and c["evs"][1] is None


def test_unsafe_calls_are_not_made(host_copy, monkeypatch):
    rusticl = next(i for i in drivers.IMPLEMENTATIONS if i.key == "rusticl")
    monkeypatch.setattr(drivers, "identify", lambda platform: rusticl)
    fake = FakeDriver()
    results = lab.run_lab(host_copy, entry=fake, families=("gl_sharing",))
    for r in results["cases"]:
        if r["case"] in ("num_given_list_null", "combo_null_queue_null_list"):
            assert not r["driver_called"] and "SEGFAULT" in r["driver_note"]
        else:
            assert r["driver_called"] != (r["case"] in NOT_GIVEN)
    assert not [c for c in fake.calls if c["n"] == 1 and c["objs"] is None]


def test_pocl_never_builds_the_entry_points(host_copy, monkeypatch):
    if drivers.identify(host_copy.device.platform).key != "pocl":
        pytest.skip(f"PoCL's rule: the CL device here is {host_copy.device.platform.name.strip()!r}")

    def refuse(*a, **k):
        raise AssertionError("the lab looked up entry points on PoCL")

    from app.diagnostics import live

    monkeypatch.setattr(drivers, "RawEntryPoints", refuse)
    before = live.snapshot()
    results = lab.run_lab(host_copy)
    assert live.snapshot() == before  # every object the lab made is gone again
    assert host_copy.tracker.flags == []  # the backend's own tracker saw none of the lab's hazards
    assert results["implementation_key"] == "pocl"
    assert not any(r["driver_called"] for r in results["cases"]) and results["summary"]["ok"]


@pytest.mark.parametrize("name,key", [("Portable Computing Language", "pocl"), ("rusticl", "rusticl"),
                                      ("NVIDIA CUDA", "nvidia"), ("Intel(R) OpenCL", "intel-cpu"),
                                      ("Intel(R) OpenCL Graphics", "other")])
def test_identify(name, key):
    platform = SimpleNamespace(name=name, vendor="", version="OpenCL 3.0")
    assert drivers.identify(platform).key == key


def test_no_call_without_the_extension():
    platform = SimpleNamespace(name="Some GPU", vendor="", version="OpenCL 3.0", extensions="cl_khr_icd")
    device = SimpleNamespace(name="gpu0", extensions="cl_khr_fp64")
    for family, ext in (("gl_sharing", "cl_khr_gl_sharing"), ("external_memory", "cl_khr_external_memory"),
                        ("semaphore", "cl_khr_semaphore")):
        reason = drivers.no_call_reason(drivers.OTHER, platform, device, ExternalMemory.name, family)
        assert reason and ext in reason
    device = SimpleNamespace(name="gpu0", extensions="cl_khr_gl_sharing")
    assert drivers.no_call_reason(drivers.OTHER, platform, device, KhrGlSharing.name) is None
    assert drivers.no_call_reason(drivers.OTHER, platform, device, HostCopy.name)  # objects not from GL


def test_nvidia_policy_calls_external_memory_and_semaphores_only():
    nvidia = next(i for i in drivers.IMPLEMENTATIONS if i.key == "nvidia")
    platform = SimpleNamespace(name="NVIDIA CUDA", vendor="NVIDIA Corporation", version="OpenCL 3.0 CUDA 13.0.98",
                               extensions="cl_khr_icd")
    device = SimpleNamespace(name="NVIDIA H200", extensions="cl_khr_external_memory cl_khr_external_memory_opaque_fd "
                                                             "cl_khr_semaphore cl_khr_external_semaphore cl_khr_gl_event")
    assert drivers.no_call_reason(nvidia, platform, device, ExternalMemory.name, "external_memory") is None
    assert drivers.no_call_reason(nvidia, platform, device, ExternalMemory.name, "semaphore") is None
    assert "cl_khr_gl_sharing" in drivers.no_call_reason(nvidia, platform, device, ExternalMemory.name, "gl_sharing")
    assert drivers.no_call_reason(nvidia, platform, device, HostCopy.name, "external_memory")  # not imported objects


# -- the NVIDIA path: external memory + semaphores, with a conforming stand-in ------------------------
def _h(sem) -> int | None:
    """A lab semaphore's raw handle (None where the lab made none or released it)."""
    return sem.handle.value if sem is not None and sem.handle is not None else None


class ConformingDriver(FakeDriver):
    """Answers as cl_khr_external_memory / cl_khr_semaphore say, from the raw arguments and the
    handles of the lab's objects, and keeps the state a real driver would: the shared buffer's
    acquisition and the binary semaphore's signal (a wait on an unsignalled one would block)."""

    def __init__(self) -> None:
        super().__init__(families=("external_memory", "semaphore"))
        self.objs = None
        self.acquired = False
        self.signalled = False
        self.other_signalled = False  # the semaphore of the other context
        self.misuse: list = []

    def __call__(self, family, call, queue, n, objs, nev, evs, event_out):
        super().__call__(family, call, queue, n, objs, nev, evs, event_out)
        rec, o = self.calls[-1], self.objs
        code = self._answer(family, rec, o)
        if code == 0 and n and family == "external_memory" and rec["objs"][0] == o.shared.mem.int_ptr:
            if (call == "acquire") == self.acquired:
                self.misuse.append((call, "acquired twice" if self.acquired else "released unacquired"))
            self.acquired = call == "acquire"
        if code == 0 and n and family == "semaphore":
            attr = {_h(o.semaphore): "signalled", _h(o.other_semaphore): "other_signalled"}.get(rec["objs"][0])
            if attr:
                if call == "wait" and not getattr(self, attr):
                    self.misuse.append(("wait", "on an unsignalled binary semaphore: the queue would block"))
                setattr(self, attr, call == "signal")
        return code

    @staticmethod
    def _answer(family, rec, o) -> int:
        q, n, objs, nev, evs = rec["queue"], rec["n"], rec["objs"], rec["nev"], rec["evs"]
        if not q or q == o.shared.mem.int_ptr or q == o.sub_device_queue.int_ptr:
            return CL_CODES["CL_INVALID_COMMAND_QUEUE"]  # NULL, not a queue, a device the objects' context lacks
        other_sem = _h(o.other_semaphore)
        if family == "semaphore":
            if n == 0:
                return CL_CODES["CL_INVALID_VALUE"]
            if not all(objs[:n]) or any(h not in (_h(o.semaphore), other_sem) for h in objs[:n]):
                return CL_CODES["CL_INVALID_SEMAPHORE_KHR"]
            if (q == o.other_queue.int_ptr) != (objs[0] == other_sem):
                return CL_CODES["CL_INVALID_CONTEXT"]
        else:
            if (n == 0) != (objs is None):
                return CL_CODES["CL_INVALID_VALUE"]
            if q == o.other_queue.int_ptr and n:  # (0, NULL) names no object: it succeeds on any queue
                return CL_CODES["CL_INVALID_CONTEXT"]
        if (evs is None) != (nev == 0):
            return CL_CODES["CL_INVALID_EVENT_WAIT_LIST"]
        for e in (evs or [])[:nev]:
            if not e:
                return CL_CODES["CL_INVALID_EVENT_WAIT_LIST"]
            if e == o.other_event.int_ptr:
                return CL_CODES["CL_INVALID_CONTEXT"]
            if e == o.failed.int_ptr:
                return CL_CODES["CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST"]
        if family == "external_memory" and n and any(h != o.shared.mem.int_ptr for h in objs[:n]):
            return CL_CODES["CL_INVALID_MEM_OBJECT"]
        return 0


@pytest.fixture
def external_lab(host_copy, monkeypatch):
    """host_copy made to keep external_memory's contract (its rule set and findings), on a platform
    the lab takes for NVIDIA's, with a conforming stand-in for the driver."""
    from app.validate.ownership import OwnershipTracker
    from app.validate.spec import SpecValidator

    host_copy.validator = SpecValidator(host_copy.context, host_copy._is_shared, rule_set="external_memory",
                                        events=host_copy.validator.events)
    host_copy.tracker = OwnershipTracker(strict=True, family="external_memory")
    nvidia = next(i for i in drivers.IMPLEMENTATIONS if i.key == "nvidia")
    monkeypatch.setattr(drivers, "identify", lambda platform: nvidia)
    fake = ConformingDriver()
    enter = lab.LabObjects.__enter__

    def capture(self):
        fake.objs = enter(self)
        return fake.objs

    monkeypatch.setattr(lab.LabObjects, "__enter__", capture)
    return host_copy, fake


def test_nvidia_path_calls_every_external_memory_and_semaphore_case(external_lab):
    backend, fake = external_lab
    results = lab.run_lab(backend, entry=fake, families=("external_memory", "semaphore"))
    assert results["implementation_key"] == "nvidia"
    rows = results["cases"]
    cases, _ = lab.load_expected()
    assert {(r["family"], r["case"]) for r in rows} == {(f, e.id) for f in ("external_memory", "semaphore")
                                                        for e in cases[f]}
    for r in rows:
        assert REQUIRED <= set(r)
        if r["case"] in NOT_GIVEN:  # read through NULL, or undefined: never given to a driver
            assert not r["driver_called"] and r["driver_note"].startswith("not called"), r
            continue
        assert r["driver_called"], r
        assert r["driver_agrees"], r  # a conforming driver agrees with the file everywhere
        assert r["validator_agrees"], r
    assert fake.misuse == [] and not fake.acquired and not fake.signalled and not fake.other_signalled  # clean
    assert fake.semaphores == 0  # the lab's semaphores were released
    # glshare's own Python API agrees too: the empty call still returns an event (external memory's rule)
    bad = [r for r in rows if not r["agrees"]]
    assert bad == [], bad
    # released semaphore and released buffers go in as NULL; the failed event's own handle goes in
    o = fake.objs
    assert not any(h == o.released_semaphore and h for c in fake.calls for h in (c["objs"] or []))
    sem_calls = [c for c in fake.calls if c["family"] == "semaphore"]
    assert any(c["objs"] == [None] for c in sem_calls)
    assert any(c["evs"] == [o.failed.int_ptr] for c in sem_calls)
    hz = {h["case"]: h for h in results["hazards"]}
    assert hz["double_acquire"]["kind"] == "spec" and hz["double_acquire"]["raises_strict_spec"]
    assert all(h["ok"] for h in hz.values())


def test_a_queue_that_does_not_drain_stops_the_driver_calls(external_lab, monkeypatch):
    backend, fake = external_lab
    drained = iter([True, True, False])
    monkeypatch.setattr(lab.DriverRunner, "_drain", lambda self: next(drained, True))
    results = lab.run_lab(backend, entry=fake, families=("external_memory",))
    called = [r for r in results["cases"] if r["driver_called"]]
    assert len(called) == 3 and "did not drain" in called[-1]["driver_note"]
    rest = [r for r in results["cases"] if not r["driver_called"] and r["case"] not in NOT_GIVEN]
    assert rest and all("did not drain" in r["driver_note"] for r in rest)


def test_lab_tab_draws_headless(host_copy, surface):
    """The tab draws from the results alone (no GL or CL call inside); both states."""
    from app.lab.lab import run_lab
    from app.session.views import DemoView
    from app.ui.imgui_layer import ImGuiLayer
    from app.ui.lab_tab import draw_hazard_demos, draw_lab_tab
    from app.ui.model import LabPart, LabResults

    results = LabResults.of(run_lab(host_copy))  # as the panel model hands them to the tab
    part = LabPart("host_copy", False, "", (DemoView("skip_release", "2", "skip the release", True, "x", "frozen frame"),),
                   (("double_acquire", 2),), results)
    layer = ImGuiLayer(surface)
    try:
        from imgui_bundle import imgui

        pressed = []

        def build():
            imgui.begin("lab")
            pressed.append(draw_lab_tab(None))
            pressed.append(draw_lab_tab(results))
            pressed.append(draw_hazard_demos(part))
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
        super().__init__()
        self.lenient, self.owned, self.misuse = lenient, False, []

    def __call__(self, family, call, queue, n, objs, nev, evs, event_out):
        super().__call__(family, call, queue, n, objs, nev, evs, event_out)
        rec, first = self.calls[-1], self.calls[0]
        shared, main_queue = first["objs"][0], first["queue"]
        valid = (queue == main_queue and n == 1 and rec["objs"] == [shared]
                 and ((nev == 0 and evs is None) or (nev == 1 and rec["evs"] and rec["evs"][0] and not event_out)))
        if not (valid or self.lenient):
            return -30
        if n >= 1 and rec["objs"] and rec["objs"][0] == shared:
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


def test_no_semaphore_from_the_driver_leaves_the_validator_column(external_lab):
    """A driver that refuses to make a semaphore, on a backend that exports none: the semaphore
    cases are checked by the validator and marked as not called, with the reason."""
    import pyopencl as cl

    backend, fake = external_lab

    def refuse(context):
        raise cl.RuntimeError(cl._cl._ErrorRecord(msg="no", code=-64, routine="clCreateSemaphoreWithPropertiesKHR"))

    fake.create_semaphore = refuse
    results = lab.run_lab(backend, entry=fake, families=("external_memory", "semaphore"))
    sem_rows = [r for r in results["cases"] if r["family"] == "semaphore"]
    assert sem_rows and not any(r["driver_called"] for r in sem_rows)
    assert all("CL_INVALID_PROPERTY" in r["driver_note"] for r in sem_rows)
    assert all(r["validator_agrees"] for r in sem_rows)
    assert all(r["driver_called"] != (r["case"] in NOT_GIVEN) for r in results["cases"]
               if r["family"] == "external_memory")


def test_lab_on_every_cpu_implementation(cl_impl, gl):
    """The lab completes on each CPU implementation, says per row why no driver is called (none of
    them lists a family's extension) and agrees with the spec wherever glshare does not deviate."""
    from app.gl.context import gl_info
    from app.sharing.backends.host_copy import HostCopy
    from app.sharing.base import ProbeEnv

    backend = HostCopy(ProbeEnv(cl_impl, gl, gl_info()))
    try:
        results = lab.run_lab(backend)
    finally:
        backend.close()
    impl = drivers.identify(cl_impl.platform)
    assert impl.key in ("pocl", "intel-cpu")
    assert results["summary"]["ok"] and results["summary"]["driver_called"] == 0
    assert results["families"] == ["gl_sharing", "planar"]
    for r in results["cases"]:
        if r["family"] == "planar":  # the entry point takes only Direct3D 11 interop images
            assert r["driver_note"].startswith("not called: clGetPlaneFromImageAMD takes only Direct3D 11"), r
        else:
            assert r["driver_note"] == f"not called: {impl.no_calls['gl_sharing']}"


def test_raw_entry_points_marshal_the_c_signatures():
    """RawEntryPoints passes the arguments in the C prototypes' order (checked with C callbacks in
    place of the driver's functions): the semaphore calls' payload list NULL, the create call's
    properties [CL_SEMAPHORE_TYPE_KHR, CL_SEMAPHORE_TYPE_BINARY_KHR, 0]."""
    seen = []

    def mem_call(queue, n, objs, nev, evs, out):
        seen.append(("mem", queue, n, objs, nev, evs, out))
        return -38

    def sem_call(queue, n, objs, payloads, nev, evs, out):
        seen.append(("sem", queue, n, objs, payloads, nev, evs, out))
        return -1142

    def create(context, props, err):
        seen.append(("create", context, list((ctypes.c_uint64 * 3).from_address(props))))
        err[0] = 0
        return 0x5E3A

    def release(handle):
        seen.append(("release", handle))
        return 0

    ep = drivers.RawEntryPoints.__new__(drivers.RawEntryPoints)
    ep.families = frozenset({"external_memory", "semaphore"})
    callbacks = [drivers._MEM_CALL(mem_call), drivers._SEM_CALL(sem_call), drivers._SEM_CREATE(create),
                 drivers._SEM_RELEASE(release)]
    ep._fns = {("external_memory", "acquire"): callbacks[0], ("semaphore", "wait"): callbacks[1]}
    ep._create, ep._release = callbacks[2], callbacks[3]
    arr = (ctypes.c_void_p * 2)(0x10, 0)
    assert ep("external_memory", "acquire", 0x1000, 2, ctypes.addressof(arr), 0, None, None) == -38
    assert ep("semaphore", "wait", 0x1000, 1, ctypes.addressof(arr), 1, ctypes.addressof(arr), 0x2000) == -1142
    assert ep.create_semaphore(0x3000) == 0x5E3A
    ep.release_semaphore(0x5E3A)
    assert seen[0] == ("mem", 0x1000, 2, ctypes.addressof(arr), 0, None, None)
    assert seen[1] == ("sem", 0x1000, 1, ctypes.addressof(arr), None, 1, ctypes.addressof(arr), 0x2000)
    assert seen[2] == ("create", 0x3000, [drivers.CL_SEMAPHORE_TYPE_KHR, drivers.CL_SEMAPHORE_TYPE_BINARY_KHR, 0])
    assert seen[3] == ("release", 0x5E3A)


def test_the_empty_external_memory_call_is_a_marker_not_the_driver(external_lab, monkeypatch):
    """cl_khr_external_memory's (0, NULL) "will trivially succeed after its event dependencies are
    satisfied and will update its completion event": glshare's API enqueues a marker with the wait
    list and never hands the empty call to the driver, which NVIDIA 580 refuses (CL_INVALID_VALUE,
    the H200's errors-nvidia.json)."""
    import pyopencl as cl

    backend, _ = external_lab

    def refused(*args):
        raise AssertionError("the empty call reached the backend's enqueue")

    monkeypatch.setattr(backend, "_enqueue_acquire", refused)
    monkeypatch.setattr(backend, "_enqueue_release", refused)
    gate = cl.UserEvent(backend.context)
    got = []
    try:
        for call in ("acquire", "release"):
            ev = getattr(backend, call)(backend.queue, [], [gate])
            got.append((type(ev).__name__, ev.command_type, ev.command_execution_status))
    finally:  # a marker left waiting on the gate would stall the queue for every test after this one
        gate.set_status(cl.command_execution_status.COMPLETE)
    backend.queue.finish()
    # each a command (a marker: NVIDIA 580 reports its type as 0x4003, not CL_COMMAND_MARKER), not
    # complete while its wait list was not (the status: QUEUED, SUBMITTED or RUNNING)
    assert all(t == "Event" and status > cl.command_execution_status.COMPLETE for t, _, status in got), got
    assert ev.command_execution_status == cl.command_execution_status.COMPLETE
    ev = backend.acquire(backend.queue, [])  # no wait list
    ev.wait()
    assert ev.command_execution_status == cl.command_execution_status.COMPLETE


def test_a_stand_in_semaphore_never_reaches_the_driver(external_lab):
    """Where the driver makes no semaphore of the other context, the same-context row keeps its
    validator answer and leaves the driver out (a stand-in's handle means nothing to a driver)."""
    import pyopencl as cl

    backend, fake = external_lab
    made = fake.create_semaphore
    main_context = backend.context.int_ptr

    def only_the_backends(context):
        if context != main_context:
            raise cl.RuntimeError(cl._cl._ErrorRecord(msg="no", code=-34, routine="clCreateSemaphoreWithPropertiesKHR"))
        return made(context)

    fake.create_semaphore = only_the_backends
    results = lab.run_lab(backend, entry=fake, families=("semaphore",))
    rows = [r for r in results["cases"] if r["case"] == "same_context_not_sharing"]
    assert len(rows) == 2 and all(r["validator_agrees"] and not r["driver_called"] for r in rows)
    assert all("stand-in" in r["driver_note"] for r in rows)
    stand_in = fake.objs.other_semaphore.handle  # released by now: None
    assert stand_in is None and not any(0x5E4A0010 in (c["objs"] or []) for c in fake.calls)
    assert sum(r["driver_called"] for r in results["cases"]) > 10 and fake.misuse == []
