"""The minimal overlay (``--no-panel``): frame time, scene, backend and sync mode, the last error
and hazard, the last command's status (the full panel is ui/panel/)."""
from __future__ import annotations

from dataclasses import dataclass

from app.ui import legend
from app.ui.bundle import imgui, imgui_ctx
from app.ui.legend import f4


@dataclass(frozen=True, slots=True)
class OverlayModel:
    scene_title: str
    backend: str
    sync: str
    paused: bool
    frame: int
    frame_ms_median: float
    errors: int
    last_error: str
    hazards: int
    last_hazard: str
    status: str = ""
    stop: str = ""


FLAGS = int(imgui.WindowFlags_.no_decoration | imgui.WindowFlags_.always_auto_resize
            | imgui.WindowFlags_.no_focus_on_appearing | imgui.WindowFlags_.no_nav | imgui.WindowFlags_.no_inputs)


def draw_overlay(m: OverlayModel) -> None:
    io = imgui.get_io()
    imgui.set_next_window_pos((8, 8), imgui.Cond_.always.value)
    imgui.set_next_window_size_constraints((0, 0), (max(io.display_size.x - 16, 1), max(io.display_size.y - 16, 1)))
    imgui.set_next_window_bg_alpha(0.65)
    with imgui_ctx.begin("glshare overlay", None, FLAGS):
        imgui.text(f"glshare  {m.scene_title}")
        imgui.text(f"backend {m.backend}  sync {m.sync}{'  (paused)' if m.paused else ''}")
        ms = m.frame_ms_median
        imgui.text(f"frame {m.frame}  {ms:.2f} ms median  ({1000 / ms if ms > 0 else 0:.0f} fps)")
        wrap = min(io.display_size.x - 32, 520)
        with imgui_ctx.push_text_wrap_pos(wrap):
            if m.stop:
                imgui.text_colored(f4(legend.HAZARD_RGB), f"STOPPED: {m.stop}")
            if m.errors:
                imgui.text_colored(f4(legend.ERROR_RGB), f"errors: {m.errors}  last: {m.last_error}")
            if m.hazards:
                imgui.text_colored(f4(legend.HAZARD_RGB), f"hazards: {m.hazards}  last: {m.last_hazard}")
            if m.status:
                imgui.text_colored((0.75, 0.85, 1.0, 1.0), f"> {m.status}")
