"""`perspectrum pool add|remove`: an own pool file changed and every index of it brought
along without a full rebuild (the Lucene and embedded engines here; Milvus in
tests/index/test_backends.py's update test), crash-safe, with one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perspectrum.data import Pool
from perspectrum.index.store import IndexStore
from perspectrum.pipeline.pipeline import own_store

from tests.conftest import EVIDENCE, PERSPECTIVES
from tests.cli.test_cli import invoke
from tests.test_reliability import python


pytestmark = pytest.mark.jvm  # see scripts/test.sh


def write_pool(path: Path, rows: dict) -> Path:
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in rows.items()))
    return path


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    perspectives = write_pool(tmp_path / "p.jsonl", dict(list(PERSPECTIVES.items())[:12]))
    evidence = write_pool(tmp_path / "e.jsonl", {f"e{i}": t for i, t in list(EVIDENCE.items())[:6]})
    return perspectives, evidence


def store_of(files: tuple[Path, Path], root: Path, backend: str = "embedded",
             encoder=None) -> tuple[IndexStore, Pool]:
    pools = [Pool.from_jsonl(f, name) for f, name in zip(files, ("perspectives", "evidence"))]
    return own_store(IndexStore(root, backend=backend, encoder=encoder), *pools, files), pools[0]


def runs(index, queries=("nuclear waste", "zoos breed animals", "private cars")) -> list:
    return [[(h.doc_id, round(h.score, 4)) for h in run] for run in index.batch_search(list(queries), 4)]


def test_add_then_remove_updates_each_index_to_what_a_fresh_build_gives(tmp_path: Path, files, encoder) -> None:
    index_dir = tmp_path / "idx"
    for backend in ("embedded", "lucene"):
        store, pool = store_of(files, index_dir, backend, encoder)
        for kind in ("bm25",) if backend == "lucene" else ("bm25", "dense"):
            store.build(pool, kind)
    extra = write_pool(tmp_path / "new.jsonl", {40: "Nuclear plants could replace coal quickly", 41: "Zoos are prisons"})
    result = invoke("pool", "add", str(files[0]), "--from", str(extra), "--index-dir", str(index_dir), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["added"] == 2
    assert sorted((c["engine"], c["how"]) for c in report["indexes"]) == \
        [("bm25s", "re-indexed"), ("faiss", "updated"), ("lucene", "updated")]
    assert [json.loads(line)["id"] for line in files[0].read_text().splitlines()][-3:] == [12, 40, 41]
    result = invoke("pool", "remove", str(files[0]), "--ids", "3,40", "--index-dir", str(index_dir), "--json")
    assert result.exit_code == 0 and json.loads(result.output)["removed"] == 2, result.output
    for backend in ("embedded", "lucene"):
        store, pool = store_of(files, index_dir, backend, encoder)
        assert 3 not in pool.ids and 41 in pool.ids
        for kind in ("bm25",) if backend == "lucene" else ("bm25", "dense"):
            assert store.check(pool, kind) is None, (backend, kind)
            fresh = IndexStore(tmp_path / f"fresh-{backend}", backend=backend, encoder=encoder).build(pool, kind)[0]
            assert runs(store.open(pool, kind, build_missing=False)) == runs(fresh), (backend, kind)


def test_an_evidence_file_brings_its_sentences_along(tmp_path: Path, files) -> None:
    index_dir = tmp_path / "idx"
    store, _ = store_of(files, index_dir)
    evidence = Pool.from_jsonl(files[1], "evidence")
    store.build(store.sentences(evidence), "bm25")
    extra = write_pool(tmp_path / "new.jsonl", {"e9": "Wind turbines kill birds. Some call them ugly."})
    assert invoke("pool", "add", str(files[1]), "--from", str(extra), "--index-dir", str(index_dir)).exit_code == 0
    sentences = store.sentences(Pool.from_jsonl(files[1], "evidence"))
    assert store.check(sentences, "bm25") is None
    assert store.open(sentences, "bm25").search("birds turbines", 1)[0].doc_id == "e9:0"


KILL = """
import os, sys
from pathlib import Path
from perspectrum import _io
from perspectrum.index import pools
_io.fault_hook = lambda name: os._exit(9) if name == "written" else None
pools.remove(Path(sys.argv[1]), ["1", "2"], Path(sys.argv[2]))
"""


def test_a_crash_in_the_middle_leaves_the_old_file_and_index_readable(tmp_path: Path, files) -> None:
    index_dir = tmp_path / "idx"
    store, pool = store_of(files, index_dir, "lucene")
    before = runs(store.build(pool, "bm25")[0])
    text = files[0].read_text()
    run = python(KILL, str(files[0]), str(index_dir))
    assert run.returncode == 9, run.stderr
    assert files[0].read_text() == text  # the file is rewritten last
    assert store.check(pool, "bm25") is None and runs(store.open(pool, "bm25", build_missing=False)) == before
    assert invoke("pool", "remove", str(files[0]), "--ids", "1,2", "--index-dir", str(index_dir)).exit_code == 0
    store, pool = store_of(files, index_dir, "lucene")
    assert store.check(pool, "bm25") is None and 1 not in pool.ids


@pytest.mark.parametrize("args, message", [
    (["--ids", "77"], "has no record with id '77'"),
    ([], "name the ids to remove"),
    (["--ids", ",".join(str(i) for i in range(1, 13))], "would leave"),
])
def test_remove_refuses_bad_ids_in_one_line(tmp_path: Path, files, args, message) -> None:
    text = files[0].read_text()
    result = invoke("pool", "remove", str(files[0]), *args, "--index-dir", str(tmp_path / "idx"))
    assert result.exit_code != 0 and message in result.output and len(result.output.strip().splitlines()) == 1
    assert files[0].read_text() == text


def test_add_refuses_an_id_already_there(tmp_path: Path, files) -> None:
    extra = write_pool(tmp_path / "new.jsonl", {5: "a second record with id 5"})
    result = invoke("pool", "add", str(files[0]), "--from", str(extra), "--index-dir", str(tmp_path / "idx"))
    assert result.exit_code == 1 and "id 5 is already in" in result.output
    missing = invoke("pool", "add", str(files[0]), "--from", str(tmp_path / "none.jsonl"))
    assert missing.exit_code == 1 and "no such pool file" in missing.output


# --------------------------------------------------------------------------- two writers at once
ADDER = """
import sys, time
from pathlib import Path
from perspectrum import _io
from perspectrum.cli.app import app

hold, go = sys.argv[1], sys.argv[2]


def pause(step: str) -> None:  # hold the first index swap until the test says go
    if step == "written" and hold:
        Path(hold).touch()
        deadline = time.monotonic() + 60
        while not Path(go).exists() and time.monotonic() < deadline:
            time.sleep(0.05)


_io.fault_hook = pause
_io.LOCK_NOTICE_SECONDS = 0.1
app(sys.argv[3:], prog_name="perspectrum")
"""


def _wait_for(check, what: str, process, timeout: float = 90) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not check():
        assert process.poll() is None, f"{what}: the process ended first"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.mark.parametrize("second_id", [41, 40])
def test_two_adds_at_once_keep_both_records_or_refuse_the_same_id(tmp_path: Path, files, second_id) -> None:
    """The second writer waits for the first (saying so), then reads the file it wrote:
    both records end up in the file and the index, or the second refuses a taken id."""
    import subprocess
    import sys

    from tests.test_reliability import ROOT

    index_dir = tmp_path / "idx"
    store, pool = store_of(files, index_dir)
    store.build(pool, "bm25")
    first = write_pool(tmp_path / "a.jsonl", {40: "Nuclear plants could replace coal quickly"})
    second = write_pool(tmp_path / "b.jsonl", {second_id: "Zoos are prisons for animals"})
    held, go, waits = tmp_path / "held", tmp_path / "go", tmp_path / "b.err"

    def adder(hold: str, extra: Path, **kwargs) -> subprocess.Popen:
        args = ["pool", "add", str(files[0]), "--from", str(extra), "--index-dir", str(index_dir)]
        return subprocess.Popen([sys.executable, "-c", ADDER, hold, str(go), *args], cwd=ROOT, text=True, **kwargs)

    a = adder(str(held), first, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_for(held.exists, "the first writer's index swap", a)
        with waits.open("w") as err:
            b = adder("", second, stdout=subprocess.PIPE, stderr=err)
        try:
            _wait_for(lambda: "waiting for another process" in waits.read_text(), "the second writer to wait", b)
        finally:
            go.touch()
            b_out = b.communicate(timeout=120)[0]
    finally:
        go.touch()
        a_out, a_err = a.communicate(timeout=120)
    b_err = waits.read_text()
    assert a.returncode == 0, a_err
    rows = [json.loads(line) for line in files[0].read_text().splitlines()]
    if second_id == 41:
        assert b.returncode == 0 and "added 1 record(s)" in b_out, b_err
        assert [(r["id"], r["text"][:4]) for r in rows[-2:]] == [(40, "Nucl"), (41, "Zoos")]
    else:
        errors = [line for line in b_err.splitlines() if line.strip() and "waiting for another" not in line]
        assert b.returncode == 1 and errors == [f"error: {second}: id 40 is already in {files[0]} (1 such id(s)); "
                                                "remove the old record first to replace it"], b_err
        assert [(r["id"], r["text"][:4]) for r in rows[-1:]] == [(40, "Nucl")] and len(rows) == 13
    store, pool = store_of(files, index_dir)
    assert store.check(pool, "bm25") is None
    assert f"waiting for another process writing {files[0].resolve()}" in b_err, b_err


# --------------------------------------------------------------------------- line separators
#: Characters Python's str.splitlines() breaks a line at besides "\n" (JSON Lines breaks only at "\n").
SEPARATORS = ["\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


def test_texts_holding_line_separators_round_trip_through_add_and_remove(tmp_path: Path, files) -> None:
    index_dir = tmp_path / "idx"
    store, pool = store_of(files, index_dir)
    store.build(pool, "bm25")
    texts = {f"s{n}": f"zoo{ch}line {n}" for n, ch in enumerate(SEPARATORS)}
    odd = tmp_path / "odd.jsonl"
    odd.write_text("".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in texts.items()),
                   encoding="utf-8")
    for args in (["add", str(files[0]), "--from", str(odd)],
                 ["add", str(files[0]), "--from", str(write_pool(tmp_path / "more.jsonl", {"x": "one more"}))],
                 ["remove", str(files[0]), "--ids", "x,1"]):
        result = invoke("pool", *args, "--index-dir", str(index_dir))
        assert result.exit_code == 0, result.output
    raw = files[0].read_bytes()
    assert not any(ch.encode() in raw for ch in SEPARATORS)  # written escaped: one record, one line
    pool = Pool.from_jsonl(files[0], "perspectives")
    assert dict(zip(pool.ids, pool.texts)) == {**{str(i): t for i, t in list(PERSPECTIVES.items())[1:12]}, **texts}
    store, pool = store_of(files, index_dir)
    assert store.check(pool, "bm25") is None


def test_a_pool_file_with_raw_unicode_line_separators_in_its_strings_reads_and_changes(tmp_path: Path) -> None:
    pool_file = tmp_path / "p.jsonl"
    pool_file.write_text('{"id": 1, "text": "one\u2028two\u2029three\x85four"}\n{"id": 2, "text": "second"}\r\n'
                         '{"id": 3, "text": "third"}\n', encoding="utf-8")
    pool = Pool.from_jsonl(pool_file, "perspectives")
    assert pool.ids == (1, 2, 3) and pool.texts[0] == "one\u2028two\u2029three\x85four"
    result = invoke("pool", "remove", str(pool_file), "--ids", "3", "--index-dir", str(tmp_path / "idx"))
    assert result.exit_code == 0, result.output
    pool = Pool.from_jsonl(pool_file, "perspectives")
    assert pool.ids == (1, 2) and pool.texts == ("one\u2028two\u2029three\x85four", "second")
