"""The Memory tab: external-memory handle types and who owns what (who closes a handle, how long it
and the memory behind it live), and the shared payload's lifetime on external_memory."""
from __future__ import annotations

from typing import TYPE_CHECKING

from app.ui.bundle import imgui, imgui_ctx
from app.ui.panel.widgets import DIM, GREEN, hover_tip
from app.ui.tabs import Tab, TabInput

if TYPE_CHECKING:
    from app.ui.model_tabs import MemoryPart


def build(inp: TabInput) -> MemoryPart | None:
    """The set-up's handle table (made once per set-up) and the payload's lifetime now (its counters
    move); None where the backend gave no memory rows."""
    from app.ui.model_tabs import MemoryPart, _handle_rows, _lifetime  # imported when the tab is first shown

    mem, cache = inp.view.caps.memory, inp.cache
    if not mem:
        return None
    table = mem.get("handle_types")
    if id(table) != cache.get("key"):
        cache["rows"], cache["key"] = _handle_rows(mem), id(table)
    return MemoryPart(cache["rows"], tuple(mem.get("import_types") or ()), _lifetime(mem.get("lifetime")),
                      mem.get("kmt_note", ""), mem.get("unavailable", ""))


def draw(mem: MemoryPart, m, request) -> None:
    with imgui_ctx.push_text_wrap_pos(0.0):
        life = mem.lifetime
        if life is not None:
            imgui.separator_text("lifetime of the shared payload")
            imgui.text_colored(GREEN if life.exporter_released else DIM,
                               f"exporter's Vulkan allocation {'released' if life.exporter_released else 'kept'} "
                               "after GL and CL imported it")
            imgui.text_wrapped(f"held by: {life.holders}; fds glshare closed: {life.fds_closed}; "
                               f"CL took its fd: {life.cl_took_fd_ownership}; open fds now: {life.open_fds}"
                               + ("" if life.gpu_bytes_copied is None else
                                  f"; bytes copied on the GPU: {life.gpu_bytes_copied:,}"))
            for label, path in life.display_paths:  # how GL shows each texture
                imgui.text_colored(DIM if path.startswith("copy") else GREEN, f"{label}: GL draws it by {path}")
            imgui.text_colored(DIM, mem.kmt_note)
        elif mem.unavailable:
            imgui.text_colored(DIM, f"external_memory unavailable: {mem.unavailable}")
        imgui.separator_text(f"handle types (the device imports: {', '.join(mem.import_types) or 'none'})")
        for h in mem.handle_types:
            color = GREEN if h.glshare.startswith("usable") else DIM
            imgui.text_colored(color, f"{h.hex} {h.name}{'  NT' if h.nt_handle else ''}"
                                      f"  owns ref: {'yes' if h.owns_reference else 'no'}")
            hover_tip(h.rule)
            imgui.text_colored(DIM, f"    closes: {h.who_closes}")
            imgui.text_colored(DIM, f"    handle valid until {h.handle_valid_until}")
            imgui.text_colored(DIM, f"    memory lives until {h.memory_lives_until}")
            imgui.text_colored(DIM, f"    {h.glshare}" + (f"; in the text: OpenCL {h.versions}" if h.versions else ""))


TAB = Tab("memory", "Memory", 60, build, draw, waiting="(memory data from the next redraw on)")
