"""The panel's model: typed, frozen parts built from the session's read-only view at each redraw.

``PanelData.update(view)`` is called at every redraw of the panel (2 to 5 times a second and after
any input) and returns a ``PanelModel``; the panel (``app/ui/panel/``) reads its attributes and
nothing else. Frame records are ingested incrementally (each is read once) into fixed numpy rings
(``HISTORY`` frames), so an update costs about the same at frame 10 and at frame 100 000; the
timeline of a frame is built once and kept while that frame is shown. Each tab builds its own part
(app/ui/tabs/): the tab shown, and those built at every redraw. Nothing here holds a GL or CL object.

The header, the owners and the timeline always describe the same frame (``Header.frame``): the
frame the user chose (clicking the timing plot, or the slider while paused), the frame in progress
(teaching mode, or the frame a ``--strict`` stop abandoned), else the newest frame whose
measurements are all in (its CL profile read and, where the GL timer sampled it, its GL passes).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from app.ui import tabs
from app.ui.model.findings import RunFindings
from app.ui.model.history import PLOT_FRAMES, SERIES, PhaseHistory
from app.ui.model.options import OptionRow, option_rows
from app.ui.model.parts import ClockInfo, Column, ControlsPart, Header, PanelModel, Timing
from app.ui.model.timeline import NOT_TIMED, Row, Timeline, build_timeline
from app.ui.tabs import TabInput

# how many records further back than the GL timer's period the panel looks for a timed frame
# (FrameRecord.sampled: frames shorter than 1 ms are timed one per ms of their time; at 0.1 ms, one in ten)
SAMPLE_REACH = 32


def _find(records, index: int):
    """The kept record of frame ``index`` (records are consecutive frames, oldest first), or None."""
    if not records:
        return None
    pos = index - records[0].index
    if 0 <= pos < len(records) and records[pos].index == index:
        return records[pos]
    for rec in reversed(records):  # a gap (should not happen): search
        if rec.index == index:
            return rec
    return None


class PanelData:
    """Keeps what the panel shows between redraws; ``update(view)`` returns the PanelModel.

    A view fed from elsewhere than a session (glshare attach: ``app/attach/panel.py``) may narrow
    the tabs (``tab_keys``: those built and drawn, () every one), add lanes to the timeline of a
    record (``rows_of(record)``: the timeline model's ``Row``s, after the shared objects' lanes),
    show glshare's four lanes only where they hold a bar (``measured_lanes``), and give the median /
    p95 table's columns (``columns_of(records)``: ``Column``s in place of the phases')."""

    def __init__(self, *, tab_keys: tuple[str, ...] = (), rows_of: Callable[[Any], tuple[Row, ...]] | None = None,
                 measured_lanes: bool = False, columns_of: Callable[[Any], tuple[Column, ...]] | None = None) -> None:
        self.tab_keys = tab_keys
        self.rows_of = rows_of
        self.measured_lanes = measured_lanes
        self.columns_of = columns_of
        self.history = PhaseHistory()
        self.errors = RunFindings("error")  # the run's, less what "clear" put aside
        self.hazards = RunFindings("hazard")
        self._stats_index = -1  # the newest frame pushed into the statistics
        self.left_out = 0  # frames kept out of the statistics (no period, or stepped)
        self._stats_segment: int | None = None  # the set-up (RunHistory segment) the statistics are of
        self._stats_of = ""  # "scene / backend / sync" of that segment
        self._hazard_base: dict[str, int] = {}
        self._clear = False
        self._timeline_key = None
        self._timeline = Timeline(None)
        self._tab_cache: dict[str, dict] = {}  # each tab's own (TabInput.cache)
        self._options_key: tuple | None = None
        self._options: tuple[OptionRow, ...] = ()

    # -- ingest --------------------------------------------------------------------------------
    def _ingest(self, records) -> None:
        """Push every presented record into the statistics once.

        The statistics hold the frames of one set-up (a switch starts them again: two backends'
        frames never share a median) that have a present-to-present period
        (``FrameRecord.frame_us``): the first frame, the first after a pause, frames stepped while
        paused or in teaching mode have none and are left out (``left_out``), and so is the time
        paused. The newest record waits for its present, which gives its period."""
        new = []
        for rec in reversed(records):
            if rec.index <= self._stats_index:
                break
            new.append(rec)
        new.reverse()
        newest = records[-1] if records else None
        for rec in new:
            if rec.index <= self._stats_index:
                continue
            if rec is newest and not rec.presented_ns:
                break  # its present is still to come
            if rec.segment != newest.segment:  # a set-up switched away from (the last frame's period
                self._stats_index = rec.index  # holds the switch): not the statistics of the run now
                continue
            if rec.segment != self._stats_segment:  # another set-up: its statistics start again
                self.history = PhaseHistory(self.history.n)
                self.left_out = 0
                self._stats_segment = rec.segment
                self._stats_of = f"{rec.scene} / {rec.backend} / {rec.sync}"
            if rec.frame_us is not None:  # a period, at the loop's pace
                self.history.push(rec)
            else:
                self.left_out += 1
            self._stats_index = rec.index

    def clear_findings(self, hazard_counts: Mapping[str, int] | None = None) -> None:
        """"clear": the errors and hazards shown so far are put aside at the next update (the
        report keeps them)."""
        self._clear = True
        self._hazard_base = dict(hazard_counts or {})

    # -- choosing the frame -----------------------------------------------------------------------
    def _described(self, view, records, chosen: int | None):
        """(record, in_progress, chosen) of the frame the panel describes."""
        current = view.current
        stop = view.stop
        if stop is not None and current is not None and current.index == stop.frame:
            return current, True, False
        if view.teaching.active and view.teaching.mid_frame and current is not None and chosen is None:
            return current, True, False
        if chosen is not None:
            rec = _find(records, chosen)
            if rec is not None:
                return rec, False, True
        timer = view.gl_timer
        every = timer.every if timer.enabled and not view.paused else 1  # paused: the frame stepped last
        pending = timer.oldest_pending_frame
        complete = None
        # the newest complete frame timed on both APIs (``FrameRecord.sampled``: one per ms of frame
        # time where frames are shorter; the GL timer's one in ``every`` on software GL),
        # else the newest complete one
        for k, rec in enumerate(reversed(records)):
            if k > 2 * every + SAMPLE_REACH:
                break
            gl_sampled = timer.enabled and rec.sampled and (timer.every == 1 or rec.index % timer.every == 0)
            if rec.events or (gl_sampled and pending is not None and rec.index >= pending):
                continue
            if complete is None:
                complete = rec
            if (gl_sampled or every == 1) and rec.sampled:
                if complete.index - rec.index < every + SAMPLE_REACH:
                    return rec, False, False
                break
        return complete, False, False

    def _timeline_for(self, rec, records, view, in_progress: bool) -> Timeline:
        if rec is None:
            return Timeline(None)
        t = view.teaching
        teaching = t.active and (t.mid_frame or t.step_index > 0) and (in_progress or rec is records[-1])
        current = t.last if teaching else ""
        upcoming = t.next if teaching and t.mid_frame else ""
        timer = view.gl_timer
        gl_note = ""
        if not rec.gl_passes:
            if not timer.enabled:
                gl_note = f"not timed ({timer.sampling})"
            elif not rec.sampled:
                gl_note = NOT_TIMED
            elif timer.every > 1 and rec.index % timer.every:
                gl_note = f"not timed on this frame ({timer.sampling})"
            elif in_progress or (timer.oldest_pending_frame is not None and rec.index >= timer.oldest_pending_frame):
                gl_note = "timer results not in yet"
        nxt = _find(records, rec.index + 1) if not in_progress else None
        live = {o.label: o.state for o in view.owners} if in_progress else None
        clock = view.clock_map  # its offsets tighten as records are harvested: the bars move with them
        key = (rec.index, id(rec), in_progress, len(rec.phases), len(rec.cl_profile), rec.unstamped, len(rec.gl_passes),
               len(rec.owners), len(rec.hazards), len(rec.errors), nxt is not None, current, upcoming,
               tuple(sorted(live.items())) if live else None, gl_note,
               (clock.cl.offset, clock.gl.offset) if clock is not None else None)
        rows = self.rows_of(rec) if self.rows_of is not None else ()
        key += (id(rows),)
        if key != self._timeline_key:
            stop = view.stop if in_progress and view.stop is not None and view.stop.frame == rec.index else None
            self._timeline = build_timeline(rec, view.clock_map, next_rec=nxt, in_progress=in_progress, live=live,
                                            current_phase=current, next_phase=upcoming, gl_note=gl_note, stop=stop,
                                            rows=rows, measured_lanes=self.measured_lanes)
            self._timeline_key = key
        return self._timeline

    # -- parts ---------------------------------------------------------------------------------------
    def _timing(self, records) -> Timing:
        frames, data = self.history.ordered()  # NaN (a missing phase) is a gap in ImPlot's line
        frames, data = frames[-PLOT_FRAMES:], data[:, -PLOT_FRAMES:]
        return Timing(frames, {name: data[k] for k, name in enumerate(SERIES)}, self.history.stats(),
                      int(data.shape[1]), min(self.history.count, self.history.n), self.left_out,
                      records[0].index if records else None, records[-1].index if records else None,
                      self._stats_of, self.columns_of(records) if self.columns_of is not None else ())

    def _header(self, view, rec, records, timing: Timing, in_progress: bool, chosen: bool) -> Header:
        """The header names the set-up of the frame it describes (as the timeline does); the title is
        the scene's now (Scene.describe), shown only when that frame is of the set-up now."""
        s = view.setup
        med = timing.stats["frame"][0]
        clock = ClockInfo.of(view.clock)
        segment = view.history.segment
        now = rec is None or segment is None or rec.segment == segment.index
        scene, backend, sync = (s.scene, s.backend, s.sync) if rec is None else (rec.scene, rec.backend, rec.sync)
        return Header(
            scene, s.scene_title if now else "", backend, sync, rec.index if rec is not None else None,
            records[-1].index if records else None, chosen, in_progress, view.paused, view.teaching.active,
            med, 1000.0 / med if med > 0 else 0.0, clock.cl_uncertainty_us, clock.gl_uncertainty_us,
            self.errors.total, self.hazards.total, view.status, view.stop,
            setup_now="" if now else f"{s.scene} / {s.backend} / {s.sync}", notes=view.notes)

    def _controls(self, view) -> ControlsPart | None:
        s, c = view.setup, view.controls
        if c is None:
            return None
        tw = view.trace_written or {}
        if view.scene_options != self._options_key:  # the scene's options: rows again when one changed
            self._options, self._options_key = option_rows(view.scene_options), view.scene_options
        return ControlsPart(s.scene, s.backend, s.sync, c.scenes, c.backends, c.syncs, c.sizes, c.size, s.vsync,
                            s.headless, view.paused, view.teaching.active, str(tw.get("path", "")),
                            str(tw.get("error", "")), self._options)

    def _tabs(self, view, rec, shown: str, lab: Mapping | None, ui_caps: Mapping) -> dict:
        """The parts of the tabs built at every redraw, and of the tab ``shown``."""
        parts = {}
        for tab in tabs.table():
            if self.tab_keys and tab.key not in self.tab_keys:
                continue
            if tab.always or tab.key == shown:
                parts[tab.key] = tab.build(TabInput(view, rec, self.errors, self.hazards, self._hazard_base, lab,
                                                    ui_caps, self._tab_cache.setdefault(tab.key, {}),
                                                    self.rows_of(rec) if self.rows_of is not None and rec is not None
                                                    else ()))
        return parts

    # -- all of it -------------------------------------------------------------------------------------
    def update(self, view, *, tab: str = "", lab: Mapping | None = None, ui_caps: Mapping | None = None,
               chosen: int | None = None) -> PanelModel:
        """The panel's model of one redraw, from the session's read-only view. ``chosen``: the frame
        the user picked (None: follow the run). ``tab``: the tab shown (its part is built only then)."""
        history = view.history
        records = history.records
        self._ingest(records)
        if self._clear:
            self.errors.clear(history.errors)
            self.hazards.clear(history.hazards)
            self._clear = False
        self.errors.read(history.errors)  # the run's findings, folded whatever the ring keeps
        self.hazards.read(history.hazards)
        rec, in_progress, was_chosen = self._described(view, records, chosen)
        timing = self._timing(records)
        return PanelModel(header=self._header(view, rec, records, timing, in_progress, was_chosen), timing=timing,
                          timeline=self._timeline_for(rec, records, view, in_progress), controls=self._controls(view),
                          teaching=view.teaching, tabs=self._tabs(view, rec, tab, lab, ui_caps or {}),
                          tab_keys=self.tab_keys)
