"""Start-up: the panel's light import of imgui-bundle (app/ui/bundle.py) and the report's start-up
marks. Each check runs in a fresh interpreter: what a process has imported is the point."""
from __future__ import annotations

import json
import subprocess
import sys

from support import ROOT


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_light_import_publishes_the_panel_modules_only():
    res = _python(
        "import sys\n"
        "from app.ui.bundle import imgui, imgui_ctx, implot, implot_ctx\n"
        "import imgui_bundle\n"
        "assert imgui_bundle.imgui is imgui and imgui_bundle.implot is implot\n"
        "assert sys.modules['imgui_bundle.imgui'] is imgui and sys.modules['imgui_bundle.implot'] is implot\n"
        "assert imgui_bundle.imgui_ctx is imgui_ctx and imgui_bundle.implot_ctx is implot_ctx\n"
        "assert 'imgui_bundle.imgui.internal' in sys.modules and 'imgui_bundle.imgui.backends' in sys.modules\n"
        "ctx = imgui.create_context(); imgui.destroy_context(ctx)\n"
        "print(sorted(m for m in ('glfw', 'cffi', 'asyncio', 'imgui_bundle.immapp', 'imgui_bundle.glfw_utils')\n"
        "             if m in sys.modules))\n")
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"


def test_the_rest_of_the_package_on_demand():
    """After the light import, what else is asked of ``imgui_bundle`` runs its own __init__ first."""
    res = _python(
        "import os, sys\n"
        "from app.ui.bundle import imgui\n"
        "import imgui_bundle\n"
        "from imgui_bundle import hello_imgui\n"
        "assert imgui_bundle.imgui is imgui  # published once, not replaced\n"
        "print(hello_imgui.__name__, 'imgui_bundle.immapp' in sys.modules, 'imgui_bundle.glfw_utils' in sys.modules,\n"
        "      bool(os.environ.get('PYGLFW_LIBRARY')), imgui_bundle.has_submodule('imgui'))\n")
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["imgui_bundle._imgui_bundle.hello_imgui", "True", "True", "True", "True"]


def test_complete_after_a_whole_import_is_the_same_package():
    res = _python(
        "import imgui_bundle\n"
        "from app.ui import bundle\n"
        "assert bundle.load() is imgui_bundle and bundle.complete() is imgui_bundle\n"
        "from app.ui.bundle import imgui\n"
        "assert imgui is imgui_bundle.imgui\n")
    assert res.returncode == 0, res.stderr


def test_headless_run_marks_and_imports(tmp_path):
    """A headless run with the panel: every start-up mark, in order, and no GLFW imported."""
    report = tmp_path / "r.json"
    res = _python(
        "import sys\n"
        "from app.cli import main\n"
        f"rc = main(['run', '--headless', '--frames', '2', '--quiet', '--report', {str(report)!r}])\n"
        "print(rc, 'glfw' in sys.modules, 'imgui_bundle.immapp' in sys.modules)\n")
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[-1].split() == ["0", "False", "False"]
    marks = json.loads(report.read_text())["startup_ms"]
    assert list(marks) == ["run_started", "session_built", "ui_ready", "first_frame_presented"]
    values = list(marks.values())
    assert values == sorted(values) and values[0] > 0
