"""The probes' shared command line: ``[scene size backend count]``, each with a default."""
from __future__ import annotations

import sys


def scene_args(size: str = "1024", backend: str = "host_mapped", count: int = 3000,
               argv: list[str] | None = None) -> tuple[str, str, int | tuple[int, int], str, int]:
    """(scene, the size as given, the size as a count or (W, H), backend, count)."""
    argv = sys.argv[1:] if argv is None else argv
    scene = argv[0] if argv else "particles"
    size_arg = argv[1] if len(argv) > 1 else size
    backend = argv[2] if len(argv) > 2 else backend
    count = int(argv[3]) if len(argv) > 3 else count
    parsed = tuple(int(x) for x in size_arg.split("x")) if "x" in size_arg else int(size_arg)
    return scene, size_arg, parsed, backend, count
