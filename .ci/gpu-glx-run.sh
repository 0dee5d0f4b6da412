#!/usr/bin/env bash
# gl_sharing on NVIDIA's real driver through GLX, on the lent GPU machine (after .ci/gpu-run.sh's set-up:
# `source .device/activate`). It needs an X server whose GLX client is NVIDIA's: a DISPLAY already
# served, else Xvfb started here from .device-x (its activate-x unpacks it under /opt/x), else from an
# /opt/x unpacked by an earlier call on the same machine (docs/gpu-window.md says how to make one).
# Two parts, each within one 600-s call of the GPU machine (every step's bound below, plus 5 s each: a
# step's timeout sends SIGKILL 5 s after SIGTERM, which a process stuck in a driver ignores):
#   GLX_PART=a  the trial, info, a linked event's answers, the GPU tests, the error lab
#                                                                  (30+30+30+160+220 + 5x5 = 495 s at most)
#   GLX_PART=b  window runs, the bench, screenshots, the hazards   (10x10+70+8x10+150 + 20x5 = 500 s at most)
# (GLX_PART unset: both, one after the other.) Writes under $OUT (or ./out/gpu-glx): machine.txt (GPU,
# commit, each step's exit status and log tail, the hazard demonstrations' outcomes); part a:
# info.json, pytest-gpu-glx.txt, errors-gl_sharing.json; part b: runs.json (every scene in a window on
# gl_sharing and external_memory), bench-gl.json, screenshots.tar (every scene with the panel at
# 1280x800 on both).
set -uo pipefail
out=${OUT:-out/gpu-glx}; mkdir -p "$out"
part=${GLX_PART:-ab}
case "$part" in a|b|ab) ;; *) echo "GLX_PART must be a or b (or unset: both), not '$part'" >&2; exit 2;; esac
[ -f .device/activate ] && source .device/activate
export GLSHARE_CL_DEVICE=${GLSHARE_CL_DEVICE:-NVIDIA}
log="$out/machine.txt"

x_served() { [ -n "${DISPLAY:-}" ] && python3 -c "import ctypes,sys; x=ctypes.CDLL('libX11.so.6'); \
x.XOpenDisplay.restype=ctypes.c_void_p; sys.exit(0 if x.XOpenDisplay(None) else 1)" 2>/dev/null; }
if ! x_served; then
  if [ -f .device-x/activate-x ]; then
    source .device-x/activate-x
  elif [ -x /opt/x/usr/bin/Xvfb ]; then  # unpacked by an earlier call: start it again from there
    export GLSHARE_X_LIBS=/opt/x/usr/lib/x86_64-linux-gnu:/opt/x/lib/x86_64-linux-gnu
    [ -e /usr/lib/x86_64-linux-gnu/dri ] || ln -s /opt/x/usr/lib/x86_64-linux-gnu/dri /usr/lib/x86_64-linux-gnu/dri
    [ -e /usr/bin/xkbcomp ] || ln -s /opt/x/usr/bin/xkbcomp /usr/bin/xkbcomp
    [ -e /usr/share/X11/xkb ] || { mkdir -p /usr/share/X11; ln -s /opt/x/usr/share/X11/xkb /usr/share/X11/xkb; }
    LD_LIBRARY_PATH=$GLSHARE_X_LIBS /opt/x/usr/bin/Xvfb :5 -screen 0 1920x1200x24 -nolisten tcp >/tmp/xvfb.log 2>&1 &
    sleep 2
    export DISPLAY=:5 LD_LIBRARY_PATH=$GLSHARE_X_LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  fi
fi
# NVIDIA's GLX client library (glvnd picks Mesa's by Xvfb's vendor string); GLSHARE_GLX_VENDOR=none: glvnd's choice
[ "${GLSHARE_GLX_VENDOR:-nvidia}" = none ] && unset __GLX_VENDOR_LIBRARY_NAME \
  || export __GLX_VENDOR_LIBRARY_NAME=${GLSHARE_GLX_VENDOR:-nvidia}
unset PYOPENGL_PLATFORM  # GLX for the window runs; headless (EGL) runs set it themselves
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "commit ${GLSHARE_COMMIT:-unknown}; part $part"; date -u
  echo "DISPLAY=${DISPLAY:-} served: $(x_served && echo yes || echo NO)  __GLX_VENDOR_LIBRARY_NAME=${__GLX_VENDOR_LIBRARY_NAME:-}"
  python3 -c "from app import native; print(native.describe())"; } > "$log" 2>&1
x_served || { echo "no X display: nothing of this script can run (docs/gpu-window.md)" >> "$log"; exit 1; }

step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS; timeout -k 5 "$limit" "$@"; local rc=$?
         echo "step $name: rc=$rc in $((SECONDS - t0)) s" >> "$log"; return $rc; }

part_a() {
# the trial's verdict is cached per set-up: a fresh cache folder, so this run tries it (and says so)
export XDG_CACHE_HOME=$(mktemp -d)
step "trial (first run)" 30 python3 -c "
import time; from app.commands.info import gather; t = time.perf_counter(); d = gather(None, window=True)
print('first info with the trial:', round(time.perf_counter() - t, 2), 's;',
      [(b['name'], b['available'], b['reason']) for b in d['backends'] if b['name'] == 'gl_sharing'])" >> "$log" 2>&1
step info 30 python3 -m app info --json --window > "$out/info.json" 2>>"$log"
# what the driver answers for a linked event (clCreateEventFromGLsyncKHR's) once its acquire completed:
# glshare's gl_event sync passes one to the acquire alone, never to a wait (NVIDIA answered
# clWaitForEvents on one with CL_INVALID_EVENT at teardown)
step "linked event" 30 python3 - >> "$log" 2>&1 <<'PY'
import ctypes, os, sys
sys.path.insert(0, os.getcwd())
from app.window import select_platform
select_platform(False)
from app.cl.ext import event_info, libopencl, vp
from app.config import RunConfig
from app.session.loop import Run
cfg = RunConfig(scene="particles", backend="gl_sharing", sync="gl_event", overlay=False, frames=10_000,
                cl_device=os.environ.get("GLSHARE_CL_DEVICE"))
with Run(cfg) as run:
    for _ in range(3):
        run.tick()
    fence, event, _ = run.session.scheduler.sync._fences[-1]
    run.session.backend.queue.finish()
    wait = libopencl().clWaitForEvents
    wait.argtypes, wait.restype = [ctypes.c_uint32, ctypes.c_void_p], ctypes.c_int32
    print("linked event, its acquire completed: clGetEventInfo(EXECUTION_STATUS) ->", event_info().status(event.int_ptr),
          "(None: refused); clWaitForEvents ->", wait(1, (vp * 1)(event.int_ptr)), flush=True)
PY
# (the lab's own test is left to the errors step below, which runs the same lab with its JSON kept)
if [ -n "${GPU_PYTEST_ARGS:-}" ]; then read -ra pyargs <<< "$GPU_PYTEST_ARGS"; else pyargs=(-k "not errors_gl_sharing_family"); fi
# glshare attach's libraries (make setup builds them; the carried tree has their sources only)
step "attach libraries" 60 python3 -m app.native build >> "$log" 2>&1
step pytest 200 python3 -m pytest -m "gpu or not gpu" -v -rs -p no:cacheprovider tests/sharing/test_gpu_glx.py \
  tests/attach/test_attach_gpu.py tests/attach/test_attach_panel.py "${pyargs[@]}" > "$out/pytest-gpu-glx.txt" 2>&1
tail -5 "$out/pytest-gpu-glx.txt" >> "$log"
# the driver's calls in a child under a watchdog (app/lab/isolate.py: 20 s a case, 3 hung cases at most)
step errors 220 python3 -m app errors --json --backend gl_sharing --window > "$out/errors-gl_sharing.json" 2>>"$log"
python3 - "$out/errors-gl_sharing.json" >> "$log" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("errors:", d["summary"], d.get("hazards_note", ""))
for r in d["cases"]:
    if r["driver_code"] in ("hung",) or str(r["driver_code"]).startswith("crashed"):
        print(f"  driver {r['driver_code']}: {r['family']}/{r['case']}/{r['call']}")
PY
}

part_b() {
# every scene in a window (no panel) on gl_sharing and external_memory, with reports
rm -f /tmp/run-*.json
for spec in "particles gl_sharing finish" "particles gl_sharing gl_event" "image gl_sharing finish" \
            "image gl_sharing gl_event" "postprocess gl_sharing finish" "yuv gl_sharing finish" \
            "particles external_memory semaphore" "image external_memory semaphore" \
            "postprocess external_memory semaphore" "yuv external_memory semaphore"; do
  set -- $spec
  step "window run $spec" 10 python3 -m app run --quiet --scene "$1" --backend "$2" --sync "$3" --frames 300 \
    --no-panel --report "/tmp/run-$1-$2-$3.json" > /dev/null 2>>"$log"
done
python3 - "$out/runs.json" /tmp/run-*.json <<'PY'
import json, sys
runs = [json.load(open(p)) for p in sys.argv[2:]]
keep = ("scene", "backend", "sync", "frames", "size", "bytes_per_frame", "gl", "cl", "counts", "phases_us",
        "cl_device_us", "waits_us", "errors", "stopped", "startup_ms", "backends")
json.dump([{k: r.get(k) for k in keep} for r in runs], open(sys.argv[1], "w"), indent=1)
PY

# the bench rows of gl_sharing (app/bench/gl_sharing_race.py): against external_memory, and against a bare loop
step bench 70 python3 -m app.bench.gl_sharing_race --json "$out/bench-gl.json" >> "$log" 2>&1

# screenshots: every scene with the panel, the window 1280x800, on both backends (one tar)
shots=$(mktemp -d)
for scene in particles image postprocess yuv; do
  for spec in "gl_sharing finish" "external_memory semaphore"; do
    set -- $spec
    step "screenshot $scene $1" 10 python3 -m app run --quiet --window-size 1280x800 --scene "$scene" --backend "$1" \
      --sync "$2" --frames 120 --panel-hz 0 --screenshot "$shots/$scene-$1.png" > /dev/null 2>>"$log"
  done
done
tar -C "$shots" -cf "$out/screenshots.tar" . 2>>"$log"

# the hazard demonstrations on gl_sharing in a window, each in a child with a watchdog: one line per case
# (python3 -u: the lines written before a kill stay in the file)
GLSHARE_HAZARD_WINDOW=1 GLSHARE_HAZARD_SYNCS=finish,gl_event step hazards 150 \
  python3 -u bench/probes/gpu_hazard_demos_probe.py gl_sharing 12 > /tmp/hazards.txt 2>&1
grep '^{' /tmp/hazards.txt | cut -c1-220 >> "$log"
grep -q '"state": "\(hung\|failed\)"' /tmp/hazards.txt && tail -80 /tmp/hazards.txt >> "$log"
}

case "$part" in *a*) part_a;; esac
case "$part" in *b*) part_b;; esac
ls -la "$out" >> "$log"
