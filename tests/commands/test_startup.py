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
    """A headless run with the panel: every start-up mark, in order, no GLFW imported, nor the
    parts of tabs not shown (app/ui/model_tabs.py), which app.ui.model still names."""
    report = tmp_path / "r.json"
    res = _python(
        "import sys\n"
        "from app.cli import main\n"
        f"rc = main(['run', '--headless', '--frames', '2', '--quiet', '--report', {str(report)!r}])\n"
        "print(rc, 'glfw' in sys.modules, 'imgui_bundle.immapp' in sys.modules, 'app.ui.model_tabs' in sys.modules)\n"
        "from app.ui import model, model_tabs\n"
        "print(all(getattr(model, n) is getattr(model_tabs, n) for n in model.TAB_PARTS))\n")
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[-2].split() == ["0", "False", "False", "False"]  # the tabs' parts: not yet
    assert res.stdout.splitlines()[-1] == "True"
    marks = json.loads(report.read_text())["startup_ms"]
    assert list(marks) == ["run_started", "session_built", "ui_ready", "first_frame_presented"]
    values = list(marks.values())
    assert values == sorted(values) and values[0] > 0


def test_start_up_collector_off_then_frozen_and_on():
    """The imports run without the cyclic collector; what they made is frozen, then it is on again.
    A collector that was off stays off, nothing frozen."""
    res = _python(
        "import gc\n"
        "from app.commands.run import _start_up_collector\n"
        "gc.disable()\n"
        "with _start_up_collector():\n"
        "    inside_off = gc.isenabled()\n"
        "print(gc.isenabled(), gc.get_freeze_count())\n"
        "gc.enable()\n"
        "with _start_up_collector():\n"
        "    inside = gc.isenabled()\n"
        "print(inside, gc.isenabled(), gc.get_freeze_count() > 0)\n")
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["False", "0", "False", "True", "True"]


def test_run_freezes_the_imports_never_the_session(tmp_path):
    """``glshare run``: the session (its backend, scene and CL objects) is built after the freeze,
    so the collector still sees it (a switch's and the teardown's gc.collect() find its cycles)."""
    report = tmp_path / "r.json"
    res = _python(
        "import gc, json\n"
        "import app.session.session as S\n"
        "seen = {}\n"
        "orig = S.Session.__exit__\n"
        "def exit_(self, *exc):\n"
        "    ids = {id(o) for o in gc.get_objects()}\n"
        "    seen.update(enabled=gc.isenabled(), frozen=gc.get_freeze_count() > 0, session=id(self) in ids,\n"
        "                backend=id(self.backend) in ids, scene=id(self.scene) in ids,\n"
        "                context=id(self.backend.context) in ids)\n"
        "    return orig(self, *exc)\n"
        "S.Session.__exit__ = exit_\n"
        "from app.cli import main\n"
        f"rc = main(['run', '--headless', '--frames', '1', '--quiet', '--report', {str(report)!r}])\n"
        "print(rc, json.dumps(seen, sort_keys=True))\n")
    assert res.returncode == 0, res.stderr
    rc, seen = res.stdout.splitlines()[-1].split(" ", 1)
    assert rc == "0"
    assert json.loads(seen) == {"backend": True, "context": True, "enabled": True, "frozen": True, "scene": True,
                                "session": True}


def test_drivers_loaded_beside_the_panel_import_are_the_same_devices():
    """``load_drivers`` (ctypes, in a thread beside ImGui's import) leaves the ICD loader with the
    platforms pyopencl then lists: the device chosen and every device listed are the same as without."""
    code = (
        "import os\n"
        "os.environ['PYOPENGL_PLATFORM'] = 'egl'\n"
        "from app.cl.device import all_devices, describe_devices, load_drivers, select_device\n"
        "{pre}"
        "print(select_device(None).label, '|', describe_devices(all_devices()))\n")
    plain = _python(code.format(pre=""))
    loaded = _python(code.format(pre="assert load_drivers() is True\n"))
    assert plain.returncode == 0 and loaded.returncode == 0, plain.stderr + loaded.stderr
    assert loaded.stdout == plain.stdout and plain.stdout.strip()


def test_map_native_then_the_light_import():
    """ImGui's library mapped first (nothing of it run), then the light import as before; once the
    package is imported there is nothing to map."""
    res = _python(
        "import sys\n"
        "from app.ui import bundle\n"
        "first = bundle.map_native()\n"
        "assert 'imgui_bundle' not in sys.modules\n"
        "from app.ui.bundle import imgui\n"
        "ctx = imgui.create_context(); imgui.destroy_context(ctx)\n"
        "print(first, bundle.map_native(), 'glfw' in sys.modules, 'imgui_bundle.immapp' in sys.modules)\n")
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["True", "False", "False", "False"]


def test_egl_display_initialized_ahead_then_the_surface():
    """The display initialized through ctypes (a thread's work at start-up) is the one the surface
    then opens, on the same platform; a platform it does not pre-initialize is left alone."""
    res = _python(
        "import os\n"
        "os.environ['PYOPENGL_PLATFORM'] = 'egl'\n"
        "from app.window.egl_headless import EglSurface, initialize_display\n"
        "name = EglSurface._candidates()[0]\n"
        "ok = initialize_display(name)\n"
        "s = EglSurface((32, 16))\n"
        "print(name, ok, s.egl_platform == name, s.framebuffer_size, initialize_display('device'))\n"
        "s.close()\n")
    assert res.returncode == 0, res.stderr
    name, ok, same, *rest = res.stdout.split()
    assert same == "True" and rest == ["(32,", "16)", "False"]
    assert ok == ("True" if name in ("surfaceless", "default") else "False")
