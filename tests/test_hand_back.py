"""Acquisitions a skipped release leaves behind are handed back, one release call per unmatched
acquire: when the demonstration ends and when the backend closes. NVIDIA's driver nests acquisitions
and destroying a context whose imported memory is still acquired hung there (the H200 run of
bench/probes/gpu_hazard_demos_probe.py); here the calls are counted on the CPU's backend."""
from __future__ import annotations

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
    tracker.handed_back([a, b])
    assert (tracker.unreleased(a), tracker.unreleased(b)) == (0, 0)
    assert tracker.owner_of(a) == tracker.owner_of(b) == "gl"
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


def test_ending_the_skip_release_demo_hands_back_every_acquisition(gl):
    from app.config import RunConfig
    from app.session.loop import Run

    cfg = RunConfig(scene="particles", size=1024, headless=True, frames=10_000, overlay=False, backend="host_copy")
    with Run(cfg, surface=gl) as rt:
        rt.tick()
        backend = rt.session.backend
        shared = list(rt.session.scene.shared)
        rt.controls.key("2")
        for _ in range(4):
            rt.tick()
        assert [backend.tracker.unreleased(o) for o in shared] == [4] * len(shared)
        calls = _count_releases(backend)
        message = rt.controls.key("2")
        assert "4 release call(s) handed back" in message, message
        assert calls == [tuple(o.label for o in shared)] * 4
        assert [backend.tracker.unreleased(o) for o in shared] == [0] * len(shared)
        assert {backend.tracker.owner_of(o) for o in shared} == {"gl"}
        rec = rt.tick()  # an ordinary frame again: acquired once, released once, nothing flagged
        assert rec.hazards == [] and len(calls) == 5
        assert [backend.tracker.unreleased(o) for o in shared] == [0] * len(shared)
        assert "handed back" not in rt.controls.key("2") + rt.controls.key("2")  # on and off, no frame between


def test_closing_hands_back_what_the_skipped_releases_kept(gl):
    from app.config import RunConfig
    from app.session.loop import Run

    cfg = RunConfig(scene="image", size=(64, 64), headless=True, frames=10_000, overlay=False, backend="host_copy")
    with Run(cfg, surface=gl) as rt:
        rt.tick()
        backend = rt.session.backend
        labels = tuple(o.label for o in rt.session.scene.shared)
        rt.controls.key("2")
        for _ in range(3):
            rt.tick()
        calls = _count_releases(backend)
    assert calls == [labels] * 3
    assert backend.objects == [] and backend.hand_back() == 0  # closed: nothing left, nothing to hand back
