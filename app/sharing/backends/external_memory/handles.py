"""The external-memory handle types of cl_khr_external_memory: who owns the handle, how long the
handle is valid, and how long the memory behind it lives (two different things).

Windows rules are quoted from ../shared/spec/external-memory-nt-handles.txt (OpenCL 3.0, 5.5.2.2);
the Linux rules from 5.5.2.1 "File Descriptor Handle Types" (KhronosGroup/OpenCL-Docs,
app/validate/khr_extracts.txt): "For these extensions, importing memory from a file descriptor
transfers ownership of the file descriptor from the application to the OpenCL implementation. The
application must not perform any operations on the file descriptor after a successful import. The
imported memory object holds a reference to its payload."

A handle and its payload part ways: an NT handle stays valid until CloseHandle while the memory
lives as long as anything holds a reference (the handle, each import, the exporter); a file
descriptor stops being the application's at a successful import while the memory lives on in the
importer; a KMT handle owns nothing, so the memory lives only as long as the object that exported
it.
"""
from __future__ import annotations

import sys

FD_RULE = ("file descriptor: a successful import transfers ownership of the fd to the OpenCL implementation (the "
           "application must not use it afterwards); the imported memory object holds a reference to the payload "
           "(5.5.2.1)")
NT_RULE = ("NT handle: importing does not transfer ownership; the application closes it with CloseHandle when no "
           "longer needed; the imported memory object holds its own reference to the payload (5.5.2.2)")
KMT_RULE = ("global share (KMT) handle: owns no reference and import operations add none; it becomes invalid when "
            "all memory objects (and resources) associated with it are destroyed, and the payload with the object "
            "that owns it (5.5.2.2)")

_FD_VALID = ("a successful import: the fd then belongs to the OpenCL implementation and the application must not "
             "use it (until then, until the application closes it)")
_NT_VALID = "the application closes it with CloseHandle (an import does not take it over)"
_REFS = "the last reference is gone: {holders} each hold one"

# name, value, nt_handle, owns_reference, who_closes, handle_valid_until, memory_lives_until, os
HANDLE_TYPES = [
    ("OPAQUE_FD", 0x2060, False, True, "the importer once an import succeeded; the application if none did",
     _FD_VALID, _REFS.format(holders="the fd while open, each imported memory object (CL buffer, GL memory object) "
                                     "and the exporter's allocation"), "linux"),
    ("OPAQUE_WIN32", 0x2061, True, True, "the application (CloseHandle)", _NT_VALID,
     _REFS.format(holders="the NT handle, each imported memory object and the exporter's allocation"), "win32"),
    ("OPAQUE_WIN32_KMT", 0x2062, False, False, "nobody (a global share handle, not closable)",
     "all memory objects associated with it are destroyed",
     "the object that exported it is destroyed: imports add no reference, so freeing the exporter invalidates "
     "every import", "win32"),
    ("D3D11_TEXTURE", 0x2063, True, True, "the application (CloseHandle)", _NT_VALID,
     _REFS.format(holders="the NT handle, each imported memory object and the Direct3D 10/11 texture"), "win32"),
    ("D3D11_TEXTURE_KMT", 0x2064, False, False, "nobody (a global share handle, not closable)",
     "all memory objects and Direct3D resources associated with it are destroyed",
     "the Direct3D 10/11 resource is destroyed (the handle and the imports hold no reference)", "win32"),
    ("D3D12_HEAP", 0x2065, True, True, "the application (CloseHandle)", _NT_VALID,
     _REFS.format(holders="the NT handle, each imported memory object and the Direct3D 12 heap"), "win32"),
    ("D3D12_RESOURCE", 0x2066, True, True, "the application (CloseHandle)", _NT_VALID,
     _REFS.format(holders="the NT handle, each imported memory object and the committed resource"), "win32"),
    ("DMA_BUF", 0x2067, False, True, "the importer once an import succeeded; the application if none did",
     _FD_VALID, _REFS.format(holders="every open fd of the dma-buf and each importer (the kernel counts them)"),
     "linux"),
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
    for name, value, nt, owns, who, handle_until, memory_until, os_of in HANDLE_TYPES:
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
                     "who_closes": who, "handle_valid_until": handle_until, "memory_lives_until": memory_until,
                     "imported_by_device": imported, "rule": RULES[name], "glshare": usable})
    return rows
