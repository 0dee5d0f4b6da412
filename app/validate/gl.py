"""The cl_khr_gl_sharing family: clEnqueueAcquireGLObjects / clEnqueueReleaseGLObjects, registered
with its checks (the error list, ``RULES``; the ownership cases, ``HAZARDS``), its lab cases and its
teaching texts (``app/validate/families.py``).

The seed text is OpenCL 3.0.16's section 5.5.15 word for word (../shared/spec/gl-acquire-release.txt;
3.0.17 onward numbers the same heading 5.5.13), and both calls carry the same error list. The
synchronization paragraphs come from the same version's 5.5.15.1 (app/validate/khr_extracts.txt).
gl_sharing and host_copy are checked against it (host_copy teaches the contract with copies, in a
context glshare designates as the GL one: its lab rows answer for a simulated GL context).

Precedence: the text lists its errors without an order. glshare checks the queue's handle first,
then (0, NULL) "does nothing" before the other errors ("Otherwise, it returns one of the
following errors", read literally); Intel's driver validates the queue and the wait list first.
The lab accepts either answer where the order decides it.
"""
from __future__ import annotations

from app.validate import families
from app.validate.findings import (
    ADVICE,
    GL_SECTION,
    GL_SYNC_SECTION,
    HAZARD,
    KHR_ARCH,
    KHR_GL_3016,
    KHR_GL_SHARING,
    SEED_GL,
    SPEC,
    UNDEFINED,
    Hazard,
    Source,
)
from app.validate.spec import GENERAL_EVENT_CONTEXT, Rule

ENTRY_POINTS = {"acquire": "clEnqueueAcquireGLObjects", "release": "clEnqueueReleaseGLObjects"}


def _gl(text: str) -> Source:
    return Source(text, GL_SECTION[0], GL_SECTION[1], SEED_GL)


def _sync(text: str, part: str) -> Source:
    return Source(text, GL_SYNC_SECTION[0], f"{GL_SYNC_SECTION[1]}, {part}", KHR_GL_3016)


# clEnqueueAcquireGLObjects / clEnqueueReleaseGLObjects (both calls carry the same list)
RULES: dict[str, Rule] = {
    "success_empty": Rule("CL_SUCCESS", _gl(
        "If num_objects is 0 and mem_objects is NULL the function does nothing and returns CL_SUCCESS.")),
    "num_zero_list_given": Rule("CL_INVALID_VALUE", _gl(
        "CL_INVALID_VALUE if num_objects is zero and mem_objects is not a NULL value or if num_objects > 0 and "
        "mem_objects is NULL.")),
    "num_given_list_null": Rule("CL_INVALID_VALUE", _gl(
        "CL_INVALID_VALUE if num_objects is zero and mem_objects is not a NULL value or if num_objects > 0 and "
        "mem_objects is NULL.")),
    "invalid_mem_object": Rule("CL_INVALID_MEM_OBJECT", _gl(
        "CL_INVALID_MEM_OBJECT if memory objects in mem_objects are not valid OpenCL memory objects.")),
    "invalid_queue": Rule("CL_INVALID_COMMAND_QUEUE", _gl(
        "CL_INVALID_COMMAND_QUEUE if command_queue is not a valid command-queue.")),
    "context_not_from_gl": Rule("CL_INVALID_CONTEXT", _gl(
        "CL_INVALID_CONTEXT if context associated with command_queue was not created from an OpenGL context")),
    "not_gl_object": Rule("CL_INVALID_GL_OBJECT", _gl(
        "CL_INVALID_GL_OBJECT if memory objects in mem_objects have not been created from an OpenGL object(s).")),
    "wait_list_null_n_given": Rule("CL_INVALID_EVENT_WAIT_LIST", _gl(
        "CL_INVALID_EVENT_WAIT_LIST if event_wait_list is NULL and num_events_in_wait_list > 0, or "
        "event_wait_list is not NULL and num_events_in_wait_list is 0, or if event objects in event_wait_list "
        "are not valid events.")),
    "wait_list_given_n_zero": Rule("CL_INVALID_EVENT_WAIT_LIST", _gl(
        "CL_INVALID_EVENT_WAIT_LIST if event_wait_list is NULL and num_events_in_wait_list > 0, or "
        "event_wait_list is not NULL and num_events_in_wait_list is 0, or if event objects in event_wait_list "
        "are not valid events.")),
    "wait_list_invalid_event": Rule("CL_INVALID_EVENT_WAIT_LIST", _gl(
        "CL_INVALID_EVENT_WAIT_LIST if event_wait_list is NULL and num_events_in_wait_list > 0, or "
        "event_wait_list is not NULL and num_events_in_wait_list is 0, or if event objects in event_wait_list "
        "are not valid events.")),
    "wait_list_other_context": Rule("CL_INVALID_CONTEXT", GENERAL_EVENT_CONTEXT[1], basis="general rule",
                                    note="5.5.15 lists no code for events of another context; the code is the one "
                                         "every core enqueue gives (A.1: events are shared only within a context); "
                                         "CL_INVALID_EVENT_WAIT_LIST ('not valid events') is a defensible reading"),
    "event_aliases_wait_list": Rule(None, _gl(
        "If event_wait_list and event are not NULL, event must not refer to an element of the event_wait_list "
        "array."), consequence=UNDEFINED, basis="requirement",
        note="the spec names no error code for it: glshare refuses the call as a spec violation without one"),
}



_GL_LIFETIME = Source(
    "If the OpenGL object is deleted through the OpenGL API (e.g. glDeleteBuffers, glDeleteTextures, or "
    "glDeleteRenderbuffers), subsequent use of the OpenCL buffer or image object will result in undefined "
    "behavior, including but not limited to possible OpenCL errors and data corruption, but may not result in "
    "program termination.", "3.3.4", "Lifetime of Shared OpenCL/OpenGL Memory Objects", KHR_ARCH)
_GL_ALL_QUEUES = _gl("The OpenGL objects are acquired by the OpenCL context associated with command_queue and can "
                     "therefore be used by all command-queues associated with the OpenCL context.")
_ORDERING = ("a release on another queue does not wait for the commands of the queue that acquired the object and "
             "ran the kernels (an in-order queue orders only its own commands), so GL may get the object before "
             "those commands finish; pass the last command's event in the release's wait list, or release on the "
             "acquiring queue")

_AFTER_RELEASE = _sync(
    "Similarly, attempting to access a shared OpenCL/OpenGL object from OpenCL before it has been acquired by the "
    "OpenCL command-queue, or after it has been released, will result in undefined behavior.",
    "Synchronizing OpenCL Operations With Other APIs")
_KEEPS_STORE = Source(
    "The GL name corresponding to that data store may be deleted, but the data store itself remains so long as "
    "any CL object has a reference to it.", "Issue 3", "cl_khr_gl_sharing, Issues", KHR_GL_SHARING)

HAZARDS: dict[str, Hazard] = {
    "use_without_acquire": Hazard("use_without_acquire", SPEC, UNDEFINED, _gl(
        "These objects need to be acquired before they can be used by any OpenCL commands queued to a "
        "command-queue or the behaviour is undefined."),
        "a CL command used a shared object GL still owns"),
    "double_acquire": Hazard("double_acquire", ADVICE, HAZARD, None,
        "5.5.15 does not forbid acquiring an object CL already holds (the seed has no sentence on it; "
        "cl_khr_external_memory forbids it for its objects, 5.5.1.1); glshare flags it because the bracket "
        "is unbalanced: the first release hands the object to GL while the second acquirer still uses it"),
    "release_without_acquire": Hazard("release_without_acquire", ADVICE, HAZARD, _AFTER_RELEASE,
        "5.5.15 lists no error for releasing an object CL does not hold; 5.5.15.1 makes any access from OpenCL "
        "before the acquire or after the release undefined, and whether a release call is such an access the "
        "text does not say: glshare flags it as advice (a release without its acquire means the program's idea "
        "of who owns the object is wrong)"),
    "release_on_other_queue": Hazard("release_on_other_queue", ADVICE, HAZARD, _GL_ALL_QUEUES, _ORDERING),
    "gl_use_while_acquired": Hazard("gl_use_while_acquired", SPEC, UNDEFINED, _sync(
        "Attempting to access the data store of an OpenGL object after it has been acquired by OpenCL and before "
        "it has been released will result in undefined behavior.", "Synchronizing OpenCL Operations With Other APIs"),
        "GL used a shared object CL still owns (5.5.15 states the requirement: 'These objects need to be released "
        "before they can be used by OpenGL.')"),
    "delete_gl_while_shared": Hazard("delete_gl_while_shared", ADVICE, HAZARD, _KEEPS_STORE,
        "deleting the GL object is allowed: the GL name goes, the data store stays while the CL object refers to "
        "it (cl_khr_gl_sharing, Issue 3), and the text makes any later use of the CL object undefined behaviour "
        "(3.3.4: 'subsequent use of the OpenCL buffer or image object will result in undefined behavior'); "
        "glshare releases the CL object first, leaving nothing that could use it"),
}


# The teaching texts. Under cl_khr_gl_event (the gl_event sync mode) the implementation orders GL's
# commands of the bound context around the acquire and the release: the seed's paragraphs, which
# 3.0.16 keeps inside ifdef::cl_khr_gl_event[]. Without it the application finishes the other
# API's work itself (5.5.15.1): those words are the default.
_ACQUIRE_GL_EVENT = (
    "If an OpenGL context is bound to the current thread, then any OpenGL commands which 1.affect or access the "
    "contents of a memory object listed in the mem_objects list, and 2.were issued on that OpenGL context prior to "
    "the call to clEnqueueAcquireGLObjects will complete before execution of any OpenCL commands following the "
    "clEnqueueAcquireGLObjects which affect or access any of those memory objects.")
_RELEASE_GL_EVENT = (
    "If an OpenGL context is bound to the current thread, then then any OpenGL commands which 1.affect or access "
    "the contents of the memory objects listed in the mem_objects list, and 2.are issued on that context after the "
    "call to clEnqueueReleaseGLObjects will not execute until after execution of any OpenCL commands preceding the "
    "clEnqueueReleaseGLObjects which affect or access any of those memory objects.")
_CITE = f"OpenCL 3.0.16, section {GL_SECTION[0]}, {{call}} (../shared/spec/gl-acquire-release.txt)"
_CITE_GL_EVENT = (f"OpenCL 3.0.16, section {GL_SECTION[0]}, {{call}}, the cl_khr_gl_event paragraph "
                  "(../shared/spec/gl-acquire-release.txt)")
_CITE_SYNC = (f"OpenCL 3.0.16, section {GL_SYNC_SECTION[0]} {GL_SYNC_SECTION[1]}, {{part}}, for {{call}} "
              "(app/validate/khr_extracts.txt)")
TEACHING = families.Teaching(
    quotes={
        "acquire": ("Prior to acquiring objects shared with the other API, the application must ensure that any "
                    "pending operations in that API which accesses the objects specified in mem_objects have "
                    "completed.", "clEnqueueAcquireGLObjects"),
        "compute": ("These objects need to be acquired before they can be used by any OpenCL commands queued to a "
                    "command-queue or the behaviour is undefined. The OpenGL objects are acquired by the OpenCL "
                    "context associated with command_queue and can therefore be used by all command-queues "
                    "associated with the OpenCL context.", "clEnqueueAcquireGLObjects"),
        "release": ("After releasing a shared memory object, the application is responsible for ensuring that any "
                    "pending OpenCL operations which access the objects specified in mem_objects have completed "
                    "prior to executing subsequent commands in the other API which reference these objects.",
                    "clEnqueueReleaseGLObjects"),
        "render": ("These objects need to be released before they can be used by OpenGL.", "clEnqueueReleaseGLObjects"),
    },
    cite=_CITE,
    cites={"acquire": _CITE_SYNC.replace("{part}", "the opening paragraph"),
           "release": _CITE_SYNC.replace("{part}", "Synchronizing OpenCL Operations With Other APIs")},
    by_sync={"gl_event": {
        "acquire": (_ACQUIRE_GL_EVENT, "clEnqueueAcquireGLObjects", _CITE_GL_EVENT),
        "release": (_RELEASE_GL_EVENT, "clEnqueueReleaseGLObjects", _CITE_GL_EVENT),
    }},
)

# The lab's cases: the changes each makes to the valid call (one shared object, no events). A
# string "@name" is an object the lab makes (``app/lab/lab.py``, ``LabObjects``); None is NULL.
LAB_CASES: dict[str, dict] = {
    "valid": {},
    "success_empty": {"num": 0, "objects": None},
    "success_empty_bad_wait_list": {"num": 0, "objects": None, "num_events": 1},
    "empty_null_queue": {"queue": None, "num": 0, "objects": None},
    "empty_plain_context_queue": {"queue": "@other_queue", "num": 0, "objects": None},
    "num_zero_list_given": {"num": 0},
    "num_given_list_null": {"objects": None},
    "invalid_mem_object": {"objects": ["@released_mem"]},
    "released_by_pyopencl": {"objects": ["@pyreleased"]},
    "unseen_mem_object": {"objects": ["@unseen"]},
    "invalid_queue": {"queue": None},
    "queue_wrong_type": {"queue": "@shared"},
    "mem_wrong_type": {"objects": ["@queue"]},
    "context_not_from_gl": {"queue": "@other_queue"},
    "sub_device_queue": {"queue": "@sub_device_queue"},
    "not_gl_object": {"objects": ["@plain"]},
    "same_object_twice": {"num": 2, "objects": ["@shared", "@shared"]},
    "wait_list_null_n_given": {"num_events": 1},
    "wait_list_given_n_zero": {"event_wait_list": ["@event"]},
    "wait_list_invalid_event": {"num_events": 1, "event_wait_list": [None]},
    "wait_list_other_context": {"num_events": 1, "event_wait_list": ["@other_event"]},
    "wait_list_failed_event": {"num_events": 1, "event_wait_list": ["@failed"]},
    "event_aliases_wait_list": {"num_events": 1, "event_wait_list": ["@event"], "event_out": "@alias0"},
    "combo_null_queue_null_list": {"queue": None, "objects": None},
    "combo_plain_buffer_null_event": {"objects": ["@plain"], "num_events": 1, "event_wait_list": [None]},
    "combo_released_wait_list_n_zero": {"objects": ["@released_mem"], "event_wait_list": ["@event"]},
    "combo_plain_context_num_zero": {"queue": "@other_queue", "num": 0},
}

FAMILY = families.register(families.Family(
    "gl_sharing", ENTRY_POINTS, ("cl_khr_gl_sharing", "cl_APPLE_gl_sharing"), RULES, LAB_CASES, HAZARDS, TEACHING,
    backend="gl_sharing", validator="mem", empty_call="noop", not_shared_rule="not_gl_object",
    other_context_rule="context_not_from_gl"))
