#!/usr/bin/env bash
# Debian/Ubuntu packages glshare needs: PoCL (OpenCL on the CPU), the ICD loader, the Khronos
# headers (tests/test_error_codes.py checks glshare's error names against them), Mesa (llvmpipe GL,
# EGL surfaceless), Xvfb, and the X libraries GLFW loads.
# Installed with apt when running as root; otherwise one line naming the command, exit 1.
set -euo pipefail
pkgs=(pocl-opencl-icd ocl-icd-libopencl1 opencl-headers xvfb xauth libgl1-mesa-dri
      libegl1 libegl-mesa0 libgl1 libglx-mesa0 libx11-6 libxrandr2 libxinerama1 libxcursor1 libxi6
      libxxf86vm1 libxkbcommon0 xdotool python3-venv)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# python3-venv only matters for the system python; a python with a working venv module needs none.
if python3 -c "import venv, ensurepip" 2>/dev/null; then
  missing=("${missing[@]/python3-venv}")
fi
read -r -a missing <<< "${missing[*]}"
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ]; then
  echo "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "glshare needs Debian packages: run  sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
