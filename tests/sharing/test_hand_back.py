"""Acquisitions a skipped release leaves behind are handed back, one release call per unmatched
acquire: when the demonstration ends and when the backend closes. NVIDIA's driver nests acquisitions
and destroying a context whose imported memory is still acquired hung there (the H200 run of
bench/probes/gpu_hazard_demos_probe.py); here the calls are counted on the CPU's backend."""
from __future__ import annotations

import contextlib
import json

import pytest

from app.sharing.backends.host_copy import HostCopy
from app.validate.ownership import OwnershipTracker


class _Obj:
    def __init__(self, label: str) -> None:
        self.label = label


def test_tracker_counts_acquisitions_no_release_matched():
    tracker = OwnershipTracker(family="external_memory")
    a, b = _Obj("a"), _Obj("b")
    tracker.add(a)
    tracker.add(b)
    for _ in range(3):
        tracker.acquired([a, b], "q")
    tracker.released([a], "q")
    assert (tracker.unreleased(a), tracker.unreleased(b)) == (2, 3)
    assert tracker.flagged("double_acquire") == 4
    tracker.released([a], "q")  # the owner was GL already: flagged, and one more acquisition matched
    assert tracker.unreleased(a) == 1 and tracker.flagged("release_without_acquire") == 1
    tracker.handed_back([a, b])  # one release call each: a is done, b keeps two
    assert (tracker.unreleased(a), tracker.unreleased(b)) == (0, 2)
    assert (tracker.owner_of(a), tracker.owner_of(b)) == ("gl", "cl")
    tracker.handed_back([a, b], all_of_them=True)  # a hand-over that does not nest: one call matches all
    assert (tracker.unreleased(a), tracker.unreleased(b)) == (0, 0) and tracker.owner_of(b) == "gl"
    assert (tracker.state(b).acquires, tracker.state(b).releases) == (3, 2)  # calls, as made
    tracker.released([b], "q")  # nothing outstanding: a release now is one without an acquire
    assert tracker.unreleased(b) == 0 and tracker.flagged("release_without_acquire") == 2


def _count_releases(backend) -> list:
    calls = []
    enqueue = backend._enqueue_release

    def counted(queue, objects, wait_for):
        calls.append(tuple(o.label for o in objects))
        return enqueue(queue, objects, wait_for)

    backend._enqueue_release = counted
    return calls


def _skip_release(rt, frames: int) -> None:
    rt.controls.key("2")
    for _ in range(frames):
        rt.tick()


def test_ending_the_skip_release_demo_hands_back_what_cl_kept(gl, tmp_path):
    """host_copy's own hand-over does not nest: one release call (one copy) hands back four frames'
    acquisitions, and the next frame is an ordinary one."""
    from app.config import RunConfig
    from app.run import Run

    cfg = RunConfig(scene="particles", size=1024, headless=True, frames=10_000, overlay=False, backend=HostCopy.name)
    with Run(cfg, surface=gl) as rt:
        rt.tick()
        backend = rt.session.backend
        shared = list(rt.session.scene.shared)
        _skip_release(rt, 4)
        assert [backend.tracker.unreleased(o) for o in shared] == [4] * len(shared)
        calls = _count_releases(backend)
        message = rt.controls.key("2")
        assert "1 release call(s) handed back" in message, message
        assert calls == [tuple(o.label for o in shared)]
        assert [backend.tracker.unreleased(o) for o in shared] == [0] * len(shared)
        assert {backend.tracker.owner_of(o) for o in shared} == {"gl"}
        st = backend.tracker.state(shared[0])
        assert (st.acquires, st.releases) == (5, 2)  # the Owners tab counts calls: one release handed back
        rec = rt.tick()  # an ordinary frame again: acquired once, released once, nothing flagged
        assert rec.hazards == [] and len(calls) == 2
        assert [backend.tracker.unreleased(o) for o in shared] == [0] * len(shared)
        assert "handed back" not in rt.controls.key("2") + rt.controls.key("2")  # on and off, no frame between
        from app.trace.report import build_report

        counts = build_report(rt.session.history, rt.facts())["counts"]
        # 1 + 4 + 1 frames acquired; 1 + 1 released in frames, the skipped frames' release handed back
        assert counts == {"acquire": 6, "compute": 6, "release": 2, "handed_back": 1}, counts
        trace = json.loads(open(rt._write_trace(tmp_path / "t.json")).read())
        hand_backs = [e for e in trace["traceEvents"] if e.get("cat") == "handback"]
        assert len(hand_backs) == 1 and hand_backs[0]["ph"] == "i" and hand_backs[0]["args"]["calls"] == 1
        after = next(r for r in rt.session.history.records if r.index == hand_backs[0]["args"]["frame"])
        assert after.counts["release"] == 1  # the event sits on the first frame after it, which released


def test_a_driver_that_nests_gets_one_release_per_acquisition(gl):
    """Where the driver nests acquisitions (NVIDIA's external memory) every acquisition gets its
    own release call, objects of different depths each as many as they need; a call the driver
    refuses is reported and the calls made before it are not made again."""
    import pyopencl as cl

    from app.config import RunConfig
    from app.run import Run

    cfg = RunConfig(scene="particles", size=1024, headless=True, frames=10_000, overlay=False, backend=HostCopy.name)
    with Run(cfg, surface=gl) as rt:
        rt.tick()
        backend = rt.session.backend
        backend.nests_acquisitions = True
        position, color = rt.session.scene.shared
        _skip_release(rt, 3)
        backend.tracker.released([color], backend.queue)  # color: one acquisition matched already
        assert (backend.tracker.unreleased(position), backend.tracker.unreleased(color)) == (3, 2)
        calls = _count_releases(backend)
        message = rt.controls.key("2")
        assert "3 release call(s) handed back" in message, message
        assert calls == [(position.label, color.label)] * 2 + [(position.label,)]
        assert backend.tracker.state(position).acquires == backend.tracker.state(position).releases
        # a refusal half-way: the call before it counts, the retry makes only what is still owed
        _skip_release(rt, 3)
        refuse_after = [1]
        enqueue = backend._enqueue_release

        def refusing(queue, objects, wait_for):
            if not refuse_after[0]:
                raise cl.LogicError("clEnqueueReleaseExternalMemObjectsKHR failed: INVALID_OPERATION")
            refuse_after[0] -= 1
            return enqueue(queue, objects, wait_for)

        backend._enqueue_release = refusing
        message = rt.controls.key("2")
        assert "handing back what CL kept failed" in message, message
        assert backend.tracker.unreleased(position) == 2
        assert rt.session.history.hand_backs[-1]["calls"] == 1  # the call made before the refusal counts
        backend._enqueue_release = enqueue
        assert backend.hand_back() == 2 and backend.tracker.unreleased(position) == 0
        assert backend.hand_back() == 0


@contextlib.contextmanager
def _held(gl, scene: str, size, skipped: int):
    """A host_copy run made to nest acquisitions as NVIDIA's driver does, its release skipped for
    ``skipped`` frames: yields the run, its backend and the release calls made from then on."""
    from app.config import RunConfig
    from app.run import Run

    cfg = RunConfig(scene=scene, size=size, headless=True, frames=10_000, overlay=False, backend=HostCopy.name)
    with Run(cfg, surface=gl) as rt:
        rt.tick()
        backend = rt.session.backend
        backend.nests_acquisitions = True
        _skip_release(rt, skipped)
        yield rt, backend, _count_releases(backend)


def test_closing_hands_back_what_the_skipped_releases_kept(gl):
    """The backend's own close hands back before it releases the memory objects, whoever closes it."""
    with _held(gl, "image", (64, 64), 3) as (rt, backend, calls):
        labels = tuple(o.label for o in rt.session.scene.shared)
        backend.close()  # not the session's teardown: the backend itself
        assert calls == [labels] * 3
        assert backend.objects == [] and backend.hand_back() == 0
        rt.session.backend = None  # closed already


def test_an_object_unshared_while_cl_holds_it_is_handed_back_first(gl):
    """A shared object destroyed while the demonstration keeps it acquired (the image scene's resize
    with the window) gets its releases before its CL memory object goes."""
    with _held(gl, "image", (64, 64), 2) as (rt, backend, calls):
        obj = rt.session.scene.shared[0]
        backend.unshare(obj)
        assert calls == [(obj.label,)] * 2 and obj not in backend.objects


def test_a_switch_during_the_demonstration_hands_back_before_the_old_backend_goes(gl):
    """Switching backends while the release is skipped: the old backend's close hands back what CL
    kept before its memory objects and its context go (the hang on NVIDIA), and the run goes on."""
    with _held(gl, "particles", 1024, 2) as (rt, old, calls):
        labels = tuple(o.label for o in rt.session.scene.shared)
        # any other backend this machine has (host_mapped on the CPU; the H200 refuses it and has
        # external_memory): the one switched to does not matter, the old one's close does
        others = [name for name in rt.session.registry.available if name != HostCopy.name]
        if not others:
            pytest.skip("no backend but host_copy here to switch to")
        outcome = rt.session.switch(backend=others[0])
        assert rt.session.backend_name == others[0], outcome.message
        assert calls == [labels] * 2 and old.objects == []
        # the report and the trace count them: the switch's teardown made them, between two frames
        assert rt.session.history.totals["handed_back"] == 2
        assert [(h["calls"], "torn down" in h["why"]) for h in rt.session.history.hand_backs] == [(2, True)]
        rec = rt.tick()
        assert rec is not None and rec.errors == []


def test_ending_the_demonstration_inside_a_stepped_frame(gl):
    """Teaching mode, the release skipped, the demonstration turned off after the acquire of a
    stepped frame: that frame runs to its end (its own release made, since the skip is off), then
    what the earlier frames kept is handed back; nothing is left acquired and nothing is flagged twice."""
    with _held(gl, "particles", 1024, 2) as (rt, backend, calls):
        shared = list(rt.session.scene.shared)
        rt.controls.key("t")  # teaching mode: paused, one phase per step
        rt.controls.key("n")
        rt.tick()  # the acquire of the stepped frame: a third acquisition
        assert rt.session.stepper.mid_frame
        assert [backend.tracker.unreleased(o) for o in shared] == [3] * len(shared)
        message = rt.controls.key("2")
        assert not rt.session.stepper.mid_frame  # finished first
        # the stepped frame's own release (1 call), then two hand-back calls for the skipped frames
        assert "2 release call(s) handed back" in message, message
        assert len(calls) == 3
        assert [backend.tracker.unreleased(o) for o in shared] == [0] * len(shared)
        assert rt.session.history.totals["handed_back"] == 2
        flags = backend.tracker.counts
        assert flags.get("release_without_acquire", 0) == 0, flags
