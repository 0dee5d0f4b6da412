"""The Events tab: the calls of the frame the panel describes in the order they began, as
RenderDoc's event browser lists a frame's calls (the CPU's phases and waits, the CL commands as the
device ran them, the GL passes; each with its start, duration and the clock it was measured on),
and the statistics of every phase and command over the kept frames of the set-up now (count, min,
median, p95, max).

Names: app/trace/names.py (the CPU's call "enqueue kernel", the device's run "kernel"). Times:
host ns; CL device and GL stamps put on the host clock by the offsets of ``view.clock_map``."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.ui.bundle import imgui, imgui_ctx
from app.ui.legend import cpu_name, device_name
from app.ui.panel.widgets import DIM, OWN_TABLE, duration_label, hover_tip
from app.ui.tabs import Tab, TabInput

CPU, WAIT, DEVICE, GL = "CPU", "CPU wait", "CL device", "GL timer"  # the clock each event was measured on
MAX_ROWS = 64  # events listed of one frame (a frame has about a dozen)


@dataclass(frozen=True, slots=True)
class Event:
    name: str
    source: str  # CPU, WAIT, DEVICE or GL
    start_ms: float  # from the frame's start (host clock)
    ms: float


@dataclass(frozen=True, slots=True)
class Stat:
    """One phase's or command's durations (ms) over the kept frames of the set-up now."""

    name: str
    source: str
    count: int
    min: float
    median: float
    p95: float
    max: float


@dataclass(frozen=True, slots=True)
class Events:
    frame: int
    events: tuple[Event, ...]
    stats: tuple[Stat, ...]
    stats_of: str  # "scene / backend / sync, N frames"


def frame_events(rec, cl_offset: int = 0, gl_offset: int = 0) -> tuple[Event, ...]:
    """``rec``'s calls in the order they began (ms from its start on the host clock)."""
    t0 = rec.start_ns
    rows = [(cpu_name(name), CPU, s, e) for name, (s, e) in rec.phases.items()]
    rows += [(name, WAIT, s, e) for name, s, e in rec.waits]
    rows += [(device_name(name), DEVICE, st + cl_offset, en + cl_offset)
             for name, (_q, _sub, st, en) in rec.cl_profile.items()]
    rows += [(name, GL, s + gl_offset, e + gl_offset) for name, s, e in rec.gl_passes]
    rows.sort(key=lambda r: (r[2], -r[3]))
    return tuple(Event(n, src, (s - t0) / 1e6, (e - s) / 1e6) for n, src, s, e in rows[:MAX_ROWS])


def statistics(records) -> tuple[Stat, ...]:
    """Each CPU phase (by its call's name) and each CL command (by the device's run) over ``records``."""
    samples: dict[tuple[str, str], list[float]] = {}
    for rec in records:
        for name, (s, e) in rec.phases.items():
            samples.setdefault((cpu_name(name), CPU), []).append((e - s) / 1e6)
        for name, (_q, _sub, st, en) in rec.cl_profile.items():
            samples.setdefault((device_name(name), DEVICE), []).append((en - st) / 1e6)
    out = []
    for (name, source), values in samples.items():
        a = np.asarray(values)
        out.append(Stat(name, source, int(a.size), float(a.min()), float(np.median(a)), float(np.percentile(a, 95)),
                        float(a.max())))
    return tuple(out)


def build(inp: TabInput) -> Events | None:
    rec, view = inp.record, inp.view
    if rec is None:
        return None
    clock = view.clock_map
    cl_off, gl_off = (clock.cl.offset, clock.gl.offset) if clock is not None else (0, 0)
    records = view.history.records
    newest = records[-1] if records else None
    key = (newest.index if newest is not None else None, newest.segment if newest is not None else None)
    cache = inp.cache
    if cache.get("key") != key:  # the statistics: again only when a frame came in
        kept = [r for r in records if newest is not None and r.segment == newest.segment and not r.events
                and not r.stepped]
        cache["key"] = key
        cache["stats"] = statistics(kept)
        cache["of"] = (f"{newest.scene} / {newest.backend} / {newest.sync}, {len(kept)} kept frames"
                       if newest is not None else "")
    return Events(rec.index, frame_events(rec, cl_off, gl_off), cache["stats"], cache["of"])


def _ms(v: float) -> str:
    return duration_label(v)


def draw(part: Events, model, request) -> None:
    imgui.text_unformatted(f"frame {part.frame}: its calls in the order they began")
    hover_tip("CPU: the main thread's call (host clock); CL device: the command as the device ran it "
              "(profiling stamps); GL timer: a GL pass (timer queries); start: ms from the frame's start")
    with imgui_ctx.begin_table("##events", 4, OWN_TABLE) as table:
        if table:
            for title in ("start", "call", "took", "measured by"):
                imgui.table_setup_column(title)
            imgui.table_headers_row()
            for ev in part.events:
                imgui.table_next_row()
                imgui.table_next_column()
                imgui.text_unformatted(f"{ev.start_ms:.3f}")
                imgui.table_next_column()
                imgui.text_unformatted(ev.name)
                imgui.table_next_column()
                imgui.text_unformatted(_ms(ev.ms))
                imgui.table_next_column()
                imgui.text_colored(DIM, ev.source)
    imgui.spacing()
    imgui.text_unformatted(f"statistics: {part.stats_of}")
    with imgui_ctx.begin_table("##stats", 7, OWN_TABLE) as table:
        if table:
            for title in ("phase / command", "by", "n", "min", "median", "p95", "max"):
                imgui.table_setup_column(title)
            imgui.table_headers_row()
            for s in part.stats:
                imgui.table_next_row()
                for k, text in enumerate((s.name, s.source, str(s.count), _ms(s.min), _ms(s.median), _ms(s.p95),
                                          _ms(s.max))):
                    imgui.table_next_column()
                    if k == 1:
                        imgui.text_colored(DIM, text)
                    else:
                        imgui.text_unformatted(text)


TAB = Tab("events", "Events", 35, build, draw, waiting="(no frame yet)")
