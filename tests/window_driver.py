"""Drive a real glshare window under Xvfb with real input: ``python tests/window_driver.py SCENARIO OUT``.

SCENARIO is a JSON file: ``{"run": {RunConfig fields}, "steps": [[verb, args...], ...]}``; OUT a
folder for the screenshots (PNG) and the dumps (JSON). The loop keeps running while xdotool types
and clicks (XTEST), so the events arrive as a user's would: through X, GLFW and ImGui's backend.

Verbs: ``ticks N``; ``key K`` (xdotool key names); ``move X Y`` / ``click X Y [BUTTON]`` (window
coordinates); ``wheel X Y up|down N``; ``resize W H``; ``shot NAME`` (the back buffer of the next
frame, before its swap); ``dump NAME`` (what the panel showed: header, timeline, owners, where it
drew some texts, the layer's rectangles, live objects, RSS, errors); ``texture NAME`` (the scene's shown
image, its ``out`` texture, as PNG, and the frame it shows).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def main(scenario_path: str, out_dir: str) -> int:
    from app.window import select_platform

    select_platform(False)
    import glfw

    from app.config import RunConfig
    from app.diagnostics import live
    from app.run import Run
    from app.trace.png import write_png

    scenario = json.loads(Path(scenario_path).read_text())
    out = Path(out_dir)
    run_args = dict(scenario.get("run", {}))
    if "window_size" in run_args:
        run_args["window_size"] = tuple(run_args["window_size"])
    if isinstance(run_args.get("size"), list):
        run_args["size"] = tuple(run_args["size"])
    cfg = RunConfig(headless=False, frames=10**9, **run_args)
    results: dict = {"errors": []}
    baseline = {}
    with Run(cfg) as rt:
        surface = rt.session.surface
        wid = str(glfw.get_x11_window(surface._window))
        shots: list = []
        want_shot = []
        original_present = surface.present

        def present():
            if want_shot:
                want_shot.clear()
                shots.append(surface.read_pixels())
            original_present()

        surface.present = present

        def tick(n: int = 1) -> None:
            for _ in range(n):
                try:
                    rt.tick()
                except Exception as exc:  # noqa: BLE001 - --strict stops: recorded, the scenario goes on
                    results["errors"].append(f"{type(exc).__name__}: {exc}")

        def at(args) -> tuple[int, int]:
            """A position: X Y, or "@name" (the centre of a rectangle the panel drew last)."""
            if isinstance(args[0], str) and args[0].startswith("@"):
                x0, y0, x1, y1 = rt.ui.state.rects[args[0][1:]]
                return (x0 + x1) // 2, (y0 + y1) // 2
            return int(args[0]), int(args[1])

        def xdo(*args: str, settle: int = 4) -> None:
            proc = subprocess.Popen(["xdotool", *args])
            while proc.poll() is None:
                tick()
            tick(settle)  # the events reach GLFW at the next polls, ImGui at the next redraws

        tick(3)
        subprocess.run(["xdotool", "windowfocus", "--sync", wid], check=False)
        baseline = {"rss_mb": rss_mb(), "live": live.snapshot()}
        for step in scenario.get("steps", []):
            verb, args = step[0], step[1:]
            if verb == "ticks":
                tick(int(args[0]))
            elif verb == "key":
                xdo("key", args[0])
            elif verb in ("move", "click", "doubleclick", "wheel", "drag"):
                x, y = at(args)
                rest = args[1:] if isinstance(args[0], str) and args[0].startswith("@") else args[2:]
                xdo("mousemove", "--window", wid, str(x), str(y))
                if verb == "click":
                    xdo("click", str(rest[0] if rest else 1))
                elif verb == "doubleclick":
                    xdo("click", "--repeat", "2", "--delay", "60", "1")
                elif verb == "wheel":
                    xdo("click", "--repeat", str(rest[1] if len(rest) > 1 else 1), "--delay", "30",
                        "4" if rest[0] == "up" else "5")
                elif verb == "drag":  # by DX pixels, holding the left button
                    xdo("mousedown", "1")
                    xdo("mousemove", "--window", wid, str(x + int(rest[0]) // 2), str(y))
                    xdo("mousemove", "--window", wid, str(x + int(rest[0])), str(y))
                    xdo("mouseup", "1")
            elif verb == "resize":
                xdo("windowsize", wid, str(args[0]), str(args[1]), settle=2)
            elif verb == "shot":
                want_shot.append(True)
                tick()
                write_png(out / f"{args[0]}.png", shots.pop()[:, :, :3])
            elif verb == "texture":  # the scene's shown image (its ``out`` texture) and the frame it shows
                scene = rt.session.scene
                write_png(out / f"{args[0]}.png", scene.out.gl.read()[:, :, :3])
                results[args[0]] = {"shown_frame": scene.shown_frame, "frame": rt.session.frame}
            elif verb == "dump":
                results[args[0]] = dump(rt, live)
            else:
                raise SystemExit(f"window_driver: unknown verb {verb!r}")
        results["baseline"] = baseline
        results["final"] = dump(rt, live)
    results["after_close_live"] = live.snapshot()
    (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    return 0


def imgui_windows() -> list:
    """The top-level ImGui windows of the last ImGui frame: [name, x0, y0, x1, y1] (ImGui pixels)."""
    from imgui_bundle import imgui

    out = []
    child = int(imgui.WindowFlags_.child_window)
    for w in imgui.get_current_context().windows:
        if w.active and not w.hidden and not (int(w.flags) & child):
            out.append([w.name, int(w.pos.x), int(w.pos.y), int(w.pos.x + w.size.x), int(w.pos.y + w.size.y)])
    return out


def dump(rt, live) -> dict:
    """What the panel showed at its last redraw, and the state of the run."""
    ui = rt.ui
    model = getattr(ui, "last_model", None)
    layer = ui.layer._layer
    state = ui.state
    d = {"fb": list(rt.session.surface.framebuffer_size), "rss_mb": rss_mb(), "live": live.snapshot(),
         "redraws": ui.redraws, "loop_errors": [e.message for e in rt.session.history.loop_errors],
         "loop_errors_total": rt.session.history.loop_errors_total, "status": rt.session.status,
         "paused": rt.session.paused, "quit_requested": rt.controls.close_requested, "teaching": rt.session.stepper.active, "frame": rt.session.frame,
         "layer_rects": [list(r) for r in (layer.rects if layer is not None else [])],
         "layer_size": list(layer.size) if layer is not None and hasattr(layer, "fb_size") else (
             list(layer.size) if layer is not None else None),
         "panel_window": list(getattr(state, "window", None) or []), "spots": getattr(state, "spots", {}),
         "rects": getattr(state, "rects", {}),
         "imgui_windows": imgui_windows(), "tab": state.tab, "zoom": getattr(state, "zoom", None),
         "auto_span": getattr(state, "auto_span", None), "scroll_y": getattr(state, "scroll_y", None),
         "chosen_state": getattr(state, "chosen", None), "hot": getattr(state, "hot", None), "panel_failures": state.failures, "layer_failures": getattr(ui.layer, "failures", 0)}
    if model is not None and hasattr(model, "header"):
        h, t = model.header, model.timeline
        d.update({"header_frame": h.frame, "timeline_frame": t.frame, "owners_frame": model.owners.frame,
                  "chosen": h.chosen, "in_progress": h.in_progress, "current_phase": t.current_phase,
                  "timeline_names": list(t.names), "timeline_lanes": [lane.name for lane in t.lanes],
                  "hazards_total": model.hazards.total, "errors_total": model.errors.total,
                  "header_status": h.status, "stop": h.stop.reason if h.stop is not None else "",
                  "options": {o.name: o.value for o in (model.controls.options if model.controls else ())}})
    return d


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
