"""Every scene on every CPU OpenCL implementation present (PoCL, Intel's CPU runtime), on host_copy:
each against its numpy reference, and the screens of the implementations against each other.

Intel's runtime lists CL_RG, so the yuv scene there reads the UV plane in cl_amd_planar_yuv's own
layout (CL_RG, w/2 x h/2); PoCL has no two-channel format and stores it as CL_R pairs. ``make test``
registers both (``GLSHARE_REQUIRE_CL_IMPLS=2`` makes a missing one fail); ``glshare info`` lists them.
"""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from app.config import RunConfig
from tests.conftest import CPU_IMPLEMENTATIONS, cpu_implementations

SCENES = {"image": (64, 48), "yuv": (64, 36), "particles": 2048}
FRAMES = 3
_screens: dict[tuple[str, str], np.ndarray] = {}


def test_the_implementations_the_suite_requires_are_present():
    found = cpu_implementations()
    need = int(os.environ.get("GLSHARE_REQUIRE_CL_IMPLS", "1"))
    assert len(found) >= need, f"{need} CPU OpenCL implementations required, found {found}"


def _render(scene_name: str, choice, surface) -> tuple[np.ndarray, dict]:
    """FRAMES frames of the scene on host_copy on ``choice``: (the screen, what the scene computed)."""
    from app.gl.context import gl_info
    from app.scenes import scene_class
    from app.schedule.scheduler import FrameScheduler
    from app.sharing.backends.host_copy import HostCopy
    from app.sharing.base import ProbeEnv
    from app.sharing.sync import FinishSync

    backend = HostCopy(ProbeEnv(choice, surface, gl_info()), strict=True)
    size = SCENES[scene_name]
    scene = scene_class(scene_name)(RunConfig(scene=scene_name, size=size, seed=3, strict=True))
    sched = None
    try:
        scene.build(backend, surface.framebuffer_size)
        sched = FrameScheduler(backend, scene, FinishSync(backend), strict=True)
        target = lambda: surface.framebuffer_size if surface.bind_target() else None  # noqa: E731
        for frame in range(FRAMES):
            rec = sched.run_frame(frame, target)
            assert rec.errors == [] and rec.hazards == [], (rec.errors, rec.hazards)
        sched.finish()
        computed = {"out": scene.out.gl.read() if hasattr(scene, "out") else None}
        if scene_name == "image":
            computed["texture"] = scene.texture.gl.read()
        if scene_name == "particles":
            computed["position"] = scene.position.gl.read().reshape(-1, 4)
        if scene_name == "yuv":
            computed["layout"] = scene.layout if hasattr(scene, "layout") else None
        screen = surface.read_pixels()
    finally:
        if sched is not None:
            sched.close()
        scene.teardown()
        backend.close()
    _screens[scene_name, choice.platform.name.strip()] = screen
    return screen, computed


@pytest.mark.parametrize("scene_name", list(SCENES))
def test_scene_against_its_reference(cl_impl, surface, gl, scene_name):
    screen, got = _render(scene_name, cl_impl, surface)
    assert screen.std() > 0  # something was drawn
    if scene_name == "image":
        from app.scenes.image import julia_reference

        w, h = SCENES["image"]
        ref = julia_reference(w, h, FRAMES - 1)
        d = np.abs(got["texture"].astype(int) - ref.astype(int)).max(axis=-1)
        assert (d > 1).mean() < 0.02, (d > 1).mean()  # test_image's tolerance: escape-time rounding
    elif scene_name == "yuv":
        from app.yuv.formats import NV12, reference_rgb
        from app.yuv.pattern import pattern_frame

        w, h = SCENES["yuv"]
        ref = reference_rgb(NV12, *pattern_frame(NV12, w, h, FRAMES - 1), "bt709", "limited")
        if cl_impl.platform.name.strip() == CPU_IMPLEMENTATIONS["intel"]:
            assert not got["layout"].uv_pairs  # the scene read UV as CL_RG, the extension's layout
        diff = np.abs(got["out"][..., :3].astype(int) - ref.astype(int))
        assert diff.max() <= 1 and (diff == 0).mean() >= 0.99, (diff.max(), (diff == 0).mean())
    else:
        from app.scenes.particles import initial_state, reference_steps

        ref = reference_steps(initial_state(SCENES["particles"], 3), FRAMES)
        assert np.abs(got["position"] - ref["position"]).max() < 5e-4  # test_particles' tolerance


def test_yuv_reads_the_uv_plane_as_the_extension_lays_it_out(cl_impl):
    """Where CL_RG is listed (Intel) the UV plane is CL_RG of w/2 x h/2, as cl_amd_planar_yuv's table
    says; PoCL has none and stores the same bytes as CL_R pairs."""
    import pyopencl as cl

    from app.yuv.formats import NV12, P010
    from app.yuv.planar import plane_layout

    ctx = cl.Context([cl_impl.device])
    for fmt in (NV12, P010):
        layout = plane_layout(ctx, fmt, 64, 36)
        if cl_impl.platform.name.strip() == CPU_IMPLEMENTATIONS["intel"]:
            assert not layout.uv_pairs and layout.uv_shape == (32, 18)
            assert layout.uv_format.channel_order == cl.channel_order.RG
        if cl_impl.platform.name.strip() == CPU_IMPLEMENTATIONS["pocl"]:
            assert layout.uv_pairs and layout.uv_shape == (64, 18)


@pytest.mark.parametrize("scene_name", list(SCENES))
def test_screens_match_across_implementations(surface, gl, scene_name):
    """The same frames look the same on every implementation (measured: max difference 0)."""
    from app.cl.device import select_device

    impls = cpu_implementations()
    if len(impls) < 2:
        pytest.skip(f"one CPU OpenCL implementation here ({impls}); make test registers Intel's beside PoCL")
    screens = {}
    for _, name in impls:
        screens[name] = _screens.get((scene_name, name))
        if screens[name] is None:
            screens[name] = _render(scene_name, select_device(name), surface)[0]
    first, *rest = screens.values()
    for name, other in zip(list(screens)[1:], rest):
        d = np.abs(first.astype(int) - other.astype(int)).max(axis=-1)
        assert (d > 1).mean() <= 0.001, f"{scene_name}: {name} differs from {impls[0][1]} in {(d > 1).mean():.4%} of pixels"


def test_info_lists_every_implementation(glshare):
    res = glshare("info", "--json", timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    platforms = {d["platform"] for d in json.loads(res.stdout)["devices"]}
    assert {name for _, name in cpu_implementations()} <= platforms
