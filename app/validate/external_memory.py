"""The cl_khr_external_memory family: clEnqueueAcquireExternalMemObjectsKHR /
clEnqueueReleaseExternalMemObjectsKHR, registered with its checks, lab cases and teaching texts
(``app/validate/families.py``).

OpenCL API 5.5.1.1 "Acquiring and Releasing External Memory Objects" (KhronosGroup/OpenCL-Docs,
api/opencl_runtime_layer.asciidoc at 1fb076b). ``SpecValidator`` (``app/validate/spec.py``)
enforces the rules in the order it documents; the extracts below are the text's own sentences.
Differences from cl_khr_gl_sharing's 5.5.15 that the checks follow:

- (0, NULL) is not a no-op that "does nothing": "the command will trivially succeed after its
  event dependencies are satisfied and will update its completion event", so the wait list is
  still checked and the call still completes an event (``spec.EMPTY``). No listed error applies
  to it otherwise: on a queue of another context it succeeds too (its wait list is then that
  queue's).
- Every invalid or non-imported memory object is CL_INVALID_MEM_OBJECT (there is no
  CL_INVALID_GL_OBJECT counterpart), and an event of the wait list whose status is negative is
  CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST.
- Objects of a context that does not contain the queue's device: CL_INVALID_COMMAND_QUEUE, the
  call's own code. A queue of another context that holds the device, and wait-list events of
  another context: the text lists no code ("The context associated with events in
  event_wait_list and that of command_queue must be the same."); glshare answers
  CL_INVALID_CONTEXT for both, the code of every core enqueue (``basis="general rule"``); the
  error lab accepts any error there.
- The event argument carries no aliasing rule here (unlike 5.5.15).
- "Each memory object must be acquired only once" / "released only once": implementation-defined
  behaviour, no code. The same object twice in one list is refused without a code; across calls
  the ownership tracker reports it (``HAZARDS``).
"""
from __future__ import annotations

from app.validate import families
from app.validate.findings import (
    ADVICE,
    HAZARD,
    IMPLEMENTATION_DEFINED,
    KHR_RUNTIME,
    SPEC,
    UNDEFINED,
    Hazard,
    Source,
)
from app.validate.spec import GENERAL_EVENT_CONTEXT, Rule

SECTION = ("5.5.1.1", "Acquiring and Releasing External Memory Objects")
ENTRY_POINTS = {"acquire": "clEnqueueAcquireExternalMemObjectsKHR", "release": "clEnqueueReleaseExternalMemObjectsKHR"}


def _em(text: str) -> Source:
    return Source(text, SECTION[0], SECTION[1], KHR_RUNTIME)


_VALUE = ("CL_INVALID_VALUE if num_mem_objects is zero and mem_objects is not a NULL value, or if num_mem_objects is "
          "greater than 0 and mem_objects is NULL.")
_MEM = ("CL_INVALID_MEM_OBJECT if any of the memory objects in mem_objects is not a valid OpenCL memory object "
        "created using an external memory handle.")
_WAIT = ("CL_INVALID_EVENT_WAIT_LIST if event_wait_list is NULL and num_events_in_wait_list is not 0, or if "
         "event_wait_list is not NULL and num_events_in_wait_list is 0, or if event objects in event_wait_list "
         "are not valid events.")

RULES: dict[str, Rule] = {
    "success_empty": Rule("CL_SUCCESS", _em(
        "If num_mem_objects is 0 and mem_objects is NULL, the command will trivially succeed after its event "
        "dependencies are satisfied and will update its completion event.")),
    "num_zero_list_given": Rule("CL_INVALID_VALUE", _em(_VALUE)),
    "num_given_list_null": Rule("CL_INVALID_VALUE", _em(_VALUE)),
    "invalid_mem_object": Rule("CL_INVALID_MEM_OBJECT", _em(_MEM)),
    "not_external_memory": Rule("CL_INVALID_MEM_OBJECT", _em(_MEM)),
    "invalid_queue": Rule("CL_INVALID_COMMAND_QUEUE", _em(
        "CL_INVALID_COMMAND_QUEUE if command_queue is not a valid command-queue")),
    "queue_other_device": Rule("CL_INVALID_COMMAND_QUEUE", _em(
        "CL_INVALID_COMMAND_QUEUE ... if one or more of mem_objects belong to a context that does not contain a device "
        "associated with command_queue.")),
    "acquire_twice": Rule(None, _em(
        "Each memory object must be acquired only once. Acquiring a memory object multiple times without "
        "releasing it results in implementation-defined behavior."), consequence=IMPLEMENTATION_DEFINED,
        basis="requirement", note="the same object twice in one list; the text names no error code for it"),
    "release_twice": Rule(None, _em(
        "Each memory object must be released only once. Releasing a memory object multiple times without "
        "acquiring it results in implementation-defined behavior."), consequence=IMPLEMENTATION_DEFINED,
        basis="requirement", note="the same object twice in one list; the text names no error code for it"),
    "queue_other_context": Rule("CL_INVALID_CONTEXT", Source(
        "CL_INVALID_CONTEXT if the context associated with command_queue and buffer are not the same",
        "5.2.2", "Reading, Writing and Copying Buffer Objects (clEnqueueReadBuffer)", KHR_RUNTIME),
        basis="general rule",
        note="5.5.1.1 lists CL_INVALID_COMMAND_QUEUE only for objects of a context that does not contain the "
             "queue's device; for another context holding that device it names no code"),
    "wait_list_null_n_given": Rule("CL_INVALID_EVENT_WAIT_LIST", _em(_WAIT)),
    "wait_list_given_n_zero": Rule("CL_INVALID_EVENT_WAIT_LIST", _em(_WAIT)),
    "wait_list_invalid_event": Rule("CL_INVALID_EVENT_WAIT_LIST", _em(_WAIT)),
    "wait_list_other_context": Rule("CL_INVALID_CONTEXT", GENERAL_EVENT_CONTEXT[1], basis="general rule",
                                    note="5.5.1.1 requires 'The context associated with events in event_wait_list "
                                         "and that of command_queue must be the same.' and lists no code for it"),
    "wait_list_failed_event": Rule("CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST", _em(
        "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST if the execution status of any of the events in "
        "event_wait_list is a negative integer value.")),
}

_ORDERING = ("a release on another queue does not wait for the commands of the queue that acquired the object and "
             "ran the kernels (an in-order queue orders only its own commands), so GL may get the object before "
             "those commands finish; pass the last command's event in the release's wait list, or release on the "
             "acquiring queue")

HAZARDS: dict[str, Hazard] = {
    "use_without_acquire": Hazard("use_without_acquire", SPEC, UNDEFINED, _em(
        "Behavior is undefined if a memory object created from an external memory handle is used by an "
        "OpenCL command queued to a command-queue without being acquired."),
        "a CL command used an imported object that was not acquired"),
    "double_acquire": Hazard("double_acquire", SPEC, IMPLEMENTATION_DEFINED, _em(
        "Each memory object must be acquired only once. Acquiring a memory object multiple times without "
        "releasing it results in implementation-defined behavior."),
        "an object CL holds was acquired again; NVIDIA's driver (580, H200) nests the acquisitions, each "
        "needing its own release, and destroying the context with one outstanding hung there: glshare "
        "hands back every one when the demonstration ends and before a backend closes"),
    "release_without_acquire": Hazard("release_without_acquire", SPEC, IMPLEMENTATION_DEFINED, _em(
        "Each memory object must be released only once. Releasing a memory object multiple times without "
        "acquiring it results in implementation-defined behavior."),
        "a release of an object CL does not hold; glshare applies the sentence to a never-acquired object "
        "too: imported memory starts outside OpenCL, as if released"),
    "release_on_other_queue": Hazard("release_on_other_queue", ADVICE, HAZARD, _em(
        "If CL_MEM_DEVICE_HANDLE_LIST_KHR was not specified, the release can be performed on a command-queue "
        "associated with any device in the context."), _ORDERING),
    "gl_use_while_acquired": Hazard("gl_use_while_acquired", SPEC, UNDEFINED, _em(
        "Applications must release memory objects that were acquired using clEnqueueReleaseExternalMemObjectsKHR "
        "before using any external memory handles that were specified when the memory objects were created or "
        "accessing the external memory that these handles represent outside of OpenCL, otherwise behavior is "
        "undefined."),
        "GL accessed imported memory CL still holds"),
    "delete_gl_while_shared": Hazard("delete_gl_while_shared", ADVICE, HAZARD, Source(
        "The imported memory object holds a reference to its payload.", "5.5.2.1",
        "File Descriptor Handle Types", KHR_RUNTIME),
        "harmless to CL here (the CL import keeps the payload alive), but a GL object deleted while CL may "
        "still write the memory leaves GL's side of the hand-over undefined; glshare keeps one teardown order "
        "on every backend: CL object first"),
}

# the same steps in cl_khr_external_memory's words (app/validate/khr_extracts.txt, verbatim)
TEACHING = families.Teaching(
    quotes={
        "acquire": ("Applications must acquire the memory objects that are created using external handles before "
                    "they can be used by any OpenCL commands queued to a command-queue.",
                    "clEnqueueAcquireExternalMemObjectsKHR"),
        "compute": ("Behavior is undefined if a memory object created from an external memory handle is used by an "
                    "OpenCL command queued to a command-queue without being acquired. This is to guarantee that the "
                    "state of the memory objects is up-to-date and they are accessible to OpenCL.",
                    "clEnqueueAcquireExternalMemObjectsKHR"),
        "release": ("Applications must release memory objects that were acquired using "
                    "clEnqueueReleaseExternalMemObjectsKHR before using any external memory handles that were "
                    "specified when the memory objects were created or accessing the external memory that these "
                    "handles represent outside of OpenCL, otherwise behavior is undefined.",
                    "clEnqueueReleaseExternalMemObjectsKHR"),
        "render": ("This is to guarantee that the state of memory objects is up-to-date and that they are "
                   "accessible outside of OpenCL.", "clEnqueueReleaseExternalMemObjectsKHR"),
    },
    cite="cl_khr_external_memory, OpenCL-Docs @1fb076b (v3.1.1+8) section 5.5.1.1, {call} "
         "(app/validate/khr_extracts.txt)",
)

# The lab's cases (the notation of app/validate/gl.py's LAB_CASES)
LAB_CASES: dict[str, dict] = {
    "valid": {},
    "success_empty": {"num": 0, "objects": None},
    "success_empty_bad_wait_list": {"num": 0, "objects": None, "num_events": 1},
    "empty_other_context_queue": {"queue": "@other_queue", "num": 0, "objects": None},
    "num_zero_list_given": {"num": 0},
    "num_given_list_null": {"objects": None},
    "invalid_mem_object": {"objects": ["@released_mem"]},
    "released_by_pyopencl": {"objects": ["@pyreleased"]},
    "not_external_memory": {"objects": ["@plain"]},
    "invalid_queue": {"queue": None},
    "queue_wrong_type": {"queue": "@shared"},
    "mem_wrong_type": {"objects": ["@queue"]},
    "queue_other_context": {"queue": "@other_queue"},
    "sub_device_queue": {"queue": "@sub_device_queue"},
    "same_object_twice": {"num": 2, "objects": ["@shared", "@shared"]},
    "wait_list_null_n_given": {"num_events": 1},
    "wait_list_given_n_zero": {"event_wait_list": ["@event"]},
    "wait_list_invalid_event": {"num_events": 1, "event_wait_list": [None]},
    "wait_list_other_context": {"num_events": 1, "event_wait_list": ["@other_event"]},
    "wait_list_failed_event": {"num_events": 1, "event_wait_list": ["@failed"]},
    "event_aliases_wait_list": {"num_events": 1, "event_wait_list": ["@event"], "event_out": "@alias0"},
    "combo_plain_buffer_null_event": {"objects": ["@plain"], "num_events": 1, "event_wait_list": [None]},
    "combo_null_queue_null_list": {"queue": None, "objects": None},
    "combo_released_failed_event": {"objects": ["@released_mem"], "num_events": 1, "event_wait_list": ["@failed"]},
}

FAMILY = families.register(families.Family(
    "external_memory", ENTRY_POINTS, ("cl_khr_external_memory",), RULES, LAB_CASES, HAZARDS, TEACHING,
    backend="external_memory", validator="mem", empty_call="command", not_shared_rule="not_external_memory",
    other_context_rule="queue_other_context"))
