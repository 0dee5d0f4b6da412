"""The README's pictures: each scene with the panel, in a window at 800x600, after 800 frames, and
glshare attach's panel following an attached program (``ATTACH``).

Run from the project root with a display, for example
    xvfb-run -a -s "-screen 0 1280x1024x24" .venv/bin/python assets/make_screenshots.py
It writes assets/screenshots/<scene>.png through ``glshare run --screenshot`` (and attach.png through
``glshare attach --panel --screenshot``) and then keeps the
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
# glshare attached to glshare's own windowed run (the CL layer and the GL library recording it), its
# panel at 1280x800 a few frames after the program ended; the pointer moved off the window first
ATTACH = ["attach", "--panel", "--frames", "30", "--", sys.executable, "-m", "app", "run", "--scene", "image",
          "--backend", "host_copy", "--size", "320x240", "--frames", "90"]


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
    return attach_shot()


def attach_shot() -> int:
    """assets/screenshots/attach.png: ``ATTACH``'s panel (``python -c 'import make_screenshots as m;
    m.attach_shot()'`` from assets/ makes it alone)."""
    OUT.mkdir(parents=True, exist_ok=True)
    shot = OUT / "attach.png"
    try:  # no tooltip under the pointer
        subprocess.run(["xdotool", "mousemove", "4000", "4000"], capture_output=True)
    except OSError:
        pass
    res = subprocess.run([sys.executable, "-m", "app", *ATTACH[:4], "--screenshot", str(shot), *ATTACH[4:]], cwd=ROOT,
                         capture_output=True, text=True)
    if res.returncode != 0:
        print(f"attach: {res.stderr.strip()}", file=sys.stderr)
        return res.returncode
    print(f"{shot.relative_to(ROOT)}: {shrink(shot):,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
