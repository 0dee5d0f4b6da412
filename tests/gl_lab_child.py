"""A child of tests/test_gl_lab_child.py: the error lab's child (app/lab/isolate.py) on host_copy,
headless, whose driver entry points are a stand-in that answers CL_SUCCESS, except that one case's
acquire never returns and its release reads address 0 (SIGSEGV), as a driver stuck in a call or
crashing would.

    python tests/gl_lab_child.py --backend host_copy --answered FILE
"""
from __future__ import annotations

import ctypes
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class StuckDriver:
    """The gl_sharing family's entry points: (num 1, a NULL object list, a queue) is the case
    ``num_given_list_null``: its acquire sleeps for good, its release kills the process."""

    def offers(self, family):
        return family == "gl_sharing"

    def __call__(self, family, call, queue, n, objs, nev, evs, event_out):
        if n == 1 and not objs and queue:
            if call == "acquire":
                while True:
                    time.sleep(3600)
            ctypes.string_at(0)  # a read of address 0: SIGSEGV (PoCL's LLVM handles a kill() of it)
        return 0

    def create_semaphore(self, context):
        raise AssertionError("no semaphore family here")

    def release_semaphore(self, handle):
        pass


if __name__ == "__main__":
    from app.lab.isolate import child_main

    sys.exit(child_main(sys.argv[1:], entry=StuckDriver()))
