"""The README's pictures: each scene with the panel, in a window at 800x600, after 800 frames.

Run from the project root with a display, for example
    xvfb-run -a -s "-screen 0 1280x1024x24" .venv/bin/python assets/make_screenshots.py
It writes assets/screenshots/<scene>.png through ``glshare run --screenshot`` and then keeps the
smaller of glshare's PNG and Pillow's optimised re-encoding of the same pixels (Pillow comes with
matplotlib), so that each file stays small. Exits non-zero when a run fails.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "assets" / "screenshots"
FRAMES = 800  # a few seconds: the timeline has fitted its span to the steady frame (it shrinks after 6 redraws)
RUNS = {"particles": [], "image": ["--size", "800x600"], "yuv": ["--size", "800x600"],
        "postprocess": ["--size", "800x600"]}


def shrink(path: Path) -> int:
    """Re-encode ``path`` with Pillow's optimiser where that is smaller; returns the bytes kept."""
    try:
        from PIL import Image
    except ImportError:
        return path.stat().st_size
    trial = path.with_suffix(".opt.png")
    with Image.open(path) as im:
        im.save(trial, optimize=True)
    if trial.stat().st_size < path.stat().st_size:
        trial.replace(path)
    else:
        trial.unlink()
    return path.stat().st_size


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    for scene, extra in RUNS.items():
        shot = OUT / f"{scene}.png"
        cmd = [sys.executable, "-m", "app", "run", "--scene", scene, *extra, "--frames", str(FRAMES),
               "--screenshot", str(shot)]
        res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if res.returncode != 0:
            print(f"{scene}: {res.stderr.strip()}", file=sys.stderr)
            return res.returncode
        print(f"{shot.relative_to(ROOT)}: {shrink(shot):,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
