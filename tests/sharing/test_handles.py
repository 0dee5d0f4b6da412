"""The external-memory handle table and the one decision of who closes a handle after an import
(#37 items 4 and 7): read against 5.5.2.1 / 5.5.2.2 (app/validate/khr_extracts.txt)."""
from __future__ import annotations

import pytest

from app.sharing.backends.external_memory.handles import HANDLE_TYPES, closer, handle_table


@pytest.mark.parametrize("name", ["OPAQUE_FD", "DMA_BUF"])
def test_an_fd_is_the_importers_after_a_successful_import_on_every_implementation(name):
    """'The application must not perform any operations on the file descriptor after a successful
    import': glshare never closes it then, whatever the platform."""
    assert closer(name, imported=True) == "importer"
    assert closer(name, imported=False) == "application"


def test_the_backend_never_closes_the_fd_cl_took():
    """The decision is the table's: no platform list in the backend keeps an fd for glshare to close."""
    import app.sharing.backends.external_memory as em

    assert not hasattr(em, "KEEPS_IMPORTED_FD")


def test_the_table_names_each_types_version_and_owner():
    rows = {r["name"]: r for r in handle_table([0x2060], platform="linux")}
    assert rows["OPAQUE_WIN32_NAME"]["value"] == 0x2069 and rows["OPAQUE_WIN32_NAME"]["owns_reference"]
    assert rows["ANDROID_HARDWARE_BUFFER"]["value"] == 0x2070
    for name in ("D3D11_TEXTURE", "D3D11_TEXTURE_KMT", "D3D12_HEAP", "D3D12_RESOURCE"):
        assert "removed in 3.0.17" in rows[name]["versions"], name
    kmt = rows["OPAQUE_WIN32_KMT"]
    assert "inference" in kmt["who_closes"] and "original object owning the payload" in kmt["rule"]
    assert closer("OPAQUE_WIN32_KMT", imported=True) == "nobody"
    assert len({row[1] for row in HANDLE_TYPES}) == len(HANDLE_TYPES)
