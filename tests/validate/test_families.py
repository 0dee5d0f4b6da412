"""The rule-set family registry (app/validate/families.py): each family registers itself, in its own
module, with its checks, lab cases and teaching texts; nothing else keys a table by family name."""
from __future__ import annotations

import re

import pytest
from support import ROOT

from app.validate import families


def test_every_family_registers_from_its_own_module():
    assert set(families.names()) == {"gl_sharing", "external_memory", "semaphore", "planar"}
    for name in families.names():
        fam = families.get(name)
        assert fam.entry_points and "valid" in fam.lab_cases and fam.rules, name
    assert families.rule_sets() == ("gl_sharing", "external_memory")
    assert families.of_rule_set("external_memory") == ("external_memory", "semaphore", "planar")
    assert families.of_rule_set("gl_sharing") == ("gl_sharing", "planar")
    with pytest.raises(ValueError, match="unknown rule-set family"):
        families.get("d3d11")


def test_a_family_registered_twice_or_incomplete_is_refused():
    fam = families.get("planar")
    with pytest.raises(ValueError, match="twice"):
        families.register(families.Family("planar", fam.entry_points, (), {}, {"valid": {}}))
    with pytest.raises(ValueError, match="valid"):
        families.register(families.Family("x", {"get": "clX"}, (), {}, {}))


def test_no_module_keys_a_table_by_family_name():
    """Outside the family modules and the driver table (per implementation), no dict literal is keyed
    by a family's name."""
    keyed = re.compile(r'\{\s*"(gl_sharing|external_memory|semaphore|planar)"\s*:')
    allowed = {"app/lab/drivers.py"}  # IMPLEMENTATIONS: what each driver does, per family
    found = []
    for path in sorted((ROOT / "app").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("app/validate/") or rel in allowed:
            continue
        if keyed.search(path.read_text()):
            found.append(rel)
    assert found == []
