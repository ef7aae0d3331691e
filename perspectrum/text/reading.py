"""A pile of documents in: files, folders and JSONL read as texts, and what could not be read.

`perspectrum map` reads what analysts have: a folder of op-eds, survey answers exported as
JSONL, consultation responses as PDF. Plain text and Markdown are read as they are; HTML
through BeautifulSoup (scripts, styles and markup dropped, blocks kept as lines); PDF
through pypdf (each page's text, pages as paragraphs). Every text is then checked as
`mine` checks one (:func:`perspectrum.text.document.check_document`), so offsets in an
answer index the text read here.

A file that cannot be read (empty, binary, too long, damaged, an unknown kind) is not an
error for the pile: it is skipped with one line saying why (:class:`Skipped`), and the
caller counts it. Only a pile with nothing readable at all is an error.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from perspectrum.errors import MissingExtra, PerspectrumError, missing_extra
from perspectrum.text.document import MAX_DOCUMENT_CHARS, DocumentError, check_document, read_document

#: Suffixes read as plain text, as HTML, as PDF, and as a JSONL of ``{"id", "text"}`` records.
TEXT_SUFFIXES = (".txt", ".text", ".md", ".markdown", ".rst")
HTML_SUFFIXES = (".html", ".htm", ".xhtml")
PDF_SUFFIXES = (".pdf",)
JSONL_SUFFIXES = (".jsonl",)
#: Largest PDF or HTML file opened, in bytes (its text must still be within the document limit).
MAX_FILE_BYTES = 20_000_000
#: HTML elements whose content is never text a person reads.
_NOT_TEXT = ("script", "style", "noscript", "template", "head", "svg", "nav", "footer")
#: HTML elements that stand as paragraphs of their own.
_BLOCKS = ("p", "div", "li", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "td", "th", "dd", "dt",
           "section", "article", "main", "aside", "header", "figcaption", "title")


@dataclass(frozen=True)
class Document:
    """One readable text: ``id`` (the file's path as given, or ``FILE:ID`` for a JSONL
    record) and ``text``, which answers' character offsets index."""

    id: str
    text: str


@dataclass(frozen=True)
class Skipped:
    """Something in the pile that was not read, with the one-line reason."""

    source: str
    why: str

    def to_dict(self) -> dict[str, str]:
        return {"source": self.source, "why": self.why}


def html_text(markup: str) -> str:
    """The text a reader sees in an HTML page: each block (paragraph, heading, list item,
    cell…) a paragraph of its own, inline markup joined into its sentence, and scripts,
    styles and navigation dropped."""
    try:
        from bs4 import BeautifulSoup
    except ModuleNotFoundError as exc:
        raise missing_extra("reading HTML", "map", exc) from None

    soup = BeautifulSoup(markup, "html.parser")
    for element in soup(list(_NOT_TEXT)):
        element.decompose()
    for element in soup.find_all(_BLOCKS):
        element.insert_before("\n\n")
        element.insert_after("\n\n")
    for element in soup.find_all("br"):
        element.replace_with("\n\n")
    blocks = (" ".join(block.split()) for block in soup.get_text().split("\n\n"))
    return "\n\n".join(block for block in blocks if block)


def pdf_text(path: Path) -> str:
    """The text of a PDF's pages, one paragraph a page (pypdf's layout-free extraction)."""
    try:
        from pypdf import PdfReader
        from pypdf.errors import PyPdfError
    except ModuleNotFoundError as exc:
        raise missing_extra("reading PDF", "map", exc) from None

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # a damaged file is one skipped line, not warnings
    try:
        reader = PdfReader(str(path))
        if reader.is_encrypted:
            raise DocumentError("an encrypted PDF")
        pages = [page.extract_text() or "" for page in reader.pages]
    except (PyPdfError, ValueError, KeyError, TypeError, OSError) as exc:
        raise DocumentError(f"not a readable PDF ({type(exc).__name__})") from None
    return "\n\n".join(" ".join(line.split()) for page in pages for line in page.split("\n\n") if line.strip())


def _sized(path: Path) -> None:
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise DocumentError(f"{size:,} bytes; the limit is {MAX_FILE_BYTES:,}")
    if size == 0:
        raise DocumentError("the file is empty")


def read_file(path: Path, limit: int = MAX_DOCUMENT_CHARS) -> Document:
    """One file as a :class:`Document`, or a :class:`DocumentError` naming the file and why."""
    suffix = path.suffix.lower()
    try:
        if suffix in HTML_SUFFIXES:
            _sized(path)
            markup = path.read_bytes().decode("utf-8-sig", errors="replace")
            if "\x00" in markup:
                raise DocumentError("holds NUL bytes; is it a binary file?")
            text = html_text(markup)
        elif suffix in PDF_SUFFIXES:
            _sized(path)
            text = pdf_text(path)
        elif suffix in TEXT_SUFFIXES:
            return Document(str(path), read_document(path, limit))
        else:
            raise DocumentError(f"not a kind of file read here ({', '.join(KNOWN)})")
        return Document(str(path), check_document(text, limit))
    except (DocumentError, MissingExtra) as exc:
        message = str(exc)
        raise DocumentError(message if message.startswith(f"{path}:") else f"{path}: {message}") from None


#: Every suffix read, for messages.
KNOWN = (*TEXT_SUFFIXES, *HTML_SUFFIXES, *PDF_SUFFIXES, *JSONL_SUFFIXES)


def _records(path: Path, limit: int) -> Iterator[Document | Skipped]:
    """A JSONL file's ``{"id", "text"}`` records as documents; a bad line is skipped."""
    seen: set[str] = set()
    try:
        handle = path.open(encoding="utf-8-sig")
    except OSError as exc:
        yield Skipped(str(path), f"cannot be opened ({exc.strerror or type(exc).__name__})")
        return
    with handle:
        try:
            for n, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                where = f"{path}:{n}"
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    yield Skipped(where, "not a JSON object")
                    continue
                if not isinstance(record, dict) or not isinstance(record.get("text"), str):
                    yield Skipped(where, 'not a {"id", "text"} record')
                    continue
                doc_id = f"{path}:{record['id'] if 'id' in record else n}"
                if doc_id in seen:
                    yield Skipped(where, f"the id {record.get('id')!r} was used before in this file")
                    continue
                seen.add(doc_id)
                try:
                    yield Document(doc_id, check_document(record["text"], limit))
                except DocumentError as exc:
                    yield Skipped(where, str(exc))
        except UnicodeDecodeError:
            yield Skipped(str(path), "not UTF-8 text; is it a binary file?")


def _files(paths: Iterable[str | Path]) -> Iterator[Path | Skipped]:
    """The files named, and those under the folders named (sorted, hidden ones left out)."""
    for given in paths:
        path = Path(given)
        if path.is_dir():
            for found in sorted(p for p in path.rglob("*") if p.is_file()):
                if not any(part.startswith(".") for part in found.relative_to(path).parts):
                    yield found
        elif path.is_file():
            yield path
        else:
            yield Skipped(str(path), "no such file or folder")


def read_documents(paths: Iterable[str | Path], limit: int = MAX_DOCUMENT_CHARS) -> Iterator[Document | Skipped]:
    """Every document in ``paths`` (files, folders, JSONL files), one at a time, in order,
    with a :class:`Skipped` for each thing that could not be read. Streams: nothing is
    held beyond the document being read."""
    for item in _files(paths):
        if isinstance(item, Skipped):
            yield item
        elif item.suffix.lower() in JSONL_SUFFIXES:
            yield from _records(item, limit)
        else:
            try:
                yield read_file(item, limit)
            except DocumentError as exc:
                yield Skipped(str(item), str(exc).removeprefix(f"{item}: "))


def readable(items: Iterable[Document | Skipped]) -> tuple[list[Document], list[Skipped]]:
    """The documents and the skipped of :func:`read_documents`, apart; a one-line error when
    there is no document at all."""
    documents: list[Document] = []
    skipped: list[Skipped] = []
    for item in items:
        (documents if isinstance(item, Document) else skipped).append(item)
    if not documents:
        why = f" ({len(skipped)} skipped: {skipped[0].source}: {skipped[0].why})" if skipped else ""
        raise PerspectrumError(f"nothing readable to map{why}")
    return documents, skipped
