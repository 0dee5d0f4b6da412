"""The external-memory handle types of cl_khr_external_memory and who owns what.

Windows rules are quoted from ../shared/spec/external-memory-nt-handles.txt (OpenCL 3.0, 5.5.2.2);
the Linux rules from the cl_khr_external_memory_opaque_fd / _dma_buf text: importing a file
descriptor does not transfer its ownership, the application closes it, and the imported memory
object keeps its own reference to the payload.
"""
from __future__ import annotations

import sys

NT_RULE = ("NT handle: owns a reference to the payload; the application must close it with CloseHandle when "
           "no longer needed; the imported memory object holds its own reference to the payload")
KMT_RULE = ("global share (KMT) handle: owns no reference; becomes invalid when all memory objects and "
            "resources associated with it are destroyed")
FD_RULE = ("file descriptor: importing does not transfer ownership; the application closes its fd; the import "
           "holds its own reference, so the payload lives while any importer does")

# name, value, nt_handle, owns_reference, who_closes, becomes_invalid_when, os
HANDLE_TYPES = [
    ("OPAQUE_FD", 0x2060, False, True, "the application (close())",
     "never while an importer (GL memory object, CL buffer, Vulkan allocation) still uses the payload", "linux"),
    ("OPAQUE_WIN32", 0x2061, True, True, "the application (CloseHandle)",
     "never while an importer still uses the payload (the NT handle and each import own a reference)", "win32"),
    ("OPAQUE_WIN32_KMT", 0x2062, False, False, "nobody (not a closable handle)",
     "when all memory objects associated with it are destroyed", "win32"),
    ("D3D11_TEXTURE", 0x2063, True, True, "the application (CloseHandle)",
     "never while an importer still uses the Direct3D 10/11 texture's memory", "win32"),
    ("D3D11_TEXTURE_KMT", 0x2064, False, False, "nobody (not a closable handle)",
     "when all memory objects and Direct3D resources associated with it are destroyed", "win32"),
    ("D3D12_HEAP", 0x2065, True, True, "the application (CloseHandle)",
     "never while an importer still uses the Direct3D 12 heap's resources", "win32"),
    ("D3D12_RESOURCE", 0x2066, True, True, "the application (CloseHandle)",
     "never while an importer still uses the committed resource's memory", "win32"),
    ("DMA_BUF", 0x2067, False, True, "the application (close())",
     "never while an importer still uses the dma-buf (the kernel counts references)", "linux"),
]

RULES = {"OPAQUE_FD": FD_RULE, "DMA_BUF": FD_RULE, "OPAQUE_WIN32": NT_RULE, "D3D11_TEXTURE": NT_RULE,
         "D3D12_HEAP": NT_RULE, "D3D12_RESOURCE": NT_RULE, "OPAQUE_WIN32_KMT": KMT_RULE, "D3D11_TEXTURE_KMT": KMT_RULE}

# The handle types glshare has an import path for, and where that path was tested.
TESTED_IMPORTS = {"OPAQUE_FD": "tested on NVIDIA H200 (Vulkan export, GL + CL import)"}


def handle_table(import_types: list[int] | None, platform: str = sys.platform) -> list[dict]:
    """One row per handle type. ``import_types`` is CL_DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR
    (None when the device has no cl_khr_external_memory)."""
    rows = []
    os_name = "win32" if platform == "win32" else "linux"
    for name, value, nt, owns, who, invalid, os_of in HANDLE_TYPES:
        imported = bool(import_types) and value in import_types
        if os_of != os_name:
            usable = f"not on this platform: a {'Windows' if os_of == 'win32' else 'Linux'} handle type"
        elif import_types is None:
            usable = "not here: the CL device lists no cl_khr_external_memory"
        elif not imported:
            usable = "not here: the CL device does not import this type"
        elif name not in TESTED_IMPORTS:
            usable = "imported by the device, but glshare has no tested import path for it"
        else:
            usable = "usable: " + TESTED_IMPORTS[name]
        rows.append({"name": name, "value": value, "hex": f"0x{value:04X}", "nt_handle": nt, "owns_reference": owns,
                     "who_closes": who, "becomes_invalid_when": invalid, "imported_by_device": imported,
                     "rule": RULES[name], "glshare": usable})
    return rows
