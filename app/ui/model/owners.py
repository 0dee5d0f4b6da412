"""Who owned each shared object of a frame over time: the one model of ownership is
``app/schedule/owners.py`` (device stamps first, CPU times where the driver gives none); the
timeline's object lanes and the Owners tab read it from here, the report and the Perfetto export
(app/trace/) from there."""
from __future__ import annotations

from app.schedule.owners import owner_spans, owners_at_boundaries

__all__ = ["owner_spans", "owners_at_boundaries"]
