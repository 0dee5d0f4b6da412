"""The legend (app/legend.py) as the panel draws it: ImGui's colour forms of its colours.

The panel's modules read the legend through this module (``legend.OWNER_RGB``, ``f4(...)``), so
the names and colours stay in one place below every layer that draws or writes them.
"""
from __future__ import annotations

# what each measured span is called (the CPU's call "enqueue kernel", the device's run "kernel"):
from app.legend import (  # noqa: F401 - the legend, read by the panel's modules as app.ui.legend  # noqa: E402, F401 - the span names
    BOOKKEEPING_RGB,
    CALL_RGB,
    CALL_TITLES,
    CL,
    CPU_NAMES,
    DEVICE_NAMES,
    DIM_RGB,
    ERROR_RGB,
    GL,
    GL_PASS_RGB,
    HANDOVER,
    HAZARD_RGB,
    OK_RGB,
    OWNER_RGB,
    OWNER_TITLES,
    PHASE_RGB,
    RGB,
    TEXT_RGB,
    TO_CL,
    TO_GL,
    WAIT_RGB,
    cpu_name,
    device_name,
    hex_rgb,
    legend,
    owner_state,
)


def u32(rgb: RGB, alpha: int = 255) -> int:
    """ImGui's packed colour (ABGR in a 32-bit int)."""
    r, g, b = rgb
    return (alpha << 24) | (b << 16) | (g << 8) | r


def f4(rgb: RGB, alpha: float = 1.0) -> tuple[float, float, float, float]:
    """ImGui's float colour."""
    return (rgb[0] / 255, rgb[1] / 255, rgb[2] / 255, alpha)
