"""The per-call caches of the frame's hot path (the validators' verdicts, the hand-over's prepared
arguments): a handful of keys in use at a time, one per copy of the shared objects at most; keys
of set-ups gone are dropped by emptying a cache that reached its bound."""
from __future__ import annotations

MOST = 64  # entries a per-call cache holds before it is emptied


def keep(cache: dict, key, value):
    """Put ``value`` in ``cache`` under ``key`` (the cache emptied first when it holds ``MOST``);
    returns ``value``."""
    if len(cache) >= MOST:
        cache.clear()
    cache[key] = value
    return value
