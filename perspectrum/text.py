"""Sentences and 3-sentence windows of evidence paragraphs.

Sentence boundaries come from pysbd (Sadvilkar & Neumann, 2020; rule-based, pure
Python, no model download), which handles abbreviations, decimals and quotes that a
regex on ". " gets wrong.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from functools import lru_cache

_lock = threading.Lock()
#: Paragraphs split before, in another process (the sentence pool's cache; see :func:`remember`).
_known: dict[str, tuple[str, ...]] = {}
#: The sentences each recently made window was joined from (see :func:`window_sentences`).
_made: OrderedDict[str, tuple[str, ...]] = OrderedDict()
_MADE_MAX = 16384

#: Sentences per window, as in the paper's evidence verification.
WINDOW = 3


@lru_cache(maxsize=1)
def _segmenter() -> object:
    import pysbd

    return pysbd.Segmenter(language="en", clean=False)


def remember(splits: dict[str, tuple[str, ...]]) -> None:
    """Take splits this function made earlier (the evidence pool's, stored with its sentence
    index), so :func:`sentences` answers them without pysbd, whose pass over each
    paragraph was most of what highlighting a claim's evidence cost at run time."""
    _known.update(splits)


@lru_cache(maxsize=16384)
def sentences(text: str) -> tuple[str, ...]:
    """The paragraph's sentences, stripped, empty ones dropped (cached: pools repeat)."""
    if text in _known:
        return _known[text]
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
    out = []
    for start in window_starts(len(parts), size, stride):
        window = " ".join(parts[start:start + size])
        with _lock:
            _made[window] = parts[start:start + size]
            _made.move_to_end(window)
            if len(_made) > _MADE_MAX:
                _made.popitem(last=False)
        out.append(window)
    return out


def window_sentences(window: str) -> tuple[str, ...]:
    """The sentences of a window: those :func:`windows` joined it from, when it made it
    recently (splitting the window again costs a pysbd pass per window at run time, and
    need not find the same sentences), else the window split by :func:`sentences`."""
    with _lock:
        made = _made.get(window)
    return made if made is not None else sentences(window)
