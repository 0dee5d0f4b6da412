"""The specification texts glshare quotes, for tests that check a quote is verbatim.

../shared/spec/*.txt (the seed) and app/validate/khr_extracts.txt (extracts of KhronosGroup's
OpenCL-Docs), whitespace collapsed and list bullets dropped; a quote may join pieces with " / "
and elide words with "...".
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEED = next((d for d in (ROOT.parent / "shared" / "spec", ROOT / "shared" / "spec") if d.is_dir()),
            ROOT.parent / "shared" / "spec")


def _norm(text: str) -> str:
    text = text.replace("•", " ")
    text = re.sub(r"\s+", " ", text)
    return text.replace(" - ", " ").strip()


@lru_cache(maxsize=1)
def spec_texts() -> str:
    """The texts; skips the calling test where the seed texts are not at hand (a bare copy)."""
    if not SEED.is_dir():
        import pytest

        pytest.skip(f"the seed texts are not here ({SEED})")
    files = sorted(SEED.glob("*.txt")) + [ROOT / "app" / "validate" / "khr_extracts.txt"]
    return "\n".join(_norm(f.read_text()) for f in files if f.exists())


def quote_found(quote: str, texts: str) -> bool:
    """Every piece of ``quote`` (split at " / " and "...") occurs in ``texts``."""
    for part in quote.split(" / "):
        for piece in part.split("..."):
            piece = _norm(piece).strip(" ,;")
            if len(piece) > 3 and piece not in texts:
                return False
    return True
