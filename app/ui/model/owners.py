"""Who owned each shared object of a frame over time (``owner_spans``), from the owners sampled at
its phase boundaries: the timeline's object lanes and the Perfetto export (app/trace/chrome.py)
both read it. One small module of its own, so that its source can be swapped by one import."""
from __future__ import annotations

from collections.abc import Mapping

from app.ui import legend

TEACH_GAP_NS = 200_000  # a stepped frame's pause between two phases, drawn as this much time


def owner_spans(rec, cl_offset: int = 0, *, in_progress: bool = False,
                live: Mapping[str, str] | None = None) -> list[tuple[int, int, int, str]]:
    """Who owned each shared object of ``rec`` over time, from its samples at the phase boundaries:
    (object index in ``rec.owner_labels``, start ns, end ns, state) on the host clock, state one of
    the legend's "GL", "CL", "GL -> CL", "CL -> GL".

    A change of owner happens in the phase that ends at the boundary where it is first seen; when
    that phase's CL command (the acquire or the release) was profiled, the hand-over lasts from the
    command's queued stamp (``cl_offset`` puts it on the host clock) to its end stamp, else it is
    instant at the boundary. After the last boundary GL keeps the objects until the frame's end (the
    panel, then the next frame); a frame in progress ends at its last step, and ``live`` (label ->
    state now) shows a hand-over still in flight there."""
    samples, labels = rec.owners, rec.owner_labels
    out: list[tuple[int, int, int, str]] = []
    if not samples or not labels:
        return out
    end_t = samples[-1][1]
    if not in_progress:
        end_t = max(end_t, rec.end_ns, rec.phases.get("panel", (0, 0))[1])
    else:
        end_t += TEACH_GAP_NS
    for k, label in enumerate(labels):
        cur, since = samples[0][2][k], samples[0][1]
        for boundary, t, owners in samples[1:]:
            new = owners[k]
            if new == cur:
                continue
            phase = rec.phases.get(boundary, (t, t))
            prof = rec.cl_profile.get(boundary)
            if prof is not None:
                change = min(max(prof[0] + cl_offset, phase[0]), t)
                done = max(prof[3] + cl_offset, change)
            else:
                change = done = t
            if change > since:
                out.append((k, since, change, legend.owner_state(cur)))
            if done > change:
                out.append((k, change, done, f"{legend.owner_state(cur)} -> {legend.owner_state(new)}"))
            cur, since = new, done
        state = legend.owner_state(cur)
        if in_progress and live and live.get(label) in legend.HANDOVER:
            state = live[label]  # enqueued, not complete yet
        out.append((k, since, max(end_t, since), state))
    return out
