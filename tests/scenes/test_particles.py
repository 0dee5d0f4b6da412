"""The particle kernel, run through host_copy's acquire/release, against a float64 numpy reference;
the drawn points against a numpy rasterization of them."""
from __future__ import annotations

import numpy as np
import pyopencl as cl

from app.config import RunConfig
from app.scenes.particles import GUARD, ParticlesScene, initial_state, reference_steps, view_projection
from app.schedule.scheduler import FrameScheduler
from app.sharing.sync import FinishSync

N, STEPS, SEED = 4096, 250, 3
# float32 against float64 over up to 200 steps between resets: |error| of a position stays below
# ~1e-4; 5e-4 is the stated tolerance. Life is compared to 1e-6 (both float32 counters).
POS_ATOL = 5e-4
LIFE_ATOL = 1e-6


def test_initial_state_follows_workloads():
    s = initial_state(1000, SEED)
    p, v = s["position"], s["velocity"]
    assert np.all(p[:, 2] == 0) and np.all(p[:, 3] == 1)
    np.testing.assert_allclose(v[:, :2], 2 * p[:, :2], rtol=1e-6)
    assert np.all(v[:, 2] == 3) and np.all((0 <= v[:, 3]) & (v[:, 3] < 1))
    assert np.all(s["color"] == 1)
    # the ring: x = sin(2.001 pi i/N)(0.2 + k1), y = cos(...)(0.2 + k2)
    i = np.arange(1000)
    rx = p[1:, 0] / np.sin(2.001 * np.pi * i[1:] / 1000)
    assert np.ptp(rx[np.abs(np.sin(2.001 * np.pi * i[1:] / 1000)) > 0.1]) < 1e-5


def test_the_seeded_draws_are_uniform_and_fixed_by_the_seed():
    """app/scenes/particles.uniform: the same seed gives the same draws, another seed others; 100,000
    draws lie in [0, 1) with each tenth of the range holding 10 % of them within 0.3 % (about 3
    standard deviations of a binomial count)."""
    from app.scenes.particles import uniform

    u = uniform(SEED, 100_000)
    assert np.array_equal(u, uniform(SEED, 100_000)) and not np.array_equal(u, uniform(SEED + 1, 100_000))
    assert u.min() >= 0 and u.max() < 1
    counts = np.histogram(u, bins=10, range=(0, 1))[0] / u.size
    assert np.all(np.abs(counts - 0.1) < 0.003), counts


def test_kernel_matches_reference(host_copy):
    scene = ParticlesScene(RunConfig(size=N, seed=SEED))
    scene.build(host_copy, (64, 64))
    try:
        q = host_copy.queue
        for frame in range(STEPS):
            with host_copy.acquired(q, scene.shared) as events:
                events.append(scene.compute(q, frame, [e for e in events if e is not None] or None))
        q.finish()
        pos = scene.position.gl.read().reshape(-1, 4)
        col = scene.color.gl.read().reshape(-1, 4)
    finally:
        scene.teardown()
    ref = reference_steps(initial_state(N, SEED), STEPS)
    err = np.abs(pos - ref["position"]).max()
    assert err < POS_ATOL, err
    np.testing.assert_allclose(col[:, 3], ref["color"][:, 3], atol=LIFE_ATOL)
    assert np.all(col[:, :3] == 1)
    # something moved: the reference is not the start state
    assert np.abs(ref["position"] - initial_state(N, SEED)["position"]).max() > 0.1


def test_host_copy_copies_gl_to_cl_only_when_gl_changed(host_copy):
    scene = ParticlesScene(RunConfig(size=256, seed=1))
    scene.build(host_copy, (64, 64))
    try:
        q = host_copy.queue
        before = host_copy.bytes_copied
        ev_copied = host_copy.acquire(q, scene.shared)   # GL uploaded the start state: copied to CL
        host_copy.release(q, scene.shared)   # CL -> GL
        first = host_copy.bytes_copied - before
        ev_none = host_copy.acquire(q, scene.shared)   # GL did not write since: nothing to copy
        host_copy.release(q, scene.shared)
        second = host_copy.bytes_copied - before - first
        gate = cl.UserEvent(host_copy.context)
        ev_ordered = host_copy.acquire(q, scene.shared, [gate])  # nothing to copy, but a wait to keep
        q.flush()
        waited = ev_ordered.command_execution_status
        gate.set_status(cl.command_execution_status.COMPLETE)
        host_copy.release(q, scene.shared, [ev_ordered])  # blocking copies: after the gate opened
        q.finish()
        owners = {o.label: host_copy.tracker.owner_of(o) for o in scene.shared}
    finally:
        scene.teardown()
    assert first == 2 * 2 * 256 * 16  # acquire + release of two float4 buffers
    assert second == 2 * 256 * 16     # release only
    assert isinstance(ev_copied, cl.Event)
    assert ev_none is None  # no CL command when there is nothing to copy and nothing to wait for
    # with a wait list the acquire must still order what follows after it: a command on that list,
    # not complete while the list is not (NVIDIA names its marker's command type 0x4003, not
    # CL_COMMAND_MARKER: the order is what is checked)
    assert isinstance(ev_ordered, cl.Event)
    assert waited != cl.command_execution_status.COMPLETE
    assert ev_ordered.command_execution_status == cl.command_execution_status.COMPLETE
    assert set(owners.values()) == {"gl"}  # every hand-over was tracked, CL command or not


def points_picture(pos: np.ndarray, col: np.ndarray, size: tuple[int, int], mvp: np.ndarray, guard: int = 1,
                   clear=(0.02, 0.02, 0.05)) -> tuple[np.ndarray, np.ndarray]:
    """The fountain's picture in numpy, top row first: each point whose centre is inside the clip
    volume widened ``guard`` times in x and y (the scene's guard band: app/scenes/particles.py) a 2x2
    square (GL 4.6 core, 14.4: a point sprite covers the pixels whose centres lie in the square of
    its size around it; the centre snapped to 1/256 pixel as llvmpipe does, left and bottom edges
    in, right and top out), the part of it on the picture alpha-blended in draw order over the clear
    colour, each blend rounded to 8 bits. Returns the RGB picture and how many points cover each
    pixel."""
    w, h = size
    m = np.asarray(mvp, np.float64).reshape(4, 4).T  # column-major, as glUniformMatrix4fv takes it
    clip = np.c_[pos[:, :3].astype(np.float64), np.ones(len(pos))] @ m.T
    inside = np.all(np.abs(clip[:, :3]) <= clip[:, 3:4] * (guard, guard, 1), axis=1)
    ndc = clip[:, :2] / clip[:, 3:4]
    corner = np.rint(((ndc + 1) * (w / 2, h / 2) - 0.5) * 256).astype(np.int64) - 256  # 1/256 px
    img = np.empty((h, w, 3), np.float64)
    img[:] = np.round(np.array(clear) * 255)
    cover = np.zeros((h, w), np.int32)
    for k in np.nonzero(inside)[0]:
        xs, ys = (np.arange(-(-c // 256), -(-(c + 512) // 256)) for c in corner[k])
        xs, ys = xs[(xs >= 0) & (xs < w)], ys[(ys >= 0) & (ys < h)]
        a = np.float32(col[k, 3])
        sl = np.ix_(ys, xs)
        img[sl] = np.round(col[k, :3] * a * 255 + img[sl] * (1 - a))
        cover[sl] += 1
    return img[::-1], cover[::-1]


def test_the_drawn_points_are_the_numpy_rasterization(host_copy, gl):
    """60 frames of 4,096 particles, then the screen against ``points_picture`` of the buffers GL
    drew from, through the scene's guard band: every pixel within 2 of 255 per channel (the blends'
    rounding: up to 14 points overlap a pixel here). The colour is passed flat (a point has one
    vertex), so the picture is the same as with a smooth one; a wrong size, place, colour or blend
    fails, and so does a point off the picture left out where part of it is on it (the band), or
    drawn where its centre is beyond the band."""
    scene = ParticlesScene(RunConfig(size=N, seed=SEED))
    scene.build(host_copy, gl.framebuffer_size)
    sched = FrameScheduler(host_copy, scene, FinishSync(host_copy), strict=True)
    try:
        for frame in range(60):
            assert sched.run_frame(frame, lambda: gl.framebuffer_size if gl.bind_target() else None).errors == []
        sched.finish()
        shot = gl.read_pixels()[..., :3].astype(np.int64)
        pos, col = scene.position.gl.read().reshape(-1, 4), scene.color.gl.read().reshape(-1, 4)
    finally:
        sched.close()
        scene.teardown()
    want, cover = points_picture(pos, col, gl.framebuffer_size, view_projection(*gl.framebuffer_size), GUARD)
    assert (cover > 0).sum() > 1000  # the fountain is in view, not a few stray points
    diff = np.abs(shot - want).max(axis=-1)
    assert diff.max() <= 2, (diff.max(), np.argwhere(diff > 2)[:5])
    # the band shows: points whose centres are off the picture cover some of its edge pixels
    culled, _ = points_picture(pos, col, gl.framebuffer_size, view_projection(*gl.framebuffer_size), 1)
    assert (np.abs(culled - want).max(axis=-1) > 2).sum() > 0


def test_the_guard_band_maps_the_picture_onto_the_same_pixels():
    """``guard_viewport`` and ``view_projection(guard=...)`` together put every point on the window
    pixel the plain viewport and projection put it on (within 1e-4 pixel: the matrices are float32, and
    llvmpipe snaps to 1/256 pixel), and the band's
    viewport is whole pixels, centred on the scene's."""
    from app.scenes.particles import guard_viewport

    rng = np.random.default_rng(5)
    pts = np.c_[rng.uniform(-3, 3, (500, 2)), rng.uniform(-2, 0.5, 500), np.ones(500)]
    for viewport in ((0, 0, 800, 600), (456, 17, 640, 400)):
        x, y, w, h = viewport
        gx, gy, gw, gh = guard_viewport(viewport, GUARD)
        assert (gw, gh) == (GUARD * w, GUARD * h) and (gx + gw / 2, gy + gh / 2) == (x + w / 2, y + h / 2)

        def window(mvp, vp):
            clip = pts @ np.asarray(mvp, np.float64).reshape(4, 4)  # row vectors: the transpose
            ndc = clip[:, :2] / clip[:, 3:4]
            return (ndc + 1) / 2 * vp[2:] + vp[:2]

        plain = window(view_projection(w, h), np.array(viewport, float))
        banded = window(view_projection(w, h, guard=GUARD), np.array((gx, gy, gw, gh), float))
        np.testing.assert_allclose(banded, plain, rtol=0, atol=1e-4)


def test_the_scene_leaves_the_viewport_and_scissor_as_it_found_them(host_copy, gl):
    """The band's viewport and scissor are the draw's alone: what the session set before the scene
    (beside the panel: the scene's rectangle and its scissor) is there again after it."""
    from OpenGL import GL

    scene = ParticlesScene(RunConfig(size=256, seed=SEED))
    scene.build(host_copy, gl.framebuffer_size)
    try:
        for scissor in (False, True):
            gl.bind_target()
            GL.glViewport(10, 20, 100, 80)
            GL.glScissor(10, 20, 100, 80)
            (GL.glEnable if scissor else GL.glDisable)(GL.GL_SCISSOR_TEST)
            scene.render((100, 80))
            assert tuple(GL.glGetIntegerv(GL.GL_VIEWPORT)) == (10, 20, 100, 80)
            assert bool(GL.glIsEnabled(GL.GL_SCISSOR_TEST)) is scissor
            assert tuple(GL.glGetIntegerv(GL.GL_SCISSOR_BOX)) == (10, 20, 100, 80)
        GL.glDisable(GL.GL_SCISSOR_TEST)
        gl.bind_target()
    finally:
        scene.teardown()
