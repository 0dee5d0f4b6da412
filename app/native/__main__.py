"""``python -m app.native build [--force]``: compile stamps.c and glshare attach's libraries
(app/native/attach/*.c) (make setup runs it). Where it cannot
(no C compiler, or the compiler refuses) it says why in one line and exits 0: the library is a
speed-up, and glshare then reads the stamps through ctypes (``glshare info`` says so; where a
compiler is there, tests/native/test_native.py fails on a library that was not built)."""
from __future__ import annotations

import sys

from app import native


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "build":
        print("usage: python -m app.native build [--force]", file=sys.stderr)
        return 2
    force = "--force" in argv
    try:
        print(f"app.native: {native.build(force=force)}")
    except native.NativeUnavailable as exc:
        print(f"app.native: not built: {exc}; the time stamps will be read through ctypes", file=sys.stderr)
    try:
        for line in native.build_attach(force=force):
            print(f"app.native: {line}")
    except native.NativeUnavailable as exc:
        print(f"app.native: glshare attach's libraries not built: {exc}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
