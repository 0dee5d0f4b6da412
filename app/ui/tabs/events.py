"""The Events tab: the calls of the frame the panel describes in the order they began, as
RenderDoc's event browser lists a frame's calls (the CPU's phases and waits, the CL commands as the
device ran them, the GL passes; each with its start, duration and the clock it was measured on),
and the statistics of every phase and command over the kept frames of the set-up now (count, min,
median, p95, max).

A call opened shows its arguments, each as the scheduler recorded it and nothing else (``args``):
a CL command's event handle, queue, command type and execution status as its event said when its
stamps were read (``FrameRecord.commands``), its four device stamps and the latencies between
them, the CPU call that enqueued it and what that call returned (CL_SUCCESS where the frame
recorded no error of it), the objects the hand-over took (``FrameRecord.owner_labels``) and the
bytes the frame moved. What the record does not hold is said to be not recorded, never rebuilt.

Names: app/trace/names.py (the CPU's call "enqueue kernel", the device's run "kernel"). Times:
host ns; CL device and GL stamps put on the host clock by the offsets of ``view.clock_map``."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from app.errors import cl_error_name
from app.schedule.flows import CL_STEPS
from app.schedule.owners import WHERE_PHASE
from app.ui.bundle import imgui, imgui_ctx
from app.ui.legend import cpu_name, device_name
from app.ui.panel.widgets import DIM, OWN_TABLE, duration_label, hover_tip
from app.ui.tabs import Tab, TabInput

CPU, WAIT, DEVICE, GL = "CPU", "CPU wait", "CL device", "GL timer"  # the clock each event was measured on
MAX_ROWS = 64  # events listed of one frame (a frame has about a dozen)


# CL_EVENT_COMMAND_TYPE's names: OpenCL 3.0.16's (through pyopencl's table), and those of the
# extensions' commands glshare enqueues (cl_khr_external_memory, cl_khr_semaphore)
EXTENSION_COMMANDS = {0x2042: "SEMAPHORE_WAIT_KHR", 0x2043: "SEMAPHORE_SIGNAL_KHR",
                      0x2047: "ACQUIRE_EXTERNAL_MEM_OBJECTS_KHR", 0x2048: "RELEASE_EXTERNAL_MEM_OBJECTS_KHR"}
NOT_RECORDED = "not recorded"


@dataclass(frozen=True, slots=True)
class Event:
    name: str
    source: str  # CPU, WAIT, DEVICE or GL
    start_ms: float  # from the frame's start (host clock)
    ms: float
    args: tuple[tuple[str, str], ...] = ()  # (argument, value) as recorded


def command_type_name(value: int) -> str:
    """CL_COMMAND_<name> of a CL_EVENT_COMMAND_TYPE value."""
    name = EXTENSION_COMMANDS.get(value)
    if name is None:
        try:
            name = cl.command_type.to_string(value)
        except ValueError:
            return f"0x{value:04X}"
    return f"CL_COMMAND_{name}"


def returned(rec, phase: str) -> str:
    """What the phase's calls returned, from the frame's errors: the first recorded error of the
    phase (its name and code), else CL_SUCCESS where its call was made, else not called."""
    for err in rec.errors:
        where = err.where
        if where.startswith("profile "):
            continue  # the command's execution, not the call
        if WHERE_PHASE.get(where, WHERE_PHASE.get(where.rsplit(".", 1)[-1], "")) == phase:
            return f"{err.name} ({err.code})" if err.code is not None else err.name
    return "CL_SUCCESS" if rec.counts.get(phase) else "not called"


def _ns(v: int | None) -> str:
    return "not read (--trace reads it)" if v is None else f"{v:,} ns"


def _dt(ns: int) -> str:
    """A latency between two stamps, to the ns the stamps give."""
    if abs(ns) < 1_000:
        return f"{ns} ns"
    return f"{ns / 1e3:.2f} us" if abs(ns) < 1_000_000 else f"{ns / 1e6:.3f} ms"


def command_args(rec, name: str, cl_offset: int) -> tuple[tuple[str, str], ...]:
    """The CL command ``name``'s arguments as recorded: its call, its event's answers, its stamps."""
    q, sub, st, en = rec.cl_profile[name]
    call = rec.phases.get(name)
    args = [("enqueued by", f"{cpu_name(name)} (the CPU's call)"), ("returned", returned(rec, name))]
    info = (rec.commands or {}).get(name)
    if info is not None:
        status = "CL_COMPLETE" if info.status == 0 else cl_error_name(info.status)
        args += [("event", f"0x{info.event:x}"), ("queue", f"0x{info.queue:x}"),
                 ("command type", command_type_name(info.command_type)), ("execution status", status)]
    else:
        args.append(("event, queue, type, status", NOT_RECORDED))
    if name in ("acquire", "release"):
        args.append(("objects", ", ".join(rec.owner_labels) or "none"))
    args += [("bytes moved (frame)", f"{rec.bytes_moved:,}"), ("wait list", NOT_RECORDED),
             ("queued", _ns(q)), ("submit", _ns(sub)), ("start", _ns(st)), ("end", _ns(en))]
    if sub is not None:
        args += [("queued -> submit", _dt(sub - q)), ("submit -> start", _dt(st - sub))]
    args += [("queued -> start", _dt(st - q)), ("start -> end (ran)", _dt(en - st))]
    if call is not None:  # the CPU's call to the device's start, on the host clock
        args.append(("call -> start", _dt(st + cl_offset - call[0])))
    return tuple(args)


def call_args(rec, name: str) -> tuple[tuple[str, str], ...]:
    """A CPU phase's arguments as recorded: what it returned, the command it enqueued."""
    s, e = rec.phases[name]
    args = [("host", f"{s:,} -> {e:,} ns")]
    if name in CL_STEPS:
        args.append(("returned", returned(rec, name)))
        args.append(("enqueued", device_name(name) if name in rec.cl_profile else
                     "no device stamps" if name in rec.unstamped else "no command profiled"))
        if name in ("acquire", "release"):
            args.append(("objects", ", ".join(rec.owner_labels) or "none"))
    return tuple(args)


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


def frame_events(rec, cl_offset: int = 0, gl_offset: int = 0, rows=()) -> tuple[Event, ...]:
    """``rec``'s calls in the order they began (ms from its start on the host clock); ``rows``: the
    timeline's added rows (``Row``: glshare attach's threads and queues), each bar an event measured
    by its row."""
    t0 = rec.start_ns
    out = [(cpu_name(name), CPU, s, e, call_args(rec, name)) for name, (s, e) in rec.phases.items()]
    out += [(name, WAIT, s, e, (("host", f"{s:,} -> {e:,} ns"),)) for name, s, e in rec.waits]
    out += [(device_name(name), DEVICE, st + cl_offset, en + cl_offset, command_args(rec, name, cl_offset))
             for name, (_q, _sub, st, en) in rec.cl_profile.items()]
    out += [(name, GL, s + gl_offset, e + gl_offset, (("GL", f"{s:,} -> {e:,} ns"),))
             for name, s, e in rec.gl_passes]
    out += [(name, row.name, s, e, (("host", f"{s:,} -> {e:,} ns"), ("row", row.title)))
            for row in rows for name, s, e in row.bars]
    out.sort(key=lambda r: (r[2], -r[3]))
    return tuple(Event(n, src, (s - t0) / 1e6, (e - s) / 1e6, args) for n, src, s, e, args in out[:MAX_ROWS])


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
    return Events(rec.index, frame_events(rec, cl_off, gl_off, inp.rows), cache["stats"], cache["of"])


def _ms(v: float) -> str:
    return duration_label(v)


SPAN_ROW = int(imgui.SelectableFlags_.span_all_columns)
FIXED, STRETCH = int(imgui.TableColumnFlags_.width_fixed), int(imgui.TableColumnFlags_.width_stretch)


def _signed(v: int) -> int:
    """An ImGuiID (unsigned 32-bit) as ImGui's storage keeps an int."""
    return v - (1 << 32) if v >= 1 << 31 else v


def _args(ev: Event) -> None:
    """The chosen call's arguments, as recorded: a row each."""
    imgui.spacing()
    imgui.text_unformatted(f"{ev.name} ({ev.source}): its arguments")
    with imgui_ctx.begin_table("##args", 2, OWN_TABLE) as table:
        if table:
            imgui.table_setup_column("argument", FIXED)
            imgui.table_setup_column("value", STRETCH)  # what is left of the tab's width: a long value wraps
            for name, value in ev.args:
                imgui.table_next_row()
                imgui.table_next_column()
                imgui.text_colored(DIM, name)
                imgui.table_next_column()
                imgui.text_wrapped(value)


def draw(part: Events, model, request) -> None:
    imgui.text_unformatted(f"frame {part.frame}: its calls in the order they began (click one: its arguments)")
    hover_tip("CPU: the main thread's call (host clock); CL device: the command as the device ran it "
              "(profiling stamps); GL timer: a GL pass (timer queries); start: ms from the frame's start. "
              "A call clicked shows its arguments under the list, as the scheduler recorded them")
    storage, slot = imgui.get_state_storage(), imgui.get_id("##chosen event")
    chosen = storage.get_int(slot, 0)  # the chosen call's id (its name and clock: kept from frame to frame)
    shown = None
    with imgui_ctx.begin_table("##events", 4, OWN_TABLE) as table:
        if table:
            for title in ("start", "call", "took", "measured by"):
                imgui.table_setup_column(title)
            imgui.table_headers_row()
            repeats: dict[str, int] = {}
            for ev in part.events:
                key = f"{ev.name}##{ev.source}"
                n = repeats[key] = repeats.get(key, -1) + 1
                key += f"#{n}" if n else ""  # one ImGui id per row (attach's rows repeat a call's name)
                row = _signed(imgui.get_id(key))
                if shown is None and (row == chosen or (not chosen and ev.source == DEVICE and ev.name == "kernel")):
                    shown = ev  # (none chosen yet: the kernel's)
                imgui.table_next_row()
                imgui.table_next_column()
                if imgui.selectable(f"{ev.start_ms:.3f}##{key}", ev is shown, SPAN_ROW)[0]:
                    storage.set_int(slot, row)
                imgui.table_next_column()
                imgui.text_unformatted(ev.name)
                imgui.table_next_column()
                imgui.text_unformatted(_ms(ev.ms))
                imgui.table_next_column()
                imgui.text_colored(DIM, ev.source)
    if shown is not None and shown.args:
        _args(shown)
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
