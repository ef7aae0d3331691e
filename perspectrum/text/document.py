"""Raw text in: a document read and checked, and its sentences with character offsets.

`perspectrum mine` and `perspectrum match` read whatever a user hands them: a web page's
text, an essay, a debate transcript. Both need the same two things first, a text that is
safe to work on (not empty, not binary, not so long that a call runs for minutes) and
its sentences located in it, so what they answer can point back into the original.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from perspectrum.errors import PerspectrumError
from perspectrum.text.sentences import encodable, sentences

#: Longest document accepted, in characters: about 50,000 words, five times a 10,000-word
#: transcript (which `match` answers in under 10 s on 2 cores; time grows with length).
MAX_DOCUMENT_CHARS = 300_000


class DocumentError(PerspectrumError):
    """A document that cannot be read as text: missing, empty, binary or too long."""


def check_document(text: str, limit: int = MAX_DOCUMENT_CHARS, what: str = "document") -> str:
    """``text`` unchanged, or a :class:`DocumentError` saying why it cannot be read
    (``what`` names it in the message).

    Offsets in answers index this exact string, so nothing is stripped or normalised.
    """
    if not isinstance(text, str):
        raise DocumentError(f"a {what} must be text, not {type(text).__name__}")
    if not text.strip():
        raise DocumentError(f"the {what} is empty")
    if len(text) > limit:
        raise DocumentError(f"the {what} is {len(text):,} characters long; the limit is {limit:,}")
    if not encodable(text):
        raise DocumentError(f"the {what} holds a character that is not valid Unicode")
    controls = sum(unicodedata.category(ch) == "Cc" and ch not in "\n\r\t\f\v" for ch in text)
    if controls > max(2, len(text) // 1000):  # a stray form feed is text; many control bytes are not
        raise DocumentError(f"the {what} holds control characters; is it a binary file?")
    if not any(ch.isalpha() for ch in text):
        raise DocumentError(f"the {what} has no words in it")
    return text


def read_document(path: str | Path, limit: int = MAX_DOCUMENT_CHARS, what: str = "document") -> str:
    """The text of the UTF-8 file at ``path`` (a leading byte-order mark dropped), checked
    by :func:`check_document`; every problem is one line naming the file."""
    path = Path(path)
    if not path.is_file():
        raise DocumentError(f"{path}: no such file" if not path.exists() else f"{path}: not a file")
    size = path.stat().st_size
    if size > 4 * limit:  # a UTF-8 character is at most 4 bytes: too long whatever it holds
        raise DocumentError(f"{path}: {size:,} bytes; the limit is {limit:,} characters")
    data = path.read_bytes()
    if b"\x00" in data:
        raise DocumentError(f"{path}: holds NUL bytes; is it a binary file?")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DocumentError(f"{path}: not UTF-8 text (byte {exc.start:,}); is it a binary file?") from None
    try:
        return check_document(text, limit, what)
    except DocumentError as exc:
        raise DocumentError(f"{path}: {exc}") from None


@dataclass(frozen=True)
class Span:
    """A stretch of a document: ``text == document[start:end]``."""

    start: int
    end: int
    text: str


#: A blank line: where one paragraph ends and the next begins.
_BLANK_LINE = re.compile(r"\n[ \t]*\n")


def paragraphs(text: str) -> list[Span]:
    """The document's paragraphs: stretches between blank lines, surrounding space trimmed."""
    bounds = [0, *(i for m in _BLANK_LINE.finditer(text) for i in m.span()), len(text)]
    out = []
    for start, end in zip(bounds[::2], bounds[1::2]):
        block = text[start:end]
        inner = block.strip()
        if inner:
            begin = start + block.index(inner)
            out.append(Span(begin, begin + len(inner), inner))
    return out


def split_sentences(text: str) -> list[Span]:
    """Every sentence of ``text`` with its offsets, paragraph by paragraph, in order.

    Sentences come from :func:`perspectrum.text.sentences.sentences` (pysbd, a piece at a time for
    long paragraphs) and are located in the paragraph from left to right; a sentence the
    splitter changed so it cannot be found (it never does with ``clean=False``) is skipped.
    A paragraph never shares a sentence with the next, as a blank line ends a sentence.
    """
    out = []
    for para in paragraphs(text):
        cursor = 0
        for sentence in sentences(para.text):
            found = para.text.find(sentence, cursor)
            if found < 0:
                continue
            out.append(Span(para.start + found, para.start + found + len(sentence), sentence))
            cursor = found + len(sentence)
    return out
