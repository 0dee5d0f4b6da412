#!/usr/bin/env bash
# Create the virtual environment with glshare installed editable, and pyopencl built WITH GL
# support (PyPI's wheel has have_gl() == False). Re-runs only when pyproject.toml changed.
set -euo pipefail
venv=${1:-.venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
py="$venv/bin/python"
export PIP_DISABLE_PIP_VERSION_CHECK=1
# pip's own status, without the noise some machines' pip configuration prints
pip_q() { "$py" -m pip "$@" 2>&1 | { grep -v '^WARNING: Location' || true; }; return "${PIPESTATUS[0]}"; }
pip_q install -q --upgrade pip
if ! "$py" -c "import pyopencl" 2>/dev/null; then
  echo "building pyopencl with GL support (about a minute)"
  PYOPENCL_ENABLE_GL=1 pip_q install -q --no-binary pyopencl pyopencl
elif ! "$py" -c "import pyopencl, sys; sys.exit(0 if pyopencl.have_gl() else 1)"; then
  echo "rebuilding pyopencl with GL support (about a minute)"
  PYOPENCL_ENABLE_GL=1 pip_q install -q --no-binary pyopencl --force-reinstall --no-deps pyopencl
fi
pip_q install -q -e ".[dev,vulkan]"
"$py" -c "import pyopencl; assert pyopencl.have_gl(), 'pyopencl was built without GL'"
