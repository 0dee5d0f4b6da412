"""GPU probe: do the hazard demonstrations (skip the acquire, skip the release, sync none, delete GL
before CL, the unordered render) run on the machine's backend without hanging, and where does a hang
sit? Not part of the package; run from a project root:

    GLSHARE_CL_DEVICE=NVIDIA python3 bench/probes/gpu_hazard_demos_probe.py [backend] [frames]

Each case (scene x sync x demonstration; the unordered render on postprocess alone) runs in a child
process: a headless ``Run`` ticks a few frames, turns the demonstration on as the panel's key does,
ticks ``frames`` more, turns it off (the delete order is a one-off) and ticks three. Every step is
printed with its time as it happens; a child still running after 30 s has all its threads' stacks
dumped (faulthandler) and is killed. One JSON line per case: ok / hung / failed, the last step
reached, the frame errors and hazard flags counted.
"""
import json
import os
import subprocess
import sys
import time

# GLSHARE_HAZARD_WINDOW=1: in a GLFW window (GLX: gl_sharing on NVIDIA), else headless EGL;
# GLSHARE_HAZARD_SYNCS: the sync modes to run each demonstration under (default finish,semaphore)
WINDOW = os.environ.get("GLSHARE_HAZARD_WINDOW") == "1"
SYNCS = os.environ.get("GLSHARE_HAZARD_SYNCS", "finish,semaphore").split(",")
if not WINDOW:
    os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
sys.path.insert(0, os.getcwd())

WATCHDOG_S = 30


def child(scene: str, backend: str, sync: str, demo: str, frames: int) -> None:
    import faulthandler

    faulthandler.dump_traceback_later(WATCHDOG_S - 5, exit=True)
    from app.config import RunConfig
    from app.run import Run

    t0 = time.perf_counter()

    def step(what: str) -> None:
        print(f"{(time.perf_counter() - t0) * 1e3:9.1f} ms  {what}", flush=True)

    cfg = RunConfig(scene=scene, size=1024, backend=backend, sync=sync, headless=not WINDOW, frames=10_000,
                    panel_hz=0)
    with Run(cfg) as rt:
        step(f"started: {rt.session.backend.name} / {rt.session.cfg.sync}")
        for _ in range(3):
            rt.tick()
        key = {"skip_acquire": "1", "skip_release": "2", "sync_none": "3", "wrong_delete_order": "4",
               "unordered_render": "5"}[demo]
        step(f"key {key}: {rt.controls.key(key)}")
        for _ in range(frames):
            rt.tick()
            step(f"frame {rt.session.frame} ticked")
        if demo != "wrong_delete_order":  # a one-off: nothing to turn off
            step(f"key {key}: {rt.controls.key(key)}")
        for _ in range(3):
            rt.tick()
        step("off, 3 frames ticked")
        model = rt.ui.last_model
        errors = [r for r in rt.session.scheduler.history if r.errors]
        print("RESULT " + json.dumps({"hazards": getattr(model.hazards, "total", None) if model else None,
                                      "frame_errors": len(errors)}), flush=True)
    step("closed")


def main() -> None:
    backend = sys.argv[1] if len(sys.argv) > 1 else "external_memory"
    frames = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    cases = [(scene, sync, demo) for scene in ("particles", "image") for sync in SYNCS
             for demo in ("skip_release", "skip_acquire", "sync_none", "wrong_delete_order")]
    cases += [("postprocess", sync, "unordered_render") for sync in SYNCS]
    for scene, sync, demo in cases:
        t = time.perf_counter()
        try:
            p = subprocess.run([sys.executable, __file__, "--child", scene, backend, sync, demo, str(frames)],
                               capture_output=True, text=True, timeout=WATCHDOG_S + 10)
            out, rc = p.stdout + p.stderr, p.returncode
        except subprocess.TimeoutExpired as exc:
            out, rc = (exc.stdout or b"").decode() + (exc.stderr or b"").decode(), "timeout"
        lines = [ln for ln in out.splitlines() if ln.strip()]
        result = next((ln[7:] for ln in lines if ln.startswith("RESULT ")), None)
        state = "ok" if rc == 0 and result else ("hung" if "Timeout (" in out or rc == "timeout" else "failed")
        steps = [ln for ln in lines if " ms  " in ln]
        print(json.dumps({"scene": scene, "sync": sync, "demo": demo, "state": state, "rc": rc,
                          "seconds": round(time.perf_counter() - t, 1), "last_step": steps[-1] if steps else None,
                          "result": json.loads(result) if result else None}), flush=True)
        if state != "ok":
            print("\n".join(lines[-60:]), flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]))
    else:
        main()
