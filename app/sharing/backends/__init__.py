"""The sharing backends: each module (or package) here defines one ``SharingBackend`` named for it
(modules whose name starts with "_", like the recipe ``_template``, are not backends)."""
from __future__ import annotations

import pkgutil


def backend_module_names() -> list[str]:
    """The backends' names without importing them (the command line's choices)."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
