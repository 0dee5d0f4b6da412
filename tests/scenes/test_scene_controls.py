"""The controls users expect, scene by scene: the orbit camera (particles), round points, steering
the Julia constant, local work sizes (checked against the device, kernels still exact), the
commands and keys of the controls table, and the run options on the command line."""
from __future__ import annotations

import math

import numpy as np
import pytest

from app.cl.worksize import launch_sizes, local_shape
from app.config import RunConfig, parse_local_size
from app.errors import UsageError
from app.scenes.camera import OrbitCamera
from app.scenes.image import ImageScene, julia_constant, julia_reference
from app.scenes.particles import ParticlesScene, initial_state, reference_steps, view_projection
from app.schedule.scheduler import FrameScheduler
from app.sharing.sync import FinishSync


def _target(surface):
    return lambda: surface.framebuffer_size if surface.bind_target() else None


# -- pure parts ---------------------------------------------------------------------------------
def test_local_size_parsing_and_launch_rounding():
    assert parse_local_size("16x8") == (16, 8) and parse_local_size("64") == (64, 1)
    assert parse_local_size("driver") is None and parse_local_size(None) is None
    for bad in ("16x", "ax2", "0x4", "-1"):
        with pytest.raises(UsageError):
            parse_local_size(bad)
    assert launch_sizes((200, 150), (16, 16)) == ((208, 160), (16, 16))
    assert launch_sizes((1000,), (64,)) == ((1024,), (64,))
    assert launch_sizes((200, 150), None) == ((200, 150), None)
    assert local_shape((16, 4), 1) == (64,) and local_shape((16, 4), 2) == (16, 4) and local_shape(None, 2) is None


def test_orbit_camera_clamps_and_resets():
    cam = OrbitCamera(yaw=0.0, pitch=math.radians(28), distance=5.0, up="z")
    start = cam.view().copy()
    cam.drag(100, 0)
    assert cam.yaw == pytest.approx(1.0) and not np.allclose(cam.view(), start)
    cam.drag(0, 10_000)  # far past the top: clamped below 90 degrees
    assert cam.pitch == pytest.approx(math.radians(85))
    cam.zoom(100)
    assert cam.distance == cam.distance_range[0]
    cam.zoom(-1000)
    assert cam.distance == cam.distance_range[1]
    v = cam.version
    cam.reset()
    assert np.allclose(cam.view(), start) and cam.version == v + 1
    cam.drag(0, 0)
    cam.zoom(0)
    assert cam.version == v + 1  # nothing moved: nothing to render again


def test_particles_default_view_is_the_classic_samples():
    """pyopencl's gl_particle_animation draws with gluPerspective(60, w/h, 0.1, 1000) and
    glTranslatef(0, 0, -2.5) (no rotation at the start): the default view is that matrix."""
    f = 1.0 / math.tan(math.radians(60) / 2)
    near, far = 0.1, 1000.0
    proj = np.array([[f / (4 / 3), 0, 0, 0], [0, f, 0, 0],
                     [0, 0, (far + near) / (near - far), 2 * far * near / (near - far)], [0, 0, -1, 0]])
    trans = np.eye(4)
    trans[:3, 3] = (0, 0, -2.5)
    want = np.ascontiguousarray((proj @ trans).T, np.float32)
    assert np.allclose(view_projection(800, 600), want, atol=1e-6)
    assert np.allclose(view_projection(800, 600, view="sample"), want, atol=1e-6)
    # a point on the fountain's axis lands at the centre of the picture, one above the ground nearer
    clip = want.T.astype(np.float64) @ np.array([0.0, 0.0, 0.4, 1.0])
    assert np.allclose(clip[:2] / clip[3], 0.0, atol=1e-6)


def test_particles_side_view_is_the_fixed_camera_the_scene_had():
    """``--view side``: side on, 62 degrees of tilt, 5 units back, 55 degrees (the earlier default)."""
    a = math.radians(-62)
    rot = np.array([[1, 0, 0, 0], [0, math.cos(a), -math.sin(a), 0], [0, math.sin(a), math.cos(a), 0], [0, 0, 0, 1]])
    trans = np.eye(4)
    trans[:3, 3] = (0, -0.35, -5.0)
    f = 1.0 / math.tan(math.radians(55) / 2)
    proj = np.array([[f / (4 / 3), 0, 0, 0], [0, f, 0, 0], [0, 0, -100.1 / 99.9, -20 / 99.9], [0, 0, -1, 0]])
    want = np.ascontiguousarray((proj @ trans @ rot).T, np.float32)
    assert np.allclose(view_projection(800, 600, view="side"), want, atol=1e-6)


# -- particles ------------------------------------------------------------------------------------
def _particles_frames(backend, surface, cfg, frames, between=None):
    scene = ParticlesScene(cfg)
    scene.build(backend, surface.framebuffer_size)
    sched = FrameScheduler(backend, scene, FinishSync(backend), strict=True)
    shots = []
    try:
        for frame in range(frames):
            if between is not None:
                between(frame, scene)
            rec = sched.run_frame(frame, _target(surface))
            assert rec.errors == []
            shots.append(surface.read_pixels())
        sched.finish()
        pos = scene.position.gl.read().reshape(-1, 4)
    finally:
        sched.close()
        scene.teardown()
    return shots, pos


def test_particles_local_size_keeps_the_kernel_exact(host_copy, gl):
    n, seed = 1000, 4  # not a multiple of 64: the rounded-up work-items past the count do nothing
    _, pos = _particles_frames(host_copy, gl, RunConfig(size=n, seed=seed, local_size=(64, 1)), 30)
    ref = reference_steps(initial_state(n, seed), 30)
    assert np.abs(pos - ref["position"]).max() < 5e-4


def test_round_points_and_orbit_change_only_the_picture(host_copy, gl):
    cfg = RunConfig(size=4096, seed=2)
    square, pos_square = _particles_frames(host_copy, gl, cfg, 3)
    rounded, pos_round = _particles_frames(host_copy, gl, cfg.with_(round_points=True), 3)
    orbited, pos_orbit = _particles_frames(host_copy, gl, cfg, 3,
                                           between=lambda f, s: s.orbit(150, -40) if f == 2 else None)
    assert np.array_equal(pos_square, pos_round) and np.array_equal(pos_square, pos_orbit)  # the data is the same
    assert not np.array_equal(square[-1], rounded[-1])
    assert not np.array_equal(square[-1], orbited[-1])
    assert np.array_equal(square[1], orbited[1])  # before the drag: the same view


def test_view_changes_only_the_picture_and_says_no_to_an_unknown_one(host_copy, gl):
    cfg = RunConfig(size=4096, seed=2)
    sample, pos_sample = _particles_frames(host_copy, gl, cfg, 3)
    switched, pos_switched = _particles_frames(host_copy, gl, cfg, 3,
                                               between=lambda f, s: s.set_view("side") if f == 2 else None)
    side, _ = _particles_frames(host_copy, gl, cfg.with_(view="side"), 3)
    assert np.array_equal(pos_sample, pos_switched)  # the data is the same
    assert np.array_equal(sample[1], switched[1])  # before the switch: the same view
    assert not np.array_equal(sample[-1], switched[-1]) and np.array_equal(switched[-1], side[-1])
    scene = ParticlesScene(cfg)
    with pytest.raises(UsageError, match="choose one of sample, side"):
        scene.set_view("top")


def test_round_point_shader_draws_a_smooth_disc(gl):
    """One 32-pixel point at the centre: opaque inside the disc, nothing in the sprite's corners,
    partly blended on the rim."""
    from OpenGL import GL

    from app.gl.objects import GlBuffer, GlVertexArray
    from app.gl.shaders import Program

    prog = Program("test round", "particles.vert", "particles_round.frag")
    pos = GlBuffer("test.pos", 16, data=np.float32([0, 0, 0, 1]))
    col = GlBuffer("test.col", 16, data=np.float32([1, 1, 1, 1]))
    vao = GlVertexArray("test.vao")
    vao.attribute(0, pos, 4)
    vao.attribute(1, col, 4)
    try:
        assert gl.bind_target()
        GL.glClearColor(0, 0, 0, 1)
        GL.glClear(GL.GL_COLOR_BUFFER_BIT)
        GL.glEnable(GL.GL_BLEND)
        GL.glBlendFunc(GL.GL_SRC_ALPHA, GL.GL_ONE_MINUS_SRC_ALPHA)
        GL.glPointSize(32.0)  # the particles' point size is GL state (the scene sets it the same way)
        prog.use()
        GL.glUniformMatrix4fv(prog.uniform("mvp"), 1, GL.GL_FALSE, np.eye(4, dtype=np.float32))
        GL.glBindVertexArray(vao.name)
        GL.glDrawArrays(GL.GL_POINTS, 0, 1)
        GL.glBindVertexArray(0)
        GL.glUseProgram(0)
        GL.glDisable(GL.GL_BLEND)
        GL.glPointSize(1.0)
        px = gl.read_pixels()[..., 0].astype(int)
    finally:
        for thing in (vao, pos, col, prog):
            thing.release()
    w, h = gl.framebuffer_size
    cy, cx = h // 2, w // 2
    sprite = px[cy - 16:cy + 16, cx - 16:cx + 16]
    assert sprite[12:20, 12:20].min() == 255  # the middle is the colour
    for corner in (sprite[:4, :4], sprite[:4, -4:], sprite[-4:, :4], sprite[-4:, -4:]):
        assert corner.max() == 0  # outside the disc: discarded
    assert ((sprite > 0) & (sprite < 255)).sum() > 20  # the rim fades
    assert (px > 0).sum() == (sprite > 0).sum()  # nothing outside the sprite


# -- image: the Julia constant --------------------------------------------------------------------
def _image_frames(backend, surface, frames, between, cfg=None):
    w, h = 200, 150
    scene = ImageScene(cfg or RunConfig(scene="image", size=(w, h)))
    scene.build(backend, surface.framebuffer_size)
    sched = FrameScheduler(backend, scene, FinishSync(backend), strict=True)
    out = []
    try:
        for frame in range(frames):
            between(frame, scene)
            sched.run_frame(frame, _target(surface))
            out.append(scene.texture.gl.read())
        sched.finish()
    finally:
        sched.close()
        scene.teardown()
    return out


def _mismatch(a, b) -> float:
    return float((np.abs(a.astype(int) - b.astype(int)).max(-1) > 1).mean())


def test_steering_the_julia_constant(host_copy, gl):
    seen = {}

    def between(frame, scene):
        if frame == 2:
            seen["start"] = scene.steer(0.05, -0.02)
        if frame == 3:
            seen["held"] = scene.steer(0.0, 0.0)
        if frame == 4:
            scene.set_constant(None)

    textures = _image_frames(host_copy, gl, 5, between)
    c1 = julia_constant(1)
    assert seen["start"] == pytest.approx((c1[0] + 0.05, c1[1] - 0.02))  # from where the animation was
    assert seen["held"] == seen["start"]  # steered: it stays, frame after frame
    assert _mismatch(textures[1], julia_reference(200, 150, 1)) < 0.02
    assert _mismatch(textures[2], julia_reference(200, 150, 2, c=seen["start"])) < 0.02
    assert _mismatch(textures[3], julia_reference(200, 150, 3, c=seen["start"])) < 0.02
    assert _mismatch(textures[4], julia_reference(200, 150, 4)) < 0.02  # animated again
    assert not np.array_equal(julia_reference(200, 150, 2), julia_reference(200, 150, 2, c=seen["start"]))


def test_image_local_size_that_does_not_divide_the_image(host_copy, gl):
    textures = _image_frames(host_copy, gl, 2, lambda f, s: None,
                             cfg=RunConfig(scene="image", size=(200, 150), local_size=(16, 16)))
    assert _mismatch(textures[1], julia_reference(200, 150, 1)) < 0.02  # 208x160 work-items, 200x150 written


# -- the controls table in a run ------------------------------------------------------------------
def test_keys_and_commands_in_a_run(gl):
    from app.run import Run
    from app.session.controls import BY_KEY, COMMANDS
    from app.window import MouseEvent

    keys = [k for c in COMMANDS for k in c.keys]
    assert len(keys) == len(set(keys))  # one command per key
    for key in ("c", "r", "i", "j", "k", "l", "u", "e", "-", "=", "5"):
        assert not BY_KEY[key].paused_only  # they act while running (right and n step while paused)
    cfg = RunConfig(scene="image", size=(128, 96), headless=True, overlay=False, frames=10_000)
    with Run(cfg, surface=gl) as rt:
        rt.tick()
        c = rt.controls
        assert c.key("l").startswith("Julia constant c = ")
        steered = rt.session.scene.steered_c
        assert c.key("i") and rt.session.scene.steered_c == pytest.approx((steered[0], steered[1] + 0.01))
        assert c.key("u") == "Julia constant: animated" and rt.session.scene.steered_c is None
        assert c.run("set_julia_c", value=(0.3, -0.5)) == "Julia constant c = +0.300 -0.500i"
        assert c.key("r") == "round points: the particles scene only (this is image; s switches)"
        assert c.key("c").startswith("camera: the image scene has no camera")
        c.mouse(MouseEvent("drag", 10, 10))  # no camera here: nothing happens, no status
        assert c.run("set_local_size", value="16x16") == "local work size: 16x16"
        assert c.run("set_local_size", value="driver") == "local work size: the driver chooses"
        assert "refused" in c.run("set_local_size", value="bogus")
        options = {o.name: o for o in rt.session.scene.options()}
        assert "+0.300 -0.500i (steered)" in options["julia_c"].value and options["local_size"].value == "driver"
        assert rt.tick().errors == []
        assert rt.session.switch(scene="particles")
        assert c.key("r") == "particles: round points" and rt.session.cfg.round_points
        assert rt.session.scene.options()[0].value is True
        version = rt.session.scene.camera.version
        c.mouse(MouseEvent("drag", 30, 5))
        c.mouse(MouseEvent("scroll", 0, -1))
        assert rt.session.scene.camera.version == version + 2
        assert rt.tick().errors == []
        assert "round" in rt.session.view().setup.scene_title


def test_cli_takes_the_new_run_options(glshare, tmp_path):
    shot = tmp_path / "p.png"
    res = glshare("run", "--headless", "--frames", "3", "--size", "2048", "--round-points", "--local-size", "32",
                  "--no-overlay", "--screenshot", str(shot), "--report", str(tmp_path / "p.json"))
    assert res.returncode == 0, res.stderr
    assert shot.exists()
    bad = glshare("run", "--headless", "--frames", "3", "--local-size", "16y16")
    assert bad.returncode == 2 and "--local-size takes WxH" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


# -- the panel's rows of the scenes' options ------------------------------------------------------
def test_the_panel_rows_carry_each_scenes_options_and_drive_them(gl):
    """The panel model has a row for every option of each scene, with the scene's values; a command
    requested from a row, as the panel's checkbox, combo, slider or button requests it, changes
    the scene, what it renders, and the row."""
    from support import panel_snapshot

    from app.postprocess import reference
    from app.run import Run
    from app.window import MouseEvent

    def rows(rt):
        return {o.name: o for o in panel_snapshot(rt).controls.options}

    cfg = RunConfig(scene="postprocess", size=(256, 256), headless=True, frames=10_000, local_size=(4, 4))
    with Run(cfg, surface=gl) as rt:
        rt.tick()
        scene, controls = rt.session.scene, rt.controls
        r = rows(rt)
        assert list(r) == ["filter", "blur_radius", "camera", "local_size"]
        f, b, cam, ls = r["filter"], r["blur_radius"], r["camera"], r["local_size"]
        assert (f.kind, f.value, f.choices, f.command, f.keys) == ("choice", "sobel", ("sobel", "blur"), "set_filter",
                                                                  "e: next")
        assert (b.kind, b.value, b.low, b.high, b.command) == ("int", scene.radius, 0, 15, "set_blur_radius")
        assert (cam.kind, cam.command, cam.button) == ("text", "reset_camera", "reset") and "distance 6.50" in cam.value
        # a local size set elsewhere (--local-size 4x4) is shown, and offered, though not a preset
        assert (ls.kind, ls.value, ls.choices[0]) == ("size", "4x4", "4x4") and "driver" in ls.choices
        controls.request(f.command, value="blur")
        controls.request(b.command, value=5)
        rt.tick()
        assert (scene.filter, scene.radius) == ("blur", 5)
        rendered = scene.rendered.gl.read()  # what the next frame filters
        rt.tick()
        out = scene.out.gl.read()
        assert np.array_equal(out, reference.box_blur(rendered, 5))  # the frame is the radius-5 blur
        assert not np.array_equal(out, reference.box_blur(rendered, 2))
        r = rows(rt)
        assert (r["filter"].value, r["blur_radius"].value) == ("blur", 5)
        assert controls.run("set_blur_radius", value=99).startswith("blur radius refused:")
        assert controls.run("set_filter", value="sharpen").startswith("filter refused:")
        assert (scene.radius, scene.filter, rt.session.cfg.blur_radius, rt.session.cfg.filter) == (5, "blur", 5, "blur")
        controls.request(ls.command, value="8x8")
        controls.mouse(MouseEvent("drag", 40, -10))
        rt.tick()
        assert scene.local_size == (8, 8) and rows(rt)["local_size"].value == "8x8"
        assert rows(rt)["camera"].value != cam.value  # orbited
        controls.request(cam.command)  # the row's "reset" button
        rt.tick()
        assert rows(rt)["camera"].value == cam.value and rt.session.status == "camera reset"

        assert rt.session.switch(scene="particles")
        rt.tick()
        r = rows(rt)
        assert list(r) == ["round_points", "view", "camera", "local_size"]
        rp = r["round_points"]
        assert (rp.kind, rp.value, rp.command, rp.keys) == ("toggle", False, "set_round_points", "r")
        controls.request(rp.command, value=True)  # the checkbox
        rt.tick()
        assert rt.session.scene.round_points and rows(rt)["round_points"].value is True
        view = r["view"]
        assert (view.kind, view.value, view.choices, view.command) == ("choice", "sample", ("sample", "side"), "set_view")
        start = rows(rt)["camera"].value
        controls.request(view.command, value="side")  # the combo
        rt.tick()
        assert rt.session.scene.view == "side" and rows(rt)["view"].value == "side"
        assert rows(rt)["camera"].value != start and rt.session.cfg.view == "side"
        assert "from the side" in rt.session.status

        assert rt.session.switch(scene="image")
        rt.tick()
        r = rows(rt)
        assert list(r) == ["julia_c", "local_size"]
        jc = r["julia_c"]
        assert (jc.kind, jc.command, jc.button) == ("text", "julia_animate", "animate") and "(animated)" in jc.value
        assert "u: animate" in jc.keys
        controls.key("l")  # steered with a key
        rt.tick()
        assert "(steered)" in rows(rt)["julia_c"].value
        controls.request(jc.command)  # the row's "animate" button
        rt.tick()
        assert "(animated)" in rows(rt)["julia_c"].value and rt.session.scene.steered_c is None

        assert rt.session.switch(scene="yuv")
        rt.tick()
        colour = rows(rt)["colour"]
        assert (colour.kind, colour.command, colour.button) == ("text", "", "")  # read only: no button
        assert rt.session.history.loop_errors == [] and rt.ui.state.failures == 0


# -- the scenes' declared commands reach the keys and the panel --------------------------------------
def test_every_scene_declares_its_commands_and_the_table_takes_them():
    """The session's command table holds each scene's declared commands (its own keys, its handler),
    and no key twice."""
    from app.scenes import scene_classes
    from app.scenes.base import Scene
    from app.session.controls import BY_KEY, BY_NAME, CORE_COMMANDS

    declared = [(cls, d) for cls in (Scene, *scene_classes().values()) for d in cls.own_commands()]
    assert {d.name for _, d in declared} >= {"orbit", "reset_camera", "set_local_size", "toggle_round_points",
                                              "set_julia_c", "set_filter", "blur_more"}
    for cls, d in declared:
        assert BY_NAME[d.name].declared is d and BY_NAME[d.name].scene is cls, d.name
        assert all(BY_KEY[k] is BY_NAME[d.name] for k in d.keys), d.name
    assert not {c.name for c in CORE_COMMANDS} & {d.name for _, d in declared}
    assert ImageScene.commands()[:4] == Scene.own_commands()  # a scene answers its bases' commands too


def test_a_new_scenes_declared_commands_reach_the_keys_and_the_panel(monkeypatch):
    """A scene declared in one module: its command runs from its key on the running scene, keeps its
    option in the session's configuration, refuses a bad value with a status line, answers "only"
    in another scene; its option row names the command and shows the declared button."""
    from app.scenes import scene_classes
    from app.scenes.base import Scene, SceneOption, scene_command
    from app.session.controls import CORE_COMMANDS, Controls, scene_commands
    from app.ui.model import option_rows

    scene_classes()  # every scene imported (and registered) before the registry is copied
    monkeypatch.setattr(Scene, "registry", dict(Scene.registry))  # the throwaway scene registers here only

    class Spinner(Scene):
        name = "spinner"

        def __init__(self, cfg):
            super().__init__(cfg)
            self.turns = 0

        build = compute = render = teardown = lambda self, *a, **k: None

        def scene_options(self):
            return (SceneOption("turns", "turns", "text", str(self.turns), command="spin"),)

        def kept_options(self):
            return {**super().kept_options(), "frames": self.turns}  # any RunConfig field, for the test

        @scene_command("spin", "spinner: one more turn", keys=("F7",), what="spin", button="turn", keeps=("frames",))
        def spin_command(self, value=None) -> str:
            if value is not None and value < 0:
                raise UsageError("turns only go forward")
            self.turns += 1 if value is None else value
            return f"spinner: {self.turns} turns"

    class Session:
        def __init__(self, scene):
            self.scene, self.cfg, self.status, self.paused = scene, scene.cfg, "", False

    table = CORE_COMMANDS + scene_commands([Spinner])
    spinner = Session(Spinner(RunConfig(frames=1)))
    c = Controls(spinner, commands=table)
    assert c.key("F7") == "spinner: 1 turns" and spinner.cfg.frames == 1 and spinner.status == "spinner: 1 turns"
    assert c.run("spin", value=4) == "spinner: 5 turns" and spinner.cfg.frames == 5
    assert c.run("spin", value=-1) == "spin refused: turns only go forward" and spinner.cfg.frames == 5
    assert c.run("reset_camera").startswith("camera: the spinner scene has no camera")  # Scene's own commands too
    other = Session(ImageScene(RunConfig(scene="image")))
    assert Controls(other, commands=table).key("F7") == "spin: the spinner scene only (this is image; s switches)"
    row, = option_rows(spinner.scene.options())
    assert (row.command, row.button, row.value) == ("spin", "turn", "5")
