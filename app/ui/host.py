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
from app.window import layout

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
        self.last_model = None  # the PanelModel of the last redraw (tests, the bench)
        self.lab_results: dict | None = None
        self.failures = 0
        self._hazard_counts: dict = {}

    @property
    def wants_keyboard(self) -> bool:
        return self.layer.wants_keyboard

    @property
    def wants_mouse(self) -> bool:
        return self.layer.wants_mouse

    def mark_dirty(self) -> None:
        self.layer.mark_dirty()

    def takes_key(self, key: str) -> bool:
        """The panel, not the run, acts on "right" while it shows a chosen frame older than the
        newest kept: it shows the next one (at the newest, "right" steps the run and the panel
        chooses the new frame: app/ui/panel/timeline.py ``_keys``)."""
        m = self.last_model
        if key != "right" or not self.show_panel or self.state.chosen is None or m is None:
            return False
        newest = m.timing.newest_kept
        return m.header.chosen and newest is not None and self.state.chosen < newest

    @property
    def redraws(self) -> int:
        return self.layer.redraws

    def caps(self) -> dict:
        """What the Capabilities tab says about the panel itself."""
        layer = self.layer
        return {"panel_refresh": f"{layer.redraw_hz:g} Hz, composited by {layer.composite_path}"}

    def clear_findings(self) -> str:
        """The Errors and Hazards tabs start again from nothing (the report keeps everything)."""
        self.model.clear_findings(self._hazard_counts)
        self.mark_dirty()
        return "errors and hazards cleared (the report keeps them)"

    def scene_viewport(self, fb_size: tuple[int, int]) -> tuple[int, int, int, int] | None:
        """Where the scene should be drawn this frame (glViewport's x, y, w, h) so the panel does not
        cover it: the part of the window right of the panel, or None (the whole framebuffer: no
        panel, the panel collapsed, or too little room beside it)."""
        state = self.state
        if not self.show_panel or state.collapsed:
            return None
        right = state.window[2] if state.window is not None else layout.MARGIN + layout.default_width(fb_size[0])
        return layout.scene_viewport(fb_size, right)

    def draw(self, view_fn: Callable[[], object], request: Callable, span=None,
             scene_rect: tuple[int, int, int, int] | None = None) -> bool:
        """Draw the panel (or the overlay) over the bound framebuffer. ``view_fn()`` gives the
        session's view, taken only when the cached layer is redrawn; ``span()`` wraps the GL pass
        of a redraw (the GL timer). ``scene_rect``: the only part of the framebuffer the scene drew
        into this frame (GL x, y, w, h; None: all of it), so the panel's pixels outside it, still
        there from the last frame where the swap keeps the back buffer, need no copy. Returns True
        when ImGui ran."""

        def build() -> None:
            view = view_fn()
            self._hazard_counts = view.hazard_counts
            if self.show_panel:
                self._panel(view, request)
            else:
                self._overlay(view)

        return self.layer.draw(build, span=span or contextlib.nullcontext, scene_rect=scene_rect)

    def _panel(self, view, request) -> None:
        from app.ui.model import empty_model
        from app.ui.panel import draw_panel

        state = self.state
        if state.was_paused and not view.paused:
            state.chosen = None  # resumed: the panel follows the run again
        state.was_paused = view.paused
        try:
            model = self.model.update(view, tab=state.tab, lab=self.lab_results, ui_caps=self.caps(),
                                      chosen=state.chosen)
            if state.chosen is not None and not model.header.chosen:
                state.chosen = None  # the chosen frame is no longer kept
        except Exception as exc:  # noqa: BLE001 - the panel never stops the loop
            self.failures += 1
            log.debug("panel model failed: %s", exc, exc_info=True)
            model = empty_model(f"{type(exc).__name__}: {exc}")
        self.last_model = model
        draw_panel(model, state, request)

    def _overlay(self, view) -> None:
        """The minimal overlay (--no-panel): a few figures, cheap enough for every frame."""
        from app.ui import overlay

        history = view.history
        records = history.records
        segment = history.segment.index if history.segment is not None else None
        recent = [r.frame_us / 1e3 for r in itertools.islice(reversed(records), 120)
                  if r.frame_us is not None and r.segment == segment]  # this set-up's, present to present
        last = history.loop_errors[-1] if history.loop_errors else next(
            (r.errors[-1] for r in itertools.islice(reversed(records), 120) if r.errors), None)
        hazard = next((r.hazards[-1] for r in itertools.islice(reversed(records), 120) if r.hazards), None)
        s = view.setup
        overlay.draw_overlay(overlay.OverlayModel(
            s.scene_title, s.backend, s.sync, view.paused, view.frame,
            statistics.median(recent) if recent else 0.0,
            history.totals["errors"] + history.loop_errors_total, last.message if last else "",
            history.totals["hazards"], f"{hazard.case} on {hazard.label} ({hazard.where}), frame {hazard.frame}"
            if hazard else "", view.status, view.stop.reason if view.stop is not None else ""))

    def close(self) -> None:
        self.layer.close()


