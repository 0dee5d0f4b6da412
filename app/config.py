"""Run configuration: one frozen dataclass built once from the command line and the environment."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

from app.errors import UsageError

DEFAULT_HEADLESS_FRAMES = 120
MAX_IMAGE_SIDE = 16384  # GL 4.x guarantees textures of at least 16384 texels a side
MAX_COUNT = 64 * 1024 * 1024

ROOT = Path(__file__).resolve().parent.parent
# a copy of the kernels or shaders to edit (hot reload) without touching the checkout's
KERNELS_DIR = Path(os.environ.get("GLSHARE_KERNELS_DIR") or ROOT / "kernels")
SHADERS_DIR = Path(os.environ.get("GLSHARE_SHADERS_DIR") or ROOT / "shaders")
ASSETS_DIR = ROOT / "assets"


def parse_count(text: str, *, what: str = "--size") -> int:
    """A count such as 65536, 64k or 1m. Raises UsageError with one line on bad input."""
    clean = text.strip().lower().replace("_", "")
    m = re.fullmatch(r"([0-9]+)([km]?)", clean)  # ASCII digits (\d takes any script's)
    if not m:
        raise UsageError(f"{what} takes a count such as 65536 or 64k, not {text!r}")
    n = int(m.group(1)) * {"": 1, "k": 1024, "m": 1024 * 1024}[m.group(2)]
    if not 1 <= n <= MAX_COUNT:
        raise UsageError(f"{what} {n}: must be between 1 and {MAX_COUNT}")
    return n


def parse_wxh(text: str, *, what: str = "--size", even: bool = False) -> tuple[int, int]:
    """``WxH`` (or one number for a square). Raises UsageError with one line on bad input."""
    clean = text.strip().lower().replace("_", "")
    m = re.fullmatch(r"([0-9]+)(?:x([0-9]+))?", clean)
    if not m:
        raise UsageError(f"{what} takes WxH such as 512x512, not {text!r}")
    w = int(m.group(1))
    h = int(m.group(2) or m.group(1))
    if not (1 <= w <= MAX_IMAGE_SIDE and 1 <= h <= MAX_IMAGE_SIDE):
        raise UsageError(f"{what} {w}x{h}: width and height must be between 1 and {MAX_IMAGE_SIDE}")
    if even and (w % 2 or h % 2):
        raise UsageError(f"{what} {w}x{h}: NV12/P010 frames need an even width and height")
    return (w, h)


def parse_local_size(text: str | None, *, what: str = "--local-size") -> tuple[int, int] | None:
    """``WxH`` (or one number N, meaning Nx1) work-items a group, or "driver"/"auto" (None: the
    driver's choice). Only the form is checked here; the device's limits are checked when a scene
    builds its kernels (app/cl/worksize.py). Raises UsageError with one line on bad input."""
    if text is None:
        return None
    clean = text.strip().lower().replace("_", "")
    if clean in ("driver", "auto", "none", ""):
        return None
    m = re.fullmatch(r"([0-9]+)(?:x([0-9]+))?", clean)
    if not m:
        raise UsageError(f"{what} takes WxH work-items such as 16x16 (or N, or driver), not {text!r}")
    w, h = int(m.group(1)), int(m.group(2) or 1)
    if w < 1 or h < 1:
        raise UsageError(f"{what} {w}x{h}: both sides must be at least 1")
    return (w, h)


STRICT_MODES = ("off", "spec", "all")  # what --strict stops on: nothing, spec violations, advice too


def normalize_strict(value: object) -> str:
    """``"off"``, ``"spec"`` or ``"all"`` from a mode name, a bool (True: "all") or None ("off").

    Raises:
        ValueError: any other value.
    """
    if value is None or value is False:
        return "off"
    if value is True:
        return "all"
    if isinstance(value, str) and value in STRICT_MODES:
        return value
    raise ValueError(f"strict must be one of {', '.join(STRICT_MODES)} (or a bool), not {value!r}")


@dataclass(frozen=True)
class RunConfig:
    """Everything one ``glshare run`` needs, fixed at start (runtime switches make a new copy)."""

    scene: str = "particles"
    backend: str = "auto"
    sync: str = "finish"
    headless: bool = False
    frames: int | None = None
    size: tuple[int, int] | int | None = None
    window_size: tuple[int, int] | None = None  # None: the scene's (Scene.window_size); given: the whole window
    report: Path | None = None
    screenshot: Path | None = None
    trace: Path | None = None
    cl_device: str | None = None
    seed: int = 1
    strict: str = "off"  # "off"; "spec": spec violations stop the run; "all": glshare's advice too (True: "all")
    panel: bool = True
    overlay: bool = True  # False: no ImGui at all (pixel comparisons of the scene alone)
    panel_hz: float | None = None  # panel redraws per second (and at once after input); 0: every frame;
    # None: 5, or 2 on software GL, where a redraw costs the CPU dearly (app/ui/imgui_layer.py)
    vsync: bool = False
    yuv_format: str = "nv12"
    frames_in_flight: int = 2  # how far the CPU may run ahead where the sync mode does not wait (semaphores)
    # frames shorter than this many ms are timed one per interval of their own time (a timed frame's
    # CL stamps read, its GL passes timed; 0: every frame, as a trace): FrameScheduler.stamps_interval_ns
    stamps_ms: float = 1.0
    fps_lines: bool = False  # a frame-rate line on stdout every 2 s (glshare run, unless --quiet)
    video: Path | None = None  # the yuv scene plays this file (PyAV) instead of its test pattern
    local_size: tuple[int, int] | None = None  # work-group W x H for the scenes' kernels; None: the driver's
    round_points: bool = False  # particles drawn as smooth discs instead of squares
    view: str = "sample"  # the particles' start view (app/scenes/particles.VIEWS): the classic sample's, or "side"
    filter: str = "sobel"  # the postprocess scene's filter: "sobel" or "blur"
    blur_radius: int = 2  # the box blur's radius, 0 .. 15

    inject: tuple = ()  # faults made on purpose (app/schedule/faults.py Fault), in frame order

    def __post_init__(self) -> None:
        object.__setattr__(self, "strict", normalize_strict(self.strict))

    @property
    def stops_on_findings(self) -> bool:
        """Whether a finding (--strict) stops the run rather than only being recorded."""
        return self.strict != "off"

    def with_(self, **changes) -> "RunConfig":
        return replace(self, **changes)


class DeviceSelector(str):
    """A ``PLATFORM[:INDEX]`` selector that remembers where it came from (``--cl-device`` or the
    ``GLSHARE_CL_DEVICE`` variable), so that a message names what the user typed."""

    source: str = "--cl-device"

    def __new__(cls, text: str, source: str = "--cl-device") -> "DeviceSelector":
        obj = super().__new__(cls, text)
        obj.source = source
        return obj

    def __reduce__(self):
        return (DeviceSelector, (str(self), self.source))


def cl_device_selector(cli_value: str | None) -> str | None:
    """``--cl-device`` wins over ``GLSHARE_CL_DEVICE``; None means the first device found. The
    selector remembers which of the two it came from (messages name it)."""
    if cli_value:
        return DeviceSelector(cli_value, "--cl-device")
    env = os.environ.get("GLSHARE_CL_DEVICE")
    return DeviceSelector(env, "GLSHARE_CL_DEVICE") if env else None
