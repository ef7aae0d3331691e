"""discover-batch: the claims file and its errors, resuming after a crash, and both engines
answering exactly what ``discover_many`` answers.

One module-scoped pipeline over the ten-claim fixture (indexes built and the shipped models
unpacked once) gives the reference answers; the ray tests share one local Ray cluster,
started once and shut down at the end.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from perspectrum import IndexStore, Pipeline, Pool, load_dataset
from perspectrum.batch.discover_run import STEPS, BatchClaim, discover_batch, read_claims, read_results
from perspectrum.cli.app import app
from perspectrum.errors import PerspectrumError
from perspectrum.pipeline.pipeline import STAGE_NAMES
from tests.conftest import CLAIMS, prepared, write_dataset

runner = CliRunner()
TEXTS = {cid: text for cid, (text, _, _) in CLAIMS.items()}


def _jsonl(path: Path, rows: list[Any]) -> Path:
    """Rows as JSON lines; a string row is written as the line itself."""
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def _untimed(result: dict[str, Any]) -> dict[str, Any]:
    """A result without its timings (seconds of whichever batch the claim shared)."""
    return {k: v for k, v in result.items() if k != "timings"}


def _results(path: Path) -> dict[Any, dict[str, Any]]:
    """The results file by id, timings left out; exactly one line per id, each complete."""
    raw = path.read_bytes()
    assert raw.endswith(b"\n")
    rows = [json.loads(line) for line in raw.decode("utf-8").split("\n")[:-1]]
    by_id = {row["id"]: row for row in rows}
    assert len(by_id) == len(rows), "one line per claim"
    for row in rows:
        assert set(row) == {"id", "claim", "result"} and row["claim"] == TEXTS[row["id"]]
    return {cid: _untimed(row["result"]) for cid, row in by_id.items()}


def _reference(pipe: Pipeline, **options: Any) -> dict[int, dict[str, Any]]:
    """``discover_many``'s answers as ``discover --json`` prints them, timings left out."""
    found = pipe.discover_many(list(TEXTS.values()), batch_size=4, **options)
    return {cid: _untimed(json.loads(d.to_json())) for cid, d in zip(TEXTS, found)}


@pytest.fixture(scope="module")
def built(tmp_path_factory, shipped_set) -> Iterator[SimpleNamespace]:
    """The fixture's folders, a pipeline factory, its pipeline, the claims file and the reference.

    torch runs on one thread here, as in the ray engine's actors: on two cores shared with
    other jobs, two threads that spin-wait for each other made fitting a model 30 times
    slower (3 s against 100 s).
    """
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("batch")
    data = prepared(root)[0]
    factory = functools.partial(Pipeline.load, data, root / "indexes", root / "models", verify=False)
    pipe = factory()
    claims = _jsonl(root / "claims.jsonl", [{"id": cid, "claim": text} for cid, text in TEXTS.items()])
    folders = ["--data-dir", str(data), "--index-dir", str(root / "indexes"), "--models-dir", str(root / "models"),
               "--no-verify"]
    yield SimpleNamespace(factory=factory, pipe=pipe, claims=claims, folders=folders, reference=_reference(pipe))
    torch.set_num_threads(threads)


def test_steps_hold_every_stage_once_in_running_order() -> None:
    assert tuple(name for names in STEPS.values() for name in names) == STAGE_NAMES


def test_claims_file_ids_default_to_line_numbers(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "claims.jsonl", [{"claim": "Zoos should be banned"}, "",
                                              {"claim": "Tea is good", "id": "tea", "topic": "ignored"},
                                              {"claim": "Homework should be abolished", "id": 7}])
    assert read_claims(path) == [BatchClaim(1, "Zoos should be banned"), BatchClaim("tea", "Tea is good"),
                                 BatchClaim(7, "Homework should be abolished")]


@pytest.mark.parametrize("rows, message", [
    (None, "no such claims file"),
    ([], "holds no claims"),
    (["", "  "], "holds no claims"),
    ([{"claim": "Zoos should be banned"}, "{not json"], "line 2: not valid JSON"),
    ([{"claim": "Zoos should be banned"}, {"text": "Tea is good"}], 'line 2: expected an object with "claim"'),
    ([["Zoos should be banned"]], 'line 1: expected an object with "claim"'),
    ([{"claim": "Zoos should be banned", "id": 3}, {"claim": "Tea is good", "id": 3}],
     r"line 2: duplicate id 3 \(first on line 1\)"),
    ([{"claim": "Zoos should be banned"}, {"claim": "Tea is good", "id": 1}], "line 2: duplicate id 1"),
    ([{"claim": "   "}], "line 1: .*empty"),
    ([{"claim": 42}], "line 1: a claim must be text"),
    ([{"claim": "Tea is good", "id": [1]}], "line 1: id must be a non-empty string or an integer"),
    ([{"claim": "Tea is good", "id": True}], "line 1: id must be"),
])
def test_cli_bad_claims_files_are_one_line_errors(tmp_path: Path, rows, message) -> None:
    claims = tmp_path / "claims.jsonl"
    if rows is not None:
        _jsonl(claims, rows)
    out = tmp_path / "out" / "results.jsonl"
    result = runner.invoke(app, ["discover-batch", str(claims), "--out", str(out),
                                 "--data-dir", str(tmp_path / "no-data")])  # never read: the claims fail first
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert re.search(message, lines[0]), lines[0]
    assert not out.exists()


def test_a_claims_line_that_is_not_json_says_where_and_why_in_full(tmp_path: Path) -> None:
    claims = _jsonl(tmp_path / "claims.jsonl", [{"claim": "Zoos should be banned"}, "",
                                                '{"claim": "Zoos\tare prisons"}'])  # a raw tab in a string
    result = runner.invoke(app, ["discover-batch", str(claims), "--out", str(tmp_path / "results.jsonl"),
                                 "--data-dir", str(tmp_path / "no-data")])
    assert result.exit_code == 1
    assert result.stderr.strip() == f"error: {claims}, line 3: not valid JSON: Invalid control character at column 16"


@pytest.mark.parametrize("args, message", [
    (["--workers", "2"], "--workers and --address are for --engine ray"),
    (["--address", "auto"], "--workers and --address are for --engine ray"),
])
def test_cli_ray_options_without_ray_are_refused(tmp_path: Path, args, message) -> None:
    claims = _jsonl(tmp_path / "claims.jsonl", [{"claim": "Zoos should be banned"}])
    result = runner.invoke(app, ["discover-batch", str(claims), "--out", str(tmp_path / "r.jsonl"), *args])
    assert result.exit_code == 1 and result.stderr.strip() == f"error: {message}"


def test_results_of_something_else_are_not_appended_to(tmp_path: Path) -> None:
    claims = [BatchClaim(1, "Zoos should be banned"), BatchClaim(2, "Tea is good")]
    line = {"id": 1, "claim": "Zoos should be banned", "result": {}}
    for rows, message in (([{"hits": []}], "line 1 is not a discover-batch result"),
                          (["not json"], "line 1 is not a discover-batch result"),
                          ([line, {**line, "id": 9}], "line 2: id 9 is not among the claims"),
                          ([{**line, "claim": "Zoos should be allowed"}], "line 1: id 1 was another claim"),
                          ([line, line], "line 2: id 1 is also on line 1")):
        out = _jsonl(tmp_path / "results.jsonl", rows)
        before = out.read_bytes()
        with pytest.raises(PerspectrumError, match=message):
            read_results(out, claims)
        assert out.read_bytes() == before


def test_a_torn_last_line_is_cut_off(tmp_path: Path, capsys) -> None:
    claims = [BatchClaim(1, "Zoos should be banned"), BatchClaim(2, "Tea is good")]
    whole = json.dumps({"id": 1, "claim": "Zoos should be banned", "result": {}}) + "\n"
    out = tmp_path / "results.jsonl"
    out.write_text(whole + '{"id": 2, "claim": "Tea is go', encoding="utf-8")
    assert read_results(out, claims) == {1}
    assert out.read_text(encoding="utf-8") == whole
    assert "partial last line" in capsys.readouterr().err
    assert read_results(tmp_path / "none.jsonl", claims) == set()


def test_a_second_writer_is_refused(tmp_path: Path) -> None:
    from filelock import FileLock

    claims = _jsonl(tmp_path / "claims.jsonl", [{"claim": "Zoos should be banned"}])
    out = tmp_path / "results.jsonl"
    with FileLock(tmp_path / ".results.jsonl.lock"):
        result = runner.invoke(app, ["discover-batch", str(claims), "--out", str(out)])
    assert result.exit_code == 1 and "another run is writing" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_the_python_entry_point_checks_its_arguments(tmp_path: Path) -> None:
    # a pipeline loads nothing until asked, and every check here comes first
    dataset = load_dataset(write_dataset(tmp_path / "data"), verify=False)
    pipe = Pipeline(Pool.from_dataset(dataset, "perspectives"), Pool.from_dataset(dataset, "evidence"),
                    IndexStore(tmp_path / "idx"), tmp_path / "models")
    claims = _jsonl(tmp_path / "claims.jsonl", [{"claim": "Zoos should be banned"}])
    out = tmp_path / "results.jsonl"
    with pytest.raises(PerspectrumError, match="unknown engine"):
        discover_batch(pipe, claims, out, engine="spark")
    with pytest.raises(PerspectrumError, match="the local engine runs in this process"):
        discover_batch(pipe, claims, out, workers=2)
    with pytest.raises(PerspectrumError, match="not a Pipeline"):
        discover_batch(pipe, claims, out, engine="ray")
    with pytest.raises(PerspectrumError, match="batch_size must be a whole number"):
        discover_batch(pipe, claims, out, batch_size=0)
    with pytest.raises(PerspectrumError, match="claim 'b': .*empty"):
        discover_batch(pipe, {"a": "Zoos should be banned", "b": ""}, out)
    with pytest.raises(PerspectrumError, match="a claims file or a mapping"):
        discover_batch(pipe, ["Zoos should be banned"], out)
    assert not out.exists() and not (tmp_path / "idx").exists()


@pytest.mark.slow
def test_local_engine_writes_what_discover_many_answers(built, tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    summary = discover_batch(built.pipe, built.claims, out, batch_size=3)
    assert _results(out) == built.reference
    assert (summary.claims, summary.done, summary.skipped, summary.engine) == (10, 10, 0, "local")
    assert summary.seconds > 0 and summary.claims_per_second == pytest.approx(10 / summary.seconds)
    again = discover_batch(built.pipe, {cid: TEXTS[cid] for cid in TEXTS}, out)  # nothing left to do
    assert (again.done, again.skipped, again.claims_per_second) == (0, 10, 0.0)
    assert _results(out) == built.reference


class Crash(Exception):
    """Stands in for the process dying mid-run."""


@pytest.mark.slow
def test_a_crashed_run_resumes_with_one_line_per_claim(built, tmp_path: Path, monkeypatch) -> None:
    pipe, out = built.pipe, tmp_path / "results.jsonl"
    real = pipe.discover_many
    asked: list[str] = []

    def crash_on_second_batch(claims: list[str], **options: Any) -> Any:
        if asked:
            raise Crash
        asked.extend(claims)
        return real(claims, **options)

    monkeypatch.setattr(pipe, "discover_many", crash_on_second_batch)
    with pytest.raises(Crash):
        discover_batch(pipe, built.claims, out, batch_size=4)
    assert len(out.read_text(encoding="utf-8").splitlines()) == 4  # the first batch's lines, each whole
    written = out.read_bytes()
    # a crash in the middle of writing the next line leaves part of it, without its newline
    fifth = json.dumps({"id": 5, "claim": TEXTS[5], "result": built.reference[5]})
    out.write_bytes(written + fifth[:len(fifth) // 2].encode())

    asked.clear()
    monkeypatch.setattr(pipe, "discover_many", lambda claims, **options: asked.extend(claims) or real(claims,
                                                                                                      **options))
    summary = discover_batch(pipe, built.claims, out, batch_size=4)
    assert (summary.done, summary.skipped) == (6, 4)
    assert sorted(asked) == sorted(TEXTS[cid] for cid in list(TEXTS)[4:]), "already-written claims are not redone"
    assert out.read_bytes().startswith(written)
    assert _results(out) == built.reference


@pytest.mark.slow
def test_cli_writes_results_and_a_json_summary_then_resumes(built, tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    args = ["discover-batch", str(built.claims), "--out", str(out), "--batch-size", "5", "--json", *built.folders]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    summary = json.loads(first.stdout)
    assert {k: summary[k] for k in ("claims", "done", "skipped", "engine", "workers", "batch_size")} == {
        "claims": 10, "done": 10, "skipped": 0, "engine": "local", "workers": 1, "batch_size": 5}
    assert summary["claims_per_second"] > 0 and summary["out"] == str(out)
    assert _results(out) == built.reference
    again = runner.invoke(app, args[:-len(built.folders) - 1])  # no data needed: nothing is left to do
    assert again.exit_code == 0, again.output
    assert "0 claims discovered, 10 already in" in again.stdout


# ----------------------------------------------------------------------------- ray
@pytest.fixture(scope="module")
def ray_cluster():
    """A cluster of this machine with one logical CPU per step's actor (the cores are shared)."""
    ray = pytest.importorskip("ray")
    previous = os.environ.get("RAY_USAGE_STATS_ENABLED")
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray.init(address="local", num_cpus=len(STEPS), include_dashboard=False, logging_level="warning")
    yield ray
    ray.shutdown()
    if previous is None:
        os.environ.pop("RAY_USAGE_STATS_ENABLED", None)
    else:
        os.environ["RAY_USAGE_STATS_ENABLED"] = previous


@pytest.mark.slow
def test_ray_engine_writes_what_discover_many_answers(built, ray_cluster, tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    summary = discover_batch(built.factory, built.claims, out, engine="ray", batch_size=3)
    assert (summary.done, summary.engine, summary.workers) == (10, "ray", 1)
    assert _results(out) == built.reference
    assert ray_cluster.is_initialized(), "a cluster it joined is left running"


@pytest.mark.slow
def test_ray_through_the_cli_without_evidence_and_with_top(built, ray_cluster, tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    kept = {cid: TEXTS[cid] for cid in (1, 2, 3)}
    _jsonl(out, [{"id": cid, "claim": text, "result": {"kept": True}} for cid, text in kept.items()])
    result = runner.invoke(app, ["discover-batch", str(built.claims), "--out", str(out), "--engine", "ray",
                                 "--batch-size", "2", "--no-evidence", "--top", "2", *built.folders])
    assert result.exit_code == 0, result.output
    assert "7 claims discovered, 3 already in" in result.stdout
    found = _results(out)
    assert all(found[cid] == {"kept": True} for cid in kept)
    reference = _reference(built.pipe, top=2, evidence=False)
    assert {cid: found[cid] for cid in TEXTS if cid not in kept} == {
        cid: reference[cid] for cid in TEXTS if cid not in kept}


@pytest.mark.slow
def test_ray_engine_needs_a_cpu_per_actor(built, ray_cluster, tmp_path: Path) -> None:
    with pytest.raises(PerspectrumError, match=f"has {len(STEPS)} CPUs; {len(STEPS)} steps × 2 workers need"):
        discover_batch(built.factory, built.claims, tmp_path / "results.jsonl", engine="ray", workers=2)


@pytest.mark.slow
def test_ray_engine_mines_a_map_as_this_process_does(built, ray_cluster, tmp_path: Path, monkeypatch) -> None:
    from perspectrum.batch.map_run import map_documents

    documents = {"a": "Zoos protect endangered species from extinction. Many visitors enjoy a day out.",
                 "b": "Animals suffer in captivity; their enclosures are far too small.",
                 "c": "Breeding programmes matter. Zoos protect endangered species through breeding."}
    here = map_documents(built.pipe, documents, "Zoos should exist").to_dict()
    units = tmp_path / "units.jsonl"
    there = map_documents(built.factory, documents, "Zoos should exist", units=units, engine="ray",
                          batch_size=2).to_dict()

    def shape(found: dict) -> list:
        return [(p["key_point"], p["side"], p["documents"], [(q["document"], q["start"], q["end"])
                                                             for q in p["quotes"]])
                for p in found["perspectives"] + found["also_mentioned"]]

    assert shape(there) == shape(here) and there["units"] == here["units"] > 0
    assert len(units.read_text(encoding="utf-8").splitlines()) == 1 + len(documents)
    import perspectrum.pipeline.map as map_module

    def refuse(*_: Any, **__: Any) -> None:
        raise AssertionError("a document the ray run mined was mined again")

    monkeypatch.setattr(map_module, "mine_many", refuse)  # the ray run's file resumes here: nothing to mine
    assert shape(map_documents(built.pipe, documents, "Zoos should exist", units=units).to_dict()) == shape(here)


class FailsInActors:
    """A pipeline factory that works here but not in Ray's actors (a folder they cannot see)."""

    def __init__(self, factory: Any) -> None:
        self.factory, self.pid = factory, os.getpid()

    def __call__(self) -> Pipeline:
        if os.getpid() != self.pid:
            raise PerspectrumError("no models in /elsewhere")
        return self.factory()


@pytest.mark.slow
def test_an_actors_error_is_its_one_line(built, ray_cluster, tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    with pytest.raises(PerspectrumError) as caught:
        discover_batch(FailsInActors(built.factory), built.claims, out, engine="ray")
    assert str(caught.value) == "no models in /elsewhere"
    assert out.read_bytes() == b""
