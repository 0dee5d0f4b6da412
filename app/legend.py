"""glshare's two colour legends, one for the phases of a frame and one for the owners of a shared
object, and the few marks beside them: the panel's tabs, its timeline and plot, teaching mode and
the Perfetto trace all take their colours and names from here (the panel's ImGui colour forms of
them: app/ui/legend.py).

The two legends are kept apart on purpose: a phase (what the CPU, CL or GL was doing) is never
drawn in an owner's colour (who may touch an object), so a lane of the timeline reads one way
only. The phase colours follow the Okabe-Ito palette (distinguishable with the common colour-vision
deficiencies); the owners are a yellow and a violet that none of the phases uses, and a hand-over
is drawn striped in both. Pure data: no ImGui, no GL.
"""
from __future__ import annotations

RGB = tuple[int, int, int]

PHASE_RGB: dict[str, RGB] = {
    "acquire": (230, 159, 0),    # orange
    "compute": (86, 180, 233),   # sky blue
    "release": (0, 158, 115),    # bluish green
    "render": (204, 121, 167),   # reddish purple
    "panel": (150, 150, 160),    # grey: glshare's own panel, not part of the hand-over
    "frame": (238, 238, 238),    # the whole frame (timing plot)
}
WAIT_RGB: RGB = (170, 40, 40)  # the CPU waiting (glFinish, clFinish): dark red, a cost
BOOKKEEPING_RGB: RGB = (120, 190, 230)  # glshare reading earlier frames' stamps inside a wait's window: sky blue
GL_PASS_RGB: dict[str, RGB] = {"gl render": PHASE_RGB["render"], "gl panel": PHASE_RGB["panel"]}
# another program's calls (glshare attach's thread and queue rows), by what they are: the phase
# colours of the same work (CL's kernels, GL's render), a wait's, and the frame's for its boundary
CALL_RGB: dict[str, RGB] = {"CL call": PHASE_RGB["compute"], "GL call": PHASE_RGB["render"], "wait": WAIT_RGB,
                            "swap": PHASE_RGB["frame"]}
CALL_TITLES = {"CL call": "CL calls / commands", "GL call": "GL calls",
               "wait": "waits (finish, event/sync waits, blocking transfers)", "swap": "swaps"}

GL, CL, TO_CL, TO_GL = "GL", "CL", "GL -> CL", "CL -> GL"
OWNER_RGB: dict[str, RGB] = {GL: (240, 222, 60), CL: (140, 110, 255)}  # yellow, violet
HANDOVER = (TO_CL, TO_GL)  # drawn striped in the two owners' colours
OWNER_TITLES = {GL: "GL owns it", CL: "CL owns it", TO_CL: "hand-over GL -> CL (acquire in flight)",
                TO_GL: "hand-over CL -> GL (release in flight)"}

HAZARD_RGB: RGB = (255, 60, 170)  # a hazard flagged by the ownership tracker (a triangle)
ERROR_RGB: RGB = (255, 95, 95)  # an error recorded on a frame (a cross)
OK_RGB: RGB = (115, 230, 115)
DIM_RGB: RGB = (158, 163, 178)
TEXT_RGB: RGB = (222, 222, 232)

# chrome://tracing colours each slice by its ``cname`` from a fixed list of names; Perfetto ignores
# cname and colours a slice by a hash of its name, so the trace names its slices exactly as the
# panel does (phase names, "GL", "CL", "GL -> CL"), and writes this legend into its metadata
TRACE_CNAME: dict[str, str] = {
    "acquire": "yellow", "compute": "rail_response", "release": "good", "render": "rail_animation",
    "panel": "grey", "wait": "terrible", GL: "olive", CL: "rail_load", TO_CL: "generic_work",
    TO_GL: "generic_work", "hazard": "bad", "error": "terrible", "switch": "black",
}


def owner_state(owner: str) -> str:
    """The legend's name for a tracker owner ("gl" / "cl")."""
    return {"gl": GL, "cl": CL}.get(owner, owner.upper() if owner else "?")


def hex_rgb(rgb: RGB) -> str:
    return "#{:02x}{:02x}{:02x}".format(*rgb)


def legend() -> dict:
    """Both legends as plain data (the trace's metadata, the report)."""
    return {"phases": {k: hex_rgb(v) for k, v in PHASE_RGB.items()} | {"wait": hex_rgb(WAIT_RGB)},
            "owners": {GL: hex_rgb(OWNER_RGB[GL]), CL: hex_rgb(OWNER_RGB[CL]),
                       "hand-over": f"stripes of {hex_rgb(OWNER_RGB[GL])} and {hex_rgb(OWNER_RGB[CL])}"},
            "marks": {"hazard": hex_rgb(HAZARD_RGB), "error": hex_rgb(ERROR_RGB)}}


# What each measured span is called in the panel, the report and the trace: the CPU's call and the
# device's execution never share a name ("enqueue kernel" is the CPU's clEnqueueNDRangeKernel,
# "kernel" the device running it; "enqueue release + wait" the release phase, its sync mode's wait
# included, "release command" the device running the release).
# the scheduler's and the loop's phases (host clock: FrameRecord.phases)
CPU_NAMES = {"acquire": "enqueue acquire", "compute": "enqueue kernel", "release": "enqueue release + wait",
             "render": "render (GL calls)", "panel": "panel (UI drawn)", "present": "present (buffer swap)"}
# the CL commands' execution (device clock: FrameRecord.cl_profile)
DEVICE_NAMES = {"acquire": "acquire command", "compute": "kernel", "release": "release command"}


def cpu_name(phase: str) -> str:
    return CPU_NAMES.get(phase, phase)


def device_name(command: str) -> str:
    return DEVICE_NAMES.get(command, command)
