"""A pile of documents in: files, folders and JSONL read as texts, and what could not be read.

`perspectrum map` reads what analysts have: a folder of op-eds, survey answers exported as
JSONL, consultation responses as PDF. Plain text and Markdown are read as they are; HTML
through BeautifulSoup (scripts, styles and markup dropped, blocks kept as lines); PDF
through pypdf (each page's text, pages as paragraphs). Every text is then checked as
`mine` checks one (:func:`perspectrum.text.document.check_document`), so offsets in an
answer index the text read here.

Text and HTML files are read in the encodings people's files come in (:func:`decode`): UTF-8,
UTF-16 or UTF-32 with a byte-order mark, else Windows-1252 (which reads Latin-1 text too); the
encoding of each document not in UTF-8 is kept (:attr:`Document.encoding`) so the report can
say it. A file of mixed or unknown encoding is skipped rather than read as mojibake.

Reading is bounded whatever the pile holds: at most :data:`MAX_PILE_FILES` files from a
folder (a larger folder is refused whole, in one line), folders linked to are not followed
(so a link loop is one skipped line), nothing but regular files is opened, HTML is walked
without recursion (any depth reads in time linear in its size), and a PDF is read only up to
:data:`MAX_PDF_PAGES` pages, with pypdf's limits on page trees and decompressed streams lowered.

Documents are named as the user named them (:func:`read_documents`): a file given by its path
as given, a file found in a folder given by its path in that folder (``sub/a.txt``, with ``/``
between folders whatever the system), a JSONL record by its own id. A name taken already is
qualified (``answers.jsonl:7``), so no two documents share one and none is merged or dropped.

A file that cannot be read (empty, binary, too long, damaged, an unknown kind) is not an
error for the pile: it is skipped with one line saying why (:class:`Skipped`, which names the
file by its path, ``FOLDER/FILE``, so it can be found), and the caller counts it. Only a pile
with nothing readable at all is an error.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import stat
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from perspectrum.errors import MissingExtra, PerspectrumError, missing_extra
from perspectrum.text.document import MAX_DOCUMENT_CHARS, DocumentError, check_document

#: Suffixes read as plain text, as HTML, as PDF, and as a JSONL of ``{"id", "text"}`` records.
TEXT_SUFFIXES = (".txt", ".text", ".md", ".markdown", ".rst")
HTML_SUFFIXES = (".html", ".htm", ".xhtml")
PDF_SUFFIXES = (".pdf",)
JSONL_SUFFIXES = (".jsonl",)
#: Largest PDF or HTML file opened, in bytes (its text must still be within the document limit).
MAX_FILE_BYTES = 20_000_000
#: Most files read from one folder (a folder holding more is refused whole): mining takes seconds a
#: document, so a pile this large is hours of work; larger piles come as JSONL files.
MAX_PILE_FILES = 10_000
#: Most pages read from one PDF, and most bytes a PDF stream may decompress to.
MAX_PDF_PAGES = 2_000
MAX_PDF_STREAM_BYTES = 20_000_000
#: Most HTML elements read from one page (each costs about a kilobyte parsed; large pages hold tens of thousands).
MAX_HTML_ELEMENTS = 200_000
#: HTML elements whose content is never text a person reads.
_NOT_TEXT = ("script", "style", "noscript", "template", "head", "svg", "nav", "footer")
#: HTML elements that stand as paragraphs of their own.
_BLOCKS = ("p", "div", "li", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "td", "th", "dd", "dt",
           "section", "article", "main", "aside", "header", "figcaption", "title")


@dataclass(frozen=True)
class Document:
    """One readable text: ``id`` (its name, unique in the pile: see :func:`read_documents`)
    and ``text``, which answers' character offsets index."""

    id: str
    text: str
    #: The encoding the file was read in (``"UTF-8"`` for JSONL records and PDF text).
    encoding: str = "UTF-8"


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
    styles and navigation dropped.

    The parsed tree is walked with a stack of its own, never by recursion and never by
    editing the tree (whose insertions cost the size of an element's subtree each), so a
    page nested 100,000 elements deep reads in time linear in its size."""
    try:
        from bs4 import BeautifulSoup
        from bs4.element import NavigableString, Tag
    except ModuleNotFoundError as exc:
        raise missing_extra("reading HTML", "map", exc) from None

    soup = BeautifulSoup(markup, "html.parser")
    wanted = soup.interesting_string_types  # as ``get_text`` reads: text and CDATA, not comments
    if wanted is None:
        wanted = soup.MAIN_CONTENT_STRING_TYPES

    def kept(string: NavigableString) -> bool:
        kind = type(string)
        return kind is wanted if isinstance(wanted, type) else wanted is None or kind in wanted

    pieces: list[str] = []
    stack: list[object] = [*reversed(soup.contents)]
    while stack:
        node = stack.pop()
        if isinstance(node, str) and not isinstance(node, NavigableString):  # a block's end
            pieces.append(node)
        elif isinstance(node, Tag):
            if node.name in _NOT_TEXT:
                continue
            if node.name == "br":
                pieces.append("\n\n")
                continue
            if node.name in _BLOCKS:
                pieces.append("\n\n")
                stack.append("\n\n")
            stack.extend(reversed(node.contents))
        elif isinstance(node, NavigableString) and kept(node):
            pieces.append(str(node))
    blocks = (" ".join(block.split()) for block in "".join(pieces).split("\n\n"))
    return "\n\n".join(block for block in blocks if block)


def _pdf_limits(max_pages: int) -> AbstractContextManager[Any]:
    """pypdf's limits on page trees and decompressed streams lowered to ours, for a ``with``
    (pypdf before 6 has no settable limits, only its own fixed ones: nothing is changed)."""
    try:
        from pypdf import Configuration, apply_configuration
    except ImportError:
        return nullcontext()
    wanted = {"page_tree_maximum_entries": 2 * max_pages + 16, "page_tree_maximum_depth": 64,
              **{f"{kind}_output_length": MAX_PDF_STREAM_BYTES for kind in (
                  "zlib_maximum", "lzw_maximum", "run_length_maximum", "array_based_stream_maximum")},
              "maximum_declared_stream_length": MAX_PDF_STREAM_BYTES}
    return apply_configuration(**{k: v for k, v in wanted.items() if hasattr(Configuration, k)})


def pdf_text(path: Path, limit: int = MAX_DOCUMENT_CHARS, max_pages: int = MAX_PDF_PAGES) -> str:
    """The text of a PDF's pages, one paragraph a page (pypdf's layout-free extraction).

    Bounded whatever the file holds: a PDF of more than ``max_pages`` pages (declared or
    found) is refused, pypdf's limits on page trees and on decompressed streams are lowered
    to match, and reading stops once the text passes ``limit`` characters."""
    try:
        from pypdf import PdfReader
        from pypdf.errors import PyPdfError
    except ModuleNotFoundError as exc:
        raise missing_extra("reading PDF", "map", exc) from None

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # a damaged file is one skipped line, not warnings
    too_many = f"more than {max_pages:,} pages; the limit is {max_pages:,}"
    pages: list[str] = []
    try:
        with _pdf_limits(max_pages):
            reader = PdfReader(str(path))
            if reader.is_encrypted:
                raise DocumentError("an encrypted PDF")
            declared = reader.trailer["/Root"]["/Pages"].get("/Count", 0)
            declared = declared.get_object() if hasattr(declared, "get_object") else declared
            if isinstance(declared, int) and declared > max_pages:
                raise DocumentError(f"{declared:,} pages; the limit is {max_pages:,}")
            if len(reader.pages) > max_pages:
                raise DocumentError(too_many)
            read = 0
            for page in reader.pages:
                pages.append(page.extract_text() or "")
                read += len(pages[-1])
                if read > 2 * limit:  # too long whatever is trimmed below: stop reading
                    break
    except PyPdfError as exc:
        if "limit" in type(exc).__name__.lower() or "maximum" in str(exc).lower():
            raise DocumentError(f"past a limit on what a PDF may hold ({type(exc).__name__})") from None
        raise DocumentError(f"not a readable PDF ({type(exc).__name__})") from None
    except (ValueError, KeyError, TypeError, AttributeError, OSError, RecursionError, MemoryError) as exc:
        raise DocumentError(f"not a readable PDF ({type(exc).__name__})") from None
    return "\n\n".join(" ".join(line.split()) for page in pages for line in page.split("\n\n") if line.strip())


#: Where an HTML element starts.
_START_TAG = re.compile(r"<[A-Za-z]")
#: Encodings a byte-order mark names, longest mark first (UTF-32's starts as UTF-16's does).
_MARKS = ((b"\xff\xfe\x00\x00", "utf-32", "UTF-32"), (b"\x00\x00\xfe\xff", "utf-32", "UTF-32"),
          (b"\xef\xbb\xbf", "utf-8-sig", "UTF-8"), (b"\xff\xfe", "utf-16", "UTF-16"),
          (b"\xfe\xff", "utf-16", "UTF-16"))
#: The encodings text is read in, as :func:`decode` and :attr:`Document.encoding` name them.
ENCODINGS = ("UTF-8", "UTF-16", "UTF-32", "Windows-1252")
#: Most of a Windows-1252 reading's letters that may be accented: past it, the bytes are another
#: encoding's (Cyrillic, Greek, Chinese…) read as accented Latin letters, and the file is skipped.
MAX_ACCENTED_SHARE = 0.4


def decode(data: bytes) -> tuple[str, str]:
    """``data`` as text and the name of its encoding: the one a byte-order mark names
    (UTF-8, UTF-16, UTF-32), else UTF-8, else Windows-1252 (a superset of Latin-1's letters);
    a :class:`DocumentError` for NUL bytes without a mark (binary), for UTF-8 mixed with another
    encoding (as many valid UTF-8 characters as bytes that are not), and for bytes that no
    encoding tried reads as text (Windows-1252 leaves bytes undefined, or reads most letters as
    accented ones: another encoding's)."""
    for mark, codec, name in _MARKS:
        if data.startswith(mark):
            try:
                return data.decode(codec), name
            except UnicodeDecodeError as exc:
                raise DocumentError(f"not {name} text though it starts as {name} does (byte {exc.start:,})") from None
    if b"\x00" in data:
        raise DocumentError("holds NUL bytes; is it a binary file?")
    try:
        return data.decode("utf-8"), "UTF-8"
    except UnicodeDecodeError as exc:
        first_bad = exc.start
    unknown = f"not text in UTF-8, UTF-16 or Windows-1252 (byte {first_bad:,}); is it a binary file?"
    lenient = data.decode("utf-8", errors="replace")
    bad = lenient.count("\ufffd")
    good = sum(ord(ch) > 127 for ch in lenient) - bad
    if good >= bad:
        raise DocumentError(f"mixes UTF-8 with another encoding (byte {first_bad:,}); save it as UTF-8")
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:
        raise DocumentError(unknown) from None
    letters = [ch for ch in text if ch.isalpha()]
    if sum(ord(ch) > 127 for ch in letters) > MAX_ACCENTED_SHARE * len(letters):
        raise DocumentError(unknown)
    return text, "Windows-1252"


def _sized(path: Path) -> None:
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise DocumentError(f"{size:,} bytes; the limit is {MAX_FILE_BYTES:,}")
    if size == 0:
        raise DocumentError("the file is empty")


def _why(exc: OSError) -> str:
    return f"cannot be read ({exc.strerror or type(exc).__name__})"


def read_file(path: Path, limit: int = MAX_DOCUMENT_CHARS) -> Document:
    """One file as a :class:`Document`, or a :class:`DocumentError` naming the file and why."""
    suffix = path.suffix.lower()
    encoding = "UTF-8"
    try:
        if not path.is_file():  # a folder, a pipe, a device: never opened (a pipe would wait forever)
            raise DocumentError("no such file" if not path.exists() else "not a regular file")
        if suffix in HTML_SUFFIXES:
            _sized(path)
            data = path.read_bytes()
            try:
                markup, encoding = decode(data)
            except DocumentError as exc:
                if "NUL" in str(exc):
                    raise
                markup = data.decode("utf-8", errors="replace")  # mixed or unknown: what reads, as before
            if "\x00" in markup:
                raise DocumentError("holds NUL bytes; is it a binary file?")
            elements = len(_START_TAG.findall(markup))
            if elements > MAX_HTML_ELEMENTS:
                raise DocumentError(f"{elements:,} HTML elements; the limit is {MAX_HTML_ELEMENTS:,}")
            text = html_text(markup)
        elif suffix in PDF_SUFFIXES:
            _sized(path)
            text = pdf_text(path, limit)
        elif suffix in TEXT_SUFFIXES:
            size = path.stat().st_size
            if size > 4 * limit:  # 4 bytes a character at most: too long whatever it holds
                raise DocumentError(f"{size:,} bytes; the limit is {limit:,} characters")
            text, encoding = decode(path.read_bytes())
        else:
            raise DocumentError(f"not a kind of file read here ({', '.join(KNOWN)})")
        return Document(str(path), check_document(text, limit), encoding)
    except OSError as exc:
        raise DocumentError(f"{path}: {_why(exc)}") from None
    except (DocumentError, MissingExtra) as exc:
        message = str(exc)
        raise DocumentError(message if message.startswith(f"{path}:") else f"{path}: {message}") from None


#: Every suffix read, for messages.
KNOWN = (*TEXT_SUFFIXES, *HTML_SUFFIXES, *PDF_SUFFIXES, *JSONL_SUFFIXES)


def _lines(handle: Any, cap: int) -> Iterator[str | None]:
    """Each line of ``handle``, or ``None`` for a line longer than ``cap`` characters, which
    is read past a piece at a time and never held whole."""
    while line := handle.readline(cap):
        if len(line) >= cap and not line.endswith("\n"):
            while (rest := handle.readline(cap)) and not rest.endswith("\n"):
                pass
            yield None
        else:
            yield line


def record_id(record: dict[str, Any], line: int) -> str:
    """A JSONL record's id as written: a string as it is, any other JSON value as JSON
    (``7``, ``true``); a record without one (or with ``null`` or a blank string) takes its line number."""
    given = record.get("id")
    if given is None or (isinstance(given, str) and not given.strip()):
        return str(line)
    return given if isinstance(given, str) else json.dumps(given, ensure_ascii=False)


def _records(path: Path, limit: int) -> Iterator[Document | Skipped]:
    """A JSONL file's ``{"id", "text"}`` records as documents, each named by its id
    (:func:`record_id`); a bad line is skipped, and so is a record whose id an earlier record
    of the file has (one longer than a record of ``limit`` characters could be is skipped unread)."""
    seen: set[str] = set()
    cap = 8 * limit + 1024  # a record's text, every character escaped, and its id
    try:
        handle = path.open(encoding="utf-8-sig")
    except OSError as exc:
        yield Skipped(str(path), f"cannot be opened ({exc.strerror or type(exc).__name__})")
        return
    with handle:
        try:
            for n, line in enumerate(_lines(handle, cap), 1):
                where = f"{path}:{n}"
                if line is None:
                    yield Skipped(where, f"a line over {cap:,} characters; the limit is {limit:,} characters a text")
                    continue
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
                    yield Skipped(where, "not a JSON object")
                    continue
                if not isinstance(record, dict) or not isinstance(record.get("text"), str):
                    yield Skipped(where, 'not a {"id", "text"} record')
                    continue
                doc_id = record_id(record, n)
                if doc_id in seen:
                    yield Skipped(where, f"the id {doc_id!r} was used before in this file")
                    continue
                seen.add(doc_id)
                try:
                    yield Document(doc_id, check_document(record["text"], limit))
                except DocumentError as exc:
                    yield Skipped(where, str(exc))
        except UnicodeDecodeError:
            yield Skipped(str(path), "not UTF-8 text; is it a binary file?")


def _link_why(path: Path) -> str | None:
    """Why the symbolic link ``path`` is not read (``None``: it names a regular file)."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symbolic link loop"
        return "a broken symbolic link" if exc.errno == errno.ENOENT else _why(exc)
    if stat.S_ISDIR(mode):
        return "a link to a folder, not followed (name the folder itself to read it)"
    return None if stat.S_ISREG(mode) else "not a regular file"


def _folder(folder: Path, max_files: int) -> Iterator[Path | Skipped]:
    """The files under ``folder`` (sorted, hidden ones left out, folders linked to not
    followed), and a :class:`Skipped` for each thing that is not read; a folder holding more
    than ``max_files`` entries is one :class:`Skipped` and none of its files. Each folder is
    listed once, with a stack (no recursion), and the listing stops at the limit."""
    files: list[Path] = []
    notes: list[Skipped] = []
    stack = [folder]
    seen = 0
    while stack:
        here = stack.pop()
        try:
            with os.scandir(here) as listing:
                entries = []
                for entry in listing:
                    if entry.name.startswith("."):
                        continue
                    seen += 1
                    if seen > max_files:
                        yield Skipped(str(folder), f"holds more than {max_files:,} files and folders; the limit is "
                                                   f"{max_files:,} (split it, or give the texts as JSONL)")
                        return
                    entries.append(entry)
        except OSError as exc:
            notes.append(Skipped(str(here), _why(exc)))
            continue
        for entry in entries:
            path = here / entry.name
            try:
                if entry.is_symlink():
                    why = _link_why(path)
                    if why is None:
                        files.append(path)
                    else:
                        notes.append(Skipped(str(path), why))
                elif entry.is_dir(follow_symlinks=False):
                    stack.append(path)
                elif entry.is_file(follow_symlinks=False):
                    files.append(path)
                else:
                    notes.append(Skipped(str(path), "not a regular file"))
            except OSError as exc:
                notes.append(Skipped(str(path), _why(exc)))
    yield from sorted(files)
    yield from sorted(notes, key=lambda note: note.source)


def _files(paths: Iterable[str | Path], max_files: int = MAX_PILE_FILES) -> Iterator[tuple[Path, str] | Skipped]:
    """The files named, and those under the folders named (:func:`_folder`), each with the
    name its documents take: a file's path as given, a found file's path in its folder (``/``
    between folders)."""
    for given in paths:
        path = Path(given)
        try:
            if path.is_dir():
                for found in _folder(path, max_files):
                    yield found if isinstance(found, Skipped) else (found, found.relative_to(path).as_posix())
            elif path.is_file():
                yield path, str(path)
            elif path.is_symlink():
                yield Skipped(str(path), _link_why(path) or "cannot be read")
            elif path.exists():
                yield Skipped(str(path), "not a regular file")
            else:
                yield Skipped(str(path), "no such file or folder")
        except OSError as exc:  # a folder on the way that may not be looked into
            yield Skipped(str(path), _why(exc))


def _named(document: Document, names: Iterable[str], taken: set[str]) -> Document:
    """``document`` under the first of ``names`` not yet ``taken`` (past them all, the last
    with `` (2)``, `` (3)``… added), which is now taken."""
    tried = list(dict.fromkeys(names))
    name = next((n for n in tried if n not in taken), None)
    if name is None:
        count = 2
        while f"{tried[-1]} ({count})" in taken:
            count += 1
        name = f"{tried[-1]} ({count})"
    taken.add(name)
    return document if name == document.id else replace(document, id=name)


def read_documents(paths: Iterable[str | Path], limit: int = MAX_DOCUMENT_CHARS,
                   max_files: int = MAX_PILE_FILES) -> Iterator[Document | Skipped]:
    """Every document in ``paths`` (files, folders, JSONL files), one at a time, in order,
    with a :class:`Skipped` for each thing that could not be read; at most ``max_files``
    files from a folder. Streams: nothing is held beyond the document being read (and a
    folder's list of names, and the names taken).

    Each document is named as the user named it, and no two alike: a file given, by its path
    as given (``notes/a.txt``); a file found in a folder given, by its path in that folder
    (``sub/a.txt``); a JSONL record, by its id (:func:`record_id`). A document whose name an
    earlier one has is named by the first of these not taken: a record ``FILE:ID`` (its file
    named as a file is), then ``PATH:ID`` (its file's path as given, folder and all); a found
    file ``FOLDER/FILE`` (its path as given); past those, `` (2)``, `` (3)``… is added. A file
    given twice (named, or in a folder named) is read once, and the second time said skipped."""
    taken: set[str] = set()
    read: set[str] = set()
    for item in _files(paths, max_files):
        if isinstance(item, Skipped):
            yield item
            continue
        path, name = item
        where = os.path.abspath(path)
        if where in read:
            yield Skipped(str(path), "given more than once; read once")
            continue
        read.add(where)
        if path.suffix.lower() in JSONL_SUFFIXES:
            for found in _records(path, limit):
                yield found if isinstance(found, Skipped) else _named(
                    found, (found.id, f"{name}:{found.id}", f"{path}:{found.id}"), taken)
        else:
            try:
                yield _named(read_file(path, limit), (name, str(path)), taken)
            except DocumentError as exc:
                yield Skipped(str(path), str(exc).removeprefix(f"{path}: "))


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
