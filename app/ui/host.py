"""The UI host: the ImGui layer over the frame, the full panel or the minimal overlay, and the
panel's own state between redraws. It gets read-only views of the session and hands commands
back through ``request``; it never calls the session.
"""
from __future__ import annotations

import contextlib
import itertools
import logging
import statistics
from typing import Callable

from app.ui.imgui_layer import ImGuiLayer, default_panel_hz

log = logging.getLogger(__name__)


class UiHost:
    def __init__(self, surface, gl_info, *, show_panel: bool = True, panel_hz: float | None = None) -> None:
        from app.ui.model import PanelData
        from app.ui.panel import PanelState

        self.surface = surface
        self.layer = ImGuiLayer(surface, redraw_hz=default_panel_hz(gl_info) if panel_hz is None else panel_hz)
        self.show_panel = show_panel
        self.state = PanelState()
        self.model = PanelData()
        self.lab_results: dict | None = None
        self.failures = 0
        self._done_errors = (-1, 0)

    @property
    def wants_keyboard(self) -> bool:
        return self.layer.wants_keyboard

    @property
    def wants_mouse(self) -> bool:
        return self.layer.wants_mouse

    def mark_dirty(self) -> None:
        self.layer.mark_dirty()

    @property
    def redraws(self) -> int:
        return self.layer.redraws

    def caps(self) -> dict:
        """What the Capabilities tab says about the panel itself."""
        layer = self.layer
        return {"panel_refresh": f"{layer.redraw_hz:g} Hz, composited by {layer.composite_path}"}

    def draw(self, view_fn: Callable[[], object], request: Callable, span=None) -> bool:
        """Draw the panel (or the overlay) over the bound framebuffer. ``view_fn()`` gives the
        session's view, taken only when the cached layer is redrawn; ``span()`` wraps the GL pass
        of a redraw (the GL timer). Returns True when ImGui ran."""

        def build() -> None:
            view = view_fn()
            if self.show_panel:
                self._panel(view, request)
            else:
                self._overlay(view)

        return self.layer.draw(build, span=span or contextlib.nullcontext)

    def _panel(self, view, request) -> None:
        from app.ui.panel import draw_panel

        try:
            snap = self.model.update(view, tab=self.state.tab, lab=self.lab_results, ui_caps=self.caps())
        except Exception as exc:  # noqa: BLE001 - the panel never stops the loop
            self.failures += 1
            log.debug("panel model failed: %s", exc, exc_info=True)
            snap = {"panel_data_error": f"{type(exc).__name__}: {exc}"}
        draw_panel(snap, self.state, request)

    def _overlay(self, view) -> None:
        """The minimal overlay (--no-panel): a few figures, cheap enough for every frame."""
        from app.ui import overlay

        history = view.history
        records = history.records
        recent = [r.frame_us / 1e3 for r in itertools.islice(reversed(records), 120) if r.frame_us]
        last = history.loop_errors[-1] if history.loop_errors else next(
            (r.errors[-1] for r in itertools.islice(reversed(records), 120) if r.errors), None)
        s = view.setup
        overlay.draw_overlay({"scene_desc": s.scene_title, "backend": s.backend, "sync": s.sync, "paused": view.paused,
                              "frame": view.frame, "frame_ms_median": statistics.median(recent) if recent else 0.0,
                              "error_count": history.totals["errors"] + history.loop_errors_total,
                              "last_error": last.message if last else ""})

    def close(self) -> None:
        self.layer.close()
