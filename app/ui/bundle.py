"""imgui-bundle's ImGui and ImPlot without the rest of its package's ``__init__``.

``import imgui_bundle`` loads the native module (all of its bindings) and then, in Python,
everything else the package offers: its GLFW helpers (pyGLFW, which imports cffi and pycparser where
cffi is installed), immapp (asyncio), the notebook patches; each of them a noticeable part of the
start-up (bench/results/README.md, 'Start-up with the panel: imgui-bundle's light import'). The
panel uses ``imgui``, ``imgui_ctx``, ``implot`` and ``implot_ctx`` only, and a headless run has no
GLFW at all: ``load()`` registers the package without running its ``__init__``, loads the native
module and publishes those four as the package does. The panel's modules import them from here
(``from app.ui.bundle import imgui, implot``).

The rest is there on demand: any other attribute asked of ``imgui_bundle`` (``from imgui_bundle
import hello_imgui``, ``imgui_bundle.glfw_utils``) runs the package's own ``__init__`` first
(``complete()``; the window does so before it imports GLFW: ``app/window/glfw_window.py``), so code
that imports ``imgui_bundle`` after ``load()`` sees the whole package. Where the package is already
imported, or the light path fails (a version laid out differently), ``load()`` imports it whole.
"""
from __future__ import annotations

import ctypes
import importlib
import importlib.util
import logging
import os
import sys
import threading
from importlib.machinery import EXTENSION_SUFFIXES
from types import ModuleType

log = logging.getLogger(__name__)

NAME = "imgui_bundle"
_lock = threading.RLock()  # load() and complete() may be called from more than one thread
_init_ran = False  # the package's own __init__ ran (imported whole, or completed)


def _publish(pkg: ModuleType, name: str, module: ModuleType) -> None:
    """As the package's ``__init__`` does: ``imgui_bundle.<name>`` importable, and an attribute."""
    sys.modules[f"{NAME}.{name}"] = module
    if "." not in name:
        setattr(pkg, name, module)


def map_native() -> bool:
    """Map the native module's library (``dlopen`` with the flags an import uses, nothing of it
    run), so that its import afterwards only initialises it: app/commands/run.py does this before
    a thread starts loading the OpenCL drivers, whose ``dlopen`` calls would hold the dynamic
    loader's lock while the import needs it. Returns whether it was mapped (False: not found,
    or the package already imported; the import does everything then, as it would anyway)."""
    if f"{NAME}._imgui_bundle" in sys.modules:
        return False
    spec = importlib.util.find_spec(NAME) if NAME not in sys.modules else None
    if spec is None or not spec.submodule_search_locations:
        return False
    for folder in spec.submodule_search_locations:
        for suffix in EXTENSION_SUFFIXES:
            path = os.path.join(folder, "_imgui_bundle" + suffix)
            if os.path.isfile(path):
                try:
                    ctypes.CDLL(path, mode=sys.getdlopenflags())
                except OSError:
                    return False
                return True
    return False


def _light() -> ModuleType:
    """The package module, registered but not executed, with imgui and implot published."""
    spec = importlib.util.find_spec(NAME)
    if spec is None or spec.origin is None or not spec.submodule_search_locations:
        raise ImportError(f"{NAME} not found as a package")
    pkg = importlib.util.module_from_spec(spec)
    pkg.__getattr__ = _complete_on_demand  # anything not published here: the whole package
    sys.modules[NAME] = pkg
    try:
        native = importlib.import_module(f"{NAME}._imgui_bundle")
        imgui = native.imgui
        _publish(pkg, "imgui", imgui)
        imgui.__path__ = [os.path.join(os.path.dirname(spec.origin), "imgui")]  # as the package does
        _publish(pkg, "imgui.internal", imgui.internal)
        _publish(pkg, "imgui.backends", imgui.backends)
        for attr in ("ImVec2", "ImVec4", "ImColor", "FLT_MIN", "FLT_MAX"):
            setattr(pkg, attr, getattr(imgui, attr))
        implot = native.implot
        _publish(pkg, "implot", implot)
        pkg.imgui_ctx = importlib.import_module(f"{NAME}.imgui_ctx")
        pkg.implot_ctx = importlib.import_module(f"{NAME}.implot_ctx")
    except BaseException:
        for key in [k for k in sys.modules if k == NAME or k.startswith(NAME + ".")]:
            if key != f"{NAME}._imgui_bundle":
                del sys.modules[key]
        raise
    return pkg


def load() -> ModuleType:
    """The ``imgui_bundle`` package with ``imgui``, ``imgui_ctx``, ``implot`` and ``implot_ctx``."""
    global _init_ran
    with _lock:
        pkg = sys.modules.get(NAME)
        if pkg is not None:
            return pkg
        try:
            return _light()
        except Exception as exc:  # noqa: BLE001 - the package laid out differently: import it whole
            log.debug("imgui_bundle: light import failed (%s); importing the whole package", exc)
            pkg = importlib.import_module(NAME)
            _init_ran = True
            return pkg


def complete() -> ModuleType:
    """The whole package: its own ``__init__`` run over what ``load()`` registered (idempotent)."""
    global _init_ran
    with _lock:
        pkg = sys.modules.get(NAME)
        if pkg is None:
            pkg = importlib.import_module(NAME)
        elif not _init_ran and getattr(pkg, "__getattr__", None) is _complete_on_demand:
            del pkg.__getattr__
            with open(pkg.__spec__.origin, "rb") as f:
                code = compile(f.read(), pkg.__spec__.origin, "exec")
            exec(code, pkg.__dict__)  # noqa: S102 - the package's own __init__, in its own namespace
        _init_ran = True
        return pkg


def _complete_on_demand(name: str):
    if name.startswith("__") and name.endswith("__"):  # import machinery probing (__path__ is set)
        raise AttributeError(name)
    pkg = complete()
    try:
        return pkg.__dict__[name]
    except KeyError:
        getattr_ = pkg.__dict__.get("__getattr__")  # the package's own (its lazy pydantic names)
        if getattr_ is not None:
            return getattr_(name)
        raise AttributeError(f"module {NAME!r} has no attribute {name!r}") from None


PUBLISHED = ("imgui", "imgui_ctx", "implot", "implot_ctx")


def __getattr__(name: str):
    """``from app.ui.bundle import imgui`` (and the other three): ``load()``, then the module. A
    module ``__getattr__`` (PEP 562), so that importing this module loads nothing of imgui_bundle
    (app/run.py, app/commands/run.py import it in runs without a UI, where it may not be installed)."""
    if name in PUBLISHED:
        return getattr(load(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
