"""Frames in flight: where the sync mode has no CPU wait per frame, the scheduler lets the CPU run
at most N frames ahead of the GPU (the wait is recorded on the frame that waited)."""
from __future__ import annotations

import pytest

from app.config import RunConfig
from app.scenes.particles import ParticlesScene
from app.schedule.scheduler import FrameScheduler
from app.sharing.backends.host_mapped import HostMapped
from app.sharing.sync import SyncMode


class NoWaitSync(SyncMode):
    """A mode that, like semaphores, orders nothing on the CPU (a test stand-in: unregistered name)."""

    bounded_run_ahead = True

    def __init__(self, backend) -> None:
        super().__init__(backend)
        self.name = "test-no-wait"  # on the instance: the class stays out of the registry


@pytest.mark.parametrize("n", [1, 2, 3])
def test_cpu_runs_at_most_n_frames_ahead(host_copy, surface, n):
    scene = ParticlesScene(RunConfig(size=1024, seed=2))
    scene.build(host_copy, surface.framebuffer_size)
    sched = FrameScheduler(host_copy, scene, NoWaitSync(host_copy), strict=True, frames_in_flight=n)
    target = lambda: surface.framebuffer_size if surface.bind_target() else None  # noqa: E731
    try:
        recs = [sched.run_frame(f, target) for f in range(8)]
        assert len(sched.in_flight.frames) == n  # the newest n frames may still be running
        waited = [any(name == f"{n} frames in flight" for name, _, _ in r.waits) for r in recs]
    finally:
        sched.finish()
        sched.close()
        scene.teardown()
    assert waited == [False] * n + [True] * (8 - n)  # from frame n on, each waits for frame i - n
    assert all(r.errors == [] for r in recs)
    assert sched.in_flight.frames == type(sched.in_flight.frames)()  # close() deleted every fence


def test_modes_that_wait_are_not_bounded(host_copy, surface):
    scene = ParticlesScene(RunConfig(size=256, seed=2))
    scene.build(host_copy, surface.framebuffer_size)
    sched = FrameScheduler(host_copy, scene, host_copy.make_sync("finish"), strict=True, frames_in_flight=1)
    target = lambda: surface.framebuffer_size if surface.bind_target() else None  # noqa: E731
    try:
        recs = [sched.run_frame(f, target) for f in range(3)]
    finally:
        sched.finish()
        sched.close()
        scene.teardown()
    assert [name for r in recs for name, _, _ in r.waits] == ["glFinish", "clFinish"] * 3


@pytest.mark.parametrize("slots", [2, 3])
def test_image_frames_rotate_over_copies(host_copy, surface, slots):
    """With copies of the shared texture (Scene.max_slots), frame n computes and draws copy n % slots:
    each copy holds the image of the last frame that used it, and every frame shows its own image."""
    import numpy as np

    from app.scenes.image import ImageScene, julia_reference

    w, h = surface.framebuffer_size
    scene = ImageScene(RunConfig(scene="image", size=(w, h)))
    scene.slots = slots
    scene.build(host_copy, surface.framebuffer_size)
    sched = FrameScheduler(host_copy, scene, NoWaitSync(host_copy), strict=True, frames_in_flight=slots)
    target = lambda: surface.framebuffer_size if surface.bind_target() else None  # noqa: E731
    frames = 2 * slots + 1
    shown, recs = [], []
    kernels = {id(scene.program.kernel(scene._kernel_name, copy=i)) for i in range(slots)}
    set_args: list[int] = []  # the argument indices set while the frames ran
    try:
        labels = [t.label for t in scene.textures]
        # each copy has its own kernel with its own texture, set once at build: a frame sets only the
        # constant's two scalars on the kernel of its copy
        assert len(kernels) == slots
        assert [scene.program.kernel(scene._kernel_name, copy=i).args[0] for i in range(slots)] == \
            [t.mem for t in scene.textures]
        for i in range(slots):
            k = scene.program.kernel(scene._kernel_name, copy=i)
            k.set_arg = lambda index, value, k=k, real=k.set_arg: (set_args.append(index), real(index, value))
        for f in range(frames):
            recs.append(sched.run_frame(f, target))
            host_copy.queue.finish()
            shown.append(surface.read_pixels())
        sched.finish()
        held = [t.gl.read() for t in scene.textures]
    finally:
        sched.close()
        scene.teardown()
    assert labels == [f"image.julia[{i}]" for i in range(slots)]
    assert sorted(set(set_args)) == [scene._c_index, scene._c_index + 1] and len(set_args) == 2 * frames
    assert [r.slot for r in recs] == [f % slots for f in range(frames)]
    assert [r.owner_labels for r in recs] == [(labels[f % slots],) for f in range(frames)]
    assert all(r.errors == [] for r in recs)
    for f, pixels in enumerate(shown):  # each frame shows its own constant's image (<= 2 % off by > 1 LSB)
        d = np.abs(pixels.astype(int) - julia_reference(w, h, f).astype(int)).max(-1)
        assert (d > 1).mean() < 0.02, (f, (d > 1).mean())
    last = {f % slots: f for f in range(frames)}  # the last frame that wrote each copy
    for i, pixels in enumerate(held):
        d = np.abs(pixels.astype(int) - julia_reference(w, h, last[i]).astype(int)).max(-1)
        assert (d > 1).mean() < 0.02, (i, last[i])
    assert scene.textures == [] and scene.shared == []  # teardown destroyed every copy


def test_slots_only_where_the_mode_runs_ahead_on_copies_and_the_scene_allows(host_copy):
    """Session._build: copies = --frames-in-flight where the sync mode bounds the run-ahead and orders
    each copy on its own (semaphores) and the scene allows copies; one set of objects otherwise."""
    from app.scenes.image import ImageScene
    from app.session.session import Session
    from app.sharing.backends.gl_sharing import GlEventSync
    from app.sharing.sync.semaphore import SemaphoreSync

    class OrdersCopies(NoWaitSync):
        orders_copies = True

    def slots(scene, sync, n):
        return Session._slots_for(scene, sync, n)

    assert SemaphoreSync.orders_copies and SemaphoreSync.bounded_run_ahead
    assert GlEventSync.bounded_run_ahead and not GlEventSync.orders_copies  # its fence covers every GL command
    assert slots(ImageScene, OrdersCopies(host_copy), 4) == 4
    assert slots(ImageScene, OrdersCopies(host_copy), 99) == ImageScene.max_slots
    assert slots(ImageScene, NoWaitSync(host_copy), 4) == 1
    assert slots(ImageScene, host_copy.make_sync("finish"), 4) == 1
    assert slots(ParticlesScene, OrdersCopies(host_copy), 4) == 1  # each frame reads the one before


@pytest.mark.parametrize("sync", ["finish", "no-wait"])
def test_untimed_frames_keep_only_the_events_something_reads(probe_env, surface, sync):
    """An untimed frame (``FrameRecord.sampled`` False) on the in-order queue: under finish nothing
    reads its events, and it has none; under a mode that does not wait for CL on the CPU the
    release's event stays (the panel's owners in transition, the run-ahead bound) and only the
    kernel's is left out. The image is the Julia set of the frame's constant (<= 2 % of pixels off
    by more than one level): every frame's on screen under finish; the texture after the last frame
    under the stand-in mode, which orders nothing between CL and GL."""
    import numpy as np

    from app.errors import SharingUnavailable
    from app.scenes.image import ImageScene, julia_reference
    from app.sharing.backends.external_memory import ExternalMemory

    backend, why = None, []
    for kind in (HostMapped, ExternalMemory):  # the backends whose calls take a NULL event: host_mapped on
        try:                                   # a CPU OpenCL, external_memory on the GPU
            backend = kind(probe_env, strict=True)
            break
        except SharingUnavailable as exc:
            why.append(exc.one_line())
    if backend is None:
        pytest.skip("; ".join(why))
    w, h = surface.framebuffer_size
    scene = ImageScene(RunConfig(scene="image", size=(w, h)))
    scene.build(backend, surface.framebuffer_size)
    mode = backend.make_sync("finish") if sync == "finish" else NoWaitSync(backend)
    sched = FrameScheduler(backend, scene, mode, strict=True, frames_in_flight=1,
                           stamps_interval_ns=10 ** 12)  # the first frame timed, the next ones not
    target = lambda: surface.framebuffer_size if surface.bind_target() else None  # noqa: E731
    left, shown = [], []
    try:
        for f in range(4):
            rec = sched.run_frame(f, target)
            left.append((rec.sampled, set(rec.events)))  # before any harvest
            backend.queue.finish()
            shown.append(surface.read_pixels())
        sched.finish()
        recs = list(sched.records)
        held = scene.texture.gl.read()
    finally:
        sched.close()
        scene.teardown()
        backend.close()
    hand_over = {"release"} if backend.name == HostMapped.name else {"acquire", "release"}  # (host_mapped's
    untimed = set() if sync == "finish" else hand_over  # acquire enqueues nothing without a wait list)
    assert left == [(True, hand_over | {"compute"})] + [(False, untimed)] * 3
    assert all(r.errors == [] for r in recs) and not any(r.events for r in recs)
    for f, pixels in enumerate(shown if sync == "finish" else [None] * 3 + [held]):
        if pixels is None:
            continue
        d = np.abs(pixels.astype(int) - julia_reference(w, h, f).astype(int)).max(-1)
        assert (d > 1).mean() < 0.02, (f, (d > 1).mean())


@pytest.mark.parametrize("n", [2, 4])
def test_stamps_are_read_a_batch_at_a_time_beside_the_frames_in_flight(host_copy, surface, n):
    """Under a mode that runs ahead, a batch of stamps is read once ``profile_batch`` frames wait
    beyond the ``frames_in_flight`` that may still run: one read per batch, not one every frame
    walking the frames in flight again; every timed frame's stamps are read in the end."""
    scene = ParticlesScene(RunConfig(size=256, seed=2))
    scene.build(host_copy, surface.framebuffer_size)
    sched = FrameScheduler(host_copy, scene, NoWaitSync(host_copy), strict=True, frames_in_flight=n)
    target = lambda: surface.framebuffer_size if surface.bind_target() else None  # noqa: E731
    reads, most = [], 0
    real = sched.profiles.harvest

    def counted(*a, **k):
        reads.append(len(sched.profiles.pending))
        return real(*a, **k)

    sched.profiles.harvest = counted
    frames = 6 * sched.profile_batch
    try:
        recs = []
        for f in range(frames):
            recs.append(sched.run_frame(f, target))
            most = max(most, len(sched.profiles.pending))
        end_reads = len(reads)
    finally:
        del sched.profiles.harvest
        sched.finish()
        sched.close()
        scene.teardown()
    assert all(r.errors == [] for r in recs)
    assert reads and all(k >= sched.profile_batch + n for k in reads[:end_reads])  # never for the frames in flight alone
    assert end_reads <= frames // sched.profile_batch  # about one read a batch
    assert most <= sched.profile_batch + n
    assert all(r.complete for r in recs)
    assert all(r.sampled for r in recs)  # (the scheduler's default: every frame timed)
    assert all("compute" in r.cl_profile for r in recs)  # every kernel's stamps read
