"""FrameScheduler's steady frame (the remembered and the native executors) against the general one
(the checked executor, ``frame_phases``):
the same records field by field (times aside), the same tracker states, validator counts, history
totals and findings, and exactly the same particles, image and screen, on every backend this
machine runs (``contract_backend``: gl_sharing through the emulated driver where no driver offers
it; external_memory on the H200), timed and untimed, and where a call fails in the middle of a frame."""
from __future__ import annotations

import ctypes
import dataclasses

import numpy as np
import pytest

from app.cl.ext import _error
from app.config import RunConfig
from app.errors import ClError
from app.native.calls import ARGS
from app.run import Run
from app.schedule.native import ACQUIRE, COMPUTE, RELEASE
from app.schedule.races import RaceFlag
from app.session.session import Session
from app.sharing.backends.external_memory import ExternalMemory
from app.sharing.backends.gl_sharing import KhrGlSharing
from app.sharing.backends.host_mapped import HostMapped
from app.sharing.sync import sync_modes
from app.window.egl_headless import EglSurface

FRAMES = 10
STATUS_FN = ctypes.CFUNCTYPE(ctypes.c_int32, *([ctypes.c_uint64] * ARGS))  # a call of the native list
TIMES = {"start_ns", "end_ns", "presented_ns", "period_ns"}  # host clock readings: differ run to run


def _comparable(rec) -> dict:
    """A record's fields with every clock reading left out (names, order and owners kept)."""
    out = {}
    for f in dataclasses.fields(rec):
        value = getattr(rec, f.name)
        if f.name in TIMES:
            continue
        if f.name == "phases":
            value = list(value)
        elif f.name in ("waits", "bookkeeping", "gl_passes"):
            value = [name for name, *_ in value]
        elif f.name in ("events", "cl_profile"):
            value = sorted(value)
        elif f.name == "owners":
            value = [(boundary, owners) for boundary, _, owners in value]
        elif f.name == "commands":  # what the driver said of each command (not its handles: per run)
            value = {n: (c.command_type, c.status) for n, c in (value or {}).items()}
        elif f.name == "errors":
            value = [(e.frame, e.where, e.code, e.name) for e in value]
        elif f.name == "hazards":  # the tracker's (races from the stamps depend on timing: app/schedule/races.py)
            value = [(h.case, h.label, h.frame, h.where) for h in value if not isinstance(h, RaceFlag)]
        out[f.name] = value
    return out


def _run(backend: str, scene: str, size, steady: bool, stamps_ms: float, fail=None, sync: str = "finish",
         copies: int | None = None, native: bool = True):
    """Records, tracker states, counts and pictures of FRAMES frames; ``fail(rt, frame)`` is called
    before each frame (a failure set up for that frame). ``copies``: the scene's copies of its shared
    objects, whatever the sync mode (``Session._slots_for`` gives them only where it runs ahead on
    semaphores, which no CPU machine has). ``native`` False: the steady frame's hand-over in Python
    (``FrameScheduler.native``); ``native`` in the result: the frames whose hand-over was native."""
    executed = []  # the executor of each frame (FrameScheduler.executed)
    slots_for = Session.__dict__["_slots_for"]  # (the staticmethod)
    surface = EglSurface((96, 72))
    try:
        cfg = RunConfig(headless=True, overlay=False, frames=10_000, seed=7, scene=scene, size=size,
                        backend=backend, sync=sync, stamps_ms=stamps_ms)
        if copies is not None:
            Session._slots_for = staticmethod(lambda scene_cls, strategy, n: min(copies, scene_cls.max_slots))
        with Run(cfg, surface=surface) as rt:
            sched = rt.session.scheduler
            sched.steady = steady
            sched.native = sched.native and native
            assert copies is None or rt.session.scene.slots == copies
            recs = []
            for i in range(FRAMES):
                if fail is not None:
                    fail(rt, i)
                recs.append(rt.tick())
                executed.append(sched.executed)
            sched.finish()
            be = rt.session.backend
            states = [dataclasses.astuple(st)[:2] + dataclasses.astuple(st)[3:]  # (queue aside: an object)
                      for st in be.tracker.states.values()]
            scene_ = rt.session.scene  # (every copy of the objects where there are copies)
            data = [o.gl.read().copy() for o in (getattr(scene_, "textures", None) or scene_.shared)]
            return dict(recs=[_comparable(r) for r in recs], states=states, checked=be.validator.checked,
                        totals=dict(rt.session.history.totals), flags=list(be.tracker.counts.items()),
                        data=data, shot=surface.read_pixels(), steady=[e != "checked" for e in executed],
                        native=[e == "native" for e in executed if e != "checked"])
    finally:
        Session._slots_for = slots_for
        surface.close()


def _same(a: dict, b: dict) -> None:
    assert len(a["recs"]) == len(b["recs"]) == FRAMES
    for i, (x, y) in enumerate(zip(a["recs"], b["recs"])):
        assert x == y, f"frame {i}: {[k for k in x if x[k] != y[k]]} differ"
    for key in ("states", "checked", "totals", "flags"):
        assert a[key] == b[key], key
    for x, y in zip(a["data"], b["data"]):
        np.testing.assert_array_equal(x, y)
    if a["shot"] is not None:
        np.testing.assert_array_equal(a["shot"], b["shot"])


def _native_expected(backend: str, sync: str) -> bool:
    """Whether the steady frame's hand-over is native here: every piece prepares its calls (the
    backends whose hand-over is calls: external_memory, gl_sharing, host_mapped; the modes whose sync
    is calls: finish, semaphore, none; both scenes) and the machine can make them (app/native/calls.py)."""
    from app.native.calls import reason

    return (not reason() and backend in (ExternalMemory.name, KhrGlSharing.name, HostMapped.name)
            and sync in ("finish", "semaphore", "none"))


def _sync_here(probe_env, backend: str, sync: str) -> None:
    from app.sharing.registry import Registry

    why = Registry(probe_env).sync_verdicts(backend)[sync]
    if why is not None:
        pytest.skip(f"sync {sync} on {backend} is not available here: {why}")


# every registered mode (a new one is in the suite without a line here): finish waits on the CPU;
# semaphore (external_memory) and gl_event (gl_sharing) run frames ahead, the image scene on copies of
# its texture, and gl_event's acquire waits on an event; none waits for nothing
SYNCS = list(sync_modes())


@pytest.mark.parametrize("sync", SYNCS)
@pytest.mark.parametrize("scene,size", [("particles", 4096), ("image", (96, 64))])
@pytest.mark.parametrize("stamps_ms", [0.0, 1000.0])  # every frame timed; the first frame alone
def test_the_steady_frame_is_the_general_frame(contract_backend, probe_env, scene, size, stamps_ms, sync):
    backend = contract_backend
    _sync_here(probe_env, backend, sync)
    steady = _run(backend, scene, size, True, stamps_ms, sync=sync)
    in_python = _run(backend, scene, size, True, stamps_ms, sync=sync, native=False)
    general = _run(backend, scene, size, False, stamps_ms, sync=sync)
    if not sync_modes()[sync].orders:  # (GL's reads not ordered after CL's writes: the pictures may differ)
        for run in (steady, in_python, general):
            run["data"], run["shot"] = [], None
    # every steady frame's hand-over native where the pieces prepare their calls, none with it off
    assert steady["native"] == [_native_expected(backend, sync)] * steady["steady"].count(True)
    assert not any(in_python["native"])
    _same(in_python, general)
    # the steady frame ran every frame but the first on each copy of the objects (which puts both
    # hand-over calls in the validator's accepted ones); with it off, run_frame never asked it
    slots = [r["slot"] for r in steady["recs"]]
    assert steady["steady"] == [slot in slots[:i] for i, slot in enumerate(slots)]
    assert steady["steady"].count(True) >= FRAMES // 2
    assert not any(general["steady"])
    assert all(r["errors"] == [] and r["hazards"] == [] for r in steady["recs"])
    assert [r["owners"][1][1][0] for r in steady["recs"]] == ["cl"] * FRAMES  # (after the acquire)
    _same(steady, general)


@pytest.mark.parametrize("sync", ["finish", "none"])
@pytest.mark.parametrize("stamps_ms", [0.0, 1000.0])
def test_the_steady_frame_runs_on_every_copy_of_the_objects(contract_backend, probe_env, stamps_ms, sync):
    """The image scene on three copies of its texture (frames in flight): the steady frame runs on
    each copy's every frame but its first, with the general frame's records, states and pictures."""
    _sync_here(probe_env, contract_backend, sync)
    steady = _run(contract_backend, "image", (96, 64), True, stamps_ms, sync=sync, copies=3)
    general = _run(contract_backend, "image", (96, 64), False, stamps_ms, sync=sync, copies=3)
    assert [r["slot"] for r in steady["recs"]] == [i % 3 for i in range(FRAMES)]
    assert steady["steady"] == [False] * 3 + [True] * (FRAMES - 3)
    assert steady["native"] == [_native_expected(contract_backend, sync)] * (FRAMES - 3)
    if not sync_modes()[sync].orders:
        for run in (steady, general):
            run["data"], run["shot"] = [], None
    _same(steady, general)


def _failing(where: str, error=None):
    """A failure of ``where`` ("acquire", "compute" or "release") on frame 4 alone, as the driver
    would report one (``error()``: the exception raised, by default glshare's own), made by the
    Python method that makes the call: that frame's calls are made in Python (``native`` off)."""
    native = []

    def fail(rt, frame):
        sched = rt.session.scheduler
        if frame == 5:
            sched.native = native[0]
        if frame != 4:
            return
        native.append(sched.native)
        sched.native = False
        target = rt.session.scene if where == "compute" else rt.session.backend
        name = "compute" if where == "compute" else f"_enqueue_{where}"
        real = getattr(target, name)

        def once(*args, **kwargs):
            setattr(target, name, real)  # (the instance's attribute gone: the class's again)
            del target.__dict__[name]
            raise error() if error is not None else ClError(-5, where=f"test {where}")

        setattr(target, name, once)
    return fail


@pytest.mark.parametrize("sync", ["finish", "semaphore"])
@pytest.mark.parametrize("where", ["acquire", "compute", "release"])
def test_a_failure_inside_the_steady_frame_is_the_general_frames(contract_backend, probe_env, where, sync):
    """An acquire that fails skips the compute and the release; a compute that fails still hands the
    objects back; a release that fails leaves them CL's, the draw is flagged for using them
    (gl_use_while_acquired) and the next acquire for acquiring them again. Every frame still makes
    its sync mode's pair whole (app/schedule/plan.py, STEPS: with finish each frame has its clFinish;
    with semaphores a frame without it hung the H200's queue). The same errors, findings and states
    either way, and the loop goes on."""
    _sync_here(probe_env, contract_backend, sync)
    steady = _run(contract_backend, "particles", 4096, True, 1000.0, fail=_failing(where), sync=sync)
    general = _run(contract_backend, "particles", 4096, False, 1000.0, fail=_failing(where), sync=sync)
    errors = [(i, r["errors"]) for i, r in enumerate(steady["recs"]) if r["errors"]]
    assert errors == [(4, [(4, f"test {where}", -5, "CL_OUT_OF_RESOURCES")])]
    assert steady["steady"][4] is True  # the failing frame was a steady one
    if sync == "finish":
        assert all(r["waits"].count("glFinish") == r["waits"].count("clFinish") == 1 for r in steady["recs"])
    if where == "acquire":
        assert steady["recs"][4]["counts"] == {"acquire": 0, "compute": 0, "release": 0}
        assert steady["steady"][5] is True  # nothing changed hands: the steady frame again
    if where == "release":
        # (one finding per shared object: the fountain's position and colour buffers)
        assert [h[0] for h in steady["recs"][4]["hazards"]] == ["gl_use_while_acquired"] * 2
        assert [h[0] for h in steady["recs"][5]["hazards"]] == ["double_acquire"] * 2
        assert steady["steady"][5] is False  # CL held them at its start: the general frame
    _same(steady, general)


SEGMENT = {"acquire": ACQUIRE, "compute": COMPUTE, "release": RELEASE}


def _failing_native(where: str, seen: list):
    """The same failure made inside the native frame: on frame 4 the last call of ``where``'s segment
    (the acquire, the kernel's launch, the release) returns CL_OUT_OF_RESOURCES, once, as the driver
    would; ``seen`` gets that call's routine (none: the backend makes no such call)."""
    armed = []

    def fail(rt, frame):
        for calls, index, real in armed:  # (frame 5: any list that frame 4 did not use is itself again)
            calls.replace_entry(index, real)
        armed.clear()
        if frame != 4:
            return
        for nf in [ex.nf for ex in rt.session.scheduler.native_frames()]:
            seg = SEGMENT[where]
            start, end = (nf.ends[seg - 1] if seg else 0), nf.ends[seg]
            if start == end:
                continue
            calls, index = nf.calls, end - 1
            real = calls.calls[index].fn
            seen.append(calls.calls[index].routine)

            def once(*words, calls=calls, index=index, real=real):
                calls.replace_entry(index, real)
                return -5

            calls.replace_entry(index, STATUS_FN(once))
            armed.append((calls, index, real))
    return fail


@pytest.mark.parametrize("sync", ["finish", "semaphore"])
@pytest.mark.parametrize("where", ["acquire", "compute", "release"])
def test_a_failure_inside_the_native_frame_is_the_python_frames(contract_backend, probe_env, where, sync):
    """A call of the native list that fails (a status the driver returns) is the same failure as the
    Python hand-over's call raising it: the same error on the same phase, the same skipped and made
    calls after it, states, counts, findings and pictures; the loop goes on natively."""
    _sync_here(probe_env, contract_backend, sync)
    if not _native_expected(contract_backend, sync):
        pytest.skip(f"the steady frame's hand-over on {contract_backend} with {sync} is not native here")
    seen: list = []
    native = _run(contract_backend, "particles", 4096, True, 0.0, fail=_failing_native(where, seen), sync=sync)
    if not seen:
        pytest.skip(f"{contract_backend} makes no {where} call to fail (nothing is enqueued for it)")
    routine = seen[0]
    python = _run(contract_backend, "particles", 4096, True, 0.0, sync=sync, native=False,
                  fail=_failing(where, lambda: _error(-5, routine)))
    errors = [(i, r["errors"]) for i, r in enumerate(native["recs"]) if r["errors"]]
    expect_where = where if where == "compute" else f"{contract_backend}.{where}"
    assert errors == [(4, [(4, expect_where, -5, "CL_OUT_OF_RESOURCES")])]
    assert native["native"][3] is True  # frame 4 (the fourth steady one) was native
    assert native["native"][4:] == [True] * len(native["native"][4:]) or where == "release"
    _same(native, python)
