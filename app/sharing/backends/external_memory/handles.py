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
it ("If the original object owning the payload is destroyed, all resources and handles sharing
that payload will become invalid.", the NT Handle Types note, OpenCL-Docs @1fb076b).

Versions: the four Direct3D types (0x2063-0x2066) are cl_khr_external_memory_dx's, which OpenCL
3.0.16 still carries and 3.0.17 removed (the headers dropped them): their rows keep 3.0.16's
words and say so. OPAQUE_WIN32_NAME (0x2069) and ANDROID_HARDWARE_BUFFER (0x2070) are in the text
from 3.0.17 on. ``who_closes`` of a KMT handle ("nobody") is glshare's inference from "does not
own a reference" and "not compatible with any native APIs": the text names no closer.

``closer`` is the one decision of who closes a handle after an import: for a file descriptor the
importer once an import succeeded (glshare never closes it then, on any implementation: a driver
that closes its own fd would otherwise meet a double close of a number that may be reused), the
application where none did.
"""
from __future__ import annotations

import sys

FD_RULE = ("file descriptor: a successful import transfers ownership of the fd to the OpenCL implementation (the "
           "application must not use it afterwards); the imported memory object holds a reference to the payload "
           "(5.5.2.1)")
NT_RULE = ("NT handle: importing does not transfer ownership; the application closes it with CloseHandle when no "
           "longer needed; the imported memory object holds its own reference to the payload (5.5.2.2)")
KMT_RULE = ("global share (KMT) handle: owns no reference and import operations add none; it becomes invalid when "
            "all memory objects (and resources) associated with it are destroyed, and with the payload when the "
            "object owning it is destroyed ('If the original object owning the payload is destroyed, all resources "
            "and handles sharing that payload will become invalid.') (5.5.2.2); who closes it: nobody, glshare's "
            "inference (the text names no closer)")
NAME_RULE = ("NT handle name: a null-terminated UTF-16 string naming the payload; importing does not transfer "
             "ownership; it owns a reference to the payload (5.5.2.2, OpenCL 3.0.17 on)")
AHB_RULE = ("Android AHardwareBuffer: the imported memory object increments the buffer's reference count and "
            "decrements it once the memory object is deleted (OpenCL 3.0.17 on)")
D3D_NOTE = "cl_khr_external_memory_dx, in OpenCL 3.0.16; removed in 3.0.17 (no implementers, no CTS tests)"

_FD_VALID = ("a successful import: the fd then belongs to the OpenCL implementation and the application must not "
             "use it (until then, until the application closes it)")
_NT_VALID = "the application closes it with CloseHandle (an import does not take it over)"
_REFS = "the last reference is gone: {holders} each hold one"

_KMT_CLOSES = "nobody (a global share handle, not closable: glshare's inference, the text names no closer)"

# name, value, nt_handle, owns_reference, who_closes, handle_valid_until, memory_lives_until, os, versions
HANDLE_TYPES = [
    ("OPAQUE_FD", 0x2060, False, True, "the importer once an import succeeded; the application if none did",
     _FD_VALID, _REFS.format(holders="the fd while open, each imported memory object (CL buffer, GL memory object) "
                                     "and the exporter's allocation"), "linux", "3.0.16 on"),
    ("OPAQUE_WIN32", 0x2061, True, True, "the application (CloseHandle)", _NT_VALID,
     _REFS.format(holders="the NT handle, each imported memory object and the exporter's allocation"), "win32", "3.0.16 on"),
    ("OPAQUE_WIN32_KMT", 0x2062, False, False, _KMT_CLOSES,
     "all memory objects associated with it are destroyed",
     "the object owning the payload is destroyed: imports add no reference, so freeing the exporter invalidates "
     "every import and the handle", "win32", "3.0.16 on"),
    ("D3D11_TEXTURE", 0x2063, True, True, "the application (CloseHandle)", _NT_VALID,
     _REFS.format(holders="the NT handle, each imported memory object and the Direct3D 10/11 texture"), "win32", "3.0.16 only (removed in 3.0.17)"),
    ("D3D11_TEXTURE_KMT", 0x2064, False, False, _KMT_CLOSES,
     "all memory objects and Direct3D resources associated with it are destroyed",
     "the Direct3D 10/11 resource is destroyed (the handle and the imports hold no reference)", "win32", "3.0.16 only (removed in 3.0.17)"),
    ("D3D12_HEAP", 0x2065, True, True, "the application (CloseHandle)", _NT_VALID,
     _REFS.format(holders="the NT handle, each imported memory object and the Direct3D 12 heap"), "win32", "3.0.16 only (removed in 3.0.17)"),
    ("D3D12_RESOURCE", 0x2066, True, True, "the application (CloseHandle)", _NT_VALID,
     _REFS.format(holders="the NT handle, each imported memory object and the committed resource"), "win32", "3.0.16 only (removed in 3.0.17)"),
    ("DMA_BUF", 0x2067, False, True, "the importer once an import succeeded; the application if none did",
     _FD_VALID, _REFS.format(holders="every open fd of the dma-buf and each importer (the kernel counts them)"),
     "linux", "3.0.16 on"),
    ("OPAQUE_WIN32_NAME", 0x2069, True, True, "the application (CloseHandle)", _NT_VALID,
     _REFS.format(holders="the named payload's NT handles, each imported memory object and the exporter"), "win32",
     "3.0.17 on"),
    ("ANDROID_HARDWARE_BUFFER", 0x2070, False, True, "the application (AHardwareBuffer_release)",
     "the application releases its AHardwareBuffer reference",
     _REFS.format(holders="the AHardwareBuffer's references, each imported memory object"), "android", "3.0.17 on"),
]

RULES = {"OPAQUE_FD": FD_RULE, "DMA_BUF": FD_RULE, "OPAQUE_WIN32": NT_RULE, "D3D11_TEXTURE": NT_RULE,
         "D3D12_HEAP": NT_RULE, "D3D12_RESOURCE": NT_RULE, "OPAQUE_WIN32_KMT": KMT_RULE, "D3D11_TEXTURE_KMT": KMT_RULE,
         "OPAQUE_WIN32_NAME": NAME_RULE, "ANDROID_HARDWARE_BUFFER": AHB_RULE}
FD_TYPES = ("OPAQUE_FD", "DMA_BUF")  # "importing memory from a file descriptor transfers ownership" (5.5.2.1)


def closer(name: str, imported: bool) -> str:
    """Who closes a handle of type ``name`` after an import attempt: "importer" (the OpenCL
    implementation), "application" or "nobody". A file descriptor is the importer's once an import
    succeeded ("The application must not perform any operations on the file descriptor after a
    successful import", 5.5.2.1), whatever the implementation; the application's while none did."""
    if name in FD_TYPES:
        return "importer" if imported else "application"
    if not next(row for row in HANDLE_TYPES if row[0] == name)[3]:
        return "nobody"
    return "application"

# The handle types glshare has an import path for, and where that path was tested.
TESTED_IMPORTS = {"OPAQUE_FD": "tested on NVIDIA H200 (Vulkan export, GL + CL import)"}


_OS_TEXT = {"win32": "a Windows", "linux": "a Linux", "android": "an Android"}


def handle_table(import_types: list[int] | None, platform: str = sys.platform) -> list[dict]:
    """One row per handle type. ``import_types`` is CL_DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR
    (None when the device has no cl_khr_external_memory)."""
    rows = []
    os_name = "win32" if platform == "win32" else "linux"
    for name, value, nt, owns, who, handle_until, memory_until, os_of, versions in HANDLE_TYPES:
        imported = bool(import_types) and value in import_types
        if os_of != os_name:
            usable = f"not on this platform: {_OS_TEXT[os_of]} handle type"
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
                     "imported_by_device": imported, "rule": RULES[name], "glshare": usable,
                     "versions": versions if "removed" not in versions else f"{versions}: {D3D_NOTE}"})
    return rows
