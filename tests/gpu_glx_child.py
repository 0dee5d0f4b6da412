"""A child of tests/sharing/test_gpu_glx.py: one scene on each named backend in a GLFW window (GLX), checked
against the numpy references of the contract suite, its pixels saved for the parent to compare.

    python tests/gpu_glx_child.py SCENE SYNC FRAMES_IN_FLIGHT OUT.npz BACKEND...

Prints one JSON line: {backend: {"reference": "ok" | the failure, "errors": [...], "probe": reason}}.
A child because the test process's PyOpenGL is bound to EGL (tests/conftest.py).
"""
from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), os.path.join(HERE, "contract")]

FRAMES = 5


def main(scene: str, sync: str, in_flight: int, out: str, backends: list[str]) -> None:
    import numpy as np

    from app.window import select_platform

    select_platform(False)
    from references import BEFORE, CHECKS, SIZES

    from app.config import RunConfig
    from app.run import Run
    from app.sharing.backends.gl_sharing import KhrGlSharing
    from app.window.glfw_window import GlfwWindow

    window = GlfwWindow((64, 48), title=f"glshare gpu test {scene}")  # the references read it 1:1
    result, pixels = {}, {}
    try:
        for backend in backends:
            cfg = RunConfig(scene=scene, backend=backend, size=SIZES.get(scene), headless=False, overlay=False,
                            frames=10_000, seed=4, strict=True, cl_device=os.environ.get("GLSHARE_CL_DEVICE", "NVIDIA"),
                            sync=sync if backend == KhrGlSharing.name else "finish",
                            frames_in_flight=in_flight if backend == KhrGlSharing.name else 1)
            entry = {}
            with Run(cfg, surface=window) as run:
                s = run.session
                entry["probe"] = s.registry.probes[KhrGlSharing.name].reason
                errors = []
                for _ in range(FRAMES - 1):
                    rec = run.tick()
                    errors += [str(e) for e in rec.errors]
                before = BEFORE[scene](s) if scene in BEFORE else None
                rec = run.tick()
                errors += [str(e) for e in rec.errors]
                s.finish()
                entry["errors"] = errors
                entry["waits"] = sorted({w[0] for r in s.scheduler.records for w in r.waits})
                try:
                    CHECKS[scene](s, FRAMES, *(() if before is None else (before,)))
                    entry["reference"] = "ok"
                except AssertionError as exc:
                    entry["reference"] = f"differs: {exc}"
                pixels[backend] = s.surface.read_pixels()
            result[backend] = entry
    finally:
        window.close()
    np.savez(out, **pixels)
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5:])
