"""The Owners tab: who owns each shared object (GL, CL, a hand-over in flight) at every phase
boundary of the frame the panel describes (the header's and the timeline's), and its counts.

The states are ``owners_at_boundaries`` (app/schedule/owners.py): the ownership intervals from the
device's stamps that the timeline's lanes, the report and the trace show, read at each boundary's
time; not the CPU's samples, which say only what the CPU enqueued."""
from __future__ import annotations

from dataclasses import dataclass

from app.schedule.owners import owners_at_boundaries
from app.ui import legend
from app.ui.bundle import imgui, imgui_ctx
from app.ui.panel.widgets import OWN_TABLE, OWNER_F4, hover_tip
from app.ui.tabs import Tab, TabInput


@dataclass(frozen=True, slots=True)
class OwnerRow:
    label: str
    kind: str
    now: str  # the live state: "GL", "CL", "GL -> CL", "CL -> GL" (legend names), "" when not live
    at: tuple[tuple[str, str], ...]  # the described frame: (boundary, owner) at each phase boundary
    since_frame: int | None
    acquires: int | None  # counts (this set-up), None when the object is not live any more
    releases: int | None


@dataclass(frozen=True, slots=True)
class Owners:
    frame: int | None
    rows: tuple[OwnerRow, ...]


def build(inp: TabInput) -> Owners:
    """The owners of the described frame at each of its phase boundaries, with the live state and
    counts of each object (no frame yet: the live owners alone)."""
    rec, view = inp.record, inp.view
    live = {o.label: o for o in view.owners}
    rows = []
    if rec is not None and rec.owner_labels:
        clock = view.clock_map
        states = owners_at_boundaries(rec, clock.cl.offset if clock is not None else 0)
        for k, label in enumerate(rec.owner_labels):
            o = live.get(label)
            at = tuple((b, st[k]) for b, st in states)
            rows.append(OwnerRow(label, o.kind if o else "", o.state if o else "", at,
                                 o.since_frame if o else None, o.acquires if o else None,
                                 o.releases if o else None))
    else:
        rows = [OwnerRow(o.label, o.kind, o.state, (), o.since_frame, o.acquires, o.releases) for o in view.owners]
    return Owners(rec.index if rec is not None else None, tuple(rows))


def draw(o: Owners, m, request) -> None:
    if not o.rows:
        imgui.text_disabled("no shared objects")
        return
    imgui.text_unformatted(f"frame {o.frame}: who owns each object at every phase boundary")
    bounds = o.rows[0].at
    cols = 2 + len(bounds) + 2
    with imgui_ctx.begin_table("##own", cols, OWN_TABLE) as table:
        if not table:
            return
        imgui.table_setup_column("object", imgui.TableColumnFlags_.width_stretch)
        imgui.table_setup_column("now")
        for b, _ in bounds:
            imgui.table_setup_column("start" if b == "start" else f"{b[:3]}.")
        imgui.table_setup_column("acquires")
        imgui.table_setup_column("releases")
        imgui.table_headers_row()
        for row in o.rows:
            imgui.table_next_row()
            imgui.table_next_column()
            imgui.text_unformatted(row.label.split(".", 1)[-1])
            hover_tip(f"{row.label} ({row.kind}), owned by {row.now or '?'} since frame {row.since_frame}")
            imgui.table_next_column()
            _owner_text(row.now)
            for _b, owner in row.at:
                imgui.table_next_column()
                _owner_text(owner)
            imgui.table_next_column()
            imgui.text_unformatted("-" if row.acquires is None else f"{row.acquires}x")
            imgui.table_next_column()
            imgui.text_unformatted("-" if row.releases is None else f"{row.releases}x")
    with imgui_ctx.push_text_wrap_pos(0.0):
        imgui.text_disabled("start: before the acquire; acq./com./rel./ren.: after that phase. "
                            "acquires, releases: counts in this set-up")


def _owner_text(state: str) -> None:
    if state in legend.HANDOVER:
        imgui.text_colored((1.0, 1.0, 1.0, 1.0), state)
    elif state in OWNER_F4:
        imgui.text_colored(OWNER_F4[state], state)
    else:
        imgui.text_disabled(state or "-")


TAB = Tab("ownership", "Owners", 10, build, draw, always=True)
