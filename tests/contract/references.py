"""What each scene must show after frame ``f``, from numpy alone, and how close is close enough.

A new scene adds its reference here (a function of the run after its frames) and the whole
contract suite runs it on every backend.
"""
from __future__ import annotations

import numpy as np

from app.scenes.image import julia_reference
from app.scenes.particles import initial_state, reference_steps
from app.yuv.formats import reference_rgb
from app.yuv.pattern import pattern_frame

SIZES = {"particles": 4096, "image": (64, 48), "yuv": (64, 48), "postprocess": (64, 48)}


def check_particles(session, frames: int) -> None:
    """The GL position and colour buffers against the float64 update (5e-4, tests/scenes/test_particles.py)."""
    scene = session.scene
    ref = reference_steps(initial_state(scene.n, session.cfg.seed), frames)
    pos = scene.position.gl.read().reshape(-1, 4)
    col = scene.color.gl.read().reshape(-1, 4)
    assert np.abs(pos - ref["position"]).max() < 5e-4
    np.testing.assert_allclose(col[:, 3], ref["color"][:, 3], atol=1e-6)


def check_image(session, frames: int) -> None:
    """The drawn frame against the Julia reference: at most 2 % of pixels off by more than 1 LSB
    (a float32 orbit escaping right at |z| = 2 may count one iteration more or less)."""
    w, h = session.scene.image_size
    shown = session.surface.read_pixels()[:h, :w]
    d = np.abs(shown.astype(int) - julia_reference(w, h, frames - 1).astype(int)).max(axis=-1)
    assert (d > 1).mean() < 0.02, float((d > 1).mean())


def check_yuv(session, frames: int) -> None:
    """The RGBA texture CL wrote against the float64 conversion of the pattern frame: 1 LSB."""
    scene = session.scene
    fmt = scene.fmt
    got = scene.out.gl.read()[..., :3]
    ref = reference_rgb(fmt, *pattern_frame(fmt, *scene.image_size, scene.shown_frame), scene.matrix, scene.range_)
    assert np.abs(got.astype(int) - ref.astype(int)).max() <= 1


def before_postprocess(session) -> np.ndarray:
    """What GL rendered for the frame about to run (the input CL filters in it)."""
    return session.scene.rendered.gl.read()


def check_postprocess(session, frames: int, rendered: np.ndarray) -> None:
    """The filtered texture against the numpy filter of what GL rendered for that frame: exact."""
    from app.postprocess import reference

    scene = session.scene
    ref = reference.sobel(rendered) if scene.filter == "sobel" else reference.box_blur(rendered, scene.radius)
    assert np.array_equal(scene.out.gl.read(), ref)


# what to read before the last frame (for scenes whose input is GL's own output), then the check
BEFORE = {"postprocess": before_postprocess}
CHECKS = {"particles": check_particles, "image": check_image, "yuv": check_yuv, "postprocess": check_postprocess}
