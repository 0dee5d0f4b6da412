"""What the panel keeps between redraws (held by the UI host)."""
from __future__ import annotations


class PanelState:
    """What the panel keeps between redraws (held by the UI host)."""

    def __init__(self) -> None:
        self.failures = 0
        self.fill = False  # the panel takes the whole window (no scene beside it: glshare attach)
        self.last_failure = ""
        self.tab = "ownership"  # the tab shown (its key): the model builds its part then
        self.select: str | None = None  # a tab to bring to the front at the next redraw
        self.chosen: int | None = None  # the frame the user chose; None: follow the run
        self.zoom: tuple[float, float] | None = None  # the timeline's view (ms from the frame's start)
        self.was_paused = False  # resuming releases the chosen frame
        self.auto_span = 0.0  # the timeline's fitted span (ms): changes only when frames outgrow it
        self._small_for = 0
        self._small_max = 0.0
        self.window: tuple[int, int, int, int] | None = None  # the panel's rectangle (ImGui pixels)
        self.collapsed = False
        self.scroll_y = 0.0
        self.spots: dict[str, tuple[int, int, str]] = {}  # where some texts were drawn (tests)
        # the timeline's hovered bar at the last redraw: (frame, bar, the names of the links it lights)
        self.hot: tuple[int | None, int, tuple[str, ...]] | None = None
        self.rects: dict[str, tuple[int, int, int, int]] = {}  # where some items were drawn (tests)
        self._was_teaching = False
        self._stop_shown: int | None = None
