"""A child of tests/lab/test_gl_lab_child.py: the error lab's child (app/lab/isolate.py) on gl_sharing,
headless, its C entry points emulated (tests/gl_emulation.py), the lab's driver calls included.
The emulated driver answers as usual, except that one case's acquire never returns and its release
crashes the process (SIGSEGV), as a driver stuck in a call or crashing would: the case
``num_given_list_null`` (num_mem_objects 1, mem_objects NULL, on a queue).

    python tests/gl_lab_child.py --backend gl_sharing --answered FILE
"""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]


def stall(name: str, args: tuple) -> str | None:
    if name in ("clEnqueueAcquireGLObjects", "clEnqueueReleaseGLObjects"):
        queue, n, mems = args[:3]
        if queue and n == 1 and not mems:
            return "hang" if name == "clEnqueueAcquireGLObjects" else "crash"
    return None


if __name__ == "__main__":
    import pytest
    from gl_emulation import EmulatedGlSharingDriver

    from app.lab import drivers
    from app.lab.isolate import child_main

    mp = pytest.MonkeyPatch()
    driver = EmulatedGlSharingDriver()
    driver.install(mp)
    driver.stall = stall
    mp.setattr(drivers, "identify", lambda platform: drivers.OTHER)  # not PoCL's rule: its driver is called
    sys.exit(child_main(sys.argv[1:]))  # (the lab's broken calls reach the emulation on purpose)
