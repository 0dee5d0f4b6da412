#!/usr/bin/env bash
# What a run on the lent NVIDIA H200 machine does (the device tool carries .device, made by
# ../shared/gpu/prepare-device-bundle.sh). Writes its logs under $OUT (or ./out/gpu).
set -uo pipefail
out=${OUT:-out/gpu}; mkdir -p "$out"
source .device/activate
export GLSHARE_CL_DEVICE=${GLSHARE_CL_DEVICE:-NVIDIA}
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; git rev-parse HEAD 2>/dev/null; date -u; } > "$out/machine.txt" 2>&1
python3 -m app info > "$out/info.txt" 2>&1; python3 -m app info --json > "$out/info.json" 2>>"$out/info.txt"
GLSHARE_LAB_OUT="$out" python3 -m pytest -m gpu -v -rs tests/test_gpu.py tests/test_lab_gpu.py ${GPU_PYTEST_ARGS:-} 2>&1 | tee "$out/pytest-gpu.txt" | tail -40
for spec in "particles external_memory semaphore" "particles external_memory finish" "image external_memory semaphore" "particles host_copy finish"; do
  set -- $spec
  python3 -m app run --headless --scene "$1" --backend "$2" --sync "$3" --frames 300 --no-panel \
    --report "/tmp/run-$1-$2-$3.json" > /dev/null 2>>"$out/machine.txt" || echo "run $spec failed" >> "$out/machine.txt"
done
python3 - "$out/runs.json" /tmp/run-*.json <<'PY'
import json, sys
runs = [json.load(open(p)) for p in sys.argv[2:]]
keep = ("scene", "backend", "sync", "frames", "size", "bytes_per_frame", "gl", "cl", "counts", "phases_us", "cl_device_us", "waits_us", "errors")
json.dump([{k: r.get(k) for k in keep} for r in runs], open(sys.argv[1], "w"), indent=1)
PY
[ -n "${GPU_BENCH:-}" ] && python3 -m app bench ${GPU_BENCH} --json "$out/bench.json" --plot "$out/bench.png" 2>&1 | tail -30
ls -la "$out"
