"""The Julia kernel alone against the reference formulation of the same workload, in one run.

The reference is written here from ../shared/WORKLOADS.md the way the classic sample formulates
it: one work-item per pixel, the image size read from the launch (get_global_size), no bounds
check, the escape loop with an early break, and the colour written with write_imagef into the
texture's image, an RGBA8 one as glshare's, and an RGBA float one as the sample's texture is.
glshare's kernels (kernels/julia.cl) race it as the scenes launch them: ``julia`` into an RGBA8
image (what host_copy gives the kernel) and ``julia_buffer`` into a pitched buffer (what
host_mapped on a CPU and external_memory without image-from-buffer give it). Device time of each
kernel from its profiling event; the variants run interleaved, in an order rotated each round, on
the same frame's constant; each round's ratio is the reference's time over glshare's (> 1:
glshare's is faster). The texels of the reference's RGBA8 image are compared with glshare's.
"""
from __future__ import annotations

import numpy as np
import pyopencl as cl

from app.scenes.image import julia_constant, julia_global_size, julia_program

REFERENCE_SOURCE = r"""
// WORKLOADS.md's image workload, one work-item per pixel, sized by the launch
__kernel void julia_reference(__write_only image2d_t out, const float cr, const float ci)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    const int width = get_global_size(0);
    const int height = get_global_size(1);
    float a = (float)x * 3.0f / (float)width - 1.5f;
    float b = (float)y * 3.0f / (float)height - 1.5f;
    int n = 0;
    while (n < 16) {
        const float aa = a * a;
        const float bb = b * b;
        if (aa + bb >= 4.0f)
            break;
        const float next_a = aa - bb + cr;
        b = 2.0f * a * b + ci;
        a = next_a;
        ++n;
    }
    const float r = clamp((float)n / 16.0f, 0.0f, 1.0f);
    write_imagef(out, (int2)(x, y), (float4)(r, sqrt(r), 1.0f, 1.0f));
}
"""

RGBA8 = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.UNORM_INT8)
RGBA_FLOAT = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.FLOAT)
VARIANTS = ("reference rgba8 image", "reference rgba float image", "glshare julia (rgba8 image)",
            "glshare julia_buffer (pitched buffer)")
RACES = (("glshare julia_buffer (pitched buffer)", "reference rgba8 image"),
         ("glshare julia_buffer (pitched buffer)", "reference rgba float image"),
         ("glshare julia (rgba8 image)", "reference rgba8 image"),
         ("glshare julia (rgba8 image)", "reference rgba float image"))


class _Launches:
    """The four kernels of one size, ready to launch on a profiling queue."""

    def __init__(self, context: cl.Context, device: cl.Device, size: tuple[int, int]) -> None:
        self.size = w, h = size
        flags = cl.mem_flags
        self.reference_program = cl.Program(context, REFERENCE_SOURCE).build()
        self.glshare, self.lanes = julia_program(context, device, owner="bench")
        self.images = {"rgba8": cl.create_image(context, flags.WRITE_ONLY, RGBA8, shape=size),
                       "float": cl.create_image(context, flags.WRITE_ONLY, RGBA_FLOAT, shape=size),
                       "glshare": cl.create_image(context, flags.WRITE_ONLY, RGBA8, shape=size)}
        self.buffer = cl.Buffer(context, flags.WRITE_ONLY, w * h * 4)
        self.reference = cl.Kernel(self.reference_program, "julia_reference")
        self.image_kernel = self.glshare.kernel("julia")
        self.buffer_kernel = self.glshare.kernel("julia_buffer")
        self.buffer_kernel.set_args(self.buffer, np.int32(w), np.int32(h), np.int32(w), np.float32(0), np.float32(0))

    def launch(self, queue: cl.CommandQueue, variant: str, frame: int) -> cl.Event:
        cr, ci = (np.float32(c) for c in julia_constant(frame))
        if variant.startswith("reference"):
            image = self.images["rgba8" if "rgba8" in variant else "float"]
            return self.reference(queue, self.size, None, image, cr, ci)
        if "julia_buffer" in variant:
            self.buffer_kernel.set_arg(4, cr)
            self.buffer_kernel.set_arg(5, ci)
            return cl.enqueue_nd_range_kernel(queue, self.buffer_kernel, julia_global_size(*self.size, self.lanes), None)
        return self.image_kernel(queue, julia_global_size(*self.size, self.lanes), None, self.images["glshare"], cr, ci)

    def same_texels(self, queue: cl.CommandQueue, frame: int) -> bool:
        """glshare's image and buffer kernels and the RGBA8 reference wrote the same texels."""
        for variant in ("reference rgba8 image", "glshare julia (rgba8 image)", "glshare julia_buffer (pitched buffer)"):
            self.launch(queue, variant, frame)
        w, h = self.size
        ref, img = np.empty((h, w, 4), np.uint8), np.empty((h, w, 4), np.uint8)
        buf = np.empty((h, w, 4), np.uint8)
        cl.enqueue_copy(queue, ref, self.images["rgba8"], origin=(0, 0), region=self.size)
        cl.enqueue_copy(queue, img, self.images["glshare"], origin=(0, 0), region=self.size)
        cl.enqueue_copy(queue, buf, self.buffer, is_blocking=True)
        return bool(np.array_equal(ref, img) and np.array_equal(ref, buf))

    def release(self) -> None:
        for mem in (*self.images.values(), self.buffer):
            mem.release()
        self.glshare.release()


def kernel_race(context: cl.Context, device: cl.Device, sizes, rounds: int, per_round: int = 3) -> list[dict]:
    """Per size: each variant's device time (median, ms), and for each of ``RACES`` the median of the
    per-round ratios reference / glshare with their range. Each round launches every variant
    ``per_round`` times, alternating, in an order rotated every round."""
    queue = cl.CommandQueue(context, device, properties=cl.command_queue_properties.PROFILING_ENABLE)
    out = []
    try:
        for size in sizes:
            launches = _Launches(context, device, tuple(size))
            try:
                same = launches.same_texels(queue, 17)
                for variant in VARIANTS:  # warm: first launches build caches, fault pages in
                    launches.launch(queue, variant, 0).wait()
                per_round_ms: dict[str, list[float]] = {v: [] for v in VARIANTS}
                for r in range(rounds):
                    order = VARIANTS[r % len(VARIANTS):] + VARIANTS[:r % len(VARIANTS)]
                    spent: dict[str, list[float]] = {v: [] for v in VARIANTS}
                    for i in range(per_round):
                        for variant in order:
                            ev = launches.launch(queue, variant, 100 + r * per_round + i)
                            ev.wait()
                            spent[variant].append((ev.profile.end - ev.profile.start) / 1e6)
                    for variant, ms in spent.items():
                        per_round_ms[variant].append(float(np.median(ms)))
                out.append({**_size_result(size, per_round_ms, same), "lanes": launches.lanes})
            finally:
                launches.release()
    finally:
        queue.finish()
    return out


def _size_result(size, per_round_ms: dict[str, list[float]], same: bool) -> dict:
    races = []
    for glshare, reference in RACES:
        ratios = np.array(per_round_ms[reference]) / np.array(per_round_ms[glshare])
        races.append({"glshare": glshare, "reference": reference, "ratio_median": round(float(np.median(ratios)), 3),
                      "ratio_range": [round(float(ratios.min()), 3), round(float(ratios.max()), 3)],
                      "rounds": len(ratios)})
    return {"size": f"{size[0]}x{size[1]}", "same_texels": same, "rounds": len(next(iter(per_round_ms.values()))),
            "device_ms": {v: round(float(np.median(ms)), 3) for v, ms in per_round_ms.items()}, "races": races,
            "what": "device time of each kernel alone (profiling events); ratio: the reference's time / "
                    "glshare's in the same round (> 1: glshare's kernel is faster)"}
