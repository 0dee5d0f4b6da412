"""The registry of rule-set families: each family registers itself, in its own module, with its
checks, its lab cases and its teaching texts; nothing else keeps a table keyed by family name.

| family | module | calls |
| --- | --- | --- |
| gl_sharing | ``app/validate/gl.py`` | clEnqueueAcquireGLObjects / clEnqueueReleaseGLObjects |
| external_memory | ``app/validate/external_memory.py`` | clEnqueueAcquire/ReleaseExternalMemObjectsKHR |
| semaphore | ``app/validate/semaphores.py`` | clEnqueueWait/SignalSemaphoresKHR |
| planar | ``app/validate/planar.py`` | clGetPlaneFromImageAMD |

A backend names its rule set (``SharingBackend.rule_set``: a family that checks hand-overs);
``of_rule_set`` gives every family the lab runs for it (the rule set's own, then those that
``joins`` it: the semaphores join external_memory, planar joins every rule set ("*")). Lab cases are data: case id -> the changes to
the family's valid call, each value a name the lab resolves (``app/lab/lab.py``,
``LabObjects.resolve``); the expected answers stay in ``app/lab/expected.toml``, transcribed by
hand, never read from here.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Mapping

MODULES = ("app.validate.gl", "app.validate.external_memory", "app.validate.semaphores", "app.validate.planar")


@dataclass(frozen=True)
class Teaching:
    """A family's words for each step of the frame: phase -> (quote, entry point), and where they
    come from (``cite`` formats ``{call}``), the version of the text named."""

    quotes: Mapping[str, tuple[str, str]]
    cite: str
    cites: Mapping[str, str] = field(default_factory=dict)  # phase -> its own citation (``{call}`` formatted)
    # sync mode -> phase -> (quote, entry point, citation): a quote that holds only under that mode
    by_sync: Mapping[str, Mapping[str, tuple[str, str, str]]] = field(default_factory=dict)


@dataclass(frozen=True)
class Family:
    """One rule-set family: what the lab, the validator, the tracker and the teaching mode need."""

    name: str
    entry_points: Mapping[str, str]  # call ("acquire", "signal", "get") -> entry point
    extensions: tuple[str, ...]  # the device or platform must list one for a driver call
    rules: Mapping[str, Any]  # rule id -> app.validate.spec.Rule
    lab_cases: Mapping[str, Mapping[str, Any]]  # case id -> argument changes (names the lab resolves)
    hazards: Mapping[str, Any] = field(default_factory=dict)  # case -> app.validate.findings.Hazard
    teaching: Teaching | None = None
    joins: str = ""  # the rule set whose backends also run this family ("*": every one; "": its own)
    backend: str = ""  # the backend whose objects the driver calls need ("" : any)
    validator: str = ""  # "mem" (SpecValidator), "semaphore" (its .semaphores), "planar"
    # the memory families' differences the validator follows (``app/validate/spec.py``)
    empty_call: str = ""  # (0, NULL): "noop" (does nothing) or "command" (completes an event)
    not_shared_rule: str = ""  # the rule of a valid memory object the backend did not share
    other_context_rule: str = ""  # the rule of a queue of another context that holds the objects' device

    def quote(self, phase: str, sync: str = "") -> tuple[str, str]:
        """(the words for a teaching step, where they come from) under sync mode ``sync``."""
        t = self.teaching
        special = t.by_sync.get(sync, {}).get(phase)
        if special is not None:
            text, call, cite = special
            return text, cite.format(call=call)
        text, call = t.quotes[phase]
        return text, t.cites.get(phase, t.cite).format(call=call)

    @property
    def calls(self) -> tuple[str, ...]:
        return tuple(self.entry_points)


_FAMILIES: dict[str, Family] = {}


def register(family: Family) -> Family:
    """Add ``family`` (called once, by its own module); checks its shape."""
    if family.name in _FAMILIES and _FAMILIES[family.name] is not family:
        raise ValueError(f"rule-set family {family.name!r} registered twice")
    if not family.entry_points or "valid" not in family.lab_cases:
        raise ValueError(f"family {family.name!r}: entry points and a 'valid' lab case are required")
    if family.teaching is not None:
        missing = {"acquire", "compute", "release", "render"} - set(family.teaching.quotes)
        if missing:
            raise ValueError(f"family {family.name!r}: no teaching quote for {', '.join(sorted(missing))}")
    _FAMILIES[family.name] = family
    return family


def _load() -> None:
    for module in MODULES:
        importlib.import_module(module)


def get(name: str) -> Family:
    """The family ``name``; ValueError naming the known ones otherwise."""
    _load()
    try:
        return _FAMILIES[name]
    except KeyError:
        raise ValueError(f"unknown rule-set family {name!r} (one of {', '.join(names())})") from None


def names() -> tuple[str, ...]:
    _load()
    return tuple(_FAMILIES)


def of_rule_set(rule_set: str) -> tuple[str, ...]:
    """The families the lab runs on a backend of ``rule_set``: its own, then those joining it."""
    own = get(rule_set)
    return (own.name, *(f.name for f in _FAMILIES.values() if f.joins in (rule_set, "*")))


def rule_sets() -> tuple[str, ...]:
    """The families a backend may name as its rule set (those with hazards: hand-overs)."""
    _load()
    return tuple(n for n, f in _FAMILIES.items() if f.hazards)
