"""The JSON report of a run (``--report``): what ran, where, how often and how long, read from
the run history and the facts of the set-up."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from app.outputs import write_text
from app.schedule.frame import LOOP_PHASES
from app.schedule.history import RunHistory
from app.trace.stats import summary

SCHEMA = "glshare.report/1"


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


def build_report(history: RunHistory, facts: RunFacts) -> dict:
    records = list(history.records)  # the run's kept history, every set-up's
    totals = history.totals
    counts = {k: totals[k] for k in ("acquire", "compute", "release")}
    timed = [r for r in records if not r.stepped]  # teaching mode's stepped frames are out of the statistics
    phases = {p: summary(r.phase_us(p) for r in timed) for p in LOOP_PHASES}
    phases["work"] = summary(r.work_us for r in timed)  # acquire start -> render end
    phases["frame"] = summary(r.frame_us for r in timed)  # present to present
    cl_us = {}
    for name in ("acquire", "compute", "release"):
        spans = [(r.cl_profile[name][3] - r.cl_profile[name][2]) / 1e3 for r in records if name in r.cl_profile]
        cl_us[name] = summary(spans)
    errors = [e.as_dict() for r in records for e in r.errors] + [e.as_dict() for e in history.loop_errors]
    hazards = [{"case": h.case, "kind": getattr(h, "kind", ""), "label": h.label, "frame": h.frame,
                "where": h.where, "spec": h.spec} for r in records for h in r.hazards]
    return {
        "schema": SCHEMA,
        "scene": facts.scene,
        "backend": facts.backend,
        "sync": facts.sync,
        "headless": facts.headless,
        "frames": totals["frames"],
        "frames_in_statistics": len(timed),
        "frame_is": "present to present (phases: acquire, compute, release, render, panel, present)",
        "size": facts.size,
        "bytes_per_frame": facts.bytes_per_frame,
        "gl": facts.gl,
        "cl": facts.cl,
        "counts": counts,
        "phases_us": phases,
        "cl_device_us": cl_us,
        "waits_us": summary(sum(w[2] - w[1] for w in r.waits) / 1e3 for r in records),
        "errors": errors,
        "errors_total": totals["errors"] + history.loop_errors_total,
        "hazards": hazards,
        "switches": history.switches,
        "segments": [s.as_dict() for s in history.segments],
        "backends": facts.backends,
        **facts.extra,
    }


def write_report(path, report: dict) -> str:
    return write_text(path, json.dumps(report, indent=2, sort_keys=False, default=str) + "\n")
