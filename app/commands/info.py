"""``glshare info``: what this machine offers for GL/CL sharing, and each backend's verdict."""
from __future__ import annotations

import os

import pyopencl as cl

from app import __version__, native
from app.cl.device import CL_SHARING_EXTENSIONS, all_devices, cl_device_uuid, gl_device_uuids, select_device, uuid_text
from app.errors import GlshareError
from app.gl.context import gl_info
from app.sharing.backends.external_memory import ExternalMemory, import_handle_types
from app.sharing.backends.external_memory.handles import handle_table
from app.sharing.backends.external_memory.lifetime import run_lifetime_demo
from app.sharing.backends.gl_sharing import KhrGlSharing, gl_context_properties, gl_event_release_order
from app.sharing.base import ProbeEnv
from app.sharing.registry import Registry
from app.sharing.sync import sync_modes
from app.window import open_surface


def _device_entry(choice) -> dict:
    d = choice.device
    exts = set(d.extensions.split()) | set(choice.platform.extensions.split())
    return {"platform": choice.platform.name.strip(), "index": choice.index, "name": d.name.strip(),
            "type": cl.device_type.to_string(d.type), "version": d.version.strip(),
            "driver": d.driver_version.strip(), "image_support": bool(d.image_support),
            "sharing_extensions": {e: e in exts for e in CL_SHARING_EXTENSIONS}}


def gl_device_entry(registry, env) -> dict:
    """Which CL device drives the GL context (clGetGLContextInfoKHR, asked only where gl_sharing's
    trial saw the entry points work), GL's device UUIDs, and how gl_event orders the release."""
    out = {"gl_device_uuids": [uuid_text(u) for u in (gl_device_uuids() if env.gl_info.has("GL_EXT_memory_object")
                                                      else [])],
           "cl_device_uuid": uuid_text(cl_device_uuid(env.choice.device)),
           "gl_event_release": gl_event_release_order(env.gl_info)}
    if registry.probes[KhrGlSharing.name].available:
        try:
            dev = KhrGlSharing.gl_device(env, gl_context_properties(env))
            out["cl_device_for_gl_context"] = f"{dev.platform.name.strip()}: {dev.name.strip()}"
        except GlshareError as exc:
            out["cl_device_for_gl_context"] = exc.one_line() if hasattr(exc, "one_line") else str(exc)
    else:
        out["cl_device_for_gl_context"] = ("not asked: gl_sharing is refused here, and clGetGLContextInfoKHR is "
                                           "only called where its trial saw GL sharing work")
    return out


def _icd_folders() -> dict:
    """Where the ICD loader looks for OpenCL implementations, and the .icd files it finds there."""
    folder = os.environ.get("OCL_ICD_VENDORS") or "/etc/OpenCL/vendors"
    try:
        files = sorted(n for n in os.listdir(folder) if n.endswith(".icd"))
    except OSError as exc:
        files = [f"(cannot be read: {exc.strerror})"]
    return {"folder": folder, "icd_files": files}


def gather_without_cl(why: str, window: bool = False) -> dict:
    """What ``info`` can still say where no OpenCL device is found: the reason, where the ICD loader
    looked, and GL's facts (glshare shares nothing without CL, but a user fixing the set-up needs them)."""
    data: dict = {"glshare": __version__, "opencl": {"error": why, **_icd_folders()}, "devices": []}
    try:
        surface = open_surface(not window, (64, 64), title="glshare info")
    except GlshareError as exc:
        data["gl"] = {"error": exc.one_line()}
        return data
    try:
        data["gl"] = gl_info().as_dict()
    finally:
        surface.close()
    return data


def gather(selector: str | None, window: bool = False) -> dict:
    """Everything ``info`` shows, as JSON-ready data. Opens a headless EGL context to probe (``window``:
    a GLFW window's GLX context, where GL sharing may work when EGL's does not: NVIDIA)."""
    choice = select_device(selector)
    surface = open_surface(not window, (64, 64), title="glshare info")
    try:
        info = gl_info()
        registry = Registry(ProbeEnv(choice, surface, info))
        verdicts = {name: registry.sync_verdicts(name) for name in registry.order if registry.probes[name].available}
        sync = [{"name": mode, "backends": {name: (verdicts[name][mode] or "available") if name in verdicts
                                            else "backend unavailable" for name in registry.order}}
                for mode in sync_modes()]
        import_types = import_handle_types(choice.device)
        lifetime = None
        if registry.probes[ExternalMemory.name].available:
            try:
                lifetime = run_lifetime_demo(registry.env)
            except Exception as exc:  # noqa: BLE001 - shown, not fatal
                lifetime = {"ok": False, "steps": [], "error": f"{type(exc).__name__}: {exc}"}
        return {
            "glshare": __version__,
            "pyopencl": {"version": cl.VERSION_TEXT},  # its GL support is not used (app/cl/gl_sharing.py)
            "native": {"used": not native.reason(), "what": native.describe()},
            "devices": [_device_entry(c) for c in all_devices()],
            # [spec] where the ICD loader found the implementations (glshare's venv registers Intel's CPU runtime)
            "icd_vendors": os.environ.get("OCL_ICD_VENDORS") or "/etc/OpenCL/vendors",
            "selected_device": _device_entry(choice),
            "gl": {**info.as_dict(), "platform": (f"EGL ({getattr(surface, 'egl_platform', '')}), headless"
                                                  if surface.gl_platform == "egl" else "GLX, a GLFW window")},
            "backends": registry.as_list(),
            "gl_device": gl_device_entry(registry, registry.env),
            "sync_modes": sync,
            "external_memory_import_types": [f"0x{t:04X}" for t in (import_types or [])],
            "external_memory_handle_types": handle_table(import_types),
            "external_memory_lifetime_demo": lifetime,
        }
    finally:
        surface.close()


def render_text(data: dict) -> str:
    out = [f"glshare {data['glshare']}  (pyopencl {data['pyopencl']['version']})",
           f"  {data['native']['what']}" if "native" in data else "", "",
           f"OpenCL devices (ICD vendors: {data.get('icd_vendors', '/etc/OpenCL/vendors')}):"]
    sel = data["selected_device"]
    for d in data["devices"]:
        mark = "*" if (d["platform"], d["index"]) == (sel["platform"], sel["index"]) else " "
        out.append(f" {mark} {d['platform']}:{d['index']}  {d['name']}  [{d['type']}, {d['version']}]")
    out.append("   sharing extensions of the selected device:")
    for e, present in sel["sharing_extensions"].items():
        out.append(f"     {'+' if present else '-'} {e}")
    gl = data["gl"]
    out += ["", f"OpenGL: {gl['version']}  |  {gl['renderer']}  |  {gl['vendor']}  ({gl['platform']})"]
    for e, present in gl["sharing_extensions"].items():
        out.append(f"     {'+' if present else '-'} {e}")
    out += ["", "Sharing backends (probed in this order):"]
    for b in data["backends"]:
        out.append(f"  {'yes' if b['available'] else 'no '}  {b['name']:<16} {b['reason']}")
    if "gl_device" in data:
        g = data["gl_device"]
        out += ["", f"The GL context's CL device (clGetGLContextInfoKHR): {g['cl_device_for_gl_context']}",
                f"  GL device UUIDs: {', '.join(g['gl_device_uuids']) or 'none (no GL_EXT_memory_object)'}; "
                f"the selected CL device's: {g['cl_device_uuid']}",
                f"  gl_event orders the release before GL's use by {g['gl_event_release']}"]
    out += ["", "Sync modes:"]
    for s in data["sync_modes"]:
        ok = [n for n, v in s["backends"].items() if v == "available"]
        why = "; ".join(f"{k}: {v}" for k, v in s["backends"].items() if v != "backend unavailable")
        out.append(f"  {s['name']:<10} {('with ' + ', '.join(ok)) if ok else 'unavailable: ' + (why or 'no backend')}")
    out += ["", "External-memory handle types (cl_khr_external_memory; import types of the device: "
            f"{', '.join(data['external_memory_import_types']) or 'none'}):"]
    for h in data["external_memory_handle_types"]:
        out.append(f"  {h['hex']} {h['name']:<18} {'NT ' if h['nt_handle'] else '   '}"
                   f"owns ref: {'yes' if h['owns_reference'] else 'no '}  closes: {h['who_closes']}")
        # [spec] the handle's validity and the memory's lifetime are two columns
        out.append(f"         handle valid until: {h['handle_valid_until']}")
        out.append(f"         memory lives until: {h['memory_lives_until']}; {h['glshare']}")
    demo = data.get("external_memory_lifetime_demo")
    out += ["", "External-memory lifetime demonstration:"]
    if demo is None:
        out.append("  not run: external_memory is unavailable here (see its reason above)")
    else:
        for st in demo.get("steps", []):
            out.append(f"  {'ok  ' if st['ok'] else 'FAIL'} {st['step']}: {st['detail']}")
        if demo.get("error"):
            out.append(f"  FAIL {demo['error']}")
        out.append(f"  {demo.get('kmt_note', '')}")
    return "\n".join(out)
