"""glshare attach's model on hand-written record streams (app/attach/wire.py's format): each finding
made on purpose is found, with its call and site, and a clean stream gives none.

``Stream`` writes records as the two libraries and the site hook would (one process); the other
test files of glshare attach use it too."""
from __future__ import annotations

import json

import pytest

from app.attach import wire
from app.attach.model import ProcessModel
from app.attach.timeline import build
from app.errors import CL_CODES

PID = 4242
CTX, GLCTX, DEV, QUEUE, QUEUE2, PLAIN_CTX, PLAIN_Q = 0xC0, 0x6C, 0xDE, 0x10, 0x11, 0xC1, 0x12
BUF, TEX, PLAIN = 0xB0, 0xB1, 0xB2


class Stream:
    """Records of one process, ``t`` advancing 1 us per record unless given."""

    def __init__(self, pid: int = PID, t0: int = 1_000_000_000) -> None:
        self.pid, self.t, self.records = pid, t0, []
        self.ids = {"cl": 0, "gl": 0}

    def _put(self, rec: dict, t: int | None = None) -> dict:
        self.t = t if t is not None else self.t + 1000
        rec = {"pid": self.pid, "t": self.t, **rec}
        self.records.append(rec)
        return rec

    def hello(self, src: str) -> None:
        self._put({"k": "hello", "src": src, "lib": f"glshare-{src}", "version": 1})

    def call(self, fn: str, src: str = "cl", tid: int = 1, ret: dict | None = None, returns: bool = True,
             verdict: bool = False, dur: int = 1000, **args) -> int:
        self.ids[src] += 1
        cid = self.ids[src]
        rec = {"k": "call", "src": src, "id": cid, "tid": tid, "fn": fn, "site": "0x401000", **args}
        if verdict:
            rec["verdict"] = True
        self._put(rec)
        self.last_call_t = self.t
        if returns:
            self._put({"k": "ret", "src": src, "id": cid, **({"status": 0} if src == "cl" else {}), **(ret or {})},
                      t=self.t + dur)
        return cid

    offset = 7_000_000  # host ns = device ns + offset

    def device(self, cid: int, start: int, end: int) -> None:
        """Stamps of the last call (``cid``): queued in the middle of the call, START and END at the
        host times ``start`` and ``end``, all written in device ns."""
        queued = self.last_call_t + 500 - self.offset
        self._put({"k": "stamps", "src": "cl", "id": cid, "queued": queued, "submit": queued,
                   "start": start - self.offset, "end": end - self.offset})

    def site(self, file: str, line: int, func: str = "main", tid: int = 1) -> None:
        self._put({"k": "site", "src": "py", "tid": tid, "file": file, "line": line, "func": func})

    def lines(self) -> list[bytes]:
        return [json.dumps(r).encode() + b"\n" for r in self.records]

    # -- a GL-sharing program's usual calls ---------------------------------------------------------
    def setup(self, textures: bool = True) -> None:
        self.hello("cl")
        self.hello("gl")
        self.call("clCreateContext", props=[[0x2008, GLCTX], [0x200A, 0x99]], devices=[hex(DEV)],
                  ret={"handle": hex(CTX)})
        self.call("clCreateContext", props=[], devices=[hex(DEV)], ret={"handle": hex(PLAIN_CTX)})
        for q, c in ((QUEUE, CTX), (QUEUE2, CTX), (PLAIN_Q, PLAIN_CTX)):
            self.call("clCreateCommandQueueWithProperties", context=hex(c), device=hex(DEV), props=[],
                      profiling=True, ret={"handle": hex(q)})
        self.call("clCreateFromGLBuffer", context=hex(CTX), flags=1, gl_object=3, ret={"handle": hex(BUF)})
        if textures:
            self.call("clCreateFromGLTexture", context=hex(CTX), flags=1, gl_object=7, target=0xDE1, miplevel=0,
                      ret={"handle": hex(TEX)})

    def hand_over(self, fn: str, mems=(BUF,), queue: int = QUEUE, num: int | None = None, wait=None,
                  num_wait: int | None = None, event_out: bool = False, **kw) -> int:
        mems_list = None if mems is None else [hex(m) for m in mems]
        return self.call(fn, queue=hex(queue), num=len(mems or ()) if num is None else num, mems=mems_list,
                         num_wait=len(wait or ()) if num_wait is None else num_wait,
                         wait=None if wait is None else [hex(e) for e in wait], event_out=event_out, **kw)

    def kernel(self, mems=(BUF,), queue: int = QUEUE, **kw) -> int:
        return self.call("clEnqueueNDRangeKernel", queue=hex(queue), kernel="0x77", name="k",
                         mems=[hex(m) for m in mems], dims=1, gws=[64], lws=None, num_wait=0, wait=None,
                         event_out=False, **kw)

    def draw(self, buffers=(3,), textures=()) -> int:
        return self.call("glDrawArrays", src="gl", ctx=hex(GLCTX), mode=0, count=64, buffers=list(buffers),
                         textures=list(textures))

    def swap(self) -> int:
        return self.call("glXSwapBuffers", src="gl", ctx=hex(GLCTX), display="0x99", drawable="0x5")

    def frame(self) -> None:
        """A correct frame: GL done, acquire, kernel, release, CL done, draw, swap."""
        self.call("glFinish", src="gl", ctx=hex(GLCTX))
        self.hand_over("clEnqueueAcquireGLObjects")
        self.kernel()
        self.hand_over("clEnqueueReleaseGLObjects")
        self.call("clFinish", queue=hex(QUEUE))
        self.draw()
        self.swap()


def feed(stream: Stream) -> ProcessModel:
    model = ProcessModel(stream.pid)
    for line in stream.lines():
        model.feed(wire.parse_line(line))
    return model


def cases(model: ProcessModel) -> list[str]:
    return [f.case for f in model.findings]


def test_a_clean_stream_gives_no_finding():
    s = Stream()
    s.setup()
    for _ in range(3):
        s.frame()
    model = feed(s)
    assert model.findings == []
    assert model.frame == 3
    assert model.checked == 6
    assert [c.checked for c in model.calls if c.fn.startswith("clEnqueue") and "GL" in c.fn] == ["CL_SUCCESS"] * 6
    assert model.unreturned() == []


@pytest.mark.parametrize("change, rule, code", [
    ({"queue": 0}, "invalid_queue", "CL_INVALID_COMMAND_QUEUE"),
    ({"queue": PLAIN_Q}, "context_not_from_gl", "CL_INVALID_CONTEXT"),
    ({"mems": (PLAIN,)}, "not_gl_object", "CL_INVALID_GL_OBJECT"),
    ({"mems": None, "num": 1}, "num_given_list_null", "CL_INVALID_VALUE"),
    ({"mems": (BUF,), "num": 0}, "num_zero_list_given", "CL_INVALID_VALUE"),
    ({"num_wait": 1}, "wait_list_null_n_given", "CL_INVALID_EVENT_WAIT_LIST"),
    ({"wait": (0,), "num_wait": 1}, "wait_list_invalid_event", "CL_INVALID_EVENT_WAIT_LIST"),
])
def test_each_listed_error_of_the_acquire_is_found_with_its_code_and_site(change, rule, code):
    s = Stream()
    s.setup()
    s.site("prog.py", 42, "step")
    s.hand_over("clEnqueueAcquireGLObjects", **change)
    model = feed(s)
    (f,) = model.findings
    assert (f.case, f.code, f.source, f.fn, f.site) == (rule, CL_CODES[code], "validator", "clEnqueueAcquireGLObjects",
                                                       "prog.py:42 (step)")
    assert f.spec  # the sentence of the call's error list


def test_a_released_mem_object_is_invalid():
    s = Stream()
    s.setup()
    s.call("clReleaseMemObject", mem=hex(BUF))
    s.hand_over("clEnqueueAcquireGLObjects")
    model = feed(s)
    assert [(f.case, f.code, f.assumed) for f in model.findings] == \
        [("invalid_mem_object", CL_CODES["CL_INVALID_MEM_OBJECT"], False)]


def test_a_retained_mem_object_lives_until_its_last_release():
    s = Stream()
    s.setup()
    s.call("clRetainMemObject", mem=hex(BUF))
    s.call("clRetainMemObject", mem=hex(BUF), ret={"status": CL_CODES["CL_OUT_OF_RESOURCES"]})  # refused: no reference
    s.call("clReleaseMemObject", mem=hex(BUF))
    s.hand_over("clEnqueueAcquireGLObjects")
    s.hand_over("clEnqueueReleaseGLObjects")
    assert feed(s).findings == []
    s.call("clReleaseMemObject", mem=hex(BUF))  # the last reference
    s.hand_over("clEnqueueAcquireGLObjects")
    assert cases(feed(s)) == ["invalid_mem_object"]


def test_an_acquire_whose_event_is_written_into_its_wait_list_breaks_the_alias_rule():
    s = Stream()
    s.setup()
    s.kernel(mems=(PLAIN,), ret={"event": "0xE1"})
    s.kernel(mems=(PLAIN,), ret={"event": "0xE2"})
    s.hand_over("clEnqueueAcquireGLObjects", wait=(0xE1,), event_out=True)  # a separate place: fine
    s.hand_over("clEnqueueReleaseGLObjects", wait=(0xE1, 0xE2), event_out=True, event_in_wait=1)
    model = feed(s)
    (f,) = model.findings
    assert (f.case, f.fn, f.code) == ("event_aliases_wait_list", "clEnqueueReleaseGLObjects", None)
    assert "must not refer to an element of the event_wait_list" in f.spec


def test_an_event_of_another_context_in_the_wait_list():
    s = Stream()
    s.setup()
    s.kernel(mems=(PLAIN,), queue=PLAIN_Q, ret={"event": "0xE1"})
    s.hand_over("clEnqueueAcquireGLObjects", wait=(0xE1,))
    model = feed(s)
    assert cases(model) == ["wait_list_other_context"]


def test_use_without_acquire():
    s = Stream()
    s.setup()
    s.kernel()
    model = feed(s)
    (f,) = model.findings
    assert (f.case, f.kind, f.object, f.fn) == ("use_without_acquire", "spec", "GL buffer 3", "clEnqueueNDRangeKernel")


def test_gl_use_while_cl_holds_the_buffer_and_the_texture():
    s = Stream()
    s.setup()
    s.hand_over("clEnqueueAcquireGLObjects", mems=(BUF, TEX))
    s.site("prog.py", 9, "render")
    s.call("glDrawArrays", src="gl", ctx=hex(GLCTX), mode=0, count=3, buffers=[3], textures=[7])
    s.call("glBufferSubData", src="gl", ctx=hex(GLCTX), target=0x8892, buffer=3, size=16)
    model = feed(s)
    assert [(f.case, f.object, f.fn) for f in model.findings] == [
        ("gl_use_while_acquired", "GL buffer 3", "glDrawArrays"),
        ("gl_use_while_acquired", "GL texture 7", "glDrawArrays"),
        ("gl_use_while_acquired", "GL buffer 3", "glBufferSubData")]
    assert model.findings[0].site == "prog.py:9 (render)"
    assert model.findings[2].site == "0x401000"  # the site record names the next call only


def test_gl_delete_while_a_cl_mem_from_it_lives_and_not_after_its_release():
    s = Stream()
    s.setup()
    s.call("glDeleteBuffers", src="gl", ctx=hex(GLCTX), names=[3])
    s.call("clReleaseMemObject", mem=hex(TEX))
    s.call("glDeleteTextures", src="gl", ctx=hex(GLCTX), names=[7])
    model = feed(s)
    assert [(f.case, f.object, f.fn) for f in model.findings] == [
        ("delete_gl_while_shared", "GL buffer 3", "glDeleteBuffers")]


def test_double_acquire_and_release_without_acquire_are_advice():
    s = Stream()
    s.setup()
    s.hand_over("clEnqueueReleaseGLObjects")
    s.hand_over("clEnqueueAcquireGLObjects")
    s.hand_over("clEnqueueAcquireGLObjects", queue=QUEUE2)
    model = feed(s)
    assert [(f.case, f.kind) for f in model.findings] == [("release_without_acquire", "advice"),
                                                          ("double_acquire", "advice")]


def test_a_refused_hand_over_changes_no_owner():
    """The driver's status decides the transition: a failed acquire leaves GL the owner."""
    s = Stream()
    s.setup()
    s.hand_over("clEnqueueAcquireGLObjects", ret={"status": -60})
    s.kernel()
    model = feed(s)
    assert cases(model) == ["use_without_acquire"]


def test_frames_are_delimited_by_swaps():
    s = Stream()
    s.setup()
    s.frame()
    s.kernel()
    model = feed(s)
    assert model.frame == 1
    assert [f.frame for f in model.findings] == [1]


def _racy_frame(s: Stream, wait: bool, draw_ret: bool = True) -> None:
    """An acquire, a kernel and a release the device runs to t0 + 300 us; then a draw, after a
    clFinish that returns once the release completed (``wait``), or issued before it completed."""
    t0 = s.t
    s.device(s.hand_over("clEnqueueAcquireGLObjects"), t0 + 2_000, t0 + 100_000)
    s.device(s.kernel(), t0 + 100_000, t0 + 200_000)
    s.device(s.hand_over("clEnqueueReleaseGLObjects"), t0 + 200_000, t0 + 300_000)
    if wait:
        s.call("clFinish", queue=hex(QUEUE), dur=t0 + 320_000 - s.t)
    s.call("glDrawArrays", src="gl", ctx=hex(GLCTX), mode=0, count=64, buffers=[3], textures=[], dur=50_000,
           returns=draw_ret)
    s.swap()
    s.t = max(s.t, t0 + 1_000_000)


def _stamped_stream(wait: bool, draw_ret: bool = True) -> Stream:
    s = Stream()
    s.setup()
    for _ in range(2):
        _racy_frame(s, wait, draw_ret)
    return s


def test_no_race_where_the_program_waits_for_the_release():
    model = feed(_stamped_stream(wait=True))
    tl = build(model)
    assert model.findings == []
    assert tl.races == []
    assert len(tl.records) == 2 and tl.checked == 2


def test_a_draw_issued_before_the_release_completed_is_a_race_seen_in_the_stamps():
    model = feed(_stamped_stream(wait=False))
    assert model.findings == []  # in CPU order every call is legal
    tl = build(model)
    assert [(f.case, f.object, f.fn, f.source) for f in tl.races] == \
        [("gl_before_release_complete", "GL buffer 3", "glDrawArrays", "races")] * 2
    race = tl.races[0].extra["race"]
    assert race["overlap_us"] > 0


def test_a_draw_without_ret_counts_to_the_swap_and_races_the_same():
    """The GL library writes no ret for a draw: its work is bounded by the frame's swap."""
    assert [f.case for f in build(feed(_stamped_stream(wait=False, draw_ret=False))).races] == \
        ["gl_before_release_complete"] * 2
    assert build(feed(_stamped_stream(wait=True, draw_ret=False))).races == []


def test_device_stamps_are_mapped_onto_the_cpu_clock_within_the_brackets():
    s = _stamped_stream(wait=True)
    model = feed(s)
    tl = build(model)
    (est,) = tl.clocks.devices.values()
    assert abs(est.offset - s.offset) <= est.uncertainty_ns
    assert est.uncertainty_ns < 5000  # each queued stamp lies inside a call 1 us wide
    owners = [(iv.label, iv.state) for iv in tl.owners]
    assert ("GL buffer 3", "CL") in owners and ("GL buffer 3", "GL") in owners


def test_without_stamps_the_races_say_what_they_cannot_see():
    s = Stream()
    s.setup()
    s.frame()
    tl = build(feed(s))
    assert tl.races == [] and tl.checked == 0
    assert "frame not timed" in tl.blind


def test_a_bad_line_is_refused_with_one_reason():
    for line, why in ((b"{", "not JSON"), (b"[]", "not a JSON object"), (b'{"k":"call"}', "no src"),
                      (b'{"k":"zz","src":"cl","pid":1,"t":1}', "unknown kind")):
        with pytest.raises(wire.BadRecord, match=why):
            wire.parse_line(line)


def test_a_line_reads_as_json_reads_it():
    """The scanner's fast path and decode's answer agree: white space around the object, text that is
    not ASCII, and a second value after the first (refused, as decode refuses it)."""
    rec = {"k": "site", "src": "py", "pid": 7, "t": 9, "file": "/tmp/\u00e9t\u00e9.py", "line": 3}
    text = json.dumps(rec, ensure_ascii=False)
    for line in (text.encode(), f"  {text}\t".encode(), text, json.dumps(rec).encode()):
        assert wire.parse_line(line) == rec
    with pytest.raises(wire.BadRecord, match="not JSON: Extra data"):
        wire.parse_line(f"{text} {text}".encode())


def test_release_on_another_queue_is_advice():
    s = Stream()
    s.setup()
    s.hand_over("clEnqueueAcquireGLObjects")
    s.hand_over("clEnqueueReleaseGLObjects", queue=QUEUE2)
    model = feed(s)
    assert [(f.case, f.kind, f.fn) for f in model.findings] == [
        ("release_on_other_queue", "advice", "clEnqueueReleaseGLObjects")]


EXT, PLAIN_BUF = 0xE0, 0xE1


def _external(s: Stream) -> None:
    s.setup(textures=False)
    s.call("clCreateBufferWithProperties", context=hex(CTX), flags=1, size=64, props=[[0x2060, 5]],
           ret={"handle": hex(EXT)})
    s.call("clCreateBuffer", context=hex(CTX), flags=1, size=64, ret={"handle": hex(PLAIN_BUF)})


def test_external_memory_is_checked_with_its_own_family():
    s = Stream()
    _external(s)
    s.hand_over("clEnqueueAcquireExternalMemObjectsKHR", mems=(EXT,))
    s.kernel(mems=(EXT,))
    s.hand_over("clEnqueueReleaseExternalMemObjectsKHR", mems=(EXT,))
    assert feed(s).findings == []
    s.kernel(mems=(EXT,))  # after the release
    s.hand_over("clEnqueueAcquireExternalMemObjectsKHR", mems=(PLAIN_BUF,))
    s.hand_over("clEnqueueAcquireExternalMemObjectsKHR", mems=(EXT, EXT))
    model = feed(s)
    assert [(f.case, f.code) for f in model.findings] == [
        ("use_without_acquire", None), ("not_external_memory", CL_CODES["CL_INVALID_MEM_OBJECT"]),
        ("acquire_twice", None),  # the validator's (no CL code in the text) ...
        ("double_acquire", None)]  # ... and the tracker's, since the driver took the call (status 0)
    assert model.findings[0].object == f"imported buffer {EXT:#x}"


def test_a_killed_call_has_no_ret_and_is_named():
    s = Stream()
    s.setup()
    s.call("clCreateFromGLBuffer", context=hex(CTX), flags=1, gl_object=9, returns=False)
    model = feed(s)
    (c,) = model.unreturned()
    assert (c.fn, c.id) == ("clCreateFromGLBuffer", 8)


def test_a_void_gl_call_without_ret_returned_where_its_thread_went_on():
    """The GL library writes no ret for a call that returns nothing and waits for nothing: such a
    call is not one the process died in; a CL call (every one has a ret) is."""
    s = Stream()
    s.setup()
    s.call("glDrawArrays", src="gl", ctx=hex(GLCTX), mode=0, count=3, buffers=[], textures=[], returns=False)
    s.call("glDeleteBuffers", src="gl", ctx=hex(GLCTX), names=[99], returns=False)
    assert feed(s).unreturned() == []
    s.call("glFinish", src="gl", ctx=hex(GLCTX), returns=False)  # one the library completes elsewhere
    s.call("glFinish", src="gl", ctx=hex(GLCTX))
    assert feed(s).unreturned() == []
    s.call("glFinish", src="gl", ctx=hex(GLCTX), returns=False)
    assert [c.fn for c in feed(s).unreturned()] == ["glFinish"]


def test_processes_and_threads_are_kept_apart():
    """Two processes' streams interleaved (a fork), two threads each with its own site."""
    from app.attach.launch import Recorder

    a, b = Stream(pid=100), Stream(pid=200)
    for s in (a, b):
        s.setup()
    a.site("render.py", 5, "draw", tid=2)
    a.site("compute.py", 7, "step", tid=1)
    a.kernel()  # tid 1: use without acquire, at compute.py:7
    a.call("glDrawArrays", src="gl", tid=2, ctx=hex(GLCTX), mode=0, count=3, buffers=[3], textures=[])
    b.hand_over("clEnqueueAcquireGLObjects", mems=(PLAIN,), queue=PLAIN_Q)
    recorder = Recorder()
    for x, y in zip(a.lines(), b.lines()):
        recorder.feed_line(x)
        recorder.feed_line(y)
    for line in a.lines()[len(b.lines()):] + b.lines()[len(a.lines()):]:
        recorder.feed_line(line)
    ma, mb = recorder.models[100], recorder.models[200]
    assert [(f.case, f.site, f.tid) for f in ma.findings] == [("use_without_acquire", "compute.py:7 (step)", 1)]
    draw = next(c for c in ma.calls if c.fn == "glDrawArrays")
    assert draw.site == "render.py:5 (draw)"
    assert [(f.case, f.pid) for f in mb.findings] == [("context_not_from_gl", 200)]


def test_every_draw_form_is_a_gl_use():
    s = Stream()
    s.setup()
    s.hand_over("clEnqueueAcquireGLObjects")
    for fn in ("glDrawElementsBaseVertex", "glMultiDrawArrays", "glDrawArraysInstancedBaseInstance"):
        s.call(fn, src="gl", ctx=hex(GLCTX), mode=4, count=3, buffers=[3], textures=[], returns=False)
    assert [(f.case, f.fn) for f in feed(s).findings] == [
        ("gl_use_while_acquired", fn) for fn in ("glDrawElementsBaseVertex", "glMultiDrawArrays",
                                                 "glDrawArraysInstancedBaseInstance")]


def test_a_long_run_keeps_its_last_calls_and_counts_them_all(monkeypatch):
    from app.attach import model as model_module

    monkeypatch.setattr(model_module, "KEEP_CALLS", 50)
    s = Stream()
    s.setup()
    for _ in range(10):
        s.frame()
    s.kernel()  # a finding after the eviction of the first calls
    m = feed(s)
    assert m.calls_seen == 7 + 10 * 7 + 1 and len(m.calls) == 50
    assert m.counts()["clEnqueueAcquireGLObjects"] == 10 and m.frame == 10
    assert [f.case for f in m.findings] == ["use_without_acquire"]
    assert len(build(m).records) >= 6  # the brackets of the kept calls


def test_events_and_released_objects_are_remembered_up_to_a_bound(monkeypatch):
    from app.attach import model as model_module

    monkeypatch.setattr(model_module, "KEEP_HANDLES", 3)
    s = Stream()
    s.setup()
    for i in range(5):
        s.kernel(mems=(PLAIN,), queue=PLAIN_Q, ret={"event": hex(0xE00 + i)})
    m = feed(s)
    assert list(m.events) == [0xE02, 0xE03, 0xE04]


def test_findings_are_all_counted_and_kept_up_to_a_bound(monkeypatch):
    from app.attach import model as model_module

    monkeypatch.setattr(model_module, "KEEP_FINDINGS", 2)
    s = Stream()
    s.setup()
    for _ in range(4):
        s.kernel()
    m = feed(s)
    assert len(m.findings) == 2 and m.finding_counts == {"use_without_acquire": 4}


SEM, SEM2, SHARED_SEM = 0x5E0, 0x5E1, 0x5E2
CL_SEMAPHORE_TYPE_KHR, CL_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR, CL_SEMAPHORE_HANDLE_OPAQUE_FD_KHR = 0x203D, 0x203F, 0x2055


def _semaphores(s: Stream) -> None:
    s.setup()
    for sem, props in ((SEM, [[CL_SEMAPHORE_TYPE_KHR, 1]]), (SEM2, [[CL_SEMAPHORE_TYPE_KHR, 1]]),
                       (SHARED_SEM, [[CL_SEMAPHORE_TYPE_KHR, 1],
                                     [CL_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR, CL_SEMAPHORE_HANDLE_OPAQUE_FD_KHR]])):
        s.call("clCreateSemaphoreWithPropertiesKHR", context=hex(CTX), props=props, ret={"handle": hex(sem)})


def sem_call(s: Stream, op: str, sems=(SEM,), queue: int = QUEUE, num: int | None = None, num_wait: int = 0,
             **kw) -> int:
    return s.call(f"clEnqueue{op}SemaphoresKHR", queue=hex(queue), num=len(sems) if num is None else num,
                  semaphores=[hex(x) for x in sems], payloads=None, num_wait=num_wait, wait=None, event_out=False,
                  **kw)


def test_semaphore_signals_and_waits_in_turn_give_no_finding():
    s = Stream()
    _semaphores(s)
    for _ in range(3):
        sem_call(s, "Signal")
        sem_call(s, "Wait", queue=QUEUE2)
    sem_call(s, "Signal", sems=(SEM, SEM2))
    sem_call(s, "Wait", sems=(SEM2, SEM))
    model = feed(s)
    assert model.findings == [] and model.checked == 8


def test_a_semaphore_signalled_twice_or_waited_on_unsignalled_is_found_with_its_call_and_site():
    s = Stream()
    _semaphores(s)
    sem_call(s, "Signal")
    s.site("prog.py", 7, "frame")
    twice = sem_call(s, "Signal")
    sem_call(s, "Wait")
    s.site("prog.py", 9, "frame")
    unsignalled = sem_call(s, "Wait")
    model = feed(s)
    assert [(f.case, f.call_id, f.site, f.code) for f in model.findings] == [
        ("signal_twice", twice, "prog.py:7 (frame)", None), ("wait_twice", unsignalled, "prog.py:9 (frame)", None)]
    assert "no wait took the signal" in model.findings[0].detail
    assert "its last operation was clEnqueueWaitSemaphoresKHR" in model.findings[1].detail
    assert "binary semaphore twice" in model.findings[0].spec


@pytest.mark.parametrize("change, rule, code", [
    ({"num": 0}, "num_zero", "CL_INVALID_VALUE"),
    ({"sems": (0,)}, "invalid_semaphore", "CL_INVALID_SEMAPHORE_KHR"),
    ({"queue": PLAIN_Q}, "semaphore_other_context", "CL_INVALID_CONTEXT"),
    ({"num_wait": 1}, "wait_list_null_n_given", "CL_INVALID_EVENT_WAIT_LIST"),
])
def test_each_listed_error_of_a_semaphore_call_is_found_with_its_code(change, rule, code):
    s = Stream()
    _semaphores(s)
    sem_call(s, "Signal", **change)
    (f,) = feed(s).findings
    assert (f.case, f.code, f.fn, f.source) == (rule, CL_CODES[code], "clEnqueueSignalSemaphoresKHR", "validator")


def test_a_semaphore_call_the_driver_refused_changes_no_state():
    s = Stream()
    _semaphores(s)
    sem_call(s, "Signal", ret={"status": CL_CODES["CL_OUT_OF_RESOURCES"]})
    sem_call(s, "Signal")
    sem_call(s, "Wait")
    assert feed(s).findings == []


def test_a_shared_or_unseen_semaphore_is_checked_but_its_state_not_followed():
    s = Stream()
    _semaphores(s)
    for sem in (SHARED_SEM, 0x5EE):  # exportable; never created in the records
        sem_call(s, "Signal", sems=(sem,))
        sem_call(s, "Signal", sems=(sem,))
    model = feed(s)
    assert model.findings == []
    assert any("shared with another API" in what for what in model.assumed)
    assert any("no creation record" in what for what in model.assumed)


def test_strict_answers_a_semaphore_call_s_listed_error_and_leaves_the_undefined_to_the_driver():
    s = Stream()
    _semaphores(s)
    model = feed(s)
    s.records.clear()
    answers = []
    sem_call(s, "Signal", num=0, verdict=True, returns=False)
    sem_call(s, "Signal", verdict=True, returns=False)
    sem_call(s, "Signal", verdict=True, returns=False)  # twice: undefined behaviour, no code
    for line in s.lines():
        answer = model.feed(wire.parse_line(line))
        if answer is not None:
            answers.append(answer["status"])
    assert answers == [CL_CODES["CL_INVALID_VALUE"], 0, 0]
    assert [f.case for f in model.findings] == ["num_zero", "signal_twice"]
