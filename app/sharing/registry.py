"""Probe every backend in order (gl_sharing, external_memory, host_copy), pick, and say why not."""
from __future__ import annotations

import logging

from app.errors import SharingUnavailable, UsageError
from app.sharing.base import Probe, ProbeEnv, SharingBackend

log = logging.getLogger(__name__)

ORDER = ("gl_sharing", "external_memory", "host_copy")


def backend_class(name: str) -> type[SharingBackend]:
    if name == "gl_sharing":
        from app.sharing.backends.gl_sharing import KhrGlSharing

        return KhrGlSharing
    if name == "external_memory":
        from app.sharing.backends.external_memory import ExternalMemory

        return ExternalMemory
    if name == "host_copy":
        from app.sharing.backends.host_copy import HostCopy

        return HostCopy
    raise UsageError(f"unknown backend {name!r}; choose one of auto, {', '.join(ORDER)}")


class Registry:
    """The probes of one run, kept so that ``info``, the panel and the report show every refusal."""

    def __init__(self, env: ProbeEnv) -> None:
        self.env = env
        self.probes: dict[str, Probe] = {}
        for name in ORDER:
            cls = backend_class(name)
            try:
                probe = cls.probe(env)
            except Exception as exc:  # noqa: BLE001 - a probe that breaks is a refusal with its reason
                probe = Probe(name, False, f"probe failed: {type(exc).__name__}: {exc}")
            self.probes[name] = probe
            log.info("backend %s: %s (%s)", name, "available" if probe.available else "unavailable", probe.reason)

    @property
    def available(self) -> list[str]:
        return [n for n in ORDER if self.probes[n].available]

    def choose(self, requested: str) -> str:
        """The backend for ``--backend``: ``auto`` takes the first available one."""
        if requested == "auto":
            return self.available[0]
        if requested not in self.probes:
            raise UsageError(f"unknown backend {requested!r}; choose one of auto, {', '.join(ORDER)}")
        probe = self.probes[requested]
        if not probe.available:
            raise SharingUnavailable(requested, probe.reason)
        return requested

    def open(self, name: str, *, strict: bool = False) -> SharingBackend:
        return backend_class(self.choose(name))(self.env, strict=strict)

    def as_list(self) -> list[dict]:
        return [self.probes[n].as_dict() for n in ORDER]
