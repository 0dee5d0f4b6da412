"""The panel's controls: scene, backend, sync and size combos, pause, vsync, "write trace", and the
running scene's own options (the rows the scene declares: app/scenes/base.py ``SceneOption``). Each
change requests its command of ``app/session/controls.py``, run after the ImGui frame."""
from __future__ import annotations

from app.scenes import scene_class
from app.session.views import Choice
from app.ui import legend
from app.ui.bundle import imgui
from app.ui.model import PanelModel
from app.ui.panel.state import PanelState
from app.ui.panel.widgets import Flow, combo, hover_tip, item_rect, label_w, wrapping_text


def draw_controls(m: PanelModel, state: PanelState, request) -> None:
    c = m.controls
    if c is None:
        return
    flow = Flow()
    frame_h = imgui.get_frame_height()
    flow.next(90 + label_w("scene"))
    scene = combo("scene", 90, c.scene, c.scenes)
    if scene:
        request("switch", scene=scene)
    flow.next(104 + label_w("backend"))
    backend = combo("backend", 104, c.backend, c.backends)
    if backend:
        request("switch", backend=backend)
    flow.next(76 + label_w("sync"))
    sync = combo("sync", 76, c.sync, c.syncs)
    if sync:
        request("switch", sync=sync)
    flow.next(90 + label_w("size"))
    size = combo("size", 90, c.size, tuple(Choice(s, True) for s in c.sizes))
    if size:
        request("set_size", size=None if size == "window" else scene_class(c.scene).parse_size(size))
    flow.next(frame_h + label_w("pause"))
    changed, paused = imgui.checkbox("pause", c.paused)
    if changed:
        request("set_paused", paused=paused)
    flow.next(frame_h + label_w("vsync"))
    changed, _ = imgui.checkbox("vsync", c.vsync)
    if changed:
        request("toggle_vsync")
    flow.next(imgui.calc_text_size("write trace").x + 2 * imgui.get_style().frame_padding.x)
    if imgui.button("write trace"):
        request("write_trace")
    item_rect(state, "write_trace")
    hover_tip(f"last written: {c.trace_path}" if c.trace_path else (c.trace_error or "writes a Perfetto trace of "
                                                                     "the kept frames"))
    _scene_options(c.options, state, request)


def _scene_options(options, state: PanelState, request) -> None:
    """The running scene's own options (``Scene.options()``), below the controls: checkboxes, combos
    and sliders left to right, a text row (the camera, the Julia constant) on a line of its own with
    its button. Each change requests its controls command (run after the frame); the keys that
    step an option are its tooltip."""
    if not options:
        return
    style = imgui.get_style()
    frame_h = imgui.get_frame_height()
    pad = 2 * style.frame_padding.x
    flow = Flow()
    # the widgets first, on shared lines; then each text row on one line with its button
    for o in sorted(options, key=lambda o: o.kind == "text"):
        tip = f"keys: {o.keys}" if o.keys else ""
        label = f"{o.title}##opt_{o.name}"
        if o.kind == "toggle":
            flow.next(frame_h + label_w(o.title))
            changed, value = imgui.checkbox(label, bool(o.value))
            item_rect(state, f"option_{o.name}")
            hover_tip(tip)
            if changed and o.command:
                request(o.command, value=bool(value))
        elif o.kind in ("choice", "size"):
            width = max(imgui.calc_text_size(ch).x for ch in o.choices) + pad + frame_h + 4
            flow.next(width + label_w(o.title))
            chosen = combo(label, width, str(o.value), tuple(Choice(ch, True) for ch in o.choices), state,
                            f"option_{o.name}")
            hover_tip(tip)
            if chosen and o.command:
                request(o.command, value=chosen)
        elif o.kind == "int":
            width = 110
            flow.next(width + label_w(o.title))
            imgui.set_next_item_width(width)
            x, y = imgui.get_cursor_screen_pos()
            changed, value = imgui.slider_int(label, int(o.value), o.low, o.high)
            state.rects[f"option_{o.name}"] = (int(x), int(y), int(x + width), int(y + frame_h))  # the slider alone
            hover_tip(tip + (f" ({o.low} .. {o.high})" if tip else f"{o.low} .. {o.high}"))
            if changed and value != o.value and o.command:
                request(o.command, value=int(value))
        else:  # "text": its title and value on one line (the title's parenthesis goes to the tooltip)
            short, _, more = o.title.partition(" (")
            tip = "; ".join(t for t in (more.rstrip(")"), tip) if t)
            imgui.text_disabled(f"{short}:")  # on a new line: no same_line after the widgets before it
            item_rect(state, f"option_{o.name}")
            hover_tip(tip)
            imgui.same_line()
            wrapping_text(str(o.value), legend.f4(legend.TEXT_RGB))
            if o.button and o.command:
                imgui.same_line()
                bw = imgui.calc_text_size(o.button).x + pad
                if imgui.get_content_region_avail().x < bw:
                    imgui.new_line()
                if imgui.button(f"{o.button}##opt_{o.name}"):
                    request(o.command)
                item_rect(state, f"option_{o.name}_button")
                hover_tip(tip)
            flow.first = True  # the next option starts a line of its own
