#!/usr/bin/env bash
# What a run on the lent NVIDIA H200 machine does (the device tool carries .device, made by
# ../shared/gpu/prepare-device-bundle.sh plus the av wheel, and app/native/_stamps.so, built here by
# make setup: the run there builds nothing, and without it the stamps are read through ctypes). Writes at most 8 files under $OUT (or ./out/gpu):
# machine.txt (GPU, commit, every step's exit status and log tail, the hazard demonstrations' outcomes), pytest-gpu.txt, errors-nvidia.json,
# info.json, runs.json, bench.json, bench.png, profile.txt. Each step has its own time limit.
set -uo pipefail
out=${OUT:-out/gpu}; mkdir -p "$out"
source .device/activate
export GLSHARE_CL_DEVICE=${GLSHARE_CL_DEVICE:-NVIDIA}
log="$out/machine.txt"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "commit ${GLSHARE_COMMIT:-unknown}"; date -u;
  python3 -c "from app import native; print(native.describe())"; } > "$log" 2>&1
part=${GPU_PART:-all}  # "tests" (info, pytest, lab, runs), "bench" (bench, profile) or "all"
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS; timeout "$limit" "$@"; local rc=$?
         echo "step $name: rc=$rc in $((SECONDS - t0)) s" >> "$log"; return $rc; }
if [ "$part" != bench ]; then
step info 120 python3 -m app info --json > "$out/info.json" 2>>"$log"
GLSHARE_LAB_OUT=/tmp/lab step pytest 420 python3 -m pytest -m "gpu or not gpu" -v -rs -p no:cacheprovider \
  tests/sharing/test_gpu.py tests/lab/test_lab_gpu.py tests/contract tests/schedule/test_runner.py \
  tests/schedule/test_owners.py tests/sharing/test_semaphore_gl_side.py tests/ui/test_panel_gpu.py tests/attach/test_cl_layer.py \
  ${GPU_PYTEST_ARGS:-} > "$out/pytest-gpu.txt" 2>&1
tail -5 "$out/pytest-gpu.txt" >> "$log"
step errors 180 python3 -m app errors --json --backend external_memory > "$out/errors-nvidia.json" 2>>"$log"
# every hazard demonstration on the machine's backend, each in a child process with a watchdog (a hang
# there once stopped every later step): one line per case into machine.txt
step hazards 300 python3 bench/probes/gpu_hazard_demos_probe.py external_memory 12 > /tmp/hazards.txt 2>&1
grep '^{' /tmp/hazards.txt | cut -c1-220 >> "$log"
grep -q '"state": "\(hung\|failed\)"' /tmp/hazards.txt && tail -80 /tmp/hazards.txt >> "$log"  # the stacks of a hang
for spec in "particles external_memory semaphore" "particles external_memory finish" "image external_memory semaphore" \
            "postprocess external_memory semaphore" "yuv external_memory semaphore" "particles host_copy finish"; do
  set -- $spec
  step "run $spec" 120 python3 -m app run --headless --quiet --scene "$1" --backend "$2" --sync "$3" --frames 300 \
    --no-panel --report "/tmp/run-$1-$2-$3.json" > /dev/null 2>>"$log"
done
python3 - "$out/runs.json" /tmp/run-*.json <<'PY'
import json, sys
runs = [json.load(open(p)) for p in sys.argv[2:]]
keep = ("scene", "backend", "sync", "frames", "size", "bytes_per_frame", "gl", "cl", "counts", "phases_us",
        "cl_device_us", "waits_us", "errors", "stopped", "startup_ms")
json.dump([{k: r.get(k) for k in keep} for r in runs], open(sys.argv[1], "w"), indent=1)
PY
fi
if [ "$part" != tests ]; then
[ -n "${GPU_BENCH:-}" ] && step bench 420 python3 -m app bench ${GPU_BENCH} --json "$out/bench.json" --plot "$out/bench.png" \
  > /tmp/bench.txt 2>&1; tail -40 /tmp/bench.txt >> "$log"
step profile 180 python3 -c "
import cProfile, pstats, sys
sys.argv = ['glshare', 'run', '--headless', '--quiet', '--scene', 'image', '--size', '4096x4096', '--backend',
            'external_memory', '--sync', 'semaphore', '--frames', '3000', '--no-overlay', '--report', '/tmp/prof.json']
from app.cli import main
cProfile.run('main()', '/tmp/prof.out')
s = pstats.Stats('/tmp/prof.out'); s.sort_stats('tottime').print_stats(40); s.sort_stats('cumulative').print_stats(25)
" > "$out/profile.txt" 2>&1
python3 -c "import json; r=json.load(open('/tmp/prof.json')); print('profiled run:', json.dumps({k: r.get(k) for k in ('frames','phases_us','waits_us','cl_device_us','startup_ms')}))" >> "$out/profile.txt" 2>&1
fi
ls -la "$out" >> "$log"
