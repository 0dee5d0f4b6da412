"""The cl_amd_planar_yuv family: clGetPlaneFromImageAMD, registered with its rules (the error list
of ../shared/spec/cl_amd_planar_yuv.txt, version 1.0, a 2018 draft) and its lab cases
(``app/validate/families.py``). ``app/cl/planar.py`` (``plane_image``) enforces them.

The text lists its errors in no order; glshare checks the context's handle, then NULL mem and the
plane, then the object (whether it is live, then whether it is a YUV image), then whether the
context is the image's. That last rule is glshare's, not the text's: the text asks for "a valid
OpenCL context created from a Direct3D 11 device" and errs only where the context "is not a valid
context"; glshare refuses a valid context other than the image's with CL_INVALID_CONTEXT, because
the plane images live in the image's context. Without Direct3D 11 interop (everywhere glshare
runs) the contract is emulated on glshare's own YUV images, and two more deviations are declared
(lab rows, ``app/lab/expected.toml``): the returned image is a new reference to the stored plane
image, not an image the call creates; and where a device lists no (CL_RG, type) image format
(PoCL) the UV plane is CL_R, width x height/2, holding the same interleaved bytes.
"""
from __future__ import annotations

from app.validate import families
from app.validate.findings import SEED_AMD, Source
from app.validate.spec import Rule

SECTION = ("5.3.1", "Creating Image Objects (cl_amd_planar_yuv)")
ENTRY_POINTS = {"get": "clGetPlaneFromImageAMD"}


def _amd(text: str) -> Source:
    return Source(text, SECTION[0], SECTION[1], SEED_AMD)


RULES: dict[str, Rule] = {
    "invalid_context": Rule("CL_INVALID_CONTEXT", _amd("CL_INVALID_CONTEXT if context is not a valid context.")),
    "invalid_value": Rule("CL_INVALID_VALUE", _amd(
        "CL_INVALID_VALUE if values specified in plane are not valid or if <mem> object is NULL.")),
    "invalid_mem_object": Rule("CL_INVALID_MEM_OBJECT", _amd(
        "CL_INVALID_MEM_OBJECT is generated if <mem> is not a valid cl_mem object.")),
    "not_yuv_image": Rule("CL_INVALID_D3D11_RESOURCE_KHR", _amd(
        "CL_INVALID_D3D11_RESOURCE_KHR if <mem> is not a valid interop image from a YUV texture allocated in D3D11.")),
    "foreign_context": Rule("CL_INVALID_CONTEXT", _amd(
        "<context> is a valid OpenCL context created from a Direct3D 11 device."), basis="glshare's rule",
        note="the text errs only for an invalid context; glshare refuses a valid context other than the image's"),
}

# The lab's cases: the changes each makes to the valid call (context, mem, plane) on an NV12 image;
# "@name" is an object the lab makes, None is NULL. The format rows check the returned image.
LAB_CASES: dict[str, dict] = {
    "valid": {},
    "uv_plane": {"plane": 1},
    "null_context": {"context": None},
    "null_mem": {"mem": None},
    "plane_2": {"plane": 2},
    "released_image": {"mem": "@released_yuv"},
    "released_by_pyopencl": {"mem": "@pyreleased"},
    "not_yuv_image": {"mem": "@plain_image"},
    "not_memory_object": {"mem": "@queue"},
    "foreign_context": {"context": "@other_context"},
    "combo_null_context_plane_2": {"context": None, "plane": 2},
    "combo_released_plane_2": {"mem": "@released_yuv", "plane": 2},
    "combo_null_context_null_mem": {"context": None, "mem": None},
    "combo_not_yuv_foreign_context": {"mem": "@plain_image", "context": "@other_context"},
    "nv12_y_format": {"check": "format"},
    "nv12_uv_format": {"plane": 1, "check": "format"},
    "p010_y_format": {"mem": "@p010", "check": "format"},
    "p010_uv_format": {"mem": "@p010", "plane": 1, "check": "format"},
    "returns_new_image": {"check": "new_image"},
}

FAMILY = families.register(families.Family(
    "planar", ENTRY_POINTS, ("cl_amd_planar_yuv",), RULES, LAB_CASES, joins="*", validator="planar"))
