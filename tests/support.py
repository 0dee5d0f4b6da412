"""Helpers the tests share (imported as ``support``; fixtures live in conftest.py)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The folder of the helper modules (this one, conftest.py, the children run as scripts): tests/ itself,
# on sys.path for every test below it (pyproject.toml, ``pythonpath``), whichever folder the test is in.
HELPERS = Path(__file__).resolve().parent


def pythonpath_with_root() -> str:
    """PYTHONPATH for a child that must import this checkout's app/: ROOT first, then whatever the
    parent's PYTHONPATH held (the GPU machine's wheels live there: replacing it loses pyopencl)."""
    return os.pathsep.join([str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])


def run_glshare(*args: str, env: dict | None = None, timeout: float = 240, cwd: Path | None = None):
    """Run the CLI in a fresh process (its own GL platform); returns CompletedProcess."""
    full_env = {**os.environ, **(env or {})}
    full_env.pop("PYOPENGL_PLATFORM", None)
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=cwd or ROOT, env=full_env,
                          capture_output=True, text=True, timeout=timeout)


def assert_within_1lsb(got, ref, what: str, exact_share: float = 0.99) -> None:
    """At most 1 LSB anywhere, and at least ``exact_share`` of the values exact (a float32 kernel,
    or FFmpeg's own conversion, may round the other way)."""
    import numpy as np

    assert got.shape == ref.shape, (what, got.shape, ref.shape)
    diff = np.abs(got.astype(np.int16) - ref.astype(np.int16))
    assert diff.max() <= 1, f"{what}: max diff {diff.max()} at {np.unravel_index(diff.argmax(), diff.shape)}"
    assert (diff == 0).mean() >= exact_share, f"{what}: only {(diff == 0).mean():.4f} exact"


def panel_snapshot(run, tab: str | None = None):
    """The panel's model (``app.ui.model.PanelModel``) of ``run`` (a ``Run``) as the UI host builds it
    at a redraw; ``tab``: as if that tab were shown."""
    if run.session.scheduler is not None:
        run.session.scheduler.harvest(gl=False)  # as Run.draw_ui does before each redraw
    view = run.session.view(demos=run.controls.demo_views(), trace_written=run.trace_written)
    ui = run.ui
    return ui.model.update(view, tab=tab or ui.state.tab, lab=ui.lab_results, ui_caps=ui.caps(),
                           chosen=ui.state.chosen)
