"""The error lab's driver calls in a child under a watchdog (app/lab/isolate.py): a call that never
returns is "hung" and one that kills the process "crashed (SIGSEGV)" in the driver column, the
JSON's and the text's, and the cases after them are still called (NVIDIA 580 hung
``glshare errors --backend gl_sharing --window`` with no output at all). The driver is the emulated
one (tests/gl_emulation.py) in tests/gl_lab_child.py, stuck in one case's acquire and crashing in its
release; the watchdog's bound is shortened for the test, though not below what a loaded CI machine
needs for a case that does return (at 3 s one CI run saw enough spurious "hung" cases to stop the
lab's driver calls before the crashing one)."""
from __future__ import annotations

import os
import sys

import pytest
from support import HELPERS, pythonpath_with_root

from app.lab import isolate, lab

CHILD = str(HELPERS / "gl_lab_child.py")
CASE_BOUND = 8.0  # seconds; the planned hang costs one bound per child that meets it


@pytest.fixture(scope="module")
def results():
    env = dict(os.environ, PYTHONPATH=pythonpath_with_root(), PYOPENGL_PLATFORM="egl")
    return isolate.run_isolated([sys.executable, CHILD, "--backend", "gl_sharing"], case_bound=CASE_BOUND, phase_bound=120.0,
                                env=env)


def test_hung_and_crashed_calls_are_the_driver_answer(results):
    rows = {(r["case"], r["call"]): r for r in results["cases"] if r["family"] == "gl_sharing"}
    hung, crashed = rows["num_given_list_null", "acquire"], rows["num_given_list_null", "release"]
    assert hung["driver_called"] and hung["driver_code"] == "hung" and hung["driver_differs"], hung
    assert "SIGKILL" in hung["driver_note"]
    hung_rows = [k for k, r in rows.items() if r["driver_code"] == "hung"]
    assert crashed["driver_called"] and crashed["driver_code"] == "crashed (SIGSEGV)", (crashed["driver_note"], hung_rows)
    # the cases after them were called in the next child, and answered
    after = [r for (case, call), r in rows.items() if call == "release" and case != "num_given_list_null"
             and r["driver_called"]]
    assert after and all(r["driver_code"].startswith("CL_") for r in after)  # the emulated driver's answers
    assert rows["valid", "release"]["driver_code"] == "CL_SUCCESS"
    text = lab.format_text(results)
    assert "hung << differs" in text and "crashed (SIGSEGV) << differs" in text


def test_a_child_dying_outside_a_case_is_one_error(tmp_path):
    script = tmp_path / "dies.py"
    script.write_text("import os, signal, sys\nprint('LAB PHASE its set-up', flush=True)\n"
                      "os.kill(os.getpid(), signal.SIGABRT)\n")
    with pytest.raises(isolate.LabChildFailed, match=r"died \(SIGABRT\) in its set-up"):
        isolate.run_isolated([sys.executable, str(script)], case_bound=3.0, phase_bound=30.0)


def test_no_driver_no_child(host_copy, monkeypatch):
    """PoCL and Intel's CPU runtime on the CPU machines: no family calls a driver, so the lab runs in
    its own process (fast, as before)."""
    assert not any(r is None for r in lab.driver_reasons(host_copy, lab.lab_families(host_copy)).values())


def test_after_max_hung_cases_no_driver_call_is_made(monkeypatch):
    monkeypatch.setattr(isolate, "MAX_HUNG", 1)
    env = dict(os.environ, PYTHONPATH=pythonpath_with_root(), PYOPENGL_PLATFORM="egl")
    out = isolate.run_isolated([sys.executable, CHILD, "--backend", "gl_sharing"], case_bound=CASE_BOUND, env=env)
    rows = [r for r in out["cases"] if r["family"] == "gl_sharing"]
    hung = [r for r in rows if r["driver_code"] == "hung"]
    assert len(hung) == 1 and not any(r["driver_code"] and r["driver_code"].startswith("crashed") for r in rows)
    later = rows[rows.index(hung[0]) + 1:]
    assert later and not any(r["driver_called"] for r in later)
    assert sum("the driver hung in 1 case(s) before" in r["driver_note"] for r in later) > len(later) / 2


def test_a_hang_in_the_hazards_runs_the_lab_again_without_them(tmp_path):
    script = tmp_path / "hazards_hang.py"
    script.write_text("import json, sys, time\n"
                      "given = json.load(open(sys.argv[sys.argv.index('--answered') + 1]))\n"
                      "if not given['skip_hazards']:\n"
                      "    print('LAB PHASE the hazards', flush=True)\n"
                      "    time.sleep(3600)\n"
                      "print('LAB RESULT ' + json.dumps({'hazards_note': given['skip_hazards']}), flush=True)\n")
    out = isolate.run_isolated([sys.executable, str(script)], case_bound=3.0, phase_bound=2.0)
    assert out["hazards_note"] == "not run: the error lab's child hung in the hazards (killed after 2 s)"


def test_a_child_stuck_after_its_results_is_killed_and_said(tmp_path):
    script = tmp_path / "stuck_at_exit.py"
    script.write_text("import json, time\nprint('LAB RESULT ' + json.dumps({'summary': {}}), flush=True)\n"
                      "time.sleep(3600)\n")
    out = isolate.run_isolated([sys.executable, str(script)], case_bound=3.0, phase_bound=2.0)
    assert out["teardown_note"] == "the lab's child hung in its teardown after its results (killed after 2 s)"


def test_errors_runs_the_lab_in_a_child_where_a_driver_would_be_called(gl, monkeypatch, capsys):
    """``glshare errors``'s own path: where a family would call the driver the lab runs in
    ``python -m app.lab.isolate`` (here on host_copy, whose child then calls none: PoCL's rule)."""
    import argparse
    import json

    monkeypatch.setattr(lab, "driver_reasons", lambda backend, families, entry=None: dict.fromkeys(families))
    commands, real = [], isolate.run_isolated
    env = dict(os.environ, PYTHONPATH=pythonpath_with_root(), PYOPENGL_PLATFORM="egl")
    monkeypatch.setattr(isolate, "run_isolated", lambda cmd, **kw: commands.append(cmd) or real(cmd, env=env))
    status = lab.main(argparse.Namespace(json=True, cl_device="portable", window=False, backend="host_copy"))
    results = json.loads(capsys.readouterr().out)
    assert commands and commands[0][1:5] == ["-m", "app.lab.isolate", "--backend", "host_copy"], commands
    assert "--window" not in commands[0] and status == 0
    assert results["backend"] == "host_copy" and results["summary"]["cases"] > 0 and results["summary"]["ok"]
