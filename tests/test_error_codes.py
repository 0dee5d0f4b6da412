"""Every CL code and constant glshare names has the Khronos headers' name and value.

The headers are Debian's ``opencl-headers`` (/usr/include/CL/*.h, 2023.02.06 on Debian 12). Names
those headers lack are checked against the text that defines them, recorded below with its source:
Apple's CL_INVALID_GL_CONTEXT_APPLE (OpenCL/cl_gl_ext.h of macOS, not a Khronos header) and the
plane tokens of cl_amd_planar_yuv (../shared/spec/cl_amd_planar_yuv.txt, not in the headers).
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.errors import CL_CODES, CL_ERROR_ALIASES, CL_ERRORS

HEADERS = Path("/usr/include/CL")
SEED_AMD = Path(__file__).resolve().parent.parent.parent / "shared" / "spec" / "cl_amd_planar_yuv.txt"

# name -> (value, where it is defined), for names Debian's headers do not carry
NOT_IN_DEBIAN_HEADERS = {
    "CL_INVALID_GL_CONTEXT_APPLE": (-1000, "Apple's OpenCL/cl_gl_ext.h (macOS SDK): "
                                           "'#define CL_INVALID_GL_CONTEXT_APPLE -1000'"),
    "CL_MEM_DEVICE_HANDLE_LIST_KHR": (0x2051, "cl_khr_external_memory's New Tokens (Khronos cl_ext.h after "
                                              "2023.02); Debian's 2023.02 header has it under its provisional "
                                              "name CL_DEVICE_HANDLE_LIST_KHR, the same value"),
    "CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_WIN32_NAME_KHR": (0x2069, "KhronosGroup/OpenCL-Docs xml/cl.xml @1fb076b "
                                                                "(OpenCL 3.0.17 on; after Debian's 2023.02 headers)"),
    "CL_EXTERNAL_MEMORY_HANDLE_ANDROID_HARDWARE_BUFFER_KHR": (0x2070, "KhronosGroup/OpenCL-Docs xml/cl.xml @1fb076b "
                                                                      "(OpenCL 3.0.17 on)"),
    "CL_YUV_IMAGE_Y_PLANE_AMD": (0x0, "cl_amd_planar_yuv.txt, New Tokens"),
    "CL_YUV_IMAGE_UV_PLANE_AMD": (0x1, "cl_amd_planar_yuv.txt, New Tokens"),
}


def _header_defines() -> dict[str, int]:
    out: dict[str, int] = {}
    pattern = re.compile(r"^\s*#define\s+(CL_[A-Z0-9_]+)\s+\(?\s*(-?(?:0x[0-9A-Fa-f]+|\d+))[uUlL]*\s*\)?\s*(?:/[*/].*)?$")
    for header in sorted(HEADERS.glob("*.h")):
        for line in header.read_text(errors="replace").splitlines():
            m = pattern.match(line)
            if m:
                out.setdefault(m.group(1), int(m.group(2), 0))
    return out


@pytest.fixture(scope="module")
def defines() -> dict[str, int]:
    if not (HEADERS / "cl.h").exists():
        pytest.skip("Debian's opencl-headers are not installed (/usr/include/CL/cl.h): apt-get install opencl-headers")
    return _header_defines()


def _check(name: str, value: int, defines: dict[str, int]) -> None:
    if name in defines:
        assert defines[name] == value, f"{name} is {defines[name]} in the headers, glshare says {value}"
    else:
        assert name in NOT_IN_DEBIAN_HEADERS, f"{name} is in no header and has no recorded source"
        assert NOT_IN_DEBIAN_HEADERS[name][0] == value, name


def test_every_error_code_has_its_header_name_and_value(defines):
    for code, (name, meaning) in CL_ERRORS.items():
        _check(name, code, defines)
        assert meaning
    for name, code in CL_ERROR_ALIASES.items():
        _check(name, code, defines)
        assert code in CL_ERRORS  # an alias names a value the table carries
    assert CL_CODES["CL_INVALID_SEMAPHORE_KHR"] == -1142 and CL_ERRORS[-1142][0] == "CL_INVALID_SEMAPHORE_KHR"
    assert -1138 not in CL_ERRORS and -1141 not in CL_ERRORS  # command-buffer codes, which glshare never meets
    assert "CL_INVALID_EXTERNAL_MEMORY_HANDLE_TYPE_KHR" not in CL_CODES  # no such code exists


def test_the_codes_the_spec_texts_name_are_known():
    """Every code the error lab's expected answers name has an entry (name and meaning)."""
    from app.lab.lab import load_expected

    cases, not_provokable = load_expected()
    named = {c for exps in cases.values() for e in exps for c in e.codes}
    named |= {c for p in not_provokable for c in p["codes"]}
    assert named <= set(CL_CODES), named - set(CL_CODES)


def test_every_constant_glshare_names(defines):
    """Module-level CL_* constants of the modules that call extension entry points by number."""
    import app.cl.ext as ext
    import app.lab.drivers as drivers
    import app.sharing.backends.external_memory as external_memory
    import app.yuv.planar as planar

    seen = 0
    for module in (ext, planar, drivers, external_memory):
        for name, value in vars(module).items():
            if name.startswith("CL_") and isinstance(value, int) and not isinstance(value, bool):
                _check(name, value, defines)
                seen += 1
    assert seen >= 15


def test_handle_types_table(defines):
    from app.sharing.backends.external_memory.handles import HANDLE_TYPES

    for name, value, *_ in HANDLE_TYPES:
        _check(f"CL_EXTERNAL_MEMORY_HANDLE_{name}_KHR", value, defines)


def test_recorded_amd_tokens_are_the_seeds():
    if not SEED_AMD.exists():
        pytest.skip(f"{SEED_AMD} is not here")
    text = SEED_AMD.read_text()
    for name in ("CL_YUV_IMAGE_Y_PLANE_AMD", "CL_YUV_IMAGE_UV_PLANE_AMD"):
        m = re.search(rf"{name}\s+(0x[0-9A-Fa-f]+)", text)
        assert m and int(m.group(1), 16) == NOT_IN_DEBIAN_HEADERS[name][0]


@pytest.mark.parametrize("call", ["clEnqueueCopyBuffer", "clGetPlaneFromImageAMD", "clEnqueueNDRangeKernel"])
def test_a_generic_code_carries_no_gl_acquire_meaning(call):
    """#37 item 5: the acquire/release meanings of 5.5.15 belong to those two calls only."""
    from app.errors import ClError

    for code in (-30, -34, -38, -60):
        text = ClError(code, where=call).one_line()
        assert "num_objects" not in text and "OpenGL context" not in text and "mem_objects" not in text, text


@pytest.mark.parametrize("call", ["clEnqueueAcquireGLObjects", "clEnqueueReleaseGLObjects(lab.shared)"])
def test_the_gl_calls_keep_their_own_meanings(call):
    from app.errors import ClError

    assert ClError(-34, where=call).meaning == ("the context associated with command_queue was not created from an "
                                                "OpenGL context")
    assert "num_objects is zero" in ClError(-30, where=call).meaning
