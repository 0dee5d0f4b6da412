"""The runner's failure rules (app/schedule/plan.py, STEPS), applied the same by every executor:
a step of frame 4 fails on purpose, as the driver would report it, and the frame goes on as the
rules say, with the same record (times aside), tracker states and counts whichever executor made
its calls (checked, remembered, native), and the next frames go on."""
from __future__ import annotations

import contextlib
import ctypes
import dataclasses

import pytest

from app.cl.ext import _error
from app.config import RunConfig
from app.errors import ClError, SharingUnavailable
from app.native.calls import ARGS
from app.run import Run
from app.scenes.particles import ParticlesScene
from app.schedule.native import AFTER, COMPUTE, RELEASE
from app.schedule.plan import FAILING_STEPS, STEPS
from app.sharing.backends.host_mapped import HostMapped
from app.sharing.sync import FinishSync
from app.window.egl_headless import EglSurface

FRAMES, FAILING = 7, 4
STATUS_FN = ctypes.CFUNCTYPE(ctypes.c_int32, *([ctypes.c_uint64] * ARGS))
# the Python method each step's failure is made by, and the call list's segment (native)
PYTHON = {"sync before": (FinishSync, "before_acquire"), "acquire": (HostMapped, "_enqueue_acquire"),
          "compute": (ParticlesScene, "compute"), "release": (HostMapped, "_enqueue_release"),
          "sync after": (FinishSync, "after_release")}
SEGMENT = {"compute": COMPUTE, "release": RELEASE, "sync after": AFTER}
CL_OWNS, GL_OWNS = ("cl", "cl"), ("gl", "gl")  # (the fountain's two shared buffers)
# what the rules make of the failing frame: its counts, its owners after each phase, its CPU waits
EXPECTED = {
    "sync before": ({"acquire": 0, "compute": 0, "release": 0}, [GL_OWNS] * 5, []),
    "acquire": ({"acquire": 0, "compute": 0, "release": 0}, [GL_OWNS] * 5, ["glFinish", "clFinish"]),
    "compute": ({"acquire": 1, "compute": 0, "release": 1}, [GL_OWNS, CL_OWNS, CL_OWNS, GL_OWNS, GL_OWNS],
                ["glFinish", "clFinish"]),
    "release": ({"acquire": 1, "compute": 1, "release": 0}, [GL_OWNS] + [CL_OWNS] * 4, ["glFinish", "clFinish"]),
    "sync after": ({"acquire": 1, "compute": 1, "release": 1}, [GL_OWNS, CL_OWNS, CL_OWNS, GL_OWNS, GL_OWNS],
                   ["glFinish"]),
}


def _comparable(rec) -> dict:
    skip = {"start_ns", "end_ns", "presented_ns", "period_ns", "events", "cl_profile", "unstamped"}
    out = {f.name: getattr(rec, f.name) for f in dataclasses.fields(rec) if f.name not in skip}
    out["phases"] = list(rec.phases)
    out["waits"] = [w[0] for w in rec.waits]
    out["bookkeeping"] = [b[0] for b in rec.bookkeeping]
    out["gl_passes"] = [p[0] for p in rec.gl_passes]
    out["owners"] = [(b, o) for b, _, o in rec.owners]
    out["errors"] = [(e.frame, e.where, e.code) for e in rec.errors]
    out["hazards"] = [(h.case, h.label, h.frame) for h in rec.hazards]
    out["commands"] = {n: (c.command_type, c.status) for n, c in (rec.commands or {}).items()}  # (not the handles)
    return out


def _python_failure(monkeypatch, step: str, armed: list) -> None:
    """``step``'s Python method raises once while ``armed``: the driver's CL_OUT_OF_RESOURCES."""
    cls, name = PYTHON[step]
    real = getattr(cls, name)

    def failing(*args, **kwargs):
        if armed:
            armed.clear()
            raise ClError(-5, where=f"test {step}") if step == "sync before" else _error(-5, f"test {step}")
        return real(*args, **kwargs)

    monkeypatch.setattr(cls, name, failing)
    if step == "sync before":  # (the native executor's part of before_acquire that is not a call)
        native_real = FinishSync.native_before

        def native_failing(self, *args):
            if armed:
                armed.clear()
                raise ClError(-5, where=f"test {step}")
            return native_real(self, *args)

        monkeypatch.setattr(FinishSync, "native_before", native_failing)


def _native_failure(sched, step: str) -> bool:
    """The last call of ``step``'s segment in every prepared native list returns CL_OUT_OF_RESOURCES
    once; False where no list has a call there."""
    found = False
    for nf in [ex.nf for ex in sched.native_frames()]:
        seg = SEGMENT[step]
        start, end = nf.ends[seg - 1], nf.ends[seg]
        if start == end:
            continue
        calls, index = nf.calls, end - 1
        real = calls.calls[index].fn

        def once(*words, calls=calls, index=index, real=real):
            calls.replace_entry(index, real)
            return -5

        calls.replace_entry(index, STATUS_FN(once))
        found = True
    return found


def _run(monkeypatch, executor: str, step: str):
    armed: list = []
    if executor != "native" or step not in SEGMENT:
        _python_failure(monkeypatch, step, armed)
    surface = EglSurface((96, 72))
    try:
        cfg = RunConfig(headless=True, overlay=False, frames=10_000, seed=7, scene="particles", size=4096,
                        backend=HostMapped.name, sync="finish", stamps_ms=0.0)
        stack = contextlib.ExitStack()
        try:
            rt = stack.enter_context(Run(cfg, surface=surface))
        except SharingUnavailable as exc:  # (a GPU without host-unified memory refuses host_mapped)
            pytest.skip(f"the rules' test runs on host_mapped: {exc.reason}")
        with stack:
            sched = rt.session.scheduler
            if executor == "native" and sched.native_reason:
                pytest.skip(f"no native frame here: {sched.native_reason}")
            sched.steady = executor != "checked"
            sched.native = executor == "native"
            recs, executed = [], []
            for i in range(FRAMES):
                if i == FAILING:
                    if executor == "native" and step in SEGMENT:
                        if not _native_failure(sched, step):
                            pytest.skip(f"the native list makes no call for {step} here")
                    else:
                        armed.append(True)
                recs.append(rt.tick())
                executed.append(sched.executed)
            sched.finish()
            states = [(st.owner, st.acquires, st.releases, st.depth) for st in rt.session.backend.tracker.states.values()]
            return [_comparable(r) for r in recs], executed, states, rt.session.backend.validator.checked
    finally:
        surface.close()


def test_the_plan_names_every_failing_step():
    assert [s.name for s in STEPS][:5] == list(FAILING_STEPS)
    assert set(PYTHON) == set(FAILING_STEPS) == set(EXPECTED)


@pytest.mark.parametrize("step", FAILING_STEPS)
@pytest.mark.parametrize("executor", ["checked", "remembered", "native"])
def test_a_failing_step_is_handled_by_the_rules_whatever_the_executor(monkeypatch, executor, step):
    if executor == "native" and step == "acquire":
        pytest.skip("host_mapped's acquire makes no call under finish: nothing of the native list can fail")
    recs, executed, states, checked = _run(monkeypatch, executor, step)
    steady = "checked" if executor == "checked" else executor
    assert executed[FAILING] == steady, executed  # (the failing frame was the executor's)
    rec = recs[FAILING]
    counts, owners, waits = EXPECTED[step]
    assert [(e[0], e[2]) for e in rec["errors"]] == [(FAILING, -5)], rec["errors"]
    assert rec["counts"] == counts
    assert [o for _, o in rec["owners"]] == owners
    assert rec["waits"] == waits
    assert rec["phases"][:4] == ["acquire", "compute", "release", "render"]
    if step == "release":  # the objects stay CL's: the draw is flagged, the next acquire too
        assert [h[0] for h in rec["hazards"]] == ["gl_use_while_acquired"] * 2
        assert [h[0] for h in recs[FAILING + 1]["hazards"]] == ["double_acquire"] * 2
    else:
        assert all(r["errors"] == [] for i, r in enumerate(recs) if i != FAILING)
    # the same as the checked executor's frames, field by field
    if executor != "checked":
        ref = _run(monkeypatch, "checked", step)
        for i, (a, b) in enumerate(zip(recs, ref[0])):
            assert a == b, f"frame {i}: {[k for k in a if a[k] != b[k]]} differ"
        assert (states, checked) == (ref[2], ref[3])
