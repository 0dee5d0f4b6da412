"""CPU probe: host_mapped against host_copy on the particles scene, frame by frame in turn in one
process (each frame with its own GL work finished inside it), and the phases of each: what the
zero-copy frame saves. Not part of the package; from the project root, headless:

    env -u DISPLAY PYOPENGL_PLATFORM=egl python bench/probes/cpu_zero_copy_phases_probe.py [sample|side]
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.getcwd())
from app.window import select_platform  # noqa: E402

select_platform(True)
from app.bench.loops import glshare_finished_frame  # noqa: E402
from app.config import RunConfig  # noqa: E402
from app.run import Run  # noqa: E402
from app.window.egl_headless import EglSurface  # noqa: E402

PHASES = ("acquire", "compute", "release", "render")
view = sys.argv[1] if len(sys.argv) > 1 else "sample"


def cfg(backend: str) -> RunConfig:
    return RunConfig(scene="particles", backend=backend, sync="finish", headless=True, size=65536, overlay=False,
                     view=view)


surface = EglSurface((800, 600))
with Run(cfg("host_mapped"), surface=surface) as zr, Run(cfg("host_copy"), surface=surface) as hr:
    recs: dict = {"host_mapped": [], "host_copy": []}
    walls: dict = {"host_mapped": [], "host_copy": []}
    for i in range(120):
        pairs = (("host_mapped", zr), ("host_copy", hr))
        for name, rt in pairs if i % 2 else pairs[::-1]:
            got: list = []
            wall = glshare_finished_frame(rt, got).wall / 1e6
            if i >= 10:
                recs[name].append(got[0])
                walls[name].append(wall)
    for name, rs in recs.items():
        phases = {p: round(float(np.median([(r.phases[p][1] - r.phases[p][0]) / 1e6 for r in rs])), 3) for p in PHASES}
        kernel = [r.cl_profile["compute"][3] - r.cl_profile["compute"][2] for r in rs if "compute" in r.cl_profile]
        print(view, name, "frame ms", round(float(np.median(walls[name])), 2), phases,
              "kernel ms", round(float(np.median(kernel)) / 1e6, 3) if kernel else None)
surface.close()
