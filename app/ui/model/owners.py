"""Who owned each shared object of a frame over time: the one model of ownership is
``app/schedule/owners.py`` (device stamps first, CPU times where the driver gives none); the
timeline's object lanes read it from here, the Perfetto export (app/trace/chrome.py) from there."""
from __future__ import annotations

from app.schedule.owners import IN_PROGRESS_TAIL_NS, owner_spans

TEACH_GAP_NS = IN_PROGRESS_TAIL_NS  # a stepped frame's pause between two phases, drawn as this much time

__all__ = ["TEACH_GAP_NS", "owner_spans"]
