"""The yuv scene and ``glshare convert``: kernels/yuv.cl against the float64 reference (at most 1 LSB).

Both formats x both matrices x both ranges; the scene on every available backend (in process and
as a headless run whose screenshot is compared, overlay masked); the clip in assets/ is what the
generator makes; bad ``convert`` input exits 2 with one line and writes nothing.
"""
from __future__ import annotations

import itertools
import json

import numpy as np
import pyopencl as cl
import pytest
from support import assert_within_1lsb

from app.cli import main as cli_main
from app.config import RunConfig
from app.diagnostics import live
from app.sharing.backends.host_copy import HostCopy
from app.trace.png import read_png
from app.yuv.converter import convert_frame
from app.yuv.formats import FORMATS, P010, frame_nbytes, pack, reference_rgb, rgb_to_yuv, unpack
from app.yuv.pattern import CLIP_FRAMES, CLIP_SIZE, clip_bytes, clip_path, pattern_codes, pattern_frame

CASES = list(itertools.product(("nv12", "p010"), ("bt601", "bt709"), ("limited", "full")))


# -- the reference ----------------------------------------------------------------------------------
def test_reference_known_values():
    nv12 = FORMATS["nv12"]

    def one(fmt, y, u, v, matrix, range_):
        ys = np.full((2, 2), y, fmt.dtype)
        uv = np.array([[[u, v]]], fmt.dtype)
        return reference_rgb(fmt, ys, uv, matrix, range_)[0, 0].tolist()

    assert one(nv12, 16, 128, 128, "bt709", "limited") == [0, 0, 0]
    assert one(nv12, 235, 128, 128, "bt601", "limited") == [255, 255, 255]
    assert one(nv12, 0, 128, 128, "bt709", "limited") == [0, 0, 0]  # below black: clipped
    assert one(nv12, 255, 128, 128, "bt709", "limited") == [255, 255, 255]  # above white: clipped
    assert one(nv12, 255, 128, 128, "bt709", "full") == [255, 255, 255]
    assert one(nv12, 128, 128, 128, "bt601", "full") == [128, 128, 128]
    # 100 % red as the standards code it: BT.601 (81, 90, 240), BT.709 (63, 102, 240)
    for (y, u, v), matrix in (((81, 90, 240), "bt601"), ((63, 102, 240), "bt709")):
        r, g, b = one(nv12, y, u, v, matrix, "limited")
        assert r >= 253 and g <= 2 and b <= 2, (matrix, r, g, b)
    # P010: the same grey at 10 bits (x4), in the high bits of the word
    assert one(P010, 64 << 6, 512 << 6, 512 << 6, "bt709", "limited") == [0, 0, 0]
    assert one(P010, 940 << 6, 512 << 6, 512 << 6, "bt709", "limited") == [255, 255, 255]
    assert one(P010, (1023 << 6) | 0x3F, 512 << 6, 512 << 6, "bt709", "full") == [255, 255, 255]  # low bits ignored


@pytest.mark.parametrize("name,matrix,range_", CASES)
def test_reference_inverts_the_forward_conversion(name, matrix, range_):
    fmt = FORMATS[name]
    rng = np.random.default_rng(7)
    colours = rng.uniform(0, 1, (9, 16, 3))
    rgb = colours.repeat(2, 0).repeat(2, 1)  # flat 2x2 blocks: chroma subsampling loses nothing
    y, uv = rgb_to_yuv(fmt, rgb, matrix, range_)
    back = reference_rgb(fmt, y, uv, matrix, range_)
    tol = 3 if fmt.bits == 8 else 1  # code quantisation: 8-bit codes are coarser than 8-bit RGB
    assert np.abs(back.astype(int) - np.floor(rgb * 255 + 0.5)).max() <= tol


def test_raw_frames_pack_and_unpack():
    for fmt in FORMATS.values():
        y, uv = pattern_frame(fmt, 8, 6, 2)
        data = pack(fmt, y, uv)
        assert len(data) == frame_nbytes(fmt, 8, 6) == 72 * fmt.word_bytes
        y2, uv2 = unpack(fmt, data, 8, 6)
        np.testing.assert_array_equal(y2, y)
        np.testing.assert_array_equal(uv2, uv)
    y, uv = pattern_frame(P010, 4, 2, 0)
    assert pack(P010, y, uv)[:2] == int(y[0, 0]).to_bytes(2, "little")


def test_pattern_moves_and_spans_every_code():
    for bits in (8, 10):
        y0, uv0 = pattern_codes(640, 360, 0, bits)
        y1, uv1 = pattern_codes(640, 360, 1, bits)
        assert (y0 != y1).mean() > 0.5 and (uv0 != uv1).any()
        assert y0.min() == 0 and y0.max() == (1 << bits) - 1
        assert uv0.min() == 0 and uv0.max() == (1 << bits) - 1


def test_clip_in_assets_is_what_the_generator_makes():
    w, h = CLIP_SIZE
    for name, fmt in FORMATS.items():
        data = clip_path(name).read_bytes()
        assert len(data) == CLIP_FRAMES * frame_nbytes(fmt, w, h)
        assert data == clip_bytes(fmt), f"{clip_path(name)} differs: run python -m app.yuv.pattern"


# -- the kernel ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,matrix,range_", CASES)
def test_kernel_matches_reference(cl_ctx, name, matrix, range_):
    context, queue = cl_ctx
    fmt = FORMATS[name]
    y, uv = pattern_frame(fmt, 64, 36, 11)
    got = convert_frame(context, queue, fmt, y, uv, matrix, range_)
    assert (got[..., 3] == 255).all()
    assert_within_1lsb(got[..., :3], reference_rgb(fmt, y, uv, matrix, range_), f"pattern {name} {matrix} {range_}")
    # random words over the whole range (P010's ignored low bits included)
    rng = np.random.default_rng(3)
    top = np.iinfo(fmt.dtype).max
    y = rng.integers(0, top + 1, (20, 30), dtype=np.int64).astype(fmt.dtype)
    uv = rng.integers(0, top + 1, (10, 15, 2), dtype=np.int64).astype(fmt.dtype)
    got = convert_frame(context, queue, fmt, y, uv, matrix, range_)
    assert_within_1lsb(got[..., :3], reference_rgb(fmt, y, uv, matrix, range_), f"random {name} {matrix} {range_}")


@pytest.mark.parametrize("name,matrix,range_", CASES[::3])
def test_buffer_kernel_matches_reference(cl_ctx, name, matrix, range_):
    """The variant for textures that CL sees as pitched buffers (padded rows here)."""
    from app.yuv.converter import YuvConverter
    from app.yuv.planar import PlaneLayout

    context, queue = cl_ctx
    fmt = FORMATS[name]
    w, h, pad = 30, 20, 6
    y, uv = pattern_frame(fmt, w, h, 4)

    def padded(a: np.ndarray) -> np.ndarray:
        rows = a.reshape(a.shape[0], -1)
        out = np.full((rows.shape[0], rows.shape[1] + pad), 0x5A, a.dtype)  # junk in the padding
        out[:, :rows.shape[1]] = rows
        return out

    mf = cl.mem_flags
    py, puv = padded(y), padded(uv)
    y_buf = cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=py)
    uv_buf = cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=puv)
    out_pitch = (w + 2) * 4
    out_buf = cl.Buffer(context, mf.WRITE_ONLY, out_pitch * h)
    converter = YuvConverter(context, PlaneLayout(fmt, w, h, uv_pairs=False))
    try:
        ev = converter.enqueue_buffers(queue, y_buf, py.strides[0], uv_buf, puv.strides[0], out_buf, out_pitch,
                                       fmt, matrix, range_)
        got = np.empty((h, out_pitch // 4, 4), np.uint8)
        cl.enqueue_copy(queue, got, out_buf, wait_for=[ev], is_blocking=True)
    finally:
        converter.release()
        for b in (y_buf, uv_buf, out_buf):
            b.release()
    assert (got[:, :w, 3] == 255).all()
    assert_within_1lsb(got[:, :w, :3], reference_rgb(fmt, y, uv, matrix, range_), f"buffers {name} {matrix} {range_}")


# -- the scene -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["nv12", "p010"])
def test_scene_on_every_available_backend(probe_env, gl, name):
    from app.scenes.yuv import YuvScene
    from app.schedule.scheduler import FrameScheduler
    from app.sharing.registry import Registry

    registry = Registry(probe_env)
    assert HostCopy.name in registry.available
    size = (64, 36)
    fmt = FORMATS[name]
    for backend_name in registry.available:
        before = live.snapshot()
        backend = registry.open(backend_name, strict=True)
        scene = YuvScene(RunConfig(scene="yuv", size=size, yuv_format=name, strict=True))
        scheduler = None
        try:
            scene.build(backend, gl.framebuffer_size)
            assert scene.image_size == size
            scheduler = FrameScheduler(backend, scene, backend.make_sync("finish"), strict=True)

            def target():
                return gl.framebuffer_size if gl.bind_target() else None

            for frame in range(3):
                rec = scheduler.run_frame(frame, target)
                assert rec.errors == [] and rec.hazards == []
                assert scene.shown_frame == frame
                got = scene.out.gl.read()
                ref = reference_rgb(fmt, *pattern_frame(fmt, *size, frame), scene.matrix, scene.range_)
                assert_within_1lsb(got[..., :3], ref, f"{backend_name} {name} frame {frame}")
            scheduler.finish()
            assert scene.bytes_per_frame == sum(o.nbytes for o in scene.shared)
            assert scene.bytes_per_frame == 64 * 36 * 3 // 2 * fmt.word_bytes + 64 * 36 * 4  # Y + UV + RGBA8
        finally:
            if scheduler is not None:
                scheduler.close()  # its GL timer queries
            scene.teardown()
            scene.teardown()  # idempotent
            backend.close()
        assert live.snapshot() == before, f"{backend_name}: objects left after teardown"


@pytest.mark.parametrize("name", ["nv12", "p010"])
def test_headless_screenshot_matches_reference(glshare, tmp_path, name):
    shot, report = tmp_path / "s.png", tmp_path / "r.json"
    w, h, frames = 256, 192, 3
    res = glshare("run", "--headless", "--scene", "yuv", "--yuv-format", name, "--size", f"{w}x{h}",
                  "--frames", str(frames), "--no-panel", "--screenshot", str(shot), "--report", str(report))
    assert res.returncode == 0, res.stderr
    r = json.loads(report.read_text())
    assert r["scene"] == "yuv" and r["size"] == f"{w}x{h}" and r["errors"] == [] and r["hazards"] == []
    assert r["counts"] == {"acquire": frames, "compute": frames, "release": frames}
    fmt = FORMATS[name]
    px = read_png(shot)
    ref = reference_rgb(fmt, *pattern_frame(fmt, w, h, frames - 1), "bt709", "limited")
    assert px.shape == ref.shape
    # Mask the minimal overlay (a few lines of text at (8, 8)): every pixel off by more than 1 LSB
    # must lie in one box at the top-left, of at most 120 rows; all pixels outside it are compared.
    rows, cols = np.nonzero(np.abs(px.astype(int) - ref).max(axis=2) > 1)
    assert rows.size, "the overlay should be drawn over the top-left"
    assert rows.min() < 16 and cols.min() < 16 and rows.max() < 120, (rows.min(), cols.min(), rows.max())
    outside = np.ones((h, w), bool)
    outside[:rows.max() + 1, :cols.max() + 1] = False
    assert outside.sum() >= w * (h - 120)
    assert_within_1lsb(px[outside], ref[outside], f"screenshot {name}")


def test_failed_build_leaves_nothing(probe_env, gl, monkeypatch):
    from app.scenes import yuv as yuv_scene
    from app.sharing.backends.host_copy import HostCopy

    backend = HostCopy(probe_env, strict=True)
    before = live.snapshot()

    def broken(*args, **kwargs):
        raise RuntimeError("kernel build failed")

    monkeypatch.setattr(yuv_scene, "YuvConverter", broken)
    scene = yuv_scene.YuvScene(RunConfig(scene="yuv", size=(16, 8)))
    with pytest.raises(RuntimeError):
        scene.build(backend, gl.framebuffer_size)
    assert live.snapshot() == before and backend.objects == []
    backend.close()


# -- glshare convert --------------------------------------------------------------------------------------
def _clip_frame(name: str, index: int) -> bytes:
    fmt = FORMATS[name]
    n = frame_nbytes(fmt, *CLIP_SIZE)
    return clip_path(name).read_bytes()[index * n:(index + 1) * n]


@pytest.mark.parametrize("name,suffix,matrix,range_", [("nv12", ".npy", "bt601", "full"),
                                                        ("p010", ".png", "bt709", "limited")])
def test_convert_cli_writes_the_reference(glshare, tmp_path, name, suffix, matrix, range_):
    src, out = tmp_path / f"f1.{name}", tmp_path / f"out{suffix}"
    src.write_bytes(_clip_frame(name, 1))
    w, h = CLIP_SIZE
    res = glshare("convert", "--format", name, "--size", f"{w}x{h}", "--matrix", matrix, "--range", range_,
                  str(src), str(out))
    assert res.returncode == 0, res.stderr
    got = np.load(out) if suffix == ".npy" else read_png(out)
    assert got.dtype == np.uint8 and got.shape == (h, w, 3)
    fmt = FORMATS[name]
    assert_within_1lsb(got, reference_rgb(fmt, *pattern_frame(fmt, w, h, 1), matrix, range_), f"convert {name}")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([src.name, out.name])  # no temp file left


def test_convert_cli_bad_input_exits_2_and_writes_nothing(tmp_path, capsys):
    nv12 = tmp_path / "f.nv12"
    nv12.write_bytes(_clip_frame("nv12", 0))
    (tmp_path / "outdir.npy").mkdir()
    cases = {
        "odd width": ["--format", "nv12", "--size", "63x36", str(nv12), "o.npy"],
        "odd height": ["--format", "nv12", "--size", "64x35", str(nv12), "o.npy"],
        "wrong file size (format)": ["--format", "p010", "--size", "64x36", str(nv12), "o.npy"],
        "wrong file size (size)": ["--format", "nv12", "--size", "64x34", str(nv12), "o.png"],
        "unknown format": ["--format", "yuy2", "--size", "64x36", str(nv12), "o.npy"],
        "unknown suffix": ["--format", "nv12", "--size", "64x36", str(nv12), "o.jpg"],
        "no suffix": ["--format", "nv12", "--size", "64x36", str(nv12), "o"],
        "missing input": ["--format", "nv12", "--size", "64x36", str(tmp_path / "none.nv12"), "o.npy"],
        "output is a directory": ["--format", "nv12", "--size", "64x36", str(nv12), "outdir.npy"],
        "unknown matrix": ["--format", "nv12", "--size", "64x36", "--matrix", "bt2020", str(nv12), "o.npy"],
    }
    for what, argv in cases.items():
        argv = [a if a.startswith("-") or "/" in a or a[0].isdigit() or a in ("nv12", "p010", "yuy2", "bt2020")
                else str(tmp_path / a) for a in argv]
        capsys.readouterr()
        assert cli_main(["convert", *argv]) == 2, what
        err = capsys.readouterr().err.strip()
        assert err.startswith("glshare: error: ") and "\n" not in err, (what, err)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["f.nv12", "outdir.npy"], what


def test_convert_cli_exit_status_in_a_process(glshare, tmp_path):
    src = tmp_path / "f.p010"
    src.write_bytes(_clip_frame("p010", 0)[:-2])  # two bytes short
    res = glshare("convert", "--format", "p010", "--size", "64x36", str(src), str(tmp_path / "o.png"))
    assert res.returncode == 2
    assert res.stderr.strip().count("\n") == 0 and "6910 bytes" in res.stderr and "6912" in res.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["f.p010"]
