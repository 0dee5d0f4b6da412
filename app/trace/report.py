"""The JSON report of a run (``--report``): what ran, where, how often and how long, read from
the run history and the facts of the set-up."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from app.outputs import write_text
from app.schedule.frame import LOOP_PHASES
from app.schedule.history import RunHistory
from app.schedule.owners import owner_summary, owner_timeline
from app.trace.names import CPU_NAMES, DEVICE_NAMES
from app.trace.stats import summary

# 2: cl_device_us entries may be null; cl_unstamped. 3: errors and hazards folded over the whole run
# (case, object, where, first and last frame, count), races, owners, bytes_moved_per_frame, names
SCHEMA = "glshare.report/3"


@dataclass(frozen=True)
class RunFacts:
    """What the outputs say about the machine and the set-up the run ended in."""

    scene: str
    backend: str
    sync: str
    headless: bool
    size: object
    bytes_per_frame: int
    gl: dict
    cl: dict
    backends: list
    extra: dict = field(default_factory=dict)  # how the run ended, start-up time ...


def statistics(records: list, switched_after: bool = False) -> dict:
    """The statistics of one set-up's kept records: every figure over the same frames, those run at
    the loop's pace (``FrameRecord.steady``: stepped frames, in teaching mode or while paused, are
    left out); ``frame`` over those of them with a present-to-present period. ``switched_after``:
    the set-up ended in a switch, made before its last frame's present (whose period holds the
    teardown and the next build: left out of ``frame``)."""
    timed = [r for r in records if r.steady]
    phases = {p: summary(r.phase_us(p) for r in timed) for p in LOOP_PHASES}
    phases["work"] = summary(r.work_us for r in timed)  # acquire start -> render end
    spans_switch = records[-1] if switched_after and records else None
    periods = [r.frame_us for r in timed if r.frame_us is not None and r is not spans_switch]
    phases["frame"] = summary(periods)  # present to present
    cl_us = {}
    for name in ("acquire", "compute", "release"):
        spans = [(r.cl_profile[name][3] - r.cl_profile[name][2]) / 1e3 for r in timed if name in r.cl_profile]
        # null where no frame has a device time for the command (none enqueued, or none stamped): not 0
        cl_us[name] = summary(spans) if spans else None
    # commands the driver returned without device stamps (zero): no device time, not a time of zero
    unstamped = {name: sum(1 for r in timed if name in r.unstamped) for name in ("acquire", "compute", "release")}
    return {"frames_kept": len(records), "frames_in_statistics": len(timed), "frames_with_period": len(periods),
            "phases_us": phases, "cl_device_us": cl_us, "cl_unstamped": unstamped,
            "cl_stamps_shared": shared_stamps(timed), "frames_sampled": sum(1 for r in timed if r.sampled),
            "waits_us": summary(sum(w[2] - w[1] for w in r.waits) / 1e3 for r in timed),
            "bytes_moved_per_frame": summary(r.bytes_moved for r in records)}


def shared_stamps(records: list) -> dict:
    """How many frames' acquire and release carry the kernel's own START and END stamps exactly: a
    driver that stamps a batch of commands with one span (NVIDIA's OpenCL, driver 580, with semaphore
    waits in the batch) gives the hand-over no device time of its own, and
    ``cl_device_us`` then repeats the kernel's for it. Counted so the report says so."""
    both = [r for r in records if "compute" in r.cl_profile]
    out = {"frames": len(both)}
    for name in ("acquire", "release"):
        out[name] = sum(1 for r in both if name in r.cl_profile
                        and r.cl_profile[name][2:] == r.cl_profile["compute"][2:])
    return out


def build_report(history: RunHistory, facts: RunFacts) -> dict:
    """The report. Statistics are per set-up (``segments[i].statistics``): two backends' frames never
    share a median. The top-level ``phases_us``, ``cl_device_us`` and ``waits_us`` are those of the
    last set-up with kept frames, named by ``statistics_of``."""
    records = list(history.records)  # the run's kept history, every set-up's
    totals = history.totals
    counts = {k: totals[k] for k in ("acquire", "compute", "release")}
    if totals["handed_back"]:  # releases outside the frames, for acquisitions a skipped release left
        counts["handed_back"] = totals["handed_back"]
    by_segment: dict[int, list] = {}
    for r in records:
        by_segment.setdefault(r.segment, []).append(r)
    segments = []
    for k, seg in enumerate(history.segments):
        entry = seg.as_dict()
        entry["statistics"] = statistics(by_segment.get(seg.index, []), switched_after=k + 1 < len(history.segments))
        segments.append(entry)
    last = next((e for e in reversed(segments) if e["statistics"]["frames_kept"]), None)
    stats = last["statistics"] if last is not None else statistics([])
    cl_offset = history.clock.cl.offset if history.clock is not None else 0
    return {
        "schema": SCHEMA,
        "scene": facts.scene,
        "backend": facts.backend,
        "sync": facts.sync,
        "headless": facts.headless,
        "frames": totals["frames"],
        "statistics_of": None if last is None else {k: last[k] for k in ("index", "scene", "backend", "sync")},
        "frames_in_statistics": stats["frames_in_statistics"],
        "frames_with_period": stats["frames_with_period"],
        "frame_is": "present to present (phases: acquire, compute, release, render, panel, present); phases_us, "
                    "cl_device_us and waits_us over the frames_in_statistics frames of the set-up statistics_of "
                    "names (stepped frames left out), frame over the frames_with_period of them; "
                    "cl_stamps_shared: of the frames with a kernel profile, how many had the acquire's or the "
                    "release's device stamps equal to the kernel's (the driver stamped the batch, not each command); "
                    "cl_unstamped: of those frames, how many had each command's profile come back with zero stamps "
                    "(the driver timed it not at all: left out of cl_device_us, which is null for a command no "
                    "frame has a device time for); names: what each key of phases_us (the CPU's calls) and "
                    "cl_device_us (the device's execution) measures; frames_sampled: of the frames_in_statistics, how many were timed "
                    "(their CL stamps read, their GL passes timed: frames shorter than --stamps-ms, 1 ms by "
                    "default, are timed one per interval of their own time; cl_device_us is over those)",
        "size": facts.size,
        "bytes_per_frame": facts.bytes_per_frame,
        "gl": facts.gl,
        "cl": facts.cl,
        "counts": counts,
        "phases_us": stats["phases_us"],
        "cl_device_us": stats["cl_device_us"],
        "cl_stamps_shared": stats["cl_stamps_shared"],
        "cl_unstamped": stats["cl_unstamped"],
        "frames_sampled": stats["frames_sampled"],
        "waits_us": stats["waits_us"],
        "bytes_moved_per_frame": stats["bytes_moved_per_frame"],
        "bytes_moved_total": totals["bytes_moved"],
        "names": {"phases_us": CPU_NAMES, "cl_device_us": DEVICE_NAMES},
        # every error and finding of the run, kept or not, folded on (case, object, where)
        "errors": history.errors.as_list(),
        "errors_total": history.errors.total,
        "errors_other": history.errors.other,
        "hazards": history.hazards.as_list(),
        "hazards_total": history.hazards.total,
        "hazards_other": history.hazards.other,
        "races": history.races.as_dict(),
        # who owned each shared object over the kept frames (app/schedule/owners.py: the trace's
        # owner slices are the same intervals)
        "owners": owner_summary(owner_timeline(records, cl_offset)),
        "switches": history.switches,
        "segments": segments,
        "backends": facts.backends,
        **facts.extra,
    }


def write_report(path, report: dict) -> str:
    return write_text(path, json.dumps(report, indent=2, sort_keys=False, default=str) + "\n")
