"""The JSON report of a run (``--report``): what ran, where, how often and how long."""
from __future__ import annotations

import json
from pathlib import Path

from app.schedule.frame import PHASES
from app.trace.stats import summary

SCHEMA = "glshare.report/1"


def build_report(app) -> dict:
    """``app`` is the Runtime after its loop ended (see app/runtime.py)."""
    records = app.all_records  # the recent history of each set-up (FrameScheduler keeps 600)
    totals = app.totals
    counts = {k: totals[k] for k in ("acquire", "compute", "release")}
    phases = {p: summary(r.phase_us(p) for r in records) for p in PHASES}
    phases["frame"] = summary(r.frame_us for r in records)
    cl_us = {}
    for name in ("acquire", "compute", "release"):
        spans = [(r.cl_profile[name][3] - r.cl_profile[name][2]) / 1e3 for r in records if name in r.cl_profile]
        cl_us[name] = summary(spans)
    errors = [e.as_dict() for r in records for e in r.errors] + [e.as_dict() for e in app.loop_errors]
    hazards = [{"case": h.case, "label": h.label, "frame": h.frame, "where": h.where, "spec": h.spec}
               for r in records for h in r.hazards]
    choice = app.choice
    return {
        "schema": SCHEMA,
        "scene": app.cfg.scene,
        "backend": app.backend_name,
        "sync": app.cfg.sync,
        "headless": app.surface.kind == "headless",
        "frames": totals["frames"],
        "frames_in_statistics": len(records),
        "size": app.scene_size_field(),
        "bytes_per_frame": app.scene.bytes_per_frame if app.scene else 0,
        "gl": {k: app.gl_info.as_dict()[k] for k in ("vendor", "renderer", "version")},
        "cl": {"platform": choice.platform.name.strip(), "device": choice.device.name.strip(),
               "version": choice.device.version.strip(), "extensions": sorted(choice.device.extensions.split())},
        "counts": counts,
        "phases_us": phases,
        "cl_device_us": cl_us,
        "waits_us": summary(sum(w[2] - w[1] for w in r.waits) / 1e3 for r in records),
        "errors": errors,
        "hazards": hazards,
        "switches": app.switches,
        "backends": app.registry.as_list(),
    }


def write_report(path: str | Path, report: dict) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(report, indent=2, sort_keys=False) + "\n")
    tmp.replace(path)
    return path
