"""Find the backends (every module of ``app/sharing/backends/`` registers one), probe each in
order, pick one, and keep every refusal with its reason for ``info``, the panel and the report."""
from __future__ import annotations

import importlib
import logging
from functools import lru_cache

from app.errors import SharingUnavailable, UsageError
from app.sharing.backends import backend_module_names
from app.sharing.base import Probe, ProbeEnv, SharingBackend

log = logging.getLogger(__name__)


@lru_cache(maxsize=1)
def _import_all() -> None:
    for name in backend_module_names():
        importlib.import_module(f"app.sharing.backends.{name}")


def backend_classes() -> dict[str, type[SharingBackend]]:
    """Every backend, in probe order (importing their modules registers them and their sync modes)."""
    _import_all()
    return dict(sorted(SharingBackend.registry.items(), key=lambda kv: (kv[1].probe_order, kv[0])))


def backend_class(name: str) -> type[SharingBackend]:
    classes = backend_classes()
    if name not in classes:
        raise UsageError(f"unknown backend {name!r}; choose one of auto, {', '.join(classes)}")
    return classes[name]


class Registry:
    """The probes of one run, kept so that ``info``, the panel and the report show every refusal."""

    def __init__(self, env: ProbeEnv) -> None:
        self.env = env
        self.probes: dict[str, Probe] = {}
        for name, cls in backend_classes().items():
            try:
                probe = cls.probe(env)
            except Exception as exc:  # noqa: BLE001 - a probe that breaks is a refusal with its reason
                probe = Probe(name, False, f"probe failed: {type(exc).__name__}: {exc}")
            self.probes[name] = probe
            log.info("backend %s: %s (%s)", name, "available" if probe.available else "unavailable", probe.reason)

    @property
    def order(self) -> list[str]:
        return list(self.probes)

    @property
    def available(self) -> list[str]:
        return [n for n, p in self.probes.items() if p.available]

    def choose(self, requested: str) -> str:
        """The backend for ``--backend``: ``auto`` takes the first available one."""
        if requested == "auto":
            return self.available[0]
        if requested not in self.probes:
            raise UsageError(f"unknown backend {requested!r}; choose one of auto, {', '.join(self.probes)}")
        probe = self.probes[requested]
        if not probe.available:
            raise SharingUnavailable(requested, probe.reason)
        return requested

    def open(self, name: str, *, strict: bool = False) -> SharingBackend:
        return backend_class(self.choose(name))(self.env, strict=strict)

    def sync_verdicts(self, name: str) -> dict[str, str | None]:
        """{mode: None or the reason it is refused} for backend ``name`` here."""
        from app.sharing.sync import sync_modes

        cls = backend_class(name)
        return {mode: cls.sync_refusal(self.env, mode) for mode in sync_modes()}

    def as_list(self) -> list[dict]:
        return [p.as_dict() for p in self.probes.values()]
