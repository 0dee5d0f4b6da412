#!/usr/bin/env bash
# Create the virtual environment with glshare installed editable. pyopencl is PyPI's wheel: glshare
# calls the GL-sharing entry points through ctypes (app/cl/gl_sharing.py), so no build with GL.
set -euo pipefail
venv=${1:-.venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
py="$venv/bin/python"
export PIP_DISABLE_PIP_VERSION_CHECK=1
# pip's own status, without the noise some machines' pip configuration prints
pip_q() { "$py" -m pip "$@" 2>&1 | { grep -v '^WARNING: Location' || true; }; return "${PIPESTATUS[0]}"; }
pip_q install -q --upgrade pip
pip_q install -q -e ".[dev,vulkan]"
# setuptools' editable finder (the __editable__ .pth) imports pathlib, re and fnmatch at every
# interpreter start, ~15-20 ms of glshare's start-up on the 2-core machine (python -X importtime);
# for this flat layout a path entry to the project's root finds the same package: the .pth is
# rewritten to one (pip writes its finder again at the next install, and this line follows it)
"$py" - "$(pwd)" <<'PY'
import pathlib, sys, sysconfig

site = pathlib.Path(sysconfig.get_paths()["purelib"])
for pth in site.glob("__editable__.glshare-*.pth"):
    pth.write_text(sys.argv[1] + "\n")
PY

# A second CPU OpenCL implementation, for the tests that run on every implementation present:
# Intel's oneAPI CPU runtime from PyPI (../shared/PLATFORMS.md). Skipped with GLSHARE_SECOND_CL=0.
# Its libraries land in the environment's lib/ and find each other there (RUNPATH $ORIGIN), so no
# LD_LIBRARY_PATH is needed (and none is set: that lib/ also holds Intel's own libOpenCL.so.1,
# which would replace Debian's ICD loader). Its ICD file names a build path, so glshare writes one
# naming the installed libintelocl.so into a vendors folder that also links every system ICD
# (ocl-icd reads one folder, OCL_ICD_VENDORS), and a .pth hook sets OCL_ICD_VENDORS to that folder
# for every Python of this environment (glshare, pytest) unless it is already set.
if [ "${GLSHARE_SECOND_CL:-1}" != "0" ]; then
  if ! "$py" -c "import importlib.metadata as m; m.version('intel-opencl-rt')" 2>/dev/null; then
    echo "installing Intel's CPU OpenCL runtime from PyPI (about 310 MB of wheels, once)"
    pip_q install -q intel-opencl-rt intel-cmplr-lib-rt intel-cmplr-lib-ur tbb tcmlib umf
  fi
  "$py" - <<'PY'
import pathlib, site, sys, sysconfig

prefix = pathlib.Path(sys.prefix)
lib = prefix / "lib" / "libintelocl.so"
if not lib.exists():
    sys.exit(f"install-venv: {lib} is missing after installing intel-opencl-rt")
vendors = prefix / "etc" / "glshare" / "OpenCL" / "vendors"
vendors.mkdir(parents=True, exist_ok=True)
icd = vendors / "intel-cpu.icd"
if not icd.exists() or icd.read_text().strip() != str(lib):
    icd.write_text(f"{lib}\n")
hook = pathlib.Path(sysconfig.get_paths()["purelib"]) / "glshare_opencl_icd.py"
hook.write_text(f'''"""Written by glshare's .ci/install-venv.sh: Intel's CPU OpenCL runtime beside the system's ICDs.

Runs when this environment's Python starts (glshare_opencl_icd.pth), before anything loads OpenCL:
links each /etc/OpenCL/vendors/*.icd into {vendors} (which holds intel-cpu.icd) and points
OCL_ICD_VENDORS there, unless OCL_ICD_VENDORS names another folder already.
"""
import os

VENDORS = {str(vendors)!r}
SYSTEM = "/etc/OpenCL/vendors"


def _icds(folder):
    """The .icd files of ``folder`` (os.listdir: glob would import re and fnmatch at every start)."""
    try:
        return [os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".icd")]
    except OSError:
        return []


def _register():
    if os.environ.get("OCL_ICD_VENDORS", VENDORS) != VENDORS or not os.path.isdir(VENDORS):
        return
    try:
        for path in _icds(SYSTEM):
            link = os.path.join(VENDORS, os.path.basename(path))
            if not os.path.lexists(link):
                os.symlink(path, link)
        for link in _icds(VENDORS):
            if os.path.islink(link) and not os.path.exists(link):
                os.unlink(link)
    except OSError:
        pass
    os.environ["OCL_ICD_VENDORS"] = VENDORS


_register()
''')
(hook.parent / "glshare_opencl_icd.pth").write_text("import glshare_opencl_icd\n")
PY
  "$py" -c "import pyopencl as cl, sys; names = [p.name for p in cl.get_platforms()]; \
sys.exit(0 if 'Intel(R) OpenCL' in names else 'install-venv: Intel CPU runtime not registered: ' + str(names))"
fi
