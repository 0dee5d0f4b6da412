"""The bench's terminal output (progress bar on stderr, tables on stdout) and its JSON file."""
from __future__ import annotations

import json
from pathlib import Path

MIB = 1 << 20


class Progress:
    """``[#####-----] 3/10 label`` redrawn in place on a terminal; one line per cell otherwise."""

    def __init__(self, total: int, stream) -> None:
        self.total, self.done, self.stream = max(total, 1), 0, stream
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self._draw("starting")

    def _draw(self, label: str) -> None:
        total = max(self.total, self.done, 1)
        width = 24
        filled = int(width * self.done / total)
        bar = f"[{'#' * filled}{'-' * (width - filled)}] {self.done}/{total} {label}"
        if self.tty:
            self.stream.write("\r\x1b[2K" + bar)
        else:
            self.stream.write("glshare bench: " + bar + "\n")
        self.stream.flush()

    def tick(self, label: str) -> None:
        self.done += 1
        self._draw(label)

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def _f(x, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _size(cell: dict) -> str:
    s = cell["size"]
    return f"{s:,}" if isinstance(s, int) else str(s)


def _numeric(text: str) -> bool:
    return text == "-" or text.replace(",", "").replace(".", "", 1).lstrip("-").isdigit()


def _rows(out, header: list[str], rows: list[list[str]]) -> None:
    """A plain-text table: numbers right-aligned, words left-aligned."""
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]
    numeric = [bool(rows) and all(_numeric(r[i]) for r in rows) for i in range(len(header))]
    line = "  ".join(h.rjust(w) if n else h.ljust(w) for h, w, n in zip(header, widths, numeric))
    out.write(line.rstrip() + "\n" + "-" * len(line.rstrip()) + "\n")
    for r in rows:
        out.write("  ".join(c.rjust(w) if n else c.ljust(w) for c, w, n in zip(r, widths, numeric)).rstrip() + "\n")


def print_table(result: dict, out) -> None:
    m, gl, cl = result["machine"], result["gl"], result["cl"]
    out.write(f"glshare bench ({result['sweep']['name']}) {result['date']}  glshare {result['glshare']} "
              f"commit {result['commit'][:10] or '?'}\n")
    ref = f", Python reference {m['python_ref_us']:.3f} us" if m.get("python_ref_us") else ""
    if m.get("python_ref_end_us"):
        ref += f" (at the end {m['python_ref_end_us']:.3f})"
    out.write(f"machine: {m['cpu']}, {m['cores']} cores{ref} | GL: {gl['renderer']} | CL: {cl['platform']}: "
              f"{cl['device']}\n\n")
    rows = []
    for c in result["cells"]:
        if not c.get("frames"):
            rows.append([c["scene"], _size(c), c["backend"], c["sync"], "0", "-", "-", "-", "-", "-", "-", "-", "-", "-",
                         "error: " + c.get("first_error", "")[:40]])
            continue
        ph = c["phases_us"]
        rows.append([c["scene"], _size(c), c["backend"], c["sync"], str(c["frames"]), _f(c["frame_ms"]["median"]),
                     _f(c["frame_ms"]["p95"]), *(_f(ph[p]["median"], 0) for p in ("acquire", "compute", "release", "render")),
                     _f(c["bytes_moved_per_frame"] / MIB), _f(c["bandwidth_gbps"], 3),
                     _f(c.get("copy", {}).get("ms", {}).get("median")), _f(c.get("vs_bare"), 3),
                     f"{c['errors']} errors" if c.get("errors") else ""])
    _rows(out, ["scene", "size", "backend", "sync", "frames", "med ms", "p95 ms", "acq us", "comp us", "rel us",
                "draw us", "MiB moved", "GB/s", "copy ms", "x bare", ""], rows)
    out.write("\nbaselines (interleaved with the cells above)\n")
    rows = []
    for b in result["baselines"]:
        if b["kind"] == "bare_loop":
            rows.append([b["kind"], b["scene"], _size(b), b["backend"], _f(b["frame_ms"]["median"]), _f(b["frame_ms"]["p95"]),
                         _f(b["cpu_ms"]["main_thread"]["median"], 3), "-"])
        else:
            rows.append([b["kind"], b["scene"], _size(b), b["backend"], _f(b["ms"]["median"], 3), _f(b["ms"]["p95"], 3), "-",
                         _f(b["gbps"], 2)])
    _rows(out, ["baseline", "scene", "size", "backend", "med ms", "p95 ms", "cpu ms", "GB/s"], rows)
    for p in result["panels"]:
        out.write(f"\npanel ({p['drawn']}), particles {_size(p)}, {p['backend']}: frame {_f(p['with_panel']['frame_ms']['median'])}"
                  f" ms with, {_f(p['without_panel']['frame_ms']['median'])} ms without, "
                  f"{_f(p.get('with_overlay', {}).get('frame_ms', {}).get('median'))} ms with the minimal overlay; "
                  f"draw_ui {_f(p['draw_ui_ms']['median'], 3)} ms\n")
    if result.get("races"):
        out.write("\nraces (each against its baseline in this run)\n")
        rows = [[r["race"], r["at"], str(r["backend"]), _f(r["glshare_ms"], 3), str(r["baseline"]), _f(r["baseline_ms"], 3),
                 _f(r["ratio"], 3), "-" if r["spread"] is None else "/".join(_f(x, 3) for x in r["spread"])]
                for r in result["races"]]
        _rows(out, ["race", "at", "glshare", "ms", "baseline", "ms", "ratio", "spread"], rows)
    out.write("\nratios\n")
    rows = [[name, _f(r["value"], 3), r["target"], "met" if r["met"] else "MISSED", r["measured_at"]]
            for name, r in result["ratios"].items()]
    _rows(out, ["ratio", "value", "target", "verdict", "measured at"], rows)
    ratio_notes(result["ratios"], out)
    for name, why in result["not_measurable"].items():
        out.write(f"  {name}: not measurable here ({why})\n")
    for f in result["failures"]:
        out.write(f"  FAILED {f['scene']} {f['size']} {f['backend']}: {f['error']}\n")
    out.write(f"\n{len(result['cells'])} cells in {result['duration_s']} s\n")


def ratio_notes(ratios: dict, out) -> None:
    """The lines under the ratios' table: what each baseline measured beside its ratio says of the
    machine (the checked floor under scheduler_overhead_us, the bare loop under device_time_limit)."""
    for name, r in ratios.items():
        if "checked_floor_us" in r:
            out.write(f"  {name}: the checked floor (bare loop + spec checks, ownership, frame record) adds "
                      f"{_f(r['checked_floor_us'], 1)} us by itself (bare against bare: "
                      f"{_f(r.get('bare_vs_bare_us'), 1)} us)"
                      + (f"; the host's Python reference at that cell {r['python_ref_us']:.3f} us"
                         if r.get("python_ref_us") else "")
                      + (f"; {r['impossible_here']}" if "impossible_here" in r else "") + "\n")
        if "bare_ratio" in r:
            out.write(f"  {name}: the bare loop of the same frames in flight sustains "
                      f"{_f(r['bare_sustained_frame_ms'], 4)} ms = {_f(r['bare_ratio'], 3)}x the limit"
                      + (f"; {r['impossible_here']}" if "impossible_here" in r else "") + "\n")


def write_json(path: str | Path, result: dict) -> str:
    """app/outputs.py's one way: a unique temporary file renamed over the target, ``-`` stdout."""
    from app.outputs import write_text

    return write_text(path, json.dumps(result, indent=1) + "\n")
