"""``glshare attach`` end to end on the CPU, without the C libraries: the attached program is a small
Python script that writes the records itself (a replay of ``Stream``'s records through
``GLSHARE_ATTACH_FD``, with its own pid and the clock's time), so that the command's exit status,
signals, strict verdicts, report and trace are checked value by value. ``--no-cl --no-gl`` keep the
libraries out (they are tried in test_attach_libraries.py)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from test_attach_model import DEV, GLCTX, PLAIN, QUEUE, Stream

from app import cli, native
from app.attach.model import UNSEEN_SEMAPHORE

ROOT = Path(__file__).resolve().parents[2]
REPLAY = r'''
import json, os, signal, sys, time
fd = int(os.environ["GLSHARE_ATTACH_FD"].split(":")[0])
vfd = os.environ.get("GLSHARE_ATTACH_VERDICT_FD")
vin = os.fdopen(int(vfd.split(":")[0]), "r") if vfd else None
records = [json.loads(l) for l in open(sys.argv[1])]
t0, start, pid = records[0]["t"], time.monotonic_ns(), os.getpid()
answers = open(sys.argv[2], "w")
status = {}
for rec in records:
    rec["pid"], rec["t"] = pid, start + rec["t"] - t0
    if rec["k"] == "ret" and rec["id"] in status:
        rec["verdict"] = status[rec["id"]]
    os.write(fd, (json.dumps(rec) + "\n").encode())
    if rec["k"] == "call" and rec.get("verdict") and vin is not None:
        answer = json.loads(vin.readline())
        answers.write(json.dumps(answer) + "\n")
        answers.flush()
        if answer["status"]:
            status[rec["id"]] = answer["status"]
print("the program's own output")
end = sys.argv[3]
if end.startswith("signal"):
    os.kill(pid, int(end[6:]))
sys.exit(int(end))
'''


def attach(tmp_path: Path, stream: Stream, *options: str, end: str = "0") -> tuple[subprocess.CompletedProcess, Path]:
    """Run ``glshare attach OPTIONS -- python replay.py`` on ``stream``; (the process, the answers file)."""
    replay, records, answers = tmp_path / "replay.py", tmp_path / "records.jsonl", tmp_path / "answers.jsonl"
    replay.write_text(REPLAY)
    records.write_text("".join(json.dumps(r) + "\n" for r in stream.records))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "app", "attach", "--no-cl", "--no-gl", *options, "--",
                           sys.executable, str(replay), str(records), str(answers), end],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    return done, answers


def report_of(tmp_path: Path, stream: Stream, *options: str, end: str = "0") -> tuple[dict, subprocess.CompletedProcess]:
    done, _ = attach(tmp_path, stream, "--report", str(tmp_path / "r.json"), *options, end=end)
    return json.loads((tmp_path / "r.json").read_text()), done


def test_the_program_keeps_its_output_and_its_exit_status(tmp_path):
    s = Stream()
    s.setup()
    s.frame()
    done, _ = attach(tmp_path, s, end="3")
    assert done.returncode == 3
    assert done.stdout == "the program's own output\n"
    assert "exited with status 3" in done.stderr


def test_a_signal_is_128_plus_n_and_the_report_names_the_call_it_died_in(tmp_path):
    s = Stream()
    s.setup()
    s.site("prog.py", 77, "share")
    s.call("clCreateFromGLBuffer", context=hex(0xC0), flags=1, gl_object=9, returns=False)
    report, done = report_of(tmp_path, s, end=f"signal{int(signal.SIGSEGV)}")
    assert done.returncode == 128 + signal.SIGSEGV
    ended = report["ended"]
    assert (ended["status"], ended["signal"], ended["signal_name"]) == (139, 11, "SIGSEGV")
    assert ended["died_in"]["fn"] == "clCreateFromGLBuffer" and ended["died_in"]["site"] == "prog.py:77 (share)"
    assert "killed by SIGSEGV (signal 11) in clCreateFromGLBuffer" in done.stderr


def test_strict_answers_each_verdict_with_the_validators_status(tmp_path):
    s = Stream()
    s.setup()
    s.call("clCreateBufferWithProperties", context=hex(0xC0), flags=1, size=64, props=[], ret={"handle": "0xB3"})
    ids = [s.hand_over("clEnqueueAcquireGLObjects", verdict=True),  # valid: 0
           s.hand_over("clEnqueueReleaseGLObjects", verdict=True),
           s.hand_over("clEnqueueAcquireGLObjects", mems=(0xB3,), verdict=True),  # not from GL: CL_INVALID_GL_OBJECT
           s.hand_over("clEnqueueAcquireGLObjects", queue=0, verdict=True),  # CL_INVALID_COMMAND_QUEUE
           # a mem no creation record names: not from GL on an assumption, so the driver answers (0)
           s.hand_over("clEnqueueAcquireGLObjects", mems=(PLAIN,), verdict=True)]
    report, done = report_of(tmp_path, s, "--strict")
    answers = [json.loads(line) for line in (tmp_path / "answers.jsonl").read_text().splitlines()]
    assert answers == [{"id": i, "status": st} for i, st in zip(ids, (0, 0, -60, -36, 0))]
    assert report["recording"]["verdicts"] == {"asked": 5, "refused": 2}
    assert [(f["case"], f["assumed"]) for f in report["findings"]] == [
        ("not_gl_object", False), ("invalid_queue", False), ("not_gl_object", True)]
    assert done.returncode == 0


def test_without_strict_no_verdict_pipe_is_given(tmp_path):
    s = Stream()
    s.setup()
    s.hand_over("clEnqueueAcquireGLObjects", mems=(PLAIN,), verdict=True)
    done, answers = attach(tmp_path, s)
    assert done.returncode == 0 and answers.read_text() == ""


def test_the_report_holds_the_findings_owners_and_frames(tmp_path):
    s = Stream()
    s.setup()
    s.frame()
    s.frame()
    s.site("prog.py", 12, "oops")
    s.kernel()  # use without acquire, frame 2
    s.call("glDeleteBuffers", src="gl", ctx=hex(GLCTX), names=[3])
    report, done = report_of(tmp_path, s)
    assert report["schema"] == "glshare.attach/1"
    assert report["frames"] == 2
    (proc,) = report["processes"]
    assert proc["frames_from"] == "swap records"
    assert proc["calls"]["clEnqueueAcquireGLObjects"] == 2 and proc["hand_overs_checked"] == 4
    assert [(f["case"], f["fn"], f["frame"], f["site"], f["object"]) for f in report["findings"]] == [
        ("use_without_acquire", "clEnqueueNDRangeKernel", 2, "prog.py:12 (oops)", "GL buffer 3"),
        ("delete_gl_while_shared", "glDeleteBuffers", 2, "0x401000", "GL buffer 3")]
    assert report["findings_by_case"] == {"use_without_acquire": 1, "delete_gl_while_shared": 1}
    assert proc["owners"]["GL buffer 3"]["intervals"] >= 2
    assert "no stamps record came" in " ".join(proc["cannot_see"])
    assert report["cost"]["records"] == len(s.records)
    assert "findings: use_without_acquire x1, delete_gl_while_shared x1" in done.stderr


def test_the_trace_has_thread_queue_owner_and_frame_rows(tmp_path):
    s = Stream()
    s.setup()
    for _ in range(2):
        t0 = s.t
        s.device(s.hand_over("clEnqueueAcquireGLObjects"), t0 + 2_000, t0 + 10_000)
        s.device(s.kernel(), t0 + 10_000, t0 + 50_000)
        s.device(s.hand_over("clEnqueueReleaseGLObjects"), t0 + 50_000, t0 + 60_000)
        s.call("clFinish", queue=hex(QUEUE), dur=t0 + 70_000 - s.t)
        s.draw()
        s.swap()
    done, _ = attach(tmp_path, s, "--trace", str(tmp_path / "t.json"), "--quiet")
    assert done.returncode == 0 and done.stderr == ""
    events = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    rows = {e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    assert rows >= {"frames", "CPU thread 1", f"CL queue {hex(QUEUE)}", "owner GL buffer 3"}
    tid = {e["args"]["name"]: e["tid"] for e in events if e.get("name") == "thread_name"}
    device = [e for e in events if e.get("ph") == "X" and e["tid"] == tid[f"CL queue {hex(QUEUE)}"]]
    assert [e["name"] for e in device] == ["AcquireGLObjects", "NDRangeKernel", "ReleaseGLObjects"] * 2
    assert [round(e["dur"], 1) for e in device[:3]] == [8.0, 40.0, 10.0]  # device END - START, us
    owners = [e["name"] for e in events if e.get("ph") == "X" and e["tid"] == tid["owner GL buffer 3"]]
    assert "CL" in owners and "GL" in owners and "CL -> GL" in owners
    frames = [e["name"] for e in events if e.get("ph") == "X" and e["tid"] == tid["frames"]]
    assert frames == ["frame 0", "frame 1"]


def _cli(argv: list[str], capsys) -> tuple[int, str]:
    status = cli.main(argv)
    return status, capsys.readouterr().err


def test_no_program_after_the_separator_is_one_line_and_exit_2(tmp_path, capsys):
    status, err = _cli(["attach", "--report", str(tmp_path / "r.json"), "--"], capsys)
    assert status == 2 and err.count("\n") == 1 and "no program" in err
    assert not (tmp_path / "r.json").exists()


def test_a_program_not_found_is_one_line_and_exit_2(tmp_path, capsys):
    status, err = _cli(["attach", "--report", str(tmp_path / "r.json"), "--", "no-such-program-xyz"], capsys)
    assert status == 2 and err.count("\n") == 1 and "not found on PATH" in err
    status, err = _cli(["attach", "--", str(tmp_path / "nothing.py")], capsys)
    assert status == 2 and "no such file" in err
    assert not (tmp_path / "r.json").exists()


def test_an_output_that_would_overwrite_the_programs_file_is_refused(tmp_path, capsys):
    script = tmp_path / "prog.py"
    script.write_text("print('hi')\n")
    status, err = _cli(["attach", "--no-cl", "--no-gl", "--report", str(script), "--", sys.executable, str(script)],
                       capsys)
    assert status == 2 and "is the run's input" in err
    assert script.read_text() == "print('hi')\n"


def test_a_library_not_built_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(native, "attach_library", lambda stem: str(tmp_path / f"lib{stem}.so"))
    status, err = _cli(["attach", "--report", str(tmp_path / "r.json"), "--", sys.executable, "-c", "1"], capsys)
    assert status == 2 and err.count("\n") == 1 and "libcl_layer.so is not built" in err
    status, err = _cli(["attach", "--no-cl", "--", sys.executable, "-c", "1"], capsys)
    assert status == 2 and "libgl_preload.so is not built" in err
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("stream_end", ["0", "5"])
def test_a_program_writing_nothing_is_still_reported(tmp_path, stream_end):
    s = Stream()
    s.hello("cl")
    report, done = report_of(tmp_path, s, end=stream_end)
    assert done.returncode == int(stream_end)
    assert report["ended"]["status"] == int(stream_end) and report["frames"] == 0
    assert any("no swap recorded" in why for why in report["processes"][0]["cannot_see"])


def test_the_report_says_what_the_recording_could_not_see():
    """In process: a stream with semaphores, a queue the driver gave no stamps for, a library's note,
    a line that is not a record and a program killed in a call."""
    from app.attach.launch import Outcome, Recorder
    from app.attach.report import build_report
    from app.attach.timeline import build

    s = Stream()
    s.setup()
    k = s.kernel()
    s._put({"k": "stamps", "src": "cl", "id": k, "error": "the queue has no profiling"})
    s.call("clEnqueueSignalSemaphoresKHR", queue=hex(QUEUE), num=1, semaphores=["0x5"], payloads=None,
           num_wait=0, wait=None, event_out=False)
    s._put({"k": "note", "src": "cl", "text": "dropped 3 records: line too long"})
    s.call("clFinish", queue=hex(QUEUE), returns=False)
    recorder = Recorder()
    for line in s.lines() + [b"not json"]:
        recorder.feed_line(line.rstrip(b"\n"))
    outcome = Outcome(["prog"], s.pid, -int(signal.SIGABRT), recorder, {"cl": "/x/libcl_layer.so", "gl": None},
                      False, 1_000_000)
    report = build_report(outcome, {pid: build(m) for pid, m in recorder.models.items()})
    assert report["ended"]["said"] == "killed by SIGABRT (signal 6) in clFinish (call 10, 0x401000)"
    assert report["recording"]["malformed"] == 1
    seen = report["processes"][0]["cannot_see"]
    assert seen[:2] == ["the GL preload library was turned off (--no-gl)",
                        "no swap recorded (glXSwapBuffers, eglSwapBuffers): no frame boundaries, the whole run is "
                        "frame 0"]
    assert f"queue {hex(QUEUE)}: no device stamps (the queue has no profiling): its commands keep their CPU times only" \
        in seen
    assert f"assumed: {UNSEEN_SEMAPHORE} (1x)" in seen  # the signal is checked; its semaphore was never made
    assert "note: cl: dropped 3 records: line too long" in seen


def test_a_driver_ending_the_process_inside_a_call_is_said_with_the_call(tmp_path):
    """PoCL ends the process with exit(2) inside clCreateFromGLBuffer: the status is the program's,
    and the call it was in is named."""
    s = Stream()
    s.setup()
    s.call("clCreateFromGLBuffer", context=hex(0xC0), flags=1, gl_object=9, returns=False)
    report, done = report_of(tmp_path, s, end="2")
    assert done.returncode == 2
    assert report["ended"]["said"] == "exited with status 2 in clCreateFromGLBuffer (call 8, 0x401000)"


def test_a_driver_exit_is_said_with_the_call_and_the_missing_extension_despite_exit_time_gl_calls(tmp_path):
    """PoCL's exit(2) in clCreateFromGLBuffer runs the exit handlers on the same thread, and GLUT's and
    Mesa's make GL calls there (glXMakeContextCurrent, with a ret): the CL call still never returned,
    and the report says which device of its context does not list the extension it needs."""
    s = Stream()
    s.hello("cl")
    s.hello("gl")
    pocl = {"device": hex(DEV), "name": "pthread-cpu", "platform": "Portable Computing Language",
            "platform_version": "OpenCL 3.0 PoCL", "lists": []}
    s.call("clCreateContext", props=[[0x2008, GLCTX]], devices=[hex(DEV)],
           ret={"handle": hex(0xC0), "devices_info": [pocl]})
    s.call("glBufferData", src="gl", ctx=hex(GLCTX), target=0x8892, buffer=1, size=64)
    died = s.call("clCreateFromGLBuffer", context=hex(0xC0), flags=1, gl_object=1, returns=False)
    s.call("glXMakeContextCurrent", src="gl", ctx=hex(GLCTX), display="0x99", drawable="0x5", context=hex(GLCTX),
           ret={"result": 1})
    report, done = report_of(tmp_path, s, end="2")
    assert done.returncode == 2
    ended = report["ended"]
    assert ended["died_in"]["fn"] == "clCreateFromGLBuffer" and ended["died_in"]["id"] == died
    assert ended["died_in"]["why"] == ["device 'pthread-cpu' (Portable Computing Language) does not list "
                                       "cl_khr_gl_sharing"]
    assert ended["said"] == (f"exited with status 2 in clCreateFromGLBuffer (call {died}, 0x401000); device "
                             "'pthread-cpu' (Portable Computing Language) does not list cl_khr_gl_sharing")
    assert [u["fn"] for u in report["processes"][0]["unreturned"]] == ["clCreateFromGLBuffer"]
    assert report["processes"][0]["contexts"] == [{"handle": "0xc0", "gl_context": hex(GLCTX), "devices": [pocl]}]


def test_a_sigterm_to_glshare_goes_to_the_program_and_the_report_is_written(tmp_path):
    prog = tmp_path / "sleeper.py"
    prog.write_text("import sys, time\nprint('up', flush=True)\ntime.sleep(60)\n")
    report = tmp_path / "r.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen([sys.executable, "-m", "app", "attach", "--no-cl", "--no-gl", "--report", str(report), "--",
                          sys.executable, str(prog)], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline() == "up\n"
    p.send_signal(signal.SIGTERM)
    _out, err = p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGTERM
    assert json.loads(report.read_text())["ended"]["signal_name"] == "SIGTERM"
    assert "killed by SIGTERM (signal 15)" in err
    assert "nothing was recorded" in err  # the sleeper made no call the recorders wrap


def test_the_programs_debug_option_is_not_glshares(capsys):
    """glshare's --debug raises its errors with their traceback; after -- it is the program's."""
    status, err = _cli(["attach", "--", "no-such-program-xyz", "--debug"], capsys)
    assert status == 2 and "not found on PATH" in err


def test_the_trace_marks_the_call_died_in_and_gl_calls_without_ret_as_instants():
    from app.attach.model import ProcessModel
    from app.attach.timeline import build
    from app.attach.trace import build_trace

    s = Stream()
    s.setup()
    s.call("glDrawArrays", src="gl", ctx=hex(GLCTX), mode=0, count=3, buffers=[], textures=[], returns=False)
    s.call("clFinish", queue=hex(QUEUE), returns=False)
    model = ProcessModel(s.pid)
    for rec in s.records:
        model.feed(rec)
    events = build_trace({s.pid: model}, {s.pid: build(model)}, "prog")["traceEvents"]
    instants = [(e["name"], e["cat"]) for e in events if e.get("ph") == "i"]
    assert instants == [("glDrawArrays", "gl"), ("died in clFinish", "ended")]


def test_an_output_over_glshares_own_recorder_is_refused(tmp_path, capsys):
    from app.attach.launch import HOOK_DIR

    hook = os.path.join(HOOK_DIR, "sitecustomize.py")
    before = Path(hook).read_bytes()
    status, err = _cli(["attach", "--no-cl", "--no-gl", "--trace", hook, "--", sys.executable, "-c", "1"], capsys)
    assert status == 2 and "is the run's input (glshare's recorder" in err
    assert Path(hook).read_bytes() == before


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="SCHED_IDLE and SCHED_BATCH are Linux's")
def test_the_checks_run_behind_the_program_unless_strict():
    """Without --strict the checking thread is SCHED_IDLE (a core nothing else wants) and the reader's
    wake-ups are SCHED_BATCH's; under --strict the checks keep the program's policy (it waits on them)."""
    import queue
    import threading

    from app.attach import launch

    class Seen(launch.Recorder):
        def feed_line(self, line):
            self.policy = os.sched_getscheduler(threading.get_native_id())
            return super().feed_line(line)

    line = json.dumps({"k": "hello", "src": "cl", "pid": 1, "t": 1, "lib": "x", "version": 1}).encode()
    policies = {}
    for strict in (False, True):
        chunks: queue.SimpleQueue = queue.SimpleQueue()
        chunks.put(line + b"\n")
        chunks.put(None)
        recorder = Seen()
        answer_r, answer_w = os.pipe()
        t = threading.Thread(target=launch._check, args=(chunks, recorder, answer_w if strict else None))
        t.start()
        t.join()
        os.close(answer_r)
        os.close(answer_w)
        policies[strict] = recorder.policy
        assert recorder.records == 1
    assert policies == {False: os.SCHED_IDLE, True: os.SCHED_OTHER}
    got = []
    t = threading.Thread(target=lambda: (launch._behind("batch"), got.append(os.sched_getscheduler(threading.get_native_id()))))
    t.start()
    t.join()
    assert got == [os.SCHED_BATCH]
