"""The panel, drawn with imgui-bundle from the panel model (app/ui/model/) only, one module per part:

- ``draw``: ``draw_panel``, the window, and the tab bar of the tabs' table (app/ui/tabs/);
- ``header``, ``controls`` (with the running scene's options), ``timing`` (the plot and its
  median / p95), ``timeline`` (one frame on one clock, and the frame slider);
- ``widgets``: tooltips, combos, the flow of items, labels, flags and colours;
- ``state``: ``PanelState``, what the panel keeps between redraws.
"""
from __future__ import annotations

from app.ui.panel.draw import draw_panel
from app.ui.panel.state import PanelState
from app.ui.panel.widgets import TITLE, duration_label, nice_step, time_label, tooltip

__all__ = ["TITLE", "PanelState", "draw_panel", "duration_label", "nice_step", "time_label", "tooltip"]
