"""Scenes: each module here defines one scene (a ``Scene`` subclass named for the module), which
registers itself; ``scene_classes()`` finds them all. ``_template.py``: the recipe for a new one
(modules whose name starts with "_" are not scenes)."""
from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from app.errors import UsageError

NOT_SCENES = ("base", "camera")  # helpers, not scenes


def scene_module_names() -> list[str]:
    """The scenes' names without importing them (each module is named for its scene)."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__)
                  if m.name not in NOT_SCENES and not m.name.startswith("_"))


@lru_cache(maxsize=1)
def _import_all() -> None:
    for name in scene_module_names():
        importlib.import_module(f"app.scenes.{name}")


def scene_classes() -> dict:
    """{name: Scene subclass} in their ``order``."""
    from app.scenes.base import Scene  # start-up: the parser lists the scenes' names without GL or CL

    _import_all()
    return dict(sorted(Scene.registry.items(), key=lambda kv: (kv[1].order, kv[0])))


def scene_class(name: str):
    classes = scene_classes()
    if name not in classes:
        raise UsageError(f"unknown scene {name!r}; choose one of {', '.join(classes)}")
    return classes[name]
