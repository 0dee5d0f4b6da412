"""gl_sharing's bench rows, each one ratio measured in one run with its baseline:

- ``gl_sharing vs external_memory``: cl_khr_gl_sharing's frame (finish sync, and gl_event where it
  works) against external memory with semaphores on the same scene and size, the sessions open at
  once on one surface and timed frame by frame in turn; the row says it in a sentence a user can
  read, with the cause measured in the same frames (the CPU waits each frame makes).
- ``gl_sharing bare loop``: glshare's gl_sharing frame against the bare loop of the same calls on
  the same objects (glFinish, acquire, kernel, release, clFinish, draw: app/bench/loops.py's
  BareLoop), the median of the frame pairs' ratios; the target is <= 1.1.

Where gl_sharing (or external_memory) is refused, the row is skipped with the probe's reason. GL
sharing on NVIDIA works through GLX only: run it in a window (an X display), e.g.

    python -m app.bench.gl_sharing_race --json bench-gl.json          (a GLFW window)
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys

import numpy as np

ROW_SCENES = (("image", (4096, 4096)), ("particles", 1 << 20))


def _waits_ms(records) -> float:
    """The median CPU time a frame spent waiting (glFinish, clFinish, fences, frames in flight), ms."""
    per = [sum(t1 - t0 for _, t0, t1 in r.waits) / 1e6 for r in records if r is not None]
    return float(np.median(per)) if per else 0.0


def _cfg(scene, size, backend, sync, cl_device, surface):
    from app.config import RunConfig

    return RunConfig(scene=scene, backend=backend, sync=sync, headless=surface.kind == "headless", size=size,
                     cl_device=cl_device, overlay=False, frames=10_000)


def race(scene: str, size, surface, cl_device: str | None, available: dict, frames: int = 200,
         warmup: int = 30) -> list[dict]:
    """The rows of one scene and size (see the module docstring)."""
    from app.bench.loops import BareLoop, glshare_frame
    from app.bench.sweep import size_label
    from app.run import Run
    from app.session.session import window_size_for
    from app.sharing.backends.external_memory import ExternalMemory
    from app.sharing.backends.gl_sharing import KhrGlSharing

    where = f"{scene} {size_label(scene, size)}"
    kinds = [(KhrGlSharing.name, "finish")]
    if available.get("gl_sharing/gl_event"):
        kinds.append((KhrGlSharing.name, "gl_event"))
    if available.get("external_memory"):
        kinds.append((ExternalMemory.name, "semaphore"))
    surface.resize(*window_size_for(_cfg(scene, size, KhrGlSharing.name, "finish", cl_device, surface)))
    times: dict = {k: [] for k in kinds}
    records: dict = {k: [] for k in kinds}
    bare_ms: list[float] = []
    pairs: list[float] = []
    with contextlib.ExitStack() as stack:
        runs = {k: stack.enter_context(Run(_cfg(scene, size, k[0], k[1], cl_device, surface), surface=surface))
                for k in kinds}
        bare = BareLoop(runs[(KhrGlSharing.name, "finish")])
        stack.callback(bare.close)
        for _ in range(warmup):
            for rt in runs.values():
                glshare_frame(rt, [])
            bare.frame()
        for i in range(frames):
            order = kinds[i % len(kinds):] + kinds[:i % len(kinds)]  # rotating: drift hits every kind alike
            for k in order:
                times[k].append(glshare_frame(runs[k], records[k]).wall / 1e6)
                if k == (KhrGlSharing.name, "finish"):
                    b = bare.frame().wall / 1e6
                    bare_ms.append(b)
                    pairs.append(times[k][-1] / b)
        for rt in runs.values():
            rt.session.scheduler.finish()
        in_flight = {k: rt.cfg.frames_in_flight for k, rt in runs.items()}
    med = {k: float(np.median(v)) for k, v in times.items()}
    q1, q3 = np.percentile(pairs, [25, 75])
    rows = [{"race": "gl_sharing bare loop", "at": where, "backend": KhrGlSharing.name, "sync": "finish",
             "glshare_ms": round(med[(KhrGlSharing.name, "finish")], 4), "baseline": "bare loop of the same calls",
             "baseline_ms": round(float(np.median(bare_ms)), 4), "ratio": round(float(np.median(pairs)), 4),
             "spread": [round(float(q1), 4), round(float(q3), 4)], "target": "<= 1.1",
             "what": "glshare's gl_sharing frame / the hand-written loop's frame next to it (glFinish, "
                     "clEnqueueAcquireGLObjects, kernel, clEnqueueReleaseGLObjects, clFinish, draw), median of "
                     "the pairs"}]
    ext = (ExternalMemory.name, "semaphore")
    for k in kinds:
        if k[0] != KhrGlSharing.name or ext not in med:
            continue
        g, e = med[k], med[ext]
        gw, ew = _waits_ms(records[k]), _waits_ms(records[ext])
        n = g / e
        if n >= 1:
            sentence = (f"on this machine, external memory with semaphores is {n:.2f}x faster than cl_khr_gl_sharing "
                        f"({k[1]} sync) on {where} ({e:.3f} ms against {g:.3f} ms a frame), because gl_sharing's "
                        f"frame waits {gw:.3f} ms on the CPU for GL and CL ("
                        + ("glFinish before the acquire, clFinish after the release: cl_khr_gl_sharing's portable "
                           "rule" if k[1] == "finish" else "the release's completion, without GL_ARB_cl_event")
                        + f"), where semaphores order GL and CL on the GPU ({ew:.3f} ms of CPU waits, up to "
                        f"{in_flight[ext]} frames in flight)")
        else:
            sentence = (f"on this machine, cl_khr_gl_sharing ({k[1]} sync) is {1 / n:.2f}x faster than external "
                        f"memory with semaphores on {where} ({g:.3f} ms against {e:.3f} ms a frame; CPU waits "
                        f"{gw:.3f} ms against {ew:.3f} ms)")
        rows.append({"race": "gl_sharing vs external_memory", "at": where, "backend": KhrGlSharing.name, "sync": k[1],
                     "glshare_ms": round(g, 4), "baseline": "external_memory, semaphore sync",
                     "baseline_ms": round(e, 4), "ratio": round(n, 4), "cpu_waits_ms": round(gw, 4),
                     "baseline_cpu_waits_ms": round(ew, 4),
                     "what": sentence})
    return rows


def gl_sharing_rows(surface, cl_device: str | None, scenes=ROW_SCENES, frames: int = 200, warmup: int = 30) -> dict:
    """Every row for ``scenes`` on ``surface``, or the rows skipped with the reason gl_sharing is refused."""
    from app.cl.device import select_device
    from app.gl.context import gl_info
    from app.sharing.backends.external_memory import ExternalMemory
    from app.sharing.backends.gl_sharing import KhrGlSharing
    from app.sharing.base import ProbeEnv
    from app.sharing.registry import Registry

    registry = Registry(ProbeEnv(select_device(cl_device), surface, gl_info()))
    probe = registry.probes[KhrGlSharing.name]
    if not probe.available:
        return {"rows": [], "skipped": f"gl_sharing is refused here: {probe.reason}"}
    available = {"gl_sharing/gl_event": registry.sync_verdicts(KhrGlSharing.name)["gl_event"] is None,
                 "external_memory": registry.probes[ExternalMemory.name].available}
    out: dict = {"rows": [], "skipped": None, "gl_sharing_probe": probe.reason}
    if not available["external_memory"]:
        out["external_memory_skipped"] = f"external_memory is refused here: {registry.probes[ExternalMemory.name].reason}"
    for scene, size in scenes:
        out["rows"] += race(scene, size, surface, cl_device, available, frames=frames, warmup=warmup)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m app.bench.gl_sharing_race", description=__doc__.split("\n")[0])
    p.add_argument("--json", dest="json_path", help="write the rows here")
    p.add_argument("--cl-device")
    p.add_argument("--frames", type=int, default=200)
    args = p.parse_args(argv)
    from app.bench import machine_facts
    from app.config import cl_device_selector
    from app.window import open_surface

    surface = open_surface(False, (256, 256), title="glshare bench gl_sharing")
    try:
        result = gl_sharing_rows(surface, cl_device_selector(args.cl_device), frames=args.frames)
    finally:
        surface.close()
    result = {**machine_facts(), **result}
    if result["skipped"]:
        print(f"skipped: {result['skipped']}")
    for row in result["rows"]:
        print(f"{row['race']:<32} {row['at']:<18} {row['glshare_ms']:8.3f} ms / {row['baseline_ms']:8.3f} ms = "
              f"{row['ratio']:.3f}  {row['what'] if row['race'] != 'gl_sharing bare loop' else ''}")
    if args.json_path:
        with open(args.json_path, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
