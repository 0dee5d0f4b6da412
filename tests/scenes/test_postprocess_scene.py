"""The postprocess scene: GL renders a 3-D scene into a shared texture, CL filters it, GL shows it.

Each frame the texture GL rendered is read back before the frame runs, filtered in numpy
(app/postprocess/reference.py) and compared with what the frame shows: exactly, on the screen
and in the filtered texture. On host_copy (both copy directions counted), on external_memory's
texture code with its imports stood in for (PoCL imports nothing: the GPU copy of
``gl_before_acquire``, the buffer kernels, the display paths), with the hazard demonstration
(CL reads while GL renders: flagged, timed, one frame late on a copying backend), the panel's
commands and the local work size.
"""
from __future__ import annotations

import ctypes

import numpy as np
import pyopencl as cl
import pytest

from app.config import RunConfig
from app.diagnostics import live
from app.errors import UsageError
from app.postprocess import reference
from app.scenes.postprocess import BACKGROUND, UNORDERED_PASS, PostprocessScene
from app.schedule.scheduler import FrameScheduler
from app.sharing.sync import FinishSync

W, H = 256, 256  # the session surface's size: the quad maps texels 1:1 to pixels


def _target(surface):
    return lambda: surface.framebuffer_size if surface.bind_target() else None


def _run(backend, surface, frames: int, *, cfg: RunConfig | None = None, each=None):
    """Build the scene on ``backend``, run ``frames`` frames; before each frame the rendered texture
    is read (what CL is about to filter), after it what the frame shows. Returns the list of
    (rendered, filtered texture, screen, record) and the scene's last description."""
    scene = PostprocessScene(cfg or RunConfig(scene="postprocess", size=(W, H)))
    scene.build(backend, surface.framebuffer_size)
    sched = FrameScheduler(backend, scene, FinishSync(backend), strict=True, gl_timer_every=1)
    out = []
    try:
        for frame in range(frames):
            if each is not None:
                each(frame, scene, sched)
            rendered = scene.rendered.gl.read()
            rec = sched.run_frame(frame, _target(surface))
            out.append((rendered, scene.out.gl.read(), surface.read_pixels(), rec))
        sched.finish()
        facts = {"describe": scene.describe(), "shown_frame": scene.shown_frame,
                 "paths": {o.label: o.display_path for o in scene.shared},
                 "rendered_gl": type(scene.rendered.gl).__name__, "images": scene.images}
    finally:
        sched.close()
        scene.teardown()
        scene.teardown()  # idempotent
    return out, facts


def test_shown_frame_is_the_filtered_rendering_on_host_copy(host_copy, gl):
    before = live.snapshot()
    copied = host_copy.bytes_copied
    frames, facts = _run(host_copy, gl, 4)
    assert live.snapshot() == before  # FBO, depth buffer, meshes, programs, textures, CL images: all gone
    for i, (rendered, tex, screen, rec) in enumerate(frames):
        assert rec.errors == [] and rec.hazards == [], (i, rec.errors, rec.hazards)
        want = reference.sobel(rendered)
        assert np.array_equal(tex, want), f"frame {i}: the filtered texture is not the Sobel of what GL rendered"
        assert np.array_equal(screen, want), f"frame {i}: the screen is not the filtered texture"
        # both hand-overs carried data: the acquire's copy GL -> CL and the release's CL -> GL
        assert "acquire" in rec.cl_profile and "release" in rec.cl_profile, rec.cl_profile
    assert host_copy.bytes_copied - copied == 4 * 2 * W * H * 4  # rendered in, filtered out, every frame
    assert facts["shown_frame"] == 3 and facts["rendered_gl"] == "GlTexture" and facts["images"]
    r0, r1 = frames[0][0], frames[1][0]
    assert not np.array_equal(r0, r1)  # it moves
    # texture row 0 is the top of the picture: the sky (background colour) above, the floor below
    sky = np.round(np.array(BACKGROUND[:3]) * 255).astype(np.uint8)
    assert (r0[0, :, :3] == sky).all() and not (r0[-1, :, :3] == sky).all()
    assert len(np.unique(r0.reshape(-1, 4), axis=0)) >= 10  # flat-lit faces of five cubes, a checker floor
    assert frames[0][1][..., :3].max() == 255 and (frames[0][1][..., :3] == 0).mean() > 0.5  # edges on black


@pytest.mark.parametrize("radius", [0, 3])
def test_blur_matches_the_numpy_box_blur(host_copy, gl, radius):
    cfg = RunConfig(scene="postprocess", size=(W, H), filter="blur", blur_radius=radius)
    frames, facts = _run(host_copy, gl, 2, cfg=cfg)
    for rendered, tex, screen, _rec in frames:
        want = reference.box_blur(rendered, radius)
        assert np.array_equal(tex, want) and np.array_equal(screen, want)
        if radius == 0:
            assert np.array_equal(tex, rendered)  # radius 0 copies the image
    assert f"box blur r={radius}" in facts["describe"]


def test_filter_radius_and_local_size_change_between_frames(host_copy, gl):
    def each(frame, scene, sched):
        if frame == 1:
            scene.set_filter("blur")
            scene.set_blur_radius(2)
        if frame == 2:
            scene.set_local_size((8, 8))
        if frame == 3:
            scene.set_local_size((16, 4))
            scene.set_filter("sobel")

    frames, _ = _run(host_copy, gl, 4, each=each)
    kinds = ["sobel", "blur", "blur", "sobel"]
    for (rendered, tex, _, _), kind in zip(frames, kinds):
        want = reference.sobel(rendered) if kind == "sobel" else reference.box_blur(rendered, 2)
        assert np.array_equal(tex, want), kind


def test_bad_options_are_refused_with_one_line(host_copy, gl):
    scene = PostprocessScene(RunConfig(scene="postprocess", size=(64, 48)))
    scene.build(host_copy, gl.framebuffer_size)
    try:
        with pytest.raises(UsageError, match="blur radius 16"):
            scene.set_blur_radius(16)
        with pytest.raises(UsageError, match="unknown filter"):
            scene.set_filter("sharpen")
        device_max = host_copy.device.max_work_group_size
        with pytest.raises(UsageError, match="CL_DEVICE_MAX_WORK_GROUP_SIZE|CL_KERNEL_WORK_GROUP_SIZE"):
            scene.set_local_size((device_max, 2))
        with pytest.raises(UsageError, match="at least 1"):
            scene.set_local_size((0, 4))
        assert scene.local_size is None and scene.filter == "sobel" and scene.radius == 2  # unchanged
    finally:
        scene.teardown()
    with pytest.raises(UsageError, match="blur radius"):
        PostprocessScene(RunConfig(scene="postprocess", size=(64, 48), blur_radius=-1)).build(host_copy, (64, 48))
    assert host_copy.objects == []  # the failed build undid itself


def test_unordered_render_demo_reads_while_gl_renders(host_copy, gl):
    """The hazard demonstration: the 3-D pass runs in the compute phase while CL holds the texture.
    On host_copy CL filters the copy its acquire made before that pass: the previous frame's image."""
    scene = PostprocessScene(RunConfig(scene="postprocess", size=(W, H)))
    scene.build(host_copy, gl.framebuffer_size)
    backend = host_copy
    backend.tracker.strict = False  # the demo sets flags off on purpose
    sched = FrameScheduler(backend, scene, FinishSync(backend), gl_timer_every=1)
    scene.pass_timer = lambda name: sched.gl_timer.span(sched.current, name)
    try:
        sched.run_frame(0, _target(gl))
        scene.unordered_render = True
        recs, shown, rendered_in_frame, held = [], [], [], []
        for frame in range(1, 4):
            before = scene.rendered.gl.read()  # what the acquire copies to CL
            held.append(scene.rendered_frame)
            rec = sched.run_frame(frame, _target(gl))
            recs.append(rec)
            shown.append((before, scene.out.gl.read()))
            rendered_in_frame.append(scene.rendered_frame)
        sched.finish()
    finally:
        backend.tracker.strict = True
        sched.close()
        scene.teardown()
    from app.ui.model import build_timeline

    for rec, (before, tex), frame_rendered, frame in zip(recs, shown, rendered_in_frame, range(1, 4)):
        assert [f.case for f in rec.hazards] == ["gl_use_while_acquired"], rec.hazards
        # the panel's mark sits in the compute phase, where the pass ran (it sat at 0 ms: its place
        # was looked up by a phase name with no entry)
        (mark,) = [m for m in build_timeline(rec, None).markers if m.kind == "hazard"]
        cs, ce = ((t - rec.start_ns) / 1e6 for t in rec.phases["compute"])
        assert cs <= mark.t_ms <= ce and "during the kernel" in mark.title, (mark, cs, ce)
        assert rec.hazards[0].label == "postprocess.rendered"
        assert frame_rendered == frame  # rendered during this frame's compute
        assert np.array_equal(tex, reference.sobel(before))  # CL filtered the copy made before GL's pass
        names = [name for name, _, _ in rec.gl_passes]
        assert UNORDERED_PASS in names, names  # the pass is on the timeline's GL row
        s, e = rec.phases["compute"]
        assert s < e
    # frame 1 still filters image 1 (rendered ahead before the demo began); from then on frame n
    # filters image n - 1: GL's image of this frame reaches CL only at the next acquire
    assert held == [1, 1, 2]
    assert np.array_equal(shown[0][0], shown[1][0]) and not np.array_equal(shown[1][0], shown[2][0])


def test_3d_pass_draws_whole_under_a_scissor_and_restores_it(host_copy, gl):
    """Beside the panel the session scissors the window to the scene's rectangle (and may leave
    depth test or blending on): the 3-D pass draws its whole image all the same (the scissor test
    applies to every framebuffer, OpenGL 4.6 core 14.9.2) and leaves each state as it found it."""
    from OpenGL import GL as PyGL

    scene = PostprocessScene(RunConfig(scene="postprocess", size=(W, H)))
    scene.build(host_copy, gl.framebuffer_size)
    try:
        whole = []
        for states in ((), (PyGL.GL_SCISSOR_TEST, PyGL.GL_BLEND)):
            PyGL.glScissor(W - 4, 0, 4, 4)  # a strip at the edge, as beside the panel
            for cap in states:
                PyGL.glEnable(cap)
            scene.render_3d(7, *scene._current_target())
            for cap in (PyGL.GL_SCISSOR_TEST, PyGL.GL_BLEND, PyGL.GL_DEPTH_TEST):
                assert bool(PyGL.glIsEnabled(cap)) == (cap in states), hex(cap)
            assert tuple(PyGL.glGetIntegerv(PyGL.GL_SCISSOR_BOX)) == (W - 4, 0, 4, 4)
            for cap in states:
                PyGL.glDisable(cap)
            whole.append(scene.rendered.gl.read())
            scene.render_3d(0, *scene._current_target())  # another image in between
        assert np.array_equal(whole[0], whole[1])  # the same image 7, every pixel
    finally:
        scene.teardown()


# -- external_memory's texture code, its imports stood in for ---------------------------------------
def _plain_imports_backend():
    """external_memory with plain GL and CL buffers instead of imported memory (PoCL imports
    nothing, there is no Vulkan here): the acquire copies the GL buffer into the CL buffer and the
    release copies back, as shared memory would hold one payload. external_memory's own code runs:
    create_texture (2D texture for what GL renders, buffer texture for what the quad shows),
    gl_before_acquire (the GPU copy texture -> buffer), gl_after_release, destroy."""
    from OpenGL import GL

    from app.sharing.backends.external_memory import ExternalMemory

    class NoMemoryObject:
        def release(self) -> None:
            return None

    class PlainImports(ExternalMemory):
        def _create_context(self):
            self.fds_closed, self.cl_took_fd, self._kept, self.gpu_bytes_copied = 0, None, [], 0
            self._pack_staging = {}
            return cl.Context([self.device])

        def _import(self, label, nbytes):
            name = GL.GLuint()
            GL.glCreateBuffers(1, ctypes.byref(name))
            GL.glNamedBufferStorage(name.value, nbytes, None, GL.GL_DYNAMIC_STORAGE_BIT)
            return name.value, NoMemoryObject(), cl.Buffer(self.context, cl.mem_flags.READ_WRITE, nbytes)

        def _enqueue_acquire(self, queue, objects, wait_for):
            GL.glFinish()
            for obj in objects:
                if obj.access == "write_only":
                    continue
                host = np.empty(obj.pitch * obj.gl.height, np.uint8)
                GL.glGetNamedBufferSubData(obj.gl_memory, 0, host.nbytes, host)
                cl.enqueue_copy(queue, obj.handover_mem, host, wait_for=wait_for, is_blocking=True)
            return cl.enqueue_marker(queue)

        def _enqueue_release(self, queue, objects, wait_for):
            for obj in objects:
                if obj.access == "read_only":
                    continue
                host = np.empty(obj.pitch * obj.gl.height, np.uint8)
                cl.enqueue_copy(queue, host, obj.handover_mem, wait_for=wait_for, is_blocking=True)
                GL.glNamedBufferSubData(obj.gl_memory, 0, host.nbytes, host)
            return cl.enqueue_marker(queue)

        def _close_extra(self) -> None:
            return None

    return PlainImports


def test_external_memory_copies_the_rendering_into_the_imported_buffer(probe_env, gl):
    from app.sharing.backends.external_memory import BUFFER_TEXTURE, READ_BY_CL

    before = live.snapshot()
    backend = _plain_imports_backend()(probe_env, strict=True)
    try:
        frames, facts = _run(backend, gl, 3)
        copied = backend.gpu_bytes_copied
        tab = backend.memory_tab()
    finally:
        backend.close()
    assert live.snapshot() == before
    assert facts["paths"] == {"postprocess.rendered": READ_BY_CL, "postprocess.filtered": BUFFER_TEXTURE}
    assert facts["rendered_gl"] == "GlTexture"  # GL renders into a real 2D texture, never a buffer texture
    assert facts["images"] is ("cl_khr_image2d_from_buffer" in probe_env.device_extensions)
    assert copied == 3 * W * H * 4  # one GPU copy of the rendering a frame (the filtered one: none)
    assert tab["gpu_bytes_copied"] == copied
    for i, (rendered, tex, screen, rec) in enumerate(frames):
        assert rec.errors == [], rec.errors
        want = reference.sobel(rendered)
        assert np.array_equal(tex, want) and np.array_equal(screen, want), i


def test_external_memory_copies_nothing_the_caller_wrote_into_the_buffer(probe_env, gl):
    """upload() writes the imported buffer itself: no texture copy is owed before the acquire."""
    backend = _plain_imports_backend()(probe_env, strict=True)
    try:
        obj = backend.create_texture("t.read", 8, 4, access="read_only")
        backend.upload(obj, np.arange(8 * 4 * 4, dtype=np.uint8))
        backend.gl_before_acquire([obj])
        assert backend.gpu_bytes_copied == 0
        obj.gl_wrote()  # GL rendered into the texture: now the copy is owed, once
        backend.gl_before_acquire([obj])
        backend.gl_before_acquire([obj])
        assert backend.gpu_bytes_copied == obj.nbytes
        backend.destroy(obj)
    finally:
        backend.close()


# -- in a run: the controls -------------------------------------------------------------------------
def test_commands_and_keys_in_a_run(gl):
    from app.run import Run
    from app.window import MouseEvent

    cfg = RunConfig(scene="postprocess", size=(W, H), headless=True, overlay=False, frames=10_000)
    with Run(cfg, surface=gl) as rt:
        rt.tick()
        scene, controls = rt.session.scene, rt.controls
        assert controls.key("e").startswith("postprocess: box blur")
        assert scene.filter == "blur" and rt.session.cfg.filter == "blur"
        assert controls.key("=") == "postprocess: blur radius 3"
        assert controls.key("-") == "postprocess: blur radius 2"
        assert "refused" in controls.run("set_blur_radius", value=99) and scene.radius == 2
        assert controls.run("set_local_size", value="8x8") == "local work size: 8x8"
        assert "refused" in controls.run("set_local_size", value="100000x1") and scene.local_size == (8, 8)
        version = scene.camera.version
        controls.mouse(MouseEvent("drag", 40, -10))
        controls.mouse(MouseEvent("scroll", 0, 2))
        assert scene.camera.version == version + 2
        assert controls.key("c") == "camera reset" and scene.camera.state[2] == pytest.approx(6.5)
        options = {o.name: o for o in scene.options()}
        assert options["filter"].value == "blur" and options["blur_radius"].value == 2
        assert options["local_size"].value == "8x8" and options["camera"].command == "reset_camera"
        rec = rt.tick()
        assert rec.errors == []
        rendered = scene.rendered.gl.read()
        rec = rt.tick()
        assert np.array_equal(scene.out.gl.read(), reference.box_blur(rendered, 2))
        # the hazard demonstration (not strict here: its flags are recorded)
        assert controls.key("5").startswith("hazard demo: GL renders")
        rec = rt.tick()
        assert [f.case for f in rec.hazards] == ["gl_use_while_acquired"]
        assert {d.demo: d.on for d in controls.demo_views()}["unordered_render"]
        assert controls.key("5").startswith("hazard demo: GL renders ahead")
        rec = rt.tick()
        assert rec.hazards == []
        # the options stay across a switch away and back
        assert rt.session.switch(scene="image")
        assert controls.key("e").startswith("filter: the postprocess scene only")
        assert rt.session.switch(scene="postprocess")
        assert rt.session.scene.filter == "blur" and rt.session.scene.local_size == (8, 8)
        assert rt.tick().errors == []


def test_cli_refuses_bad_postprocess_options(glshare, tmp_path):
    bad = glshare("run", "--scene", "postprocess", "--headless", "--frames", "2", "--blur-radius", "40",
                  "--screenshot", str(tmp_path / "s.png"))
    assert bad.returncode == 2 and "blur radius 40" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    bad = glshare("run", "--scene", "postprocess", "--headless", "--frames", "2", "--local-size", "9000x9000",
                  "--screenshot", str(tmp_path / "s.png"))
    assert bad.returncode == 2 and "local size 9000x9000" in bad.stderr, bad.stderr
    assert not (tmp_path / "s.png").exists()
