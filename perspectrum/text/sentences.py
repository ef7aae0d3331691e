"""Sentences and 3-sentence windows of evidence paragraphs.

Sentence boundaries come from pysbd (Sadvilkar & Neumann, 2020; rule-based, pure
Python, no model download), which handles abbreviations, decimals and quotes that a
regex on ". " gets wrong. On text that repeats itself its time grows with about the square
of the length, so a paragraph longer than :data:`MAX_SPLIT_CHARS` is split a piece at a time.
"""

from __future__ import annotations

import re
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
#: Longest text pysbd reads in one piece, in characters. pysbd looks each sentence it
#: finds up in the text, so on text that repeats itself its time grows with about the
#: square of the length (200,000 characters of one paragraph repeated: 10.3 s in one
#: pass, 1.1 s in pieces; `python -m benchmarks.bench_split`, eval/results/bench_split_base_nosplit.json),
#: and one long record in an own pool (a whole document pasted as one paragraph) could
#: hold up indexing or a discover call for minutes. A longer paragraph is cut into pieces
#: of at most this many characters (see :func:`_pieces`), each split apart. PERSPECTRUM's
#: longest evidence paragraph is 11,903 characters (eId 7648), so its splits are unchanged.
MAX_SPLIT_CHARS = 12_000
#: Where a piece may end, in order of preference: a paragraph break, a sentence end
#: (``.``, ``!`` or ``?``, closing quotes or brackets, a space), any space. Each is
#: looked for in the second half of a piece, so no piece is cut short.
_CUTS = (re.compile(r"\n\s*\n"), re.compile(r"[.!?][\"'”’)\]]*\s"), re.compile(r"\s"))
_told_cut = False


@lru_cache(maxsize=1)
def _segmenter() -> object:
    import pysbd

    return pysbd.Segmenter(language="en", clean=False)


def remember(splits: dict[str, tuple[str, ...]]) -> None:
    """Take splits this function made earlier (the evidence pool's, stored with its sentence
    index), so :func:`sentences` answers them without pysbd, whose pass over each
    paragraph was most of what highlighting a claim's evidence cost at run time."""
    _known.update(splits)


def encodable(text: str) -> bool:
    """Whether ``text`` can be written as UTF-8. It cannot when it holds a lone surrogate,
    which is what Python makes of a byte that is not UTF-8 in a command line, and what a
    JSON escape such as ``"\\udcff"`` reads as; tokenizers, index files and terminals
    each fail on such text later with a traceback of their own."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def checked(text: str, what: str, limit: int, error: type[Exception]) -> str:
    """``text`` stripped, or ``error`` saying why it cannot be searched for: empty, over
    ``limit`` characters, or not valid Unicode (see :func:`encodable`). ``what`` names it
    in the message ("claim", "query")."""
    stripped = text.strip()
    if not stripped:
        raise error(f"the {what} is empty")
    if len(stripped) > limit:
        raise error(f"the {what} is {len(stripped):,} characters long; the limit is {limit:,}")
    if not encodable(stripped):
        raise error(f"the {what} holds a character that is not valid Unicode "
                    "(a byte that is not UTF-8 in the command line or file?)")
    return stripped


def _pieces(text: str) -> list[str]:
    """``text`` cut into consecutive pieces of at most :data:`MAX_SPLIT_CHARS` characters,
    each ending at the best cut of :data:`_CUTS` in its second half (mid-word only when
    that half has no space at all). The pieces join back into ``text``."""
    pieces = []
    start = 0
    while len(text) - start > MAX_SPLIT_CHARS:
        end = start + MAX_SPLIT_CHARS
        for pattern in _CUTS:
            cuts = [found.end() for found in pattern.finditer(text, start + MAX_SPLIT_CHARS // 2, end)]
            if cuts:
                end = cuts[-1]
                break
        pieces.append(text[start:end])
        start = end
    return [*pieces, text[start:]]


def _tell_cut(length: int) -> None:
    """Say once per process that a paragraph was split in pieces (its sentences may differ
    at a cut from what one pass would find)."""
    global _told_cut
    with _lock:
        if _told_cut:
            return
        _told_cut = True
    from perspectrum._progress import say

    say(f"a paragraph of {length:,} characters is longer than the sentence splitter reads at once "
        f"({MAX_SPLIT_CHARS:,}): splitting it, and any other such paragraph, a piece at a time")


@lru_cache(maxsize=16384)
def sentences(text: str) -> tuple[str, ...]:
    """The paragraph's sentences, stripped, empty ones dropped (cached: pools repeat).

    A paragraph over :data:`MAX_SPLIT_CHARS` is split a piece at a time (see there).
    """
    if text in _known:
        return _known[text]
    pieces = _pieces(text)
    if len(pieces) > 1:
        _tell_cut(len(text))
    found: list[str] = []
    for piece in pieces:
        with _lock:  # pysbd keeps per-call state on the segmenter
            found += _segmenter().segment(piece)  # type: ignore[attr-defined]
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
