"""How a pile's documents are named: as the user named them (a file by the path given, a file
in a folder by its path there, a JSONL record by its id), every name unique by a stated rule,
and nothing dropped or merged without a line saying so.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perspectrum.text.reading import Document, Skipped, read_documents


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _jsonl(path: Path, *records: dict) -> Path:
    return _write(path, "".join(json.dumps(r) + "\n" for r in records))


def _named(*paths: str | Path) -> tuple[dict[str, str], list[tuple[str, str]]]:
    items = list(read_documents(paths))
    return ({i.id: i.text for i in items if isinstance(i, Document)},
            [(i.source, i.why) for i in items if isinstance(i, Skipped)])


def test_documents_are_named_as_the_user_named_them(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "pile" / "a.txt", "Zoos protect species.")
    _write(tmp_path / "pile" / "sub" / "deep" / "b.md", "Animals suffer in cages.")
    _jsonl(tmp_path / "pile" / "answers.jsonl", {"id": "r1", "text": "Zoos teach children."},
           {"id": 7, "text": "Zoos breed rare animals."}, {"text": "A record without an id."},
           {"id": " ", "text": "A record with a blank id."}, {"id": "r 2/x", "text": "Ids are kept as written."})
    _write(tmp_path / "notes" / "c.txt", "Cages are small.")
    _jsonl(tmp_path / "survey.jsonl", {"id": "s1", "text": "Zoos are fine."})
    texts, skipped = _named("pile", "notes/c.txt", tmp_path / "survey.jsonl")
    assert skipped == []
    assert list(texts) == ["a.txt", "r1", "7", "3", "4", "r 2/x", "sub/deep/b.md", "notes/c.txt", "s1"]
    assert texts["sub/deep/b.md"] == "Animals suffer in cages." and texts["3"] == "A record without an id."
    # the same pile given by its absolute path, or with a trailing slash: the same names
    assert list(_named(tmp_path / "pile")[0]) == list(_named("pile/")[0]) == list(texts)[:7]


def test_names_taken_already_are_qualified_by_a_stated_rule_and_nothing_is_merged(tmp_path: Path,
                                                                                    monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    for folder in ("one", "two", "three"):
        _jsonl(Path(folder) / "answers.jsonl", {"id": "r1", "text": f"Zoos in {folder} protect species."},
               {"id": "note.txt", "text": f"A record of {folder} named as a file is."})
        _write(Path(folder) / "a.txt", f"Letter from {folder}: zoos matter.")
    _write(Path("note.txt"), "A file named as a record is.")
    texts, skipped = _named("one", "two", "three", "note.txt")
    assert skipped == []
    assert list(texts) == ["a.txt", "r1", "note.txt",  # the first of each name keeps it
                           "two/a.txt", "answers.jsonl:r1", "answers.jsonl:note.txt",  # FOLDER/FILE, FILE:ID
                           "three/a.txt", "three/answers.jsonl:r1", "three/answers.jsonl:note.txt",  # PATH:ID
                           "note.txt (2)"]  # a file given has no other name: a number is added
    assert texts["answers.jsonl:r1"] == "Zoos in two protect species." and len(set(texts.values())) == 10
    assert list(_named("one", "two", "three", "note.txt")[0]) == list(texts)  # the same every time


def test_a_file_given_twice_is_read_once_and_said(tmp_path: Path) -> None:
    pile = tmp_path / "pile"
    _write(pile / "a.txt", "Zoos protect species.")
    _jsonl(pile / "answers.jsonl", {"id": "r1", "text": "Zoos teach children."})
    texts, skipped = _named(pile, pile / "a.txt", pile / "answers.jsonl", pile)
    assert list(texts) == ["a.txt", "r1"]
    twice = [(str(pile / "a.txt"), "given more than once; read once"),
             (str(pile / "answers.jsonl"), "given more than once; read once")]
    assert skipped == twice * 2  # named, then the folder again


def test_the_same_id_twice_in_one_file_is_skipped_with_its_line(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "answers.jsonl", {"id": 1, "text": "Zoos protect species."},
                  {"id": "1", "text": "The same id, as a string."}, {"text": "Line three."},
                  {"id": 3, "text": "An id a line number took."})
    texts, skipped = _named(path)
    assert list(texts) == ["1", "3"]
    assert skipped == [(f"{path}:2", "the id '1' was used before in this file"),
                       (f"{path}:4", "the id '3' was used before in this file")]


@pytest.mark.parametrize(("given", "name"), [(True, "true"), (1.5, "1.5"), ({"n": 1}, '{"n": 1}'), (None, "1"),
                                              ("", "1"), ("é", "é")])
def test_a_record_id_is_named_as_written_in_json(tmp_path: Path, given: object, name: str) -> None:
    texts, _ = _named(_jsonl(tmp_path / "answers.jsonl", {"id": given, "text": "Zoos protect species."}))
    assert list(texts) == [name]
