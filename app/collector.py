"""Python's cyclic garbage collector held off around a block: the start-up's imports
(``glshare run``, app/commands/run.py) and the bench's cells (app/bench/cells.py)."""
from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def collector_off(*, freeze: bool = False):
    """The collector off inside the block, on again after it where it was on before; ``freeze``:
    what exists by then goes to its permanent generation first (``gc.freeze``), never traversed
    again. A collector that was off stays off, nothing frozen."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            if freeze:
                gc.freeze()
            gc.enable()
