"""Whether this machine can hold a run of a scene at a size: estimated from the scene's shared
objects before anything is built, so that a size the machine cannot hold is one line and exit 2,
not a process the kernel's OOM killer ends without a word or an output.

The estimate is the worst case, a software GL and a CPU OpenCL, where every object lives in host
memory: each shared object's GL storage, CL's copy or mapping of it, the scene's start state built
in numpy and the kernels' own buffers (particles: their velocities) come to ``HOST_PER_SHARED``
host bytes per shared byte; ``BASE_BYTES`` is the process before any scene object (interpreter,
drivers, panel). The factors come from the peak RSS of headless runs at two sizes (the commit that
set them gives the runs). Available memory: MemAvailable (proc(5)), or less where a cgroup (v2)
limits this process.
"""
from __future__ import annotations

from pathlib import Path

from app.errors import UsageError

BASE_BYTES = 512 << 20
HOST_PER_SHARED = {"particles": 6.5, "image": 2.0, "postprocess": 2.0, "yuv": 2.0}
DEFAULT_PER_SHARED = 6.5  # a scene not measured: the largest factor
YUV_BYTES_PER_PIXEL = 8  # the RGBA result, 4 bytes, and the planes, 1.5 (NV12) or 3 (P010), rounded up


def _meminfo_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_room() -> int | None:
    """memory.max - memory.current of this process's cgroup (v2), or None where it sets no limit."""
    try:
        rel = Path("/proc/self/cgroup").read_text().splitlines()[0].split("::", 1)[1]
        folder = Path("/sys/fs/cgroup") / rel.lstrip("/")
        limit = (folder / "memory.max").read_text().strip()
        if limit == "max":
            return None
        return int(limit) - int((folder / "memory.current").read_text())
    except (OSError, ValueError, IndexError):
        return None


def available_bytes() -> int | None:
    """Memory this process could still take, or None where the system does not say."""
    known = [v for v in (_meminfo_available(), _cgroup_room()) if v is not None]
    return min(known) if known else None


def shared_bytes(scene_cls, size) -> int:
    try:
        return int(scene_cls.shared_bytes(size))
    except NotImplementedError:
        w, h = size
        return YUV_BYTES_PER_PIXEL * w * h


def estimate(scene_cls, size) -> tuple[int, int, float]:
    """(bytes the run would take at most, the scene's shared bytes, host bytes per shared byte)."""
    factor = HOST_PER_SHARED.get(scene_cls.name, DEFAULT_PER_SHARED)
    shared = shared_bytes(scene_cls, size)
    return int(BASE_BYTES + factor * shared), shared, factor


def check_memory(scene_cls, size, available: int | None = None) -> None:
    """UsageError (one line, with the estimate) where the run of ``scene_cls`` at ``size`` would
    take more memory than is ``available`` (default: what the system says now)."""
    if size is None:
        size = scene_cls.default_size
    available = available_bytes() if available is None else available
    if available is None:
        return
    need, shared, factor = estimate(scene_cls, size)
    if need > available:
        raise UsageError(f"--size {scene_cls.size_label(size)}: the {scene_cls.name} scene would need about "
                         f"{need / 1e9:.1f} GB of memory ({factor:g} x its {shared / 1e9:.2f} GB of shared objects, "
                         f"plus {BASE_BYTES / 1e9:.1f} GB for the process); this machine has {available / 1e9:.1f} GB "
                         "available: choose a smaller size")


def check_device_memory(device, label: str, scene_cls, size) -> None:
    """UsageError where the scene's shared objects alone exceed the OpenCL device's global memory
    (CL_DEVICE_GLOBAL_MEM_SIZE): a GPU holds them in its own memory, apart from the host's."""
    if size is None:
        size = scene_cls.default_size
    shared, limit = shared_bytes(scene_cls, size), int(device.global_mem_size)
    if shared > limit:
        raise UsageError(f"--size {scene_cls.size_label(size)}: the {scene_cls.name} scene shares {shared / 1e9:.2f} GB "
                         f"of objects; {label} has {limit / 1e9:.2f} GB of global memory: choose a smaller size")
