"""The minimal overlay: frame time, scene, backend and sync mode (the full panel is ui/panel.py)."""
from __future__ import annotations

from imgui_bundle import imgui


def draw_overlay(snap: dict) -> None:
    imgui.set_next_window_pos((8, 8), imgui.Cond_.always.value)
    imgui.set_next_window_bg_alpha(0.65)
    flags = (imgui.WindowFlags_.no_decoration | imgui.WindowFlags_.always_auto_resize
             | imgui.WindowFlags_.no_focus_on_appearing | imgui.WindowFlags_.no_nav | imgui.WindowFlags_.no_inputs)
    imgui.begin("glshare overlay", None, flags.value if hasattr(flags, "value") else flags)
    imgui.text(f"glshare  {snap['scene_desc']}")
    imgui.text(f"backend {snap['backend']}  sync {snap['sync']}{'  (paused)' if snap.get('paused') else ''}")
    ms = snap.get("frame_ms_median", 0.0)
    imgui.text(f"frame {snap['frame']}  {ms:.2f} ms median  ({1000 / ms if ms > 0 else 0:.0f} fps)")
    if snap.get("error_count"):
        imgui.text_colored((1.0, 0.4, 0.3, 1.0), f"errors: {snap['error_count']}  last: {snap['last_error']}")
    imgui.end()
