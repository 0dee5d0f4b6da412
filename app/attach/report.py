"""The report of an attached program (``--report``): how it ended, what was recorded and checked,
every finding with the program's call and site, who owned each shared object, and what the
recording could not see; and the few lines said at the end (``summary_lines``)."""
from __future__ import annotations

import json
import signal as _signal

from app.attach.launch import Outcome
from app.attach.model import KERNELS, ProcessModel
from app.attach.timeline import Timeline
from app.outputs import write_text
from app.schedule.owners import owner_summary
from app.trace.stats import summary

SCHEMA = "glshare.attach/1"
LIBRARIES = {"cl": "the CL layer", "gl": "the GL preload library", "py": "the Python site hook"}


def signal_name(signum: int) -> str:
    try:
        return _signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def died_in(outcome: Outcome) -> dict | None:
    """The call the program's own process was in when it ended: its last call with no ret."""
    model = outcome.recorder.models.get(outcome.pid)
    if model is None:
        return None
    open_calls = model.unreturned()
    if not open_calls:
        return None
    c = max(open_calls, key=lambda c: c.t)
    return {"pid": model.pid, "fn": c.fn, "id": c.id, "src": c.src, "tid": c.tid, "site": c.site, "frame": c.frame,
            "why": [f"device '{d['name']}' ({d['platform']}) does not list {d['extension']}"
                    for d in model.missing_extension(c)]}


def ending(outcome: Outcome) -> dict:
    sig = outcome.signal
    out = {"status": outcome.exit_status, "exit_code": None if sig is not None else outcome.returncode,
           "signal": sig, "signal_name": signal_name(sig) if sig is not None else None, "died_in": died_in(outcome)}
    where = out["died_in"]
    inside = f" in {where['fn']} (call {where['id']}{', ' + where['site'] if where['site'] else ''})" if where else ""
    if where and where["why"]:
        inside += "; " + "; ".join(where["why"])
    if sig is not None:
        out["said"] = f"killed by {out['signal_name']} (signal {sig}){inside or ' outside any recorded call'}"
    else:  # a driver that ends the process itself (exit() inside a call) leaves that call open
        out["said"] = f"exited with status {outcome.returncode}{inside if outcome.returncode else ''}"
    return out


def cannot_see(outcome: Outcome, model: ProcessModel, tl: Timeline) -> list[str]:
    """What the recording of one process could not see, one line each."""
    out = []
    seen = set(model.hellos) | model.sources
    for src, on in (("cl", outcome.libs.get("cl")), ("gl", outcome.libs.get("gl"))):
        if not on:
            out.append(f"{LIBRARIES[src]} was turned off (--no-{src})")
        elif src not in seen:
            out.append(f"no records from {LIBRARIES[src]}: the process loaded "
                       f"{'no OpenCL ICD loader' if src == 'cl' else 'no GL entry point it wraps'}")
    if model.calls_seen > len(model.calls):
        out.append(f"the timeline, the races and the trace hold the last {len(model.calls):,} calls of "
                   f"{model.calls_seen:,} (counts and findings hold them all)")
    if not model.swaps:
        out.append("no swap recorded (glXSwapBuffers, eglSwapBuffers): no frame boundaries, the whole run is frame 0")
    for queue, counts in queue_stamps(model).items():
        if counts["commands"] and not counts["stamped"]:
            why = counts["why"] or "no stamps record came"
            out.append(f"queue {queue}: no device stamps ({why}): its commands keep their CPU times only")
    for dev, est in tl.clocks.devices.items():
        if not est.known:
            out.append(f"device {dev:#x}: its clock could not be put on the CPU clock")
    out += [f"{why} ({n} hand-over{'s' if n != 1 else ''})" for why, n in tl.blind.items()]
    out += [f"assumed: {what} ({n}x)" for what, n in model.assumed.items()]
    out += [f"note: {note}" for note in model.notes]
    if model.notes_total > len(model.notes):
        out.append(f"and {model.notes_total - len(model.notes):,} notes more")
    return out


def queue_stamps(model: ProcessModel) -> dict[str, dict]:
    """Per queue: its commands enqueued (the call succeeded), how many came back with device stamps,
    and why not."""
    out: dict[str, dict] = {}
    for c in model.calls:
        if c.src != "cl" or "queue" not in c.rec or not c.fn.startswith("clEnqueue") or c.status != 0:
            continue  # (a command the driver refused, or never returned from, has no stamps to give)
        entry = out.setdefault(c.rec["queue"], {"commands": 0, "stamped": 0, "why": ""})
        entry["commands"] += 1
        if c.stamps is not None and "error" not in c.stamps:
            entry["stamped"] += 1
        elif c.stamps is not None and not entry["why"]:
            entry["why"] = str(c.stamps["error"])
    return out


def process_entry(outcome: Outcome, model: ProcessModel, tl: Timeline) -> dict:
    counts = model.counts()
    return {
        "pid": model.pid,
        "recorded_by": sorted(set(model.hellos) | model.sources),
        "calls_recorded": model.calls_seen,
        "calls_kept": len(model.calls),
        "frames": model.frame,
        "frames_from": "swap records" if model.swaps else "none: no swap recorded",
        "calls": counts,
        "hand_overs_checked": model.checked,
        "kernels": sum(counts.get(k, 0) for k in KERNELS),
        "contexts": [{"handle": f"{c.int_ptr:#x}", "gl_context": f"{c.gl_context:#x}" if c.gl_context else None,
                      "devices": list(c.devices_info)} for c in model.contexts.values()],
        "unreturned": [{"fn": c.fn, "id": c.id, "tid": c.tid, "site": c.site} for c in model.unreturned()],
        "queues": queue_stamps(model),
        "clocks": tl.clocks.as_dict(),
        "owners": owner_summary(tl.owners),
        "races": {"hand_overs": len(tl.records), "checked": tl.checked, "found": len(tl.races),
                  "cannot_see": dict(tl.blind)},
        "cannot_see": cannot_see(outcome, model, tl),
    }


def cost(outcome: Outcome, frames: int) -> dict:
    r = outcome.recorder
    waits = [(answered - asked) / 1e3 for _s, asked, answered in r.verdicts]
    return {"records": r.records, "bytes": r.bytes,
            "records_per_frame": round(r.records / frames, 2) if frames else None,
            "bytes_per_frame": round(r.bytes / frames, 1) if frames else None,
            "reader_cpu_ms": round(r.reader_cpu_ns / 1e6, 3),
            "verdict_wait_us": summary(waits) if waits else None,
            "frame_cost": "the program's frame with and without attach: bench/probes/attach_cost.py "
                          "(figures in bench/results/2026-12-06-attach/)"}


def build_report(outcome: Outcome, timelines: dict[int, Timeline]) -> dict:
    r = outcome.recorder
    findings = []
    by_case: dict[str, int] = {}
    for pid, model in r.models.items():
        findings += [f.as_dict() for f in model.findings + timelines[pid].races]
        for case, n in model.finding_counts.items():
            by_case[case] = by_case.get(case, 0) + n
        for f in timelines[pid].races:
            by_case[f.case] = by_case.get(f.case, 0) + 1
    main = r.models.get(outcome.pid)
    return {
        "schema": SCHEMA,
        "program": outcome.argv,
        "pid": outcome.pid,
        "ended": ending(outcome),
        "wall_ms": round(outcome.wall_ns / 1e6, 3),
        "recording": {"libraries": {k: v for k, v in outcome.libs.items()}, "strict": outcome.strict,
                      "records": r.records, "malformed": r.malformed, "malformed_examples": r.malformed_examples,
                      "read_to_the_end": not r.cut, "cut": r.cut or None,
                      "verdicts": {"asked": r.verdicts_asked, "refused": r.verdicts_refused}},
        "frames": main.frame if main is not None else 0,
        "findings_by_case": by_case,  # every finding counted; ``findings`` holds the first 10,000 of each process
        "findings": findings,
        "processes": [process_entry(outcome, m, timelines[pid]) for pid, m in r.models.items()],
        "cost": cost(outcome, main.frame if main is not None else 0),
    }


def summary_lines(report: dict) -> list[str]:
    """What glshare says at the end (stderr): how the program ended, what was checked and found."""
    prog = " ".join(report["program"])
    lines = [f"glshare attach: {prog}: {report['ended']['said']}"]
    procs = report["processes"]
    checked = sum(p["hand_overs_checked"] for p in procs)
    found = ", ".join(f"{case} x{n}" for case, n in report["findings_by_case"].items()) or "none"
    lines.append(f"glshare attach: {len(procs)} process{'es' if len(procs) != 1 else ''} recorded, "
                 f"{report['frames']} frames, {checked} acquire/release/semaphore calls checked; findings: {found}")
    if not procs:
        lines.append("glshare attach: nothing was recorded: the program made no call the recorders wrap "
                     "(no OpenCL ICD loader, no GL entry point, no pyopencl or PyOpenGL)")
    for p in procs:
        for why in p["cannot_see"][:6]:
            lines.append(f"glshare attach: pid {p['pid']}: {why}")
    if report["recording"]["malformed"]:
        lines.append(f"glshare attach: {report['recording']['malformed']} lines were not records")
    if report["recording"]["cut"]:
        lines.append(f"glshare attach: the record stream was cut: {report['recording']['cut']}")
    return lines


def write_report(path, report: dict) -> str:
    return write_text(path, json.dumps(report, indent=2, default=str) + "\n")
