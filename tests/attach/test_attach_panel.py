"""``glshare attach --panel``: glshare's panel in its own window (under Xvfb) follows the attached
program while it runs and stays, answering input, after it ended; checked on the panel's model
(the values the panel drew), not on pixels alone.

The attached program is test_attach_command.py's replay (a Python script writing the records
itself through ``GLSHARE_ATTACH_FD``) cut in two: it writes the first half, then waits for a file
the panel's driver creates only once the panel showed that half (so "live" is seen while the
program runs, whatever the machine's speed), then writes the rest and exits. The driver runs
``app.attach.panel.show`` in a child process (PyOpenGL binds GLX at its first import) and clicks
a tab with xdotool after the program ended."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_attach_command import REPLAY
from test_attach_model import GLCTX, QUEUE, Stream

from app import native

ROOT = Path(__file__).resolve().parents[2]

# the replay, waiting before the record named "wait" for the file its argv[4] names
HALVES = REPLAY.replace('''for rec in records:
''', '''for rec in records:
    if rec["k"] == "wait":
        while not os.path.exists(sys.argv[4]):
            time.sleep(0.02)
        continue
''').replace("end = sys.argv[3]", "end = sys.argv[3]; time.sleep(0.3)")

DRIVER = r'''
import json, os, subprocess, sys
sys.path.insert(0, sys.argv[1])
from app.attach.panel import PanelOptions, Program, show

argv, out, go = json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]
seen = {"frames": 0}

def model_values(ui, live, program):
    m = ui.last_model
    tl = m.timeline
    ev = m.tabs.get("events")
    return {"status": m.header.status, "title": m.header.scene_title, "frame": m.header.frame,
            "notes": list(m.header.notes), "lanes": [l.name for l in tl.lanes], "names": list(tl.names),
            "hazards": [[e.title, e.label, e.where, e.first_frame] for e in m.hazards.entries],
            "owners": [[r.label, r.now, r.acquires, r.releases] for r in m.owners.rows],
            "tabs": sorted(m.tabs), "tab_keys": list(m.tab_keys), "tab": ui.state.tab, "redraws": ui.redraws,
            "events": [[e.name, e.source] for e in ev.events] if ev is not None else None,
            "controls": m.controls is not None, "ended": program.ended, "window": ui.state.window,
            "rects": {k: list(v) for k, v in ui.state.rects.items()}}

def on_frame(ui, live, program):
    seen["frames"] += 1
    m = ui.last_model
    if m is None:
        return
    if "live" not in seen and not program.ended and m.timeline.count and m.hazards.total:
        seen["live"] = model_values(ui, live, program)
        open(go, "w").close()  # the program goes on
    elif program.ended and "ended" not in seen and not m.header.status.startswith("the program runs"):
        seen["ended"] = model_values(ui, live, program)
        x0, y0, x1, y1 = ui.state.rects["tab_events"]
        import glfw
        wid = str(glfw.get_x11_window(ui.surface._window))
        seen["steps"] = [["windowfocus", "--sync", wid], ["mousemove", "--window", wid, str((x0 + x1) // 2),
                         str((y0 + y1) // 2)], ["click", "1"]]
    if seen.get("steps") and ("click" not in seen or seen["click"].poll() is not None):
        seen["click"] = subprocess.Popen(["xdotool", *seen["steps"].pop(0)])  # one step at a time, the loop going on
    elif "click" in seen and not seen["steps"] and m.tabs.get("events") is not None and "after" not in seen:
        seen["after"] = model_values(ui, live, program)
        ui.surface.request_close()  # as the window's close button does

program = Program(argv, {"cl": None, "gl": None}, False)
show(program, PanelOptions(size=(1280, 800), frames_after=int(sys.argv[5]), on_frame=on_frame))
outcome = program.wait()
seen.pop("click", None)
seen.pop("steps", None)
seen["exit_status"] = outcome.exit_status
json.dump(seen, open(os.path.join(out, "seen.json"), "w"), indent=1, default=str)
'''


def stamped_frame(s: Stream) -> None:
    """A correct frame whose commands came back with device stamps."""
    t0 = s.t
    s.call("glFinish", src="gl", ctx=hex(GLCTX))
    s.device(s.hand_over("clEnqueueAcquireGLObjects"), t0 + 3_000, t0 + 4_000)
    s.device(s.kernel(), t0 + 5_000, t0 + 7_000)
    s.device(s.hand_over("clEnqueueReleaseGLObjects"), t0 + 8_000, t0 + 9_000)
    s.call("clFinish", queue=hex(QUEUE))
    s.draw()
    s.swap()


def program_stream() -> Stream:
    """Two correct hand-overs and a kernel without acquire (at a Python site), then, after the
    wait, two more and a GL deletion of the shared buffer while CL holds its object."""
    s = Stream()
    s.setup()
    stamped_frame(s)
    stamped_frame(s)
    s.site("prog.py", 12, "oops")
    s.kernel()  # use without acquire
    s.records.append({"k": "wait"})
    stamped_frame(s)
    stamped_frame(s)
    s.call("glDeleteBuffers", src="gl", ctx=hex(GLCTX), names=[3])
    return s


def drive(tmp_path: Path, frames_after: int = 3000) -> dict:
    replay, records, answers, go = (tmp_path / n for n in ("replay.py", "records.jsonl", "answers.jsonl", "go"))
    replay.write_text(HALVES)
    records.write_text("".join(json.dumps(r) + "\n" for r in program_stream().records))
    argv = [sys.executable, str(replay), str(records), str(answers), "0", str(go)]
    env = {k: v for k, v in os.environ.items() if k != "PYOPENGL_PLATFORM"}
    done = subprocess.run([sys.executable, "-c", DRIVER, str(ROOT), json.dumps(argv), str(tmp_path), str(go),
                           str(frames_after)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((tmp_path / "seen.json").read_text())


def fed(stream: Stream):
    """The panel's model of ``stream``'s records fed as the reader feeds them, no program, no window:
    (the live view, the PanelData)."""
    from app.attach.panel import LiveView, Program, panel_data

    program = Program(["prog.py"], {"cl": None, "gl": None}, False)  # never started: ended
    for line in stream.lines():
        program.recorder.feed_line(line.rstrip(b"\n"))
    live = LiveView(program)
    return live, panel_data(live)


def test_the_panels_model_reads_the_hand_overs_as_frames_with_thread_and_queue_rows():
    s = program_stream()
    s.records.remove({"k": "wait"})
    live, data = fed(s)
    m = data.update(live.view(), tab="events")
    assert m.header.frame == 3 and m.timing.newest_kept == 3  # four hand-overs, the newest described
    assert m.header.sync == "hand-overs" and m.controls is None
    lanes = [lane.name for lane in m.timeline.lanes]
    assert lanes[4:] == ["GL buffer 3", "thread 1", "queue 0x10"]
    tl = m.timeline
    queue = [tl.names[i] for i in range(tl.count) if tl.lane[i] == lanes.index("queue 0x10")]
    assert queue == ["AcquireGLObjects", "NDRangeKernel", "ReleaseGLObjects"]
    thread = [tl.names[i] for i in range(tl.count) if tl.lane[i] == lanes.index("thread 1")]
    assert thread[:3] == ["clEnqueueAcquireGLObjects", "clEnqueueNDRangeKernel", "clEnqueueReleaseGLObjects"]
    k = tl.names.index("NDRangeKernel")  # the kernel's device START to END (2 us), on the host clock
    assert abs((tl.end[k] - tl.start[k]) - 0.002) < 1e-9
    assert [(e.title, e.label) for e in m.hazards.entries] == [("delete_gl_while_shared", "GL buffer 3"),
                                                               ("use_without_acquire", "GL buffer 3")]
    assert m.owners.rows[0].acquires == 4 and m.owners.rows[0].now == "GL"
    assert [(e.name, e.source) for e in m.tabs["events"].events if e.source == "queue 0x10"] == [
        ("AcquireGLObjects", "queue 0x10"), ("NDRangeKernel", "queue 0x10"), ("ReleaseGLObjects", "queue 0x10")]
    assert set(m.tabs) == {"ownership", "errors", "hazards", "events"}  # the tabs built: those it shows


def test_frames_are_numbered_from_the_first_hand_over_whatever_view_was_built_before():
    """A view built while only a swap was read numbers that swap frame 0; once hand-overs come the
    frames are the hand-overs, numbered from 0 again (a loaded machine built such a view first and
    the newest of four hand-overs read as frame 4)."""
    from app.attach.panel import LiveView, Program, panel_data

    s = Stream()
    s.setup()
    s.swap()
    early = len(s.lines())
    for _ in range(4):
        stamped_frame(s)
    program = Program(["prog.py"], {"cl": None, "gl": None}, False)
    lines = s.lines()
    for line in lines[:early]:
        program.recorder.feed_line(line.rstrip(b"\n"))
    live = LiveView(program)
    data = panel_data(live)
    assert data.update(live.view(), tab="events").header.sync == "swaps"
    for line in lines[early:]:
        program.recorder.feed_line(line.rstrip(b"\n"))
    m = data.update(live.view(), tab="events")
    assert m.header.sync == "hand-overs" and m.header.frame == 3  # four hand-overs: 0 .. 3


def test_a_hazard_in_a_hand_over_is_marked_on_its_objects_lane():
    s = Stream()
    s.setup()
    s.hand_over("clEnqueueAcquireGLObjects")
    s.kernel()
    s.draw()  # GL draws the buffer CL holds
    s.hand_over("clEnqueueReleaseGLObjects")
    s.swap()
    live, data = fed(s)
    m = data.update(live.view())
    lanes = [lane.name for lane in m.timeline.lanes]
    marks = [(mk.kind, mk.lane, mk.title) for mk in m.timeline.markers]
    assert marks == [("hazard", lanes.index("GL buffer 3"), "hazard gl_use_while_acquired on GL buffer 3 (render)")]


def test_a_program_without_hand_overs_is_shown_by_its_swaps():
    s = Stream()
    s.setup()
    for _ in range(3):
        s.call("clFinish", queue=hex(QUEUE))
        s.draw()
        s.swap()
    live, data = fed(s)
    m = data.update(live.view())
    assert m.header.sync == "swaps" and m.timing.newest_kept == 2
    assert [lane.name for lane in m.timeline.lanes] == ["thread 1"]  # glshare's own lanes: nothing of it
    assert "swaps (no hand-over recorded)" in m.header.scene_title


@pytest.mark.window
@pytest.mark.skipif(not os.environ.get("DISPLAY"), reason="no DISPLAY: run under Xvfb (make test does)")
@pytest.mark.skipif(not shutil.which("xdotool"), reason="needs xdotool (make test installs it)")
def test_the_panel_follows_the_program_live_and_stays_after_it_ended(tmp_path):
    seen = drive(tmp_path)
    live = seen["live"]
    assert not live["ended"] and live["status"].startswith("the program runs")
    # the timeline: a hand-over with the program's thread and queue rows, and the ownership lane
    assert live["lanes"][:2] == ["CPU", "CPU wait"] and live["lanes"][2].startswith("CL pid ")
    assert "GL buffer 3" in live["lanes"] and "thread 1" in live["lanes"] and "queue 0x10" in live["lanes"]
    assert {"clEnqueueAcquireGLObjects", "clEnqueueNDRangeKernel", "AcquireGLObjects", "NDRangeKernel",
            "ReleaseGLObjects", "glDrawArrays"} <= set(live["names"])
    # the finding of the first half, with the program's call site
    assert [h[:2] for h in live["hazards"]] == [["use_without_acquire", "GL buffer 3"]]
    assert "clEnqueueNDRangeKernel" in live["hazards"][0][2] and "prog.py:12 (oops)" in live["hazards"][0][2]
    assert live["owners"] == [["GL buffer 3", "GL", 2, 2]]
    assert live["tab_keys"] == ["ownership", "errors", "hazards", "events", "caps"] and not live["controls"]
    assert any("CL layer was turned off" in n for n in live["notes"])
    assert any("GL calls at their CPU issue" in n for n in live["notes"])

    ended = seen["ended"]
    assert ended["status"].startswith("the program exited with status 0")
    assert [h[0] for h in ended["hazards"]] == ["delete_gl_while_shared", "use_without_acquire"]
    assert ended["owners"] == [["GL buffer 3", "GL", 4, 4]]
    assert ended["frame"] == 3  # the newest of four hand-overs

    assert "after" in seen, "the click on the Events tab after the program ended was not answered"
    after = seen["after"]  # a click on the Events tab after the end: the window still answers
    assert after["tab"] == "events" and after["redraws"] > ended["redraws"]
    assert ["clEnqueueNDRangeKernel", "thread 1"] in after["events"]
    assert ["NDRangeKernel", "queue 0x10"] in after["events"]
    assert seen["exit_status"] == 0
    assert seen["frames"] < 3000  # closed by the driver's request, not by the bound


def test_panel_without_a_display_is_one_line_and_exit_2_before_the_program_runs(tmp_path, capsys, monkeypatch):
    from app import cli

    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    mark = tmp_path / "ran"
    code = cli.main(["attach", "--panel", "--no-cl", "--no-gl", "--", sys.executable, "-c",
                     f"open({str(mark)!r}, 'w')"])
    err = capsys.readouterr().err
    assert code == 2 and "no display" in err and len(err.strip().splitlines()) == 1
    assert not mark.exists()


def test_panel_options_need_panel(tmp_path, capsys):
    from app import cli

    code = cli.main(["attach", "--frames", "3", "--", sys.executable, "-c", "pass"])
    assert code == 2 and "give them with --panel" in capsys.readouterr().err


GLSHARE_RUN = r'''
import json, os, sys
sys.path.insert(0, sys.argv[1])
from app.attach.launch import libraries
from app.attach.panel import PanelOptions, Program, show

seen = {}

def on_frame(ui, live, program):
    m = ui.last_model
    if m is not None and program.ended and not m.header.status.startswith("the program runs"):
        tl = m.timeline
        seen.update(status=m.header.status, title=m.header.scene_title, lanes=[l.name for l in tl.lanes],
                    bars={l.name: sorted({tl.names[i] for i in range(tl.count) if tl.lane[i] == k})
                          for k, l in enumerate(tl.lanes)}, notes=list(m.header.notes))
        ui.surface.request_close()

program = Program(json.loads(sys.argv[2]), libraries(True, True), False)
show(program, PanelOptions(frames_after=3000, on_frame=on_frame))
seen["exit_status"] = program.wait().exit_status
json.dump(seen, open(sys.argv[3], "w"))
'''


@pytest.mark.window
@pytest.mark.skipif(not os.environ.get("DISPLAY"), reason="no DISPLAY: run under Xvfb (make test does)")
@pytest.mark.skipif(not all(os.path.exists(native.attach_library(s)) for s in ("cl_layer", "gl_preload")),
                    reason="the CL layer or the GL library is not built (make setup)")
def test_the_panel_shows_glshares_own_run_recorded_by_the_libraries(tmp_path):
    """glshare's own headless run (host_copy: copies and kernels, no hand-over, no swap) attached
    with both recorders: the panel shows its whole run as one frame, its main thread's CL calls and
    its queue's commands on their device stamps."""
    argv = [sys.executable, "-m", "app", "run", "--headless", "--frames", "8", "--backend", "host_copy",
            "--scene", "image", "--size", "64x64"]
    env = {k: v for k, v in os.environ.items() if k != "PYOPENGL_PLATFORM"}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", GLSHARE_RUN, str(ROOT), json.dumps(argv), str(tmp_path / "seen.json")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["exit_status"] == 0 and seen["status"].startswith("the program exited with status 0")
    assert "whole run (no hand-over, no swap recorded)" in seen["title"]
    threads = [n for n in seen["lanes"] if n.startswith("thread ")]
    queues = [n for n in seen["lanes"] if n.startswith("queue ")]
    assert threads and queues
    calls = {b for t in threads for b in seen["bars"][t]}
    assert {"clEnqueueNDRangeKernel", "clCreateCommandQueueWithProperties"} <= calls
    assert "NDRangeKernel" in {b for q in queues for b in seen["bars"][q]}  # on the device's stamps
    assert any("no swap recorded" in n for n in seen["notes"])
