"""The Caps tab: the CL platform and device, GL, the surface, how CL and GL time are put on the host
clock, the backends and sync modes (available or why not), the sharing extensions."""
from __future__ import annotations

from typing import TYPE_CHECKING

from app.ui.bundle import imgui, imgui_ctx
from app.ui.model import ClockInfo
from app.ui.panel.widgets import DIM, GREEN, RED
from app.ui.tabs import Tab, TabInput

if TYPE_CHECKING:
    from app.ui.model_tabs import CapsPart


def build(inp: TabInput) -> CapsPart:
    from app.ui.model_tabs import CapsPart  # imported when the tab is first shown

    view = inp.view
    timer = view.gl_timer
    timing = f"{timer.sampling}; frames timed: {timer.frames_timed}" if timer.frames_timed else timer.sampling
    return CapsPart(view.caps, ClockInfo.of(view.clock), timing, str(inp.ui_caps.get("panel_refresh", "")))


def draw(part: CapsPart, m, request) -> None:
    caps, clock = part.caps, part.clock
    with imgui_ctx.push_text_wrap_pos(0.0):
        imgui.text_wrapped(f"CL platform: {caps.platform}")
        imgui.text_wrapped(f"CL device: {caps.device}")
        imgui.text_wrapped(f"GL: {caps.gl}")
        imgui.text_wrapped(f"surface: {caps.surface}; GL timer queries: {part.gl_timer}; "
                           f"panel: {part.panel_refresh}")
        if caps.stamps:
            imgui.text_wrapped(caps.stamps)
        for name, method, off, unc in (("CL", clock.cl_method, clock.cl_offset_ms, clock.cl_uncertainty_us),
                                       ("GL", clock.gl_method, clock.gl_offset_ms, clock.gl_uncertainty_us)):
            imgui.text_colored(DIM, f"{name} clock on the host clock by {method}: offset {off:.3f} ms "
                                    f"\u00b1 {unc:.1f} us")
        imgui.separator_text("backends")
        for b in caps.backends:
            mark = "*" if b["name"] == caps.chosen else " "
            imgui.text_colored(GREEN if b["available"] else RED, f"{mark} {'yes' if b['available'] else 'no '} {b['name']}")
            imgui.text_colored(DIM, f"      {b['reason']}")
        imgui.separator_text("sync modes")
        for s in caps.sync:
            imgui.text_colored(GREEN if s.available else RED, f"{'yes' if s.available else 'no '} {s.name}")
            if s.reason:
                imgui.text_colored(DIM, f"      {s.reason}")
        for title, exts in (("CL sharing extensions", caps.cl_extensions), ("GL sharing extensions", caps.gl_extensions)):
            imgui.separator_text(title)
            for i, (name, present) in enumerate(exts):
                if i % 2:
                    imgui.same_line(200)
                imgui.text_colored(GREEN if present else DIM, f"{'+' if present else '-'} {name}")


TAB = Tab("caps", "Caps", 70, build, draw, waiting="(capabilities from the next redraw on)")
