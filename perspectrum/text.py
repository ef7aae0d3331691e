"""Sentences and 3-sentence windows of evidence paragraphs.

Sentence boundaries come from pysbd (Sadvilkar & Neumann, 2020; rule-based, pure
Python, no model download), which handles abbreviations, decimals and quotes that a
regex on ". " gets wrong.
"""

from __future__ import annotations

import threading
from functools import lru_cache

_lock = threading.Lock()

#: Sentences per window, as in the paper's evidence verification.
WINDOW = 3


@lru_cache(maxsize=1)
def _segmenter() -> object:
    import pysbd

    return pysbd.Segmenter(language="en", clean=False)


@lru_cache(maxsize=16384)
def sentences(text: str) -> tuple[str, ...]:
    """The paragraph's sentences, stripped, empty ones dropped (cached: pools repeat)."""
    with _lock:  # pysbd keeps per-call state on the segmenter
        found = _segmenter().segment(text)  # type: ignore[attr-defined]
    return tuple(s.strip() for s in found if s.strip())


def window_starts(count: int, size: int = WINDOW, stride: int = 1) -> list[int]:
    """The first sentence of each window of a ``count``-sentence paragraph (see :func:`windows`)."""
    if size < 1 or stride < 1:
        raise ValueError("size and stride must be at least 1")
    if count <= size:
        return [0] if count else []
    starts = list(range(0, count - size + 1, stride))
    if starts[-1] != count - size:
        starts.append(count - size)
    return starts


def windows(text: str, size: int = WINDOW, stride: int = 1) -> list[str]:
    """Consecutive ``size``-sentence windows, starting every ``stride`` sentences.

    A paragraph with fewer than ``size`` sentences is one window (the whole text). With
    ``stride > 1`` the last window is always kept, so every sentence is covered.
    """
    parts = sentences(text)
    return [" ".join(parts[s:s + size]) for s in window_starts(len(parts), size, stride)]
