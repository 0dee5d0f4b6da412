"""``python -m app.native build [--force]``: compile stamps.c (make setup runs it). Without a C
compiler it says so and exits 0: glshare then reads the stamps through ctypes (``glshare info``)."""
from __future__ import annotations

import sys

from app import native


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "build":
        print("usage: python -m app.native build [--force]", file=sys.stderr)
        return 2
    try:
        print(f"app.native: {native.build(force='--force' in argv)}")
    except native.NativeUnavailable as exc:
        print(f"app.native: not built: {exc}; CL profiling stamps will be read through ctypes", file=sys.stderr)
        return 0 if native.compiler() is None else 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
