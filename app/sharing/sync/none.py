"""No sync at all: only for the hazard demonstrations."""
from __future__ import annotations

from app.sharing.sync.base import SyncMode


class NoSync(SyncMode):
    """No wait at all: only for the hazard demonstrations."""

    name = "none"
    order = 90
    orders = False
    title = "no sync (hazard demonstration)"
    explanation = "Nothing orders GL and CL on the shared objects: only for the hazard demonstrations."

    def native_calls(self, queue, variant):
        from app.cl.ext import prepared_core

        return [], [prepared_core("clFlush", queue.int_ptr)]  # (after_release: the base mode's flush)
