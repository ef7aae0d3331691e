"""One pile, one map: `perspectrum map --json` and `POST /map` (what the map page sends) give
the same answer for the same documents, named alike (a file in the folder given by its name,
as the page names a file picked) and read alike (a Windows-1252 file decoded, and its encoding
named in both answers).

Both go through the real reading, checking and grouping code with the stand-in models of
:mod:`tests.batch.map_fakes`, so a map takes milliseconds and no model is loaded.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import get_args

from fastapi.testclient import TestClient
from typer.testing import CliRunner

import perspectrum.cli.map as cli_map
from perspectrum.cli.app import app as cli
from perspectrum.serve.app import MapOut, ServeSettings, create_app
from perspectrum.serve.schemas import Encoding
from perspectrum.text.reading import ENCODINGS, decode
from tests.batch.map_fakes import FakePipeline, write_pile

CLAIM = "Zoos should exist"


def _pile(folder: Path) -> Path:
    """The stand-in pile, a Markdown note, a Windows-1252 letter and a UTF-16 one."""
    pile = write_pile(folder)
    (pile / "notes.md").write_text("# Notes\n\nZoos protect species through breeding.\n", encoding="utf-8")
    (pile / "latin.txt").write_bytes("Zoo animals suffer, hélas, in small cages.".encode("cp1252"))
    (pile / "windows.txt").write_bytes("Les zoos protègent les espèces; animals suffer.".encode("utf-16"))
    return pile


def _sent(pile: Path) -> list[dict[str, str]]:
    """The documents the page sends for the pile's files picked: each named by its name, its
    bytes read as `perspectrum map` reads them (the page's decoder is checked against
    :func:`decode` in ``tests/serve/test_browser.py``), with the encoding read in."""
    documents = []
    for path in sorted(pile.iterdir()):
        text, encoding = decode(path.read_bytes())
        documents.append({"id": path.name, "text": text, "encoding": encoding})
    return documents


def _post(body: dict) -> tuple[int, dict]:
    with TestClient(create_app(FakePipeline(), ServeSettings()), base_url="http://127.0.0.1:8000") as client:
        for _ in range(1000):  # the stand-in loads at once; wait for the loading thread to say so
            if client.get("/health").status_code == 200:
                break
            time.sleep(0.01)
        answer = client.post("/map", json=body)
    return answer.status_code, answer.json()


def test_the_command_and_post_map_give_the_same_map(tmp_path: Path, monkeypatch) -> None:
    pile = _pile(tmp_path / "pile")
    monkeypatch.setattr(cli_map, "load_pipeline", lambda *a, **k: FakePipeline())
    for min_documents in (2, 1):
        result = CliRunner().invoke(cli, ["map", str(pile), "--claim", CLAIM, "--json",
                                          "--min-documents", str(min_documents)])
        assert result.exit_code == 0, result.output
        command = json.loads(result.stdout)
        status, answer = _post({"claim": CLAIM, "documents": _sent(pile), "min_documents": min_documents})
        assert status == 200, answer
        MapOut.model_validate(answer)
        for key in ("perspectives", "also_mentioned", "documents", "units"):
            assert answer[key] == command[key], key
        assert {**answer, "seconds": 0} == {**command, "seconds": 0}  # claim, settings, skipped, encodings too
        assert answer["encodings"] == {"latin.txt": "Windows-1252", "windows.txt": "UTF-16"}
        quoted = {q["document"] for p in answer["perspectives"] + answer["also_mentioned"] for q in p["quotes"]}
        assert quoted and quoted <= {d["id"] for d in _sent(pile)}
    assert command["perspectives"] and command["also_mentioned"] == []  # min_documents 1: all shared


def test_post_map_names_encodings_only_for_documents_read_from_other_encodings(tmp_path: Path) -> None:
    assert get_args(Encoding) == ENCODINGS  # the encodings a document may say are those map reads
    documents = _sent(write_pile(tmp_path / "pile"))
    pasted = [{"id": "pasted 1", "text": "Zoos protect species."}]  # a pasted text has no encoding
    status, answer = _post({"claim": CLAIM, "documents": documents + pasted})
    assert status == 200 and "encodings" not in answer  # a UTF-8 pile's answer as it always was
    documents[0]["encoding"] = "UTF-32"
    status, answer = _post({"claim": CLAIM, "documents": documents + pasted})
    assert status == 200 and answer["encodings"] == {documents[0]["id"]: "UTF-32"}
    documents[0]["encoding"] = "EBCDIC"
    status, answer = _post({"claim": CLAIM, "documents": documents})
    assert status == 422 and answer["detail"].startswith("documents.0.encoding: Input should be 'UTF-8'")
    assert "\n" not in answer["detail"]
