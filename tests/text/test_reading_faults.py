"""Reading a pile of documents whatever it holds: the encodings people's files come in read
(and said), and every hostile thing (huge, binary, mixed encodings, PDF bombs, HTML nested
100,000 deep, folders of too many files, link loops, unreadable files) skipped or refused in
one line, with bounded work, and counted in the report.
"""

from __future__ import annotations

import json
import os
import zlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from perspectrum.text import reading
from perspectrum.text.document import DocumentError
from perspectrum.text.reading import Document, Skipped, pdf_text, read_documents, read_file
from tests.conftest import pdf_of

LETTER = "Chère Hélène, les zoos protègent les espèces menacées — « c’est vrai », dit-elle. Ça suffit."
LATIN = "Ça m'intéresse: les zoos protègent les espèces; à bientôt, Hélène."


def _read(*paths: Path, **kw) -> tuple[list[Document], list[Skipped]]:
    items = list(read_documents(paths, **kw))
    return [i for i in items if isinstance(i, Document)], [i for i in items if isinstance(i, Skipped)]


def _one_line(skipped: list[Skipped]) -> None:
    for item in skipped:
        assert item.why and "\n" not in item.why and "Traceback" not in item.why, item


def test_utf16_utf32_and_windows_1252_files_are_read_and_their_encoding_kept(tmp_path: Path) -> None:
    files = {"le.txt": LETTER.encode("utf-16"),  # with its byte-order mark, as Windows tools write it
             "be.md": b"\xfe\xff" + LETTER.encode("utf-16-be"),
             "w32.txt": LETTER.encode("utf-32"),
             "cp.txt": LETTER.replace("’", "\u2019").encode("cp1252"),
             "latin.txt": LATIN.encode("latin-1"),
             "page.html": f"<p>{LATIN}</p>".encode("cp1252"),
             "plain.txt": LETTER.encode("utf-8"),
             "bom.txt": b"\xef\xbb\xbf" + LETTER.encode("utf-8")}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    documents, skipped = _read(tmp_path)
    assert skipped == []
    found = {Path(d.id).name: d for d in documents}
    assert {name: d.encoding for name, d in found.items()} == {
        "le.txt": "UTF-16", "be.md": "UTF-16", "w32.txt": "UTF-32", "cp.txt": "Windows-1252",
        "latin.txt": "Windows-1252", "page.html": "Windows-1252", "plain.txt": "UTF-8", "bom.txt": "UTF-8"}
    for name in ("le.txt", "be.md", "w32.txt", "cp.txt", "plain.txt", "bom.txt"):
        assert found[name].text == LETTER, name
    assert found["latin.txt"].text == LATIN and found["page.html"].text == LATIN


def test_binary_mixed_unknown_and_huge_files_are_skipped_in_one_line(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(reading, "MAX_FILE_BYTES", 100)
    (tmp_path / "nul.txt").write_bytes(b"zoos \x00\x01\x02 protect" * 10)
    (tmp_path / "random.txt").write_bytes(bytes(range(256)) * 4)
    (tmp_path / "mixed.txt").write_bytes("Les zoos protègent. ".encode() + "Les zoos protègent.".encode("latin-1"))
    (tmp_path / "unknown.txt").write_bytes(b"Zoos \x81\x8d\x8f\x90\x9d protect animals")
    (tmp_path / "huge.txt").write_bytes(b"zoos protect animals. " * 1000)  # 22,000 bytes; the limit below is 1,000
    (tmp_path / "huge.html").write_bytes(b"<p>zoos</p>" * 10)  # 110 bytes; the limit set above is 100
    (tmp_path / "broken16.txt").write_bytes(b"\xff\xfe" + b"\x00\xd8" * 3)  # a lone surrogate after the mark
    (tmp_path / "russian.txt").write_bytes("Зоопарки защищают редкие виды животных.".encode("cp1251"))
    (tmp_path / "chinese.txt").write_bytes("动物园保护濒危物种，但动物在笼子里受苦。".encode("gbk"))
    documents, skipped = _read(tmp_path, limit=1000)
    why = {Path(s.source).name: s.why for s in skipped}
    assert documents == [] and len(skipped) == 9
    assert "NUL bytes" in why["nul.txt"] and "binary" in why["random.txt"]
    assert "mixes UTF-8 with another encoding" in why["mixed.txt"]
    assert "not text in UTF-8, UTF-16 or Windows-1252" in why["unknown.txt"]
    assert "22,000 bytes; the limit is 1,000 characters" in why["huge.txt"]
    assert "not UTF-16 text" in why["broken16.txt"]
    for other in ("russian.txt", "chinese.txt"):  # never read as accented Latin letters
        assert "not text in UTF-8, UTF-16 or Windows-1252" in why[other], why[other]
    assert why["huge.html"] == "110 bytes; the limit is 100"
    _one_line(skipped)


def test_html_nested_100000_deep_reads_without_recursion() -> None:
    deep = "<div>" * 100_000 + "Zoos protect species." + "</div>" * 100_000
    assert reading.html_text(deep) == "Zoos protect species."
    unclosed = "<p><b>" * 20_000 + "Zoos protect species."
    assert reading.html_text(unclosed) == "Zoos protect species."


def test_html_text_keeps_blocks_drops_scripts_and_reads_as_before() -> None:
    page = ("<html><head><title>T &amp; x</title><style>p{}</style></head><body><nav>Home</nav><p>One <b>two</b> "
            "three.<br>Four</p><!-- comment --><div>A<div>B</div>C</div><ul><li>x<li>y</ul><footer>f</footer>"
            "<table><tr><td>a<td>b</table>tail <i>x</i><script>no</script></body></html>")
    assert reading.html_text(page).split("\n\n") == ["One two three.", "Four", "A", "B", "C", "x", "y", "a", "b",
                                                     "tail x"]


def test_an_html_page_past_the_element_limit_is_refused_before_it_is_parsed(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(reading, "MAX_HTML_ELEMENTS", 1000)
    page = tmp_path / "wide.html"
    page.write_text("<p>zoos</p>" * 1001)

    def never(markup: str) -> str:
        raise AssertionError("parsed")

    monkeypatch.setattr(reading, "html_text", never)
    with pytest.raises(DocumentError, match="1,001 HTML elements; the limit is 1,000"):
        read_file(page)


FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


def _pages(count: int, declared: int | None = None, content: bytes = b"BT /F1 12 Tf 72 720 Td (Zoos) Tj ET",
           flate: bool = False) -> bytes:
    """A PDF of ``count`` pages (objects 4…) declaring ``declared`` of them."""
    stream = zlib.compress(content, 9) if flate else content
    filters = b" /Filter /FlateDecode" if flate else b""
    kids = b" ".join(b"%d 0 R" % (4 + n) for n in range(count))
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, count if declared is None else declared),
               b"<< /Length %d%s >>\nstream\n%s\nendstream" % (len(stream), filters, stream)]
    objects += [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R "
                b"/Resources << /Font << /F1 %d 0 R >> >> >>" % (4 + count)] * count
    return pdf_of([*objects, FONT])


def test_pdf_bombs_are_refused_in_one_line(tmp_path: Path) -> None:
    good = tmp_path / "good.pdf"
    good.write_bytes(_pages(3))
    assert pdf_text(good) == "Zoos\n\nZoos\n\nZoos"
    cases = {
        "declared.pdf": (_pages(1, declared=1_000_000_000), "1,000,000,000 pages; the limit is 2,000"),
        "lying.pdf": (_pages(60, declared=1), "more than 50 pages"),
        "inflating.pdf": (_pages(1, content=b" " * (reading.MAX_PDF_STREAM_BYTES + 1_000_000), flate=True),
                          "past a limit on what a PDF may hold"),
    }
    # a page tree nested 500 deep: each /Pages node the only kid of the one above
    depth = 500
    tree = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    tree += [b"<< /Type /Pages /Kids [%d 0 R] /Count 1 >>" % (3 + n) for n in range(depth)]
    tree += [b"<< /Type /Page /MediaBox [0 0 612 792] >>"]
    cases["deep.pdf"] = (pdf_of(tree), "PDF")
    # an array nested 100,000 deep where the page count should be
    cases["nested.pdf"] = (pdf_of([b"<< /Type /Catalog /Pages 2 0 R >>",
                                 b"<< /Type /Pages /Kids [] /Count " + b"[" * 100_000 + b"]" * 100_000 + b" >>"]),
                           "PDF")
    for name, (data, why) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(DocumentError, match=why.replace("(", r"\(")) as caught:
            pdf_text(path, max_pages=50 if name == "lying.pdf" else reading.MAX_PDF_PAGES)
        assert "\n" not in str(caught.value), name


def test_a_pdf_stops_being_read_once_it_is_too_long(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "long.pdf"
    path.write_bytes(_pages(40))
    read: list[int] = []
    from pypdf import PageObject

    real = PageObject.extract_text

    def counted(self, *args, **kwargs):
        read.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(PageObject, "extract_text", counted)
    assert len(pdf_text(path, limit=10).split("\n\n")) < 40
    assert len(read) < 40  # pages past the limit were never extracted


def test_a_folder_past_the_file_limit_is_refused_whole_without_reading_it(tmp_path: Path, monkeypatch) -> None:
    many = tmp_path / "many"
    many.mkdir()
    for n in range(60):
        (many / f"{n:03}.txt").touch()
    opened: list[str] = []
    real = reading.read_file
    monkeypatch.setattr(reading, "read_file", lambda path, *a: opened.append(str(path)) or real(path, *a))
    documents, skipped = _read(many, max_files=50)
    assert documents == [] and opened == []
    assert [(s.source, s.why.split(";")[0]) for s in skipped] == [(str(many), "holds more than 50 files and folders")]
    documents, skipped = _read(many, max_files=60)  # within the limit: each empty file one line
    assert len(skipped) == 60 and all("empty" in s.why for s in skipped) and len(opened) == 60
    assert reading.MAX_PILE_FILES == 10_000


def test_link_loops_broken_links_and_linked_folders_are_skipped_and_counted(tmp_path: Path) -> None:
    pile = tmp_path / "pile"
    (pile / "sub").mkdir(parents=True)
    (pile / "a.txt").write_text("Zoos protect species.")
    (pile / "loop1.txt").symlink_to(pile / "loop2.txt")
    (pile / "loop2.txt").symlink_to(pile / "loop1.txt")
    (pile / "self.txt").symlink_to(pile / "self.txt")
    (pile / "gone.txt").symlink_to(tmp_path / "nowhere.txt")
    (pile / "sub" / "up").symlink_to(pile)  # followed, this folder would hold itself forever
    (pile / "link.txt").symlink_to(pile / "a.txt")  # a link to a file is read
    os.mkfifo(pile / "pipe.txt")  # never opened: opening a pipe waits for a writer
    documents, skipped = _read(pile)
    assert sorted(Path(d.id).name for d in documents) == ["a.txt", "link.txt"]
    why = {Path(s.source).name: s.why for s in skipped}
    assert why == {"loop1.txt": "a symbolic link loop", "loop2.txt": "a symbolic link loop",
                   "self.txt": "a symbolic link loop", "gone.txt": "a broken symbolic link",
                   "up": "a link to a folder, not followed (name the folder itself to read it)",
                   "pipe.txt": "not a regular file"}
    _, named = _read(pile / "self.txt", pile / "pipe.txt")
    assert [s.why for s in named] == ["a symbolic link loop", "not a regular file"]


def test_unreadable_files_and_folders_are_skipped_in_one_line(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("running as root, which reads whatever chmod says; the next test simulates it")
    pile = tmp_path / "pile"
    (pile / "locked").mkdir(parents=True)
    (pile / "a.txt").write_text("Zoos protect species.")
    (pile / "secret.txt").write_text("Zoos protect species.")
    (pile / "secret.txt").chmod(0)
    (pile / "locked").chmod(0)
    try:
        documents, skipped = _read(pile)
    finally:
        (pile / "locked").chmod(0o755)
    assert [Path(d.id).name for d in documents] == ["a.txt"]
    assert {Path(s.source).name: s.why for s in skipped} == {"secret.txt": "cannot be read (Permission denied)",
                                                              "locked": "cannot be read (Permission denied)"}


def test_permission_denied_is_one_skipped_line(tmp_path: Path, monkeypatch) -> None:
    pile = tmp_path / "pile"
    (pile / "locked").mkdir(parents=True)
    (pile / "a.txt").write_text("Zoos protect species.")
    (pile / "secret.txt").write_text("Zoos protect species.")
    (pile / "data.jsonl").write_text(json.dumps({"id": 1, "text": "Zoos protect species."}) + "\n")
    denied = {str(pile / "secret.txt"), str(pile / "locked"), str(pile / "data.jsonl")}
    real_read, real_scandir, real_open = Path.read_bytes, os.scandir, Path.open

    def read_bytes(self):
        if str(self) in denied:
            raise PermissionError(13, "Permission denied", str(self))
        return real_read(self)

    def scandir(path):
        if str(path) in denied:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    def open_(self, *args, **kwargs):
        if str(self) in denied:
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    real_is_dir = Path.is_dir

    def is_dir(self):  # a file under a folder that may not be looked into, named directly
        if str(self) == str(pile / "hidden" / "x.txt"):
            raise PermissionError(13, "Permission denied", str(self))
        return real_is_dir(self)

    monkeypatch.setattr(Path, "is_dir", is_dir)
    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    monkeypatch.setattr(Path, "open", open_)
    monkeypatch.setattr(reading.os, "scandir", scandir)
    documents, skipped = _read(pile)
    assert [Path(d.id).name for d in documents] == ["a.txt"]
    assert {Path(s.source).name: s.why for s in skipped} == {"secret.txt": "cannot be read (Permission denied)",
                                                              "locked": "cannot be read (Permission denied)",
                                                              "data.jsonl": "cannot be opened (Permission denied)"}
    assert [(s.source, s.why) for s in _read(pile / "hidden" / "x.txt")[1]] == [
        (str(pile / "hidden" / "x.txt"), "cannot be read (Permission denied)")]


def test_the_map_report_says_each_encoding_and_counts_what_was_skipped(tmp_path: Path, monkeypatch) -> None:
    import perspectrum.cli.map as cli_map
    from perspectrum.cli.app import app
    from tests.batch.map_fakes import FakePipeline, write_pile

    pile = write_pile(tmp_path / "pile")
    (pile / "windows.txt").write_bytes("Les zoos protègent les espèces; animals suffer.".encode("utf-16"))
    (pile / "latin.txt").write_bytes("Zoo animals suffer, hélas, in small cages.".encode("latin-1"))
    (pile / "loop.txt").symlink_to(pile / "loop.txt")
    (pile / "bin.txt").write_bytes(bytes(range(256)))
    monkeypatch.setattr(cli_map, "load_pipeline", lambda *a, **k: FakePipeline())
    runner = CliRunner()
    result = runner.invoke(app, ["map", str(pile), "--claim", "Zoos should exist", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["documents"] == 8 and len(out["skipped"]) == 2
    assert out["encodings"] == {"latin.txt": "Windows-1252", "windows.txt": "UTF-16"}  # named in the folder given
    said = [line for line in result.stderr.splitlines() if line.startswith(("read ", "skipped "))]
    assert sorted(said) == sorted(["read latin.txt as Windows-1252", "read windows.txt as UTF-16",
                                   f"skipped {pile / 'loop.txt'}: a symbolic link loop",
                                   f"skipped {pile / 'bin.txt'}: holds NUL bytes; is it a binary file?"]), result.stderr
    table = runner.invoke(app, ["map", str(pile), "--claim", "Zoos should exist"], env={"COLUMNS": "200"})
    assert table.exit_code == 0 and "8 documents read (2 skipped, 2 not in UTF-8)" in table.stdout, table.output
    plain = runner.invoke(app, ["map", str(pile / "doc1.txt"), str(pile / "doc2.txt"), "--claim", "Zoos", "--json"])
    assert plain.exit_code == 0 and "encodings" not in json.loads(plain.stdout)  # a UTF-8 pile's answer as it was


def test_a_jsonl_line_too_long_or_too_deep_is_skipped_without_being_held(tmp_path: Path) -> None:
    path = tmp_path / "answers.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        handle.write(json.dumps({"id": "a", "text": "Zoos protect species."}) + "\n")
        handle.write(json.dumps({"id": "long", "text": "zoos " * 100_000}) + "\n")  # 500,000 characters
        handle.write("[" * 100_000 + "]" * 100_000 + "\n")  # deeper than the JSON parser recurses
        handle.write(json.dumps({"id": "b", "text": "Animals suffer in cages."}) + "\n")
    documents, skipped = _read(path, limit=1000)
    assert [d.id for d in documents] == ["a", "b"]
    assert [(s.source, s.why) for s in skipped] == [
        (f"{path}:2", "a line over 9,024 characters; the limit is 1,000 characters a text"),
        (f"{path}:3", "a line over 9,024 characters; the limit is 1,000 characters a text")]
    deep = tmp_path / "deep.jsonl"
    deep.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    assert [s.why for s in _read(deep)[1]] == ["not a JSON object"]


@pytest.mark.slow
def test_a_folder_of_100000_empty_files_is_one_line(tmp_path: Path, monkeypatch) -> None:
    many = tmp_path / "many"
    many.mkdir()
    for n in range(100_000):
        os.close(os.open(many / f"{n:06}.txt", os.O_CREAT | os.O_WRONLY, 0o644))
    opened: list[str] = []
    real = reading.read_file
    monkeypatch.setattr(reading, "read_file", lambda path, *a: opened.append(str(path)) or real(path, *a))
    documents, skipped = _read(many)
    assert documents == [] and opened == []
    assert [s.source for s in skipped] == [str(many)] and "more than 10,000 files" in skipped[0].why
