"""Giving the C heap's free pages back to the system.

glibc keeps what torch, numpy and the tokenizers free, in pieces a long run would otherwise hold
for good: a server answering requests, or ``map`` mining a thousand documents, would see its
resident memory keep growing with work whose objects are long gone. :func:`give_back_memory`
returns them, at most once every :data:`TRIM_EVERY` seconds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

#: The least time between two returns of the C heap's free pages to the system.
TRIM_EVERY = 1.0


def _trimmer() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or ``None`` where the C library has none (macOS, musl)."""
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


_TRIM = _trimmer()
_trimmed = [0.0]  # when the free pages last went back
_trim_lock = threading.Lock()


def give_back_memory(now: float | None = None) -> bool:
    """Give the C heap's free pages back to the system, unless that was done less than
    :data:`TRIM_EVERY` seconds ago or the C library cannot; whether it was done."""
    now = time.monotonic() if now is None else now
    with _trim_lock:
        if _TRIM is None or now - _trimmed[0] < TRIM_EVERY:
            return False
        _trimmed[0] = now
    _TRIM(0)
    return True
