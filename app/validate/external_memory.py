"""The rules of clEnqueueAcquireExternalMemObjectsKHR / clEnqueueReleaseExternalMemObjectsKHR.

cl_khr_external_memory, OpenCL API 5.5.1.1 "Acquiring and Releasing External Memory Objects"
(KhronosGroup/OpenCL-Docs, api/opencl_runtime_layer.asciidoc at 1fb076b). ``SpecValidator``
(``app/validate/spec.py``) enforces them in the order it documents; the extracts below are the
text's own sentences. Differences from cl_khr_gl_sharing's 5.5.15 that the checks follow:

- (0, NULL) is not a no-op that "does nothing": "the command will trivially succeed after its
  event dependencies are satisfied and will update its completion event", so the wait list is
  still checked and the call still completes an event (``spec.EMPTY``).
- Every invalid or non-imported memory object is CL_INVALID_MEM_OBJECT (there is no
  CL_INVALID_GL_OBJECT counterpart), and an event of the wait list whose status is negative is
  CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST.
- The text requires "The context associated with events in event_wait_list and that of
  command_queue must be the same." but lists no code for it; nor for a queue of another context
  that holds the objects' device (its CL_INVALID_COMMAND_QUEUE covers a context *without* that
  device). glshare answers CL_INVALID_CONTEXT for both, the code of every core enqueue
  (``basis="general rule"``); the error lab accepts any error there.
- The event argument carries no aliasing rule here (unlike 5.5.15).
- "Each memory object must be acquired only once" / "released only once": implementation-defined
  behaviour, no code; the ownership tracker reports them (``app/validate/ownership.py``).
"""
from __future__ import annotations

from app.validate.findings import KHR_RUNTIME, Source
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
