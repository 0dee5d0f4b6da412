"""The Julia set scene: texture contents and drawn pixels against the float64 numpy reference, and
external_memory's buffer-texture display path (drawn from a plain GL buffer, checked to 0 LSB)."""
from __future__ import annotations

import numpy as np
import pytest

from app.config import RunConfig
from app.scenes.image import ImageScene, julia_global_size, julia_program, julia_reference
from app.schedule.scheduler import FrameScheduler
from app.sharing.sync import FinishSync

W, H = 256, 256  # the session surface's size: the quad maps texels 1:1 to pixels


def _mismatch(a: np.ndarray, b: np.ndarray) -> tuple[float, int]:
    """Fraction of pixels off by more than 1 LSB, and the largest difference."""
    d = np.abs(a.astype(int) - b.astype(int)).max(axis=-1)
    return float((d > 1).mean()), int(d.max())


def test_texture_and_screen_match_reference(host_copy, surface):
    scene = ImageScene(RunConfig(scene="image", size=(W, H)))
    scene.build(host_copy, surface.framebuffer_size)
    sched = FrameScheduler(host_copy, scene, FinishSync(host_copy), strict=True)
    target = lambda: surface.framebuffer_size if surface.bind_target() else None  # noqa: E731
    try:
        for frame in range(4):
            rec = sched.run_frame(frame, target)
        sched.finish()
        tex = scene.texture.gl.read()
        shown = surface.read_pixels()
    finally:
        scene.teardown()
    assert rec.errors == [] and rec.counts == {"acquire": 1, "compute": 1, "release": 1}
    ref = julia_reference(W, H, 3)
    # float32 kernel vs float64 reference: a pixel whose orbit escapes right at |z| = 2 may count
    # one iteration more or less; at most 2 % of pixels may differ by more than 1 LSB.
    frac, _ = _mismatch(tex, ref)
    assert frac < 0.02, frac
    frac_screen, _ = _mismatch(shown, ref)
    assert frac_screen < 0.02, frac_screen
    assert np.array_equal(shown, tex)  # the quad shows the texture unchanged (nearest, 1:1, row 0 on top)
    assert len(np.unique(ref[..., 0])) > 5  # the reference itself is not flat


def test_reference_animates():
    assert not np.array_equal(julia_reference(64, 64, 0), julia_reference(64, 64, 50))


def test_buffer_kernel_matches_image_kernel(host_copy):
    """julia_buffer (external_memory without image-from-buffer) writes what write_imagef writes."""
    import pyopencl as cl


    w, h, pitch_px = 70, 50, 80
    prog, lanes = julia_program(host_copy.context, host_copy.device)
    q = host_copy.queue
    img = cl.create_image(host_copy.context, cl.mem_flags.WRITE_ONLY,
                          cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.UNORM_INT8), shape=(w, h))
    buf = cl.Buffer(host_copy.context, cl.mem_flags.WRITE_ONLY, pitch_px * h * 4)
    cr, ci = np.float32(0.3), np.float32(-0.6)
    launch = julia_global_size(w, h, lanes)
    prog.kernel("julia")(q, launch, None, img, cr, ci)
    prog.kernel("julia_buffer")(q, launch, None, buf, np.int32(w), np.int32(h), np.int32(pitch_px), cr, ci)
    a = np.empty((h, w, 4), np.uint8)
    cl.enqueue_copy(q, a, img, origin=(0, 0), region=(w, h))
    b = np.empty((h, pitch_px, 4), np.uint8)
    cl.enqueue_copy(q, b, buf)
    prog.release()
    assert a.std() > 1 and np.array_equal(a, b[:, :w])


@pytest.mark.parametrize("size", [(70, 50), (33, 17), (16, 3)])
def test_every_lane_count_writes_the_same_texels(host_copy, size):
    """kernels/julia.cl with 4, 8 or 16 pixels per work-item writes exactly the texels of one
    work-item per pixel (JULIA_LANES=1), image and buffer kernels alike, also where the width is
    not a multiple of the lanes (the last lanes of a row write nothing: the padding stays)."""
    import pyopencl as cl

    from app.cl.programs import KernelProgram
    from app.scenes.image import julia_constant

    w, h = size
    q, ctx = host_copy.queue, host_copy.context
    fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.UNORM_INT8)
    shots = {}
    for lanes in (1, 4, 8, 16):
        prog = KernelProgram(ctx, "julia.cl", options=[f"-DJULIA_LANES={lanes}"])
        img = cl.create_image(ctx, cl.mem_flags.WRITE_ONLY, fmt, shape=(w, h))
        buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, (w + 3) * h * 4)
        got = []
        for frame in (0, 40, 333):
            cr, ci = (np.float32(c) for c in julia_constant(frame))
            cl.enqueue_fill_buffer(q, buf, np.uint8(0xAB), 0, (w + 3) * h * 4)
            prog.kernel("julia")(q, julia_global_size(w, h, lanes), None, img, cr, ci)
            prog.kernel("julia_buffer")(q, julia_global_size(w, h, lanes), None, buf, np.int32(w), np.int32(h),
                                        np.int32(w + 3), cr, ci)
            a, b = np.empty((h, w, 4), np.uint8), np.empty((h, w + 3, 4), np.uint8)
            cl.enqueue_copy(q, a, img, origin=(0, 0), region=(w, h))
            cl.enqueue_copy(q, b, buf, is_blocking=True)
            assert np.all(b[:, w:] == 0xAB)  # nothing written past the width
            assert np.array_equal(a, b[:, :w])
            got.append(a)
        shots[lanes] = got
        img.release()
        buf.release()
        prog.release()
    for lanes, got in shots.items():
        assert all(np.array_equal(x, y) for x, y in zip(got, shots[1])), lanes
    off = np.abs(shots[1][1].astype(int) - julia_reference(w, h, 40)).max(axis=-1) > 1
    assert off.mean() < 0.02 and shots[1][1].std() > 1


# -- the buffer-texture display path (external_memory's zero-copy quad), on a plain GL buffer ------
PW, PH, PITCH_PX = 200, 160, 256  # rows 256 texels apart: 56 texels of padding the quad must skip


def _pitched_pattern() -> tuple[np.ndarray, np.ndarray]:
    """An RGBA8 image whose every channel tells x and y apart, and its pitched bytes (padding 0xAB)."""
    y, x = np.mgrid[0:PH, 0:PW]
    image = np.stack([x % 256, y, (x * 7 + y * 13) % 256, 255 - (x + 2 * y) % 200], -1).astype(np.uint8)
    padded = np.full((PH, PITCH_PX, 4), 0xAB, np.uint8)
    padded[:, :PW] = image
    return image, padded


def _draw_buffer_texture(surface, viewport=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Draw the pattern through GlBufferTexture + BufferTextureQuad into ``surface`` and, the same
    pattern, through GlTexture + TexturedQuad; returns (image, buffer-texture screen, 2D-texture
    screen)."""
    from OpenGL import GL

    from app.gl.objects import GlBuffer, GlBufferTexture, GlTexture
    from app.gl.quad import BufferTextureQuad, TexturedQuad

    image, padded = _pitched_pattern()
    buf = GlBuffer("test.pitched", padded.nbytes, data=padded)
    btex = GlBufferTexture("test.pitched.tex", buf, PW, PH, PITCH_PX * 4)
    tex = GlTexture("test.pattern", PW, PH)
    tex.upload(image)
    bquad, quad = BufferTextureQuad("test buffer quad"), TexturedQuad("test quad")
    shots = []
    try:
        for draw in (lambda: bquad.draw(btex), lambda: quad.draw(tex.name)):
            assert surface.bind_target()
            if viewport is not None:
                GL.glViewport(*viewport)
            GL.glDisable(GL.GL_BLEND)
            GL.glClearColor(0.0, 0.0, 0.0, 1.0)  # the quad clears nothing: what it leaves is this black
            GL.glClear(GL.GL_COLOR_BUFFER_BIT)
            draw()
            shots.append(surface.read_pixels())
        assert np.array_equal(btex.read(), image)  # read() undoes the pitch
    finally:
        for thing in (bquad, quad, btex, tex, buf):  # the buffer texture before its buffer
            thing.release()
        btex.release()  # idempotent
    return image, shots[0], shots[1]


def test_buffer_texture_quad_draws_pitched_buffer_exactly(gl):
    """Texel (x, y) at y * 256 + x, row 0 on top, drawn 1:1 into the top-left 200x160 of the
    256x256 surface: the pixels equal the pattern exactly (0 LSB: texelFetch does no filtering and
    RGBA8 -> float -> RGBA8 is exact), and the rest of the surface keeps the black it was cleared to
    (the quad draws inside its viewport only)."""
    from app.diagnostics import live

    before = live.snapshot()
    _, sh = gl.framebuffer_size
    image, shown, via_texture = _draw_buffer_texture(gl, viewport=(0, sh - PH, PW, PH))
    assert np.array_equal(shown[:PH, :PW], image)
    assert np.all(shown[PH:] == (0, 0, 0, 255)) and np.all(shown[:, PW:] == (0, 0, 0, 255))
    assert np.array_equal(shown, via_texture)  # and what the 2D-texture path shows
    assert live.snapshot() == before  # every GL object released


def test_buffer_texture_quad_scales_like_the_texture_path(gl):
    """200x160 stretched over 256x256: the buffer-texture quad picks the texel GL_NEAREST picks
    (0 LSB against TexturedQuad on a 2D texture of the same pattern)."""
    image, shown, via_texture = _draw_buffer_texture(gl)
    assert len(np.unique(shown.reshape(-1, 4), axis=0)) > 1000  # the pattern, not a flat colour
    assert not np.any(np.all(shown == (0xAB, 0xAB, 0xAB, 0xAB), axis=-1))  # no padding texel shown
    assert np.array_equal(shown, via_texture)


def test_display_path_falls_back_with_a_reason(gl):
    """external_memory's choice (display_path) and GlBufferTexture's refusal, on GL's real limit."""
    from OpenGL import GL

    from app.diagnostics import live
    from app.gl.objects import GlBuffer, GlBufferTexture, max_texture_buffer_texels
    from app.sharing.backends.external_memory import BUFFER_TEXTURE, display_path

    limit = max_texture_buffer_texels()
    assert limit >= 65536  # the GL 3.1 minimum

    def path(internal_format=GL.GL_RGBA8, texel=4, width=4096, height=4096, pitch=4096 * 4, asked=True):
        return display_path(internal_format, texel, width, height, pitch, asked=asked, max_texels=limit)

    if 4096 * 4096 <= limit:  # the bench's 64 MiB frame (llvmpipe and NVIDIA: 2^27 texels)
        assert path() == BUFFER_TEXTURE == "buffer texture"
    assert path(width=PW, height=PH, pitch=PITCH_PX * 4) == BUFFER_TEXTURE
    rows = limit // 1024 + 1  # one row more than the limit holds
    assert path(width=1024, height=rows, pitch=4096) == (
        f"copy into texture: {1024 * rows} texels exceed GL_MAX_TEXTURE_BUFFER_SIZE ({limit})")
    assert path(width=201, height=10, pitch=201 * 4 + 2) == (
        "copy into texture: row pitch 806 B is not a multiple of the 4-byte texel")
    assert path(width=201, height=10, pitch=200 * 4) == (
        "copy into texture: row pitch 800 B is shorter than a row of 201 texels (804 B)")
    assert path(internal_format=GL.GL_SRGB8_ALPHA8).startswith(
        "copy into texture: internal format 0x8C43 is not a buffer-texture format")
    assert path(internal_format=GL.GL_RGBA16F, texel=4) == (
        "copy into texture: GL_RGBA16F texels are 8 B but the image's are 4 B")
    assert path(internal_format=GL.GL_R16, texel=2, width=100, height=10, pitch=256) == BUFFER_TEXTURE
    assert path(asked=False) == "copy into texture: the caller samples a 2D texture"
    assert path(internal_format=GL.GL_RGBA8UI) == (  # a buffer-texture format, but not for a float sampler
        "copy into texture: GL_RGBA8UI texels are integers and the quad's samplerBuffer reads floats")

    # the object refuses the same way and makes nothing
    before = live.snapshot()
    buf = GlBuffer("test.odd", 806 * 10)
    try:
        with pytest.raises(ValueError, match="not a multiple of the 4-byte texel"):
            GlBufferTexture("test.odd.tex", buf, 201, 10, 806)
        with pytest.raises(ValueError, match="holds 8060 B, the image needs 16080 B"):
            GlBufferTexture("test.short.tex", buf, 201, 20, 804)
    finally:
        buf.release()
    assert live.snapshot() == before


def _plain_imports_backend():
    """external_memory with its imports stood in for (PoCL imports nothing, there is no Vulkan
    here): the "imported" memory is a plain GL buffer and a plain CL buffer, and the release copies
    CL's bytes into the GL buffer. What stays external_memory's own: create_texture (pitch, the
    display_path choice, the GL objects), gl_after_release, destroy, and the image scene on it."""
    import ctypes

    import pyopencl as cl
    from OpenGL import GL

    from app.sharing.backends.external_memory import ExternalMemory

    class NoMemoryObject:
        def release(self) -> None:
            return None

    class PlainImports(ExternalMemory):
        def _create_context(self):
            self.fds_closed, self.cl_took_fd, self._kept, self._pack_staging = 0, None, [], {}
            return cl.Context([self.device])

        def _import(self, label, nbytes):
            name = GL.GLuint()
            GL.glCreateBuffers(1, ctypes.byref(name))
            GL.glNamedBufferStorage(name.value, nbytes, None, GL.GL_DYNAMIC_STORAGE_BIT)
            return name.value, NoMemoryObject(), cl.Buffer(self.context, cl.mem_flags.READ_WRITE, nbytes)

        def _enqueue_acquire(self, queue, objects, wait_for):
            return cl.enqueue_marker(queue, wait_for=wait_for)

        def _enqueue_release(self, queue, objects, wait_for):
            for obj in objects:
                host = np.empty(obj.pitch * obj.gl.height, np.uint8)
                cl.enqueue_copy(queue, host, obj.handover_mem, wait_for=wait_for, is_blocking=True)
                GL.glNamedBufferSubData(obj.gl_memory, 0, host.nbytes, host)
            return cl.enqueue_marker(queue)

        def _close_extra(self) -> None:
            return None

    return PlainImports


@pytest.mark.parametrize("buffer_texture", [True, False])
def test_image_scene_display_paths(probe_env, surface, buffer_texture):
    """The image scene on external_memory's texture code: drawn by the quad it gets a buffer
    texture over the imported buffer (no 2D texture exists, gl_after_release copies nothing) and
    BufferTextureQuad draws it; where the caller samples a 2D texture, the copy path and TexturedQuad.
    Both draw the reference's pixels (the same 2 % / 1 LSB bound as the texture test above), and
    the screen equals the GL object's texels exactly."""
    from app.diagnostics import live
    from app.gl.objects import GlBufferTexture, GlTexture
    from app.gl.quad import BufferTextureQuad, TexturedQuad

    plain = _plain_imports_backend()

    class Backend(plain):
        def _new_texture(self, label, width, height, fmt, access, drawn_by_quad):
            return super()._new_texture(label, width, height, fmt, access, drawn_by_quad and buffer_texture)

    backend_cls = Backend
    before = live.snapshot()
    backend = backend_cls(probe_env, strict=True)
    scene = ImageScene(RunConfig(scene="image", size=(W, H)))
    sched = None
    try:
        scene.build(backend, surface.framebuffer_size)
        sched = FrameScheduler(backend, scene, FinishSync(backend), strict=True)
        target = lambda: surface.framebuffer_size if surface.bind_target() else None  # noqa: E731
        for frame in range(4):
            rec = sched.run_frame(frame, target)
        sched.finish()
        obj = scene.texture
        path, gl_kind, quads = obj.display_path, type(obj.gl), scene.quad.kinds
        textures = live.count("gl_texture", owner="external_memory")
        lifetime_paths = backend.memory_tab()["display_paths"]
        described = scene.describe()
        tex = obj.gl.read()
        shown = surface.read_pixels()
    finally:
        if sched is not None:
            sched.close()
        scene.teardown()
        backend.close()
    assert rec.errors == [], rec.errors
    if buffer_texture:
        assert path == "buffer texture" and gl_kind is GlBufferTexture and quads == [BufferTextureQuad.__name__]
        assert textures == 0 and described.endswith("buffer texture")
    else:
        assert path == "copy into texture: the caller samples a 2D texture"
        assert gl_kind is GlTexture and quads == [TexturedQuad.__name__] and textures == 1
    assert lifetime_paths == {"image.julia": path}
    ref = julia_reference(W, H, 3)
    frac, _ = _mismatch(shown, ref)
    assert frac < 0.02, frac
    assert np.array_equal(shown, tex)
    assert live.snapshot() == before  # teardown released every GL and CL object it made
