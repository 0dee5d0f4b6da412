"""host_mapped: CL buffers and images over persistently mapped GL buffers (zero-copy on a CPU
OpenCL with a GL in host memory). Pixels against host_copy on every scene (exact), the memory
itself shared (CL's map and GL's mapping are one address), the probe's refusals on stand-in
devices and GLs, live-object counts back to zero, switches in and out, bytes moved per frame."""
from __future__ import annotations

import dataclasses

import numpy as np
import pyopencl as cl
import pytest

from app.config import RunConfig
from app.diagnostics import live
from app.run import Run
from app.sharing.backends.external_memory import ExternalMemory
from app.sharing.backends.host_copy import HostCopy
from app.sharing.backends.host_mapped import (
    BUFFER_TEXTURE,
    READ_ONLY_TEXTURE,
    HostMapped,
    alignment_refusal,
    round_trip,
)
from app.sharing.base import ProbeEnv
from app.window.egl_headless import EglSurface

SCENES = (("particles", 4096, {}), ("image", (96, 72), {}), ("yuv", (96, 72), {"yuv_format": "nv12"}),
          ("yuv", (64, 36), {"yuv_format": "p010"}))


@pytest.fixture
def host_mapped(probe_env):
    backend = HostMapped(probe_env, strict=True)
    yield backend
    backend.close()


def _cfg(**kw) -> RunConfig:
    base = dict(headless=True, overlay=False, frames=10_000, seed=7)
    base.update(kw)
    return RunConfig(**base)


def _shots(scene: str, size, extra: dict, backend: str, frames: int = 6):
    """The screen and the shared GL objects' contents after ``frames`` frames on ``backend``."""
    surface = EglSurface((96, 72))
    try:
        with Run(_cfg(scene=scene, size=size, backend=backend, **extra), surface=surface) as rt:
            recs = [rt.tick() for _ in range(frames)]
            rt.session.scheduler.finish()
            contents = {}
            for obj in rt.session.scene.shared:
                contents[obj.label] = obj.gl.read() if obj.kind == "buffer" else obj.gl.read()
            paths = {o.label: o.display_path for o in rt.session.scene.shared if o.display_path}
            paths.update({f"{o.label} is_image": o.is_image for o in rt.session.scene.shared if o.kind == "texture"})
            return surface.read_pixels(), contents, recs, paths
    finally:
        surface.close()


@pytest.mark.parametrize("scene, size, extra", SCENES)
@pytest.mark.parametrize("cl_view", ["buffers", "images"])
def test_pixels_equal_host_copy(gl, monkeypatch, scene, size, extra, cl_view):
    """Same seed, same frames: the screen and every shared object's contents equal host_copy's
    exactly, and host_mapped's records move 0 bytes where host_copy's move what it copied. Both
    views CL may get of a texture: the mapped buffer itself (a CPU device) and an image over it."""
    from app.sharing.backends import host_mapped

    if cl_view == "images":
        monkeypatch.setattr(host_mapped, "textures_as_images", lambda device, trip: trip.images)
    shown, contents, recs, paths = _shots(scene, size, extra, HostMapped.name)
    ref_shown, ref_contents, ref_recs, _ = _shots(scene, size, extra, HostCopy.name)
    assert all(r.errors == [] and r.backend == "host_mapped" for r in recs)
    assert ref_shown[..., :3].std() > 1
    assert np.array_equal(shown, ref_shown)
    for label, data in ref_contents.items():
        if scene == "yuv" and label != "yuv.rgba":
            continue  # the planes GL uploads: their GL textures hold what host_copy's do (checked below)
        assert np.array_equal(contents[label], data), label
    images = {k: v for k, v in paths.items() if k.endswith("is_image")}
    assert all(v == (cl_view == "images") for v in images.values()), images
    if scene in ("image", "yuv"):
        out = "image.julia" if scene == "image" else "yuv.rgba"
        assert paths[out] == BUFFER_TEXTURE  # drawn by the quad straight from the mapped buffer
    if scene == "yuv":
        assert paths["yuv.y"] == paths["yuv.uv"] == READ_ONLY_TEXTURE
        for label in ("yuv.y", "yuv.uv"):
            assert np.array_equal(contents[label], ref_contents[label]), label
    assert [r.bytes_moved for r in recs] == [0] * len(recs)
    nbytes = sum(int(np.asarray(v).nbytes) for v in ref_contents.values())
    assert ref_recs[-1].bytes_moved == nbytes  # host_copy: the bytes it copied in the frame


def test_buffers_are_the_gl_mapping(host_mapped):
    """A kernel's write is in GL's mapping with nothing copied; CL's map returns GL's address."""
    obj = host_mapped.create_buffer("t.shared", 4096 * 4, data=np.zeros(4096, np.float32))
    q = host_mapped.queue
    try:
        ev = host_mapped.acquire(q, [obj])
        assert ev is None  # nothing to move, nothing to wait for
        fill = cl.enqueue_fill_buffer(q, obj.mem, np.float32(2.5), 0, obj.nbytes)
        rel = host_mapped.release(q, [obj], [fill])
        q.finish()
        assert rel.command_execution_status == cl.command_execution_status.COMPLETE
        assert np.all(obj.gl.view.view(np.float32) == 2.5)  # the GL buffer's own bytes
        assert np.all(obj.gl.read() == 2.5)  # and what GL reads
        mapped, _ = cl.enqueue_map_buffer(q, obj.mem, cl.map_flags.READ, 0, (obj.nbytes,), np.uint8,
                                          is_blocking=True)
        assert mapped.__array_interface__["data"][0] == obj.gl.address
        mapped.base.release(queue=q)
        assert host_mapped.bytes_copied == 0
    finally:
        host_mapped.destroy(obj)


def test_texture_copy_path_for_a_2d_sampler(host_mapped):
    """A texture CL writes that GL samples as a 2D texture: GL copies the mapping into it after the
    release, and the bytes are counted as copied."""
    from app.gl.objects import GlTexture
    from app.scenes.image import julia_constant, julia_global_size, julia_program, julia_reference

    w, h = 40, 30
    obj = host_mapped.create_texture("t.copy", w, h, access="write_only")
    prog, lanes = julia_program(host_mapped.context, host_mapped.device, owner="test")
    q = host_mapped.queue
    try:
        assert isinstance(obj.gl, GlTexture) and obj.display_path == "copy into texture: the caller samples a 2D texture"
        with host_mapped.acquired(q, [obj]) as events:
            kernel = prog.kernel("julia" if obj.is_image else "julia_buffer")
            args = [obj.mem] if obj.is_image else [obj.mem, np.int32(w), np.int32(h), np.int32(w)]
            events.append(kernel(q, julia_global_size(w, h, lanes), None, *args, *map(np.float32, julia_constant(5))))
        q.finish()
        host_mapped.gl_after_release([obj])
        tex = obj.gl.read()
        assert np.array_equal(tex, obj.storage.view.reshape(h, w, 4))  # the 2D texture holds CL's bytes
        # the image test's bound: at most 2 % of the pixels off the float64 reference by more than 1 LSB
        off = np.abs(tex.astype(int) - julia_reference(w, h, 5).astype(int)).max(axis=-1) > 1
        assert tex.std() > 1 and off.mean() < 0.02
        assert host_mapped.bytes_copied == w * h * 4
    finally:
        prog.release()
        host_mapped.destroy(obj)


# -- the probe -----------------------------------------------------------------------------------
class _Device:
    """A stand-in device answering what the probe asks first."""

    def __init__(self, real, unified):
        self._real, self._unified = real, unified
        self.name = "stand-in device"

    @property
    def host_unified_memory(self):
        if isinstance(self._unified, Exception):
            raise self._unified
        return self._unified

    def __getattr__(self, name):
        return getattr(self._real, name)


def _env(probe_env, device=None, gl_info=None) -> ProbeEnv:
    choice = probe_env.choice if device is None else dataclasses.replace(probe_env.choice, device=device)
    return ProbeEnv(choice, probe_env.surface, gl_info or probe_env.gl_info)


def test_probe_accepts_this_machine(probe_env):
    probe = HostMapped.probe(probe_env)
    assert probe.available, probe.reason
    assert "CL's map returns GL's address" in probe.reason and "zero-copy" in probe.reason


def test_probe_refuses_without_host_unified_memory(probe_env):
    probe = HostMapped.probe(_env(probe_env, _Device(probe_env.choice.device, False)))
    assert not probe.available
    assert "no host-unified memory (CL_DEVICE_HOST_UNIFIED_MEMORY is false)" in probe.reason
    error = cl.LogicError(cl._cl._ErrorRecord(msg="no", code=-30, routine="clGetDeviceInfo"))
    probe = HostMapped.probe(_env(probe_env, _Device(probe_env.choice.device, error)))
    assert not probe.available and "does not answer CL_DEVICE_HOST_UNIFIED_MEMORY" in probe.reason
    with pytest.raises(Exception, match="host-unified"):
        HostMapped(_env(probe_env, _Device(probe_env.choice.device, False)))


def test_probe_refuses_gl_without_buffer_storage(probe_env):
    old = dataclasses.replace(probe_env.gl_info, version="3.3 (Core Profile) Mesa",
                              extensions=probe_env.gl_info.extensions - {"GL_ARB_buffer_storage"})
    probe = HostMapped.probe(_env(probe_env, gl_info=old))
    assert not probe.available
    assert "neither OpenGL 4.4 nor GL_ARB_buffer_storage" in probe.reason
    with_ext = dataclasses.replace(old, extensions=old.extensions | {"GL_ARB_buffer_storage"})
    assert HostMapped.probe(_env(probe_env, gl_info=with_ext)).available


class _Mapping:
    """What the probe calls on a mapping's ``base``: ``release(queue=...)``."""

    def release(self, queue=None) -> None:
        return None


class _Elsewhere(np.ndarray):
    """An array in other memory than GL's mapping, whose ``base`` answers like pyopencl's mapping."""

    @property
    def base(self):
        return _Mapping()


def test_probe_refuses_a_device_that_copies(probe_env, monkeypatch):
    """A CL map that returns other memory than GL's mapping (a driver keeping its own copy) is refused."""
    real_map = cl.enqueue_map_buffer

    def elsewhere(queue, mem, flags, offset, shape, dtype, **kw):
        array, event = real_map(queue, mem, flags, offset, shape, dtype, **kw)
        array.base.release(queue=queue)
        return np.empty(shape, dtype).view(_Elsewhere), event

    monkeypatch.setattr(cl, "enqueue_map_buffer", elsewhere)
    trip = round_trip(probe_env.choice.device)
    assert trip.reason and "not GL's mapping" in trip.reason and "copies" in trip.reason


def test_alignment_rule():
    assert alignment_refusal(0x10000, 128) is None
    why = alignment_refusal(0x10040, 128)
    assert "0x10040" in why and "CL_DEVICE_MEM_BASE_ADDR_ALIGN (128 bytes)" in why


# -- lifetime --------------------------------------------------------------------------------------
@pytest.mark.parametrize("scene, size, extra", SCENES[:3])
def test_teardown_leaves_nothing(gl, scene, size, extra):
    before = live.snapshot()
    _shots(scene, size, extra, HostMapped.name, frames=3)
    assert live.snapshot() == before


def test_switch_in_and_out(gl):
    """host_copy -> host_mapped -> host_copy, both scenes: no error, no object left behind, bytes
    moved 0 only while host_mapped runs, and the picture equal before and after."""
    surface = EglSurface((96, 72))
    before = live.snapshot()
    host_copy_before = live.count(owner="host_copy")  # what earlier tests may have left
    try:
        with Run(_cfg(scene="image", size=(96, 72), backend=HostCopy.name), surface=surface) as rt:
            for _ in range(3):
                rt.tick()
            baseline = live.snapshot()
            assert rt.session.switch(backend=HostMapped.name)
            recs = [rt.tick() for _ in range(3)]
            assert all(r.backend == "host_mapped" and r.errors == [] and r.bytes_moved == 0 for r in recs)
            assert live.count(owner="host_copy") == host_copy_before and live.count(owner="host_mapped") > 0
            assert rt.session.switch(scene="particles")
            assert rt.tick().errors == []
            assert rt.session.switch(scene="image")
            assert rt.session.switch(backend=HostCopy.name)
            rec = rt.tick()
            assert rec.backend == "host_copy" and rec.bytes_moved == 96 * 72 * 4
            assert live.snapshot() == baseline
            assert rt.session.history.loop_errors == []
    finally:
        surface.close()
    assert live.snapshot() == before


def test_auto_prefers_host_mapped(probe_env):
    from app.sharing.registry import Registry

    reg = Registry(probe_env)
    order = reg.order
    assert order.index(HostMapped.name) == order.index(HostCopy.name) - 1
    assert order.index(HostMapped.name) > order.index(ExternalMemory.name)
    assert reg.choose("auto") == HostMapped.name
    assert reg.sync_verdicts(HostMapped.name)["finish"] is None
    assert "external_memory" in reg.sync_verdicts(HostMapped.name)["semaphore"]


@pytest.mark.parametrize("native", [False, True])
def test_untimed_frames_make_no_events_and_compute_the_same(monkeypatch, native):
    """Under sync finish an untimed frame (``FrameRecord.sampled`` False) asks the driver for no
    event nothing reads: the kernel is enqueued with the C API's NULL event and host_mapped's release
    enqueues no marker; a timed frame gets both, and its stamps are read. The particles and the
    screen after 12 frames are identical (exactly) to a run where every frame is timed. With the
    steady frame's hand-over native (``native``) the calls are the native list's: its untimed form has
    no kernel event out and no release call; in Python they are the prepared calls', seen here."""
    from app.cl import ext
    from app.schedule.executors import Native

    asked: list[tuple[str, bool]] = []
    nd_call, release = ext.NDRangeCall.__call__, HostMapped._enqueue_release

    def kernel(self, queue, k, g, local=None, wait_for=None, event=True):
        asked.append(("kernel", event))
        return nd_call(self, queue, k, g, local, wait_for, event)

    def released(self, queue, objects, wait_for, event=True):
        asked.append(("release", event))
        return release(self, queue, objects, wait_for, event)

    def native_frame(self, *args):  # a native frame's calls: its list's kernel event out, its release call
        nf = self.nf
        asked.extend([("kernel", nf.kernel_out is not None), ("release", nf.ends[3] > nf.ends[2])])
        return native_sync_before(self, *args)

    native_sync_before = Native._sync_before
    monkeypatch.setattr(ext.NDRangeCall, "__call__", kernel)
    monkeypatch.setattr(HostMapped, "_enqueue_release", released)
    monkeypatch.setattr(Native, "_sync_before", native_frame)
    runs = {}
    for stamps_ms in (0.0, 1000.0):  # every frame timed; one timed frame in the run (the first)
        asked.clear()
        surface = EglSurface((96, 72))
        try:
            with Run(_cfg(scene="particles", size=4096, backend=HostMapped.name, stamps_ms=stamps_ms),
                     surface=surface) as rt:
                sched = rt.session.scheduler
                if native and sched.native_reason:
                    pytest.skip(f"no native frame here: {sched.native_reason}")
                sched.native = native
                recs, events_left = [], []
                for _ in range(12):
                    recs.append(rt.tick())
                    events_left.append(set(recs[-1].events))  # right after the frame, before any harvest
                sched.finish()
                runs[stamps_ms] = (surface.read_pixels(), rt.session.scene.shared[0].gl.read().copy(), recs,
                                   events_left, list(asked))
        finally:
            surface.close()
    shot0, data0, recs0, left0, asked0 = runs[0.0]
    shot1, data1, recs1, left1, asked1 = runs[1000.0]
    assert all(r.sampled for r in recs0) and [r.sampled for r in recs1] == [True] + [False] * 11
    assert asked0 == [("kernel", True), ("release", True)] * 12
    assert asked1 == [("kernel", True), ("release", True)] + [("kernel", False), ("release", False)] * 11
    assert left0 == [{"compute", "release"}] * 12  # (host_mapped's acquire enqueues nothing under finish)
    assert left1 == [{"compute", "release"}] + [set()] * 11
    assert {"compute", "release"} <= set(recs1[0].cl_profile) and all(r.cl_profile == {} for r in recs1[1:])
    assert all(r.errors == [] for r in recs0 + recs1)
    np.testing.assert_array_equal(data1, data0)
    np.testing.assert_array_equal(shot1, shot0)
