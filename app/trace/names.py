"""What each measured span is called in the report and the trace: the CPU's call and the device's
execution never share a name ("enqueue kernel" is the CPU's clEnqueueNDRangeKernel, "kernel" the
device running it; "enqueue release + wait" the release phase, its sync mode's wait included,
"release command" the device running the release)."""
from __future__ import annotations

# the scheduler's and the loop's phases (host clock: FrameRecord.phases)
CPU_NAMES = {"acquire": "enqueue acquire", "compute": "enqueue kernel", "release": "enqueue release + wait",
             "render": "render (GL calls)", "panel": "panel (UI drawn)", "present": "present (buffer swap)"}
# the CL commands' execution (device clock: FrameRecord.cl_profile)
DEVICE_NAMES = {"acquire": "acquire command", "compute": "kernel", "release": "release command"}


def cpu_name(phase: str) -> str:
    return CPU_NAMES.get(phase, phase)


def device_name(command: str) -> str:
    return DEVICE_NAMES.get(command, command)
