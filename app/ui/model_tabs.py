"""The parts of the Caps, Memory and Lab tabs (app/ui/tabs/caps.py, memory.py, lab.py: built only
while one of those tabs is shown, so this module is imported then, not at start-up; ``app.ui.model``
names them too)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.session.views import CapsView, DemoView
    from app.ui.model.parts import ClockInfo


@dataclass(frozen=True, slots=True)
class HandleRow:
    hex: str
    name: str
    nt_handle: bool
    owns_reference: bool
    who_closes: str
    handle_valid_until: str  # how long the handle (fd, NT handle) may be used
    memory_lives_until: str  # how long the memory behind it lives (who holds references)
    rule: str
    glshare: str
    versions: str = ""  # the OpenCL versions whose text has the type (the Direct3D ones: 3.0.16 only)


@dataclass(frozen=True, slots=True)
class Lifetime:
    exporter_released: bool
    holders: str
    fds_closed: object
    cl_took_fd_ownership: object
    open_fds: object
    display_paths: tuple[tuple[str, str], ...]
    gpu_bytes_copied: object = None  # bytes copied on the GPU (a texture's packing), this set-up


@dataclass(frozen=True, slots=True)
class MemoryPart:
    handle_types: tuple[HandleRow, ...]
    import_types: tuple[str, ...]
    lifetime: Lifetime | None
    kmt_note: str
    unavailable: str


@dataclass(frozen=True, slots=True)
class CapsPart:
    caps: CapsView
    clock: ClockInfo
    gl_timer: str  # how GL passes are timed ("every frame", "one frame in 8", why off), and which frames are
    panel_refresh: str


@dataclass(frozen=True, slots=True)
class LabCase:
    family: str  # the call family (app/validate/families.py)
    case: str
    call: str
    what: str
    note: str
    spec_codes: tuple[str, ...]  # every code the spec allows here (more than one: no precedence given)
    section: str
    quote: str
    deviation: str  # where glshare answers otherwise on purpose, and why
    validator_agrees: bool
    validator_code: str
    driver_called: bool
    driver_differs: bool
    driver_code: str
    driver_note: str
    disagreements: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LabHazard:
    case: str
    kind: str  # "spec" (a spec violation) or "advice" (glshare's)
    flagged: bool
    ok: bool
    spec: str


@dataclass(frozen=True, slots=True)
class LabResults:
    implementation: str
    backend: str
    driver_policy: tuple[tuple[str, str], ...]  # (family, why the driver is or is not called)
    cases: tuple[LabCase, ...]
    hazards: tuple[LabHazard, ...]
    agree: int
    n_cases: int
    hazards_ok: int
    n_hazards: int
    ok: bool
    # one line per deliberate deviation glshare keeps (``lab.deviations_of``), and the GL context's kind
    deviations: tuple[str, ...] = ()
    gl_context: str = ""

    @classmethod
    def of(cls, r: Mapping) -> "LabResults":
        """From the error lab's result (``app/lab/lab.py``: ``run_lab``)."""
        s = r["summary"]
        cases = tuple(LabCase(
            c["family"], c["case"], c["call"], c["what"], c["note"], tuple(str(x) for x in c["spec_codes"]),
            c["section"], c["quote"], c["deviation"], bool(c["validator_agrees"]),
            str(c["validator_code"] or "refused without a code"), bool(c["driver_called"]),
            bool(c["driver_differs"]), str(c["driver_code"]), c["driver_note"], tuple(c["disagreements"]))
            for c in r["cases"])
        hazards = tuple(LabHazard(h["case"], h["kind"], bool(h["flagged"]), bool(h["ok"]), h["spec"])
                        for h in r["hazards"])
        deviations = tuple(f"[{d['family']}] {d['case']}: the text {d['spec']}, glshare {d['glshare']}: {d['why']}"
                           for d in r.get("deviations", ()))
        return cls(r["implementation"], r["backend"], tuple(r["driver_policy"].items()), cases, hazards,
                   int(s["validator_agrees"]), int(s["cases"]), int(s["hazards_ok"]), int(s["hazards"]), bool(s["ok"]),
                   deviations, str(r.get("gl_context", "")))


@dataclass(frozen=True, slots=True)
class LabPart:
    backend: str
    strict: bool
    status: str
    demos: tuple[DemoView, ...]
    hazard_counts: tuple[tuple[str, int], ...]  # flags per case since the last clear
    results: LabResults | None


def _lifetime(life: Mapping | None) -> Lifetime | None:
    """The backend's payload lifetime (SharingBackend.memory_tab), read at each view: its counters move."""
    if not life:
        return None
    return Lifetime(bool(life.get("exporter_released")), str(life.get("holders", "")), life.get("fds_closed"),
                    life.get("cl_took_fd_ownership"), life.get("open_fds"),
                    tuple((life.get("display_paths") or {}).items()), life.get("gpu_bytes_copied"))


def _handle_rows(mem: Mapping) -> tuple[HandleRow, ...]:
    return tuple(HandleRow(h["hex"], h["name"], bool(h["nt_handle"]), bool(h["owns_reference"]), h["who_closes"],
                           h["handle_valid_until"], h["memory_lives_until"], h["rule"], h["glshare"],
                           h.get("versions", ""))
                 for h in mem.get("handle_types", ()))
