"""Sync modes, one module each: ``base`` (the contract every mode keeps), ``finish``, ``none``,
``semaphore``; gl_event lives with the backend whose context it needs (app/sharing/backends/
gl_sharing.py). A new mode is one module here: ``sync_modes`` imports every module of the package,
and the mode's class registers itself by its ``name`` (modules whose name starts with "_", like the
recipe ``_template``, are not modes)."""
from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from app.sharing.sync.base import SyncMode, timed_wait
from app.sharing.sync.finish import FinishSync
from app.sharing.sync.none import NoSync

__all__ = ["FinishSync", "NoSync", "SyncMode", "sync_modes", "timed_wait"]


@lru_cache(maxsize=1)
def _import_all() -> None:
    for module in pkgutil.iter_modules(__path__):
        if module.name.startswith("_"):
            continue
        importlib.import_module(f"{__name__}.{module.name}")


def sync_modes() -> dict[str, type[SyncMode]]:
    """Every registered mode, in ``order`` (this package's modules register theirs when imported, the
    backends' modules theirs)."""
    from app.sharing.registry import backend_classes

    _import_all()
    backend_classes()
    return dict(sorted(SyncMode.registry.items(), key=lambda kv: kv[1].order))
