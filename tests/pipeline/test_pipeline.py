"""The discovery pipeline: a fresh machine's first answer, the JSON schema, bad claims,
own pools and their errors, concurrent calls, and end-to-end scoring.

One module-scoped pipeline over the ten-claim fixture starts with no indexes and no
models, so refusing the unprepared machine, then preparing it (building indexes, unpacking
the shipped models: here the quick ones of ``shipped_set``) is itself under test; later
tests reuse what it built.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from typer.testing import CliRunner

from perspectrum import Pipeline
from perspectrum.cli.app import app
from perspectrum.data import Pool, load_dataset
from perspectrum.errors import PerspectrumError
from perspectrum.eval.end_to_end import score
from perspectrum.pipeline.pipeline import ClaimError, Discovery, PipelineConfig, check_claim
from perspectrum.models.scorers import PIPELINE_FILE
from tests.conftest import PERSPECTIVES, write_dataset

runner = CliRunner()
CLAIM = "Animals should have legal rights"


@pytest.fixture(scope="module")
def fresh(tmp_path_factory, shipped_set):
    """(data folder, index folder, models folder, pipeline) — nothing built beforehand, then
    the machine prepared as `perspectrum setup` does; ``root/refused.txt`` holds what was
    in ``root`` after :meth:`Pipeline.load` refused, and what it said, and ``root/setup.err``
    what preparing printed."""
    import contextlib
    import io

    from perspectrum.pipeline.pipeline import NotPrepared
    from perspectrum.train import prepare

    root = tmp_path_factory.mktemp("pipeline")
    data_dir = write_dataset(root / "data")
    with pytest.raises(NotPrepared) as refused:
        Pipeline.load(data_dir, root / "indexes", root / "models", verify=False)
    (root / "refused.txt").write_text(f"{' '.join(sorted(p.name for p in root.iterdir()))}\n{refused.value}")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        done = prepare(data_dir, root / "indexes", root / "models", verify=False)
    (root / "setup.err").write_text(err.getvalue() + json.dumps(done))
    pipe = Pipeline.load(data_dir, root / "indexes", root / "models", verify=False)
    return data_dir, root / "indexes", root / "models", pipe


def test_an_unprepared_machine_is_refused_at_once_naming_setup(fresh) -> None:
    root = fresh[0].parent
    written, message = (root / "refused.txt").read_text().split("\n", 1)
    assert written == "data"  # refused before building or unpacking anything
    assert "\n" not in message and "perspectrum setup" in message and "shipped models are not unpacked" in message
    assert "perspectrum.train" not in message  # one line for a person, no trace


def test_setup_builds_indexes_unpacks_the_shipped_models_and_the_pipeline_answers(fresh) -> None:
    _, indexes, models, pipe = fresh
    said = (fresh[0].parent / "setup.err").read_text()
    done = json.loads(said.splitlines()[-1])
    assert done["models"] == "shipped, unpacked" and {i["status"] for i in done["indexes"]} == {"built"}
    assert "unpacking the shipped stance model" in said
    assert (models / "shipped" / "stance" / "model.safetensors").is_file()
    assert (indexes / "perspectives" / "dense" / "meta.json").is_file()
    result = pipe.discover(CLAIM)
    assert pipe.system == "shipped" and result.system == "shipped"
    assert result.perspectives, "the claim's own gold perspectives are in the pool"
    found = {p.id for cluster in result.perspectives for p in cluster.phrasings}
    assert found & {19, 20, 21}


def test_the_shipped_settings_chosen_on_dev_are_the_ones_used(fresh, shipped_set) -> None:
    from perspectrum.pipeline.results import calibrated, side

    _, _, models, pipe = fresh
    stored = json.loads((shipped_set / PIPELINE_FILE).read_text())
    stance = stored["settings"]["stance"]
    assert json.loads((models / "shipped" / PIPELINE_FILE).read_text()) == stored
    for stage, values in stored["settings"].items():
        assert {k: pipe.settings[stage][k] for k in values} == values  # read back, as shipped
    result = pipe.discover(CLAIM)
    assert result.perspectives
    for card in result.perspectives:
        q = calibrated(card.support_probability, pipe.settings["stance"]["threshold"], stance["scale"])
        assert card.support_calibrated == pytest.approx(q, abs=1e-3)
        assert card.stance == side(card.support_calibrated, stance["unclear"])
        assert card.stance_confidence == pytest.approx(max(q, 1 - q), abs=1e-3)


def test_a_second_setup_keeps_what_is_sound(fresh) -> None:
    from perspectrum.train import prepare

    data_dir, indexes, models, _ = fresh
    done = prepare(data_dir, indexes, models, verify=False)
    assert done["models"] == "shipped, kept" and {i["status"] for i in done["indexes"]} == {"reused"}


def test_json_schema_is_stable_and_round_trips(fresh) -> None:
    result = fresh[3].discover(CLAIM)
    data = json.loads(result.to_json())
    assert data["schema"] == 2 and data["claim"] == CLAIM and data["system"] == "shipped"
    assert set(data) == {"schema", "claim", "system", "perspectives", "timings", "notice"}
    assert data["notice"] is None and data["perspectives"]
    for found in data["perspectives"]:
        assert set(found) == {"text", "id", "stance", "support_probability", "stance_confidence", "relevance",
                              "phrasings", "evidence", "support_calibrated"}
        assert found["stance"] in ("support", "undermine", "unclear")
        assert 0.5 <= found["stance_confidence"] <= 1.0
        assert found["phrasings"][0]["id"] == found["id"] and found["text"] == PERSPECTIVES[found["id"]]
        for phrasing in found["phrasings"]:
            assert set(phrasing) == {"id", "text", "relevance", "support_probability"}
        for hit in found["evidence"]:
            assert set(hit) == {"id", "text", "probability", "window", "window_score", "window_start", "window_end"}
            if hit["window_start"] is not None:
                assert hit["text"][hit["window_start"]:hit["window_end"]].startswith(hit["window"].split(".")[0])
    assert set(data["timings"]) == {"retrieve", "relevance", "stance", "cluster", "expand", "evidence", "verify",
                                    "total"}
    relevance = [p["relevance"] for p in data["perspectives"]]
    assert relevance == sorted(relevance, reverse=True)


def test_top_no_evidence_and_explain(fresh) -> None:
    pipe = fresh[3]
    result = pipe.discover(CLAIM, top=1, evidence=False, explain=True)
    assert len(result.perspectives) == 1 and result.perspectives[0].evidence == ()
    assert "evidence" not in result.timings
    assert result.trace is not None and {"settings", "candidates", "pairs", "config"} <= set(result.trace)
    assert any(c["kept"] for c in result.trace["candidates"])


@pytest.mark.parametrize("claim, words", [("", "empty"), ("   \n\t", "empty"), ("x" * 1001, "limit"),
                                          (42, "text"), ("\x00\x01binary", "control"), ("1234 !!", "no words")])
def test_bad_claims_are_refused(claim, words) -> None:
    with pytest.raises(ClaimError, match=words):
        check_claim(claim)


def test_cli_bad_claims_exit_2_with_one_line(fresh) -> None:
    data_dir, indexes, models, _ = fresh
    for claim in ("", "   ", "y" * 1001, "\x07\x08"):
        result = runner.invoke(app, ["discover", claim, "--data-dir", str(data_dir), "--no-verify",
                                     "--index-dir", str(indexes), "--models-dir", str(models)])
        assert result.exit_code == 2, result.output
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ")


def test_cli_discover_json_and_table(fresh) -> None:
    data_dir, indexes, models, _ = fresh
    args = ["discover", CLAIM, "--data-dir", str(data_dir), "--no-verify", "--index-dir", str(indexes),
            "--models-dir", str(models)]
    as_json = runner.invoke(app, [*args, "--json", "--top", "2"], env={"COLUMNS": "160"})
    assert as_json.exit_code == 0, as_json.output
    data = json.loads(as_json.stdout)
    assert data["schema"] == 2 and len(data["perspectives"]) <= 2
    shown = runner.invoke(app, [*args, "--explain"], env={"COLUMNS": "160"})
    assert shown.exit_code == 0 and "supporting" in shown.stdout and "stage timings" in shown.stdout


def test_cli_discover_on_an_unprepared_machine_runs_setup_first_saying_so(fresh, tmp_path: Path) -> None:
    data_dir, indexes, _, pipe = fresh
    models = tmp_path / "models"
    args = ["discover", CLAIM, "--data-dir", str(data_dir), "--no-verify", "--index-dir", str(indexes),
            "--models-dir", str(models), "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    said = [line for line in result.stderr.splitlines() if "running `perspectrum setup` first" in line]
    assert len(said) == 1 and f"the shipped models are not unpacked in {models}" in said[0]
    found = json.loads(result.stdout)  # stdout stays JSON
    assert found["system"] == "shipped" and found["perspectives"]
    again = runner.invoke(app, args)
    assert again.exit_code == 0 and "perspectrum setup" not in again.stderr


def test_cli_setup_reports_what_it_did(fresh) -> None:
    data_dir, indexes, models, _ = fresh
    args = ["setup", "--data-dir", str(data_dir), "--no-verify", "--index-dir", str(indexes), "--models-dir",
            str(models)]
    as_json = runner.invoke(app, [*args, "--json"])
    assert as_json.exit_code == 0, as_json.output
    done = json.loads(as_json.stdout)
    assert done["models"] == "shipped, kept" and len(done["indexes"]) == 5 and "sentence_vectors" not in done
    shown = runner.invoke(app, args, env={"COLUMNS": "160"})
    assert shown.exit_code == 0 and "shipped, kept" in shown.stdout and "reused" in shown.stdout
    full = runner.invoke(app, [*args, "--full", "--json"])
    assert full.exit_code == 0, full.output
    completed = json.loads(full.stdout)
    assert ("sentences", "dense", "built") in {(i["pool"], i["kind"], i["status"]) for i in completed["indexes"]}
    assert completed["sentence_vectors"]["encoded"] >= 0 and completed["models"] == "shipped, kept"
    shown_full = runner.invoke(app, [*args, "--full"], env={"COLUMNS": "160"})
    assert shown_full.exit_code == 0 and "evidence sentences encoded" not in shown_full.stdout  # all done
    broken = runner.invoke(app, ["setup", "--data-dir", str(data_dir / "missing"), "--no-verify"])
    assert broken.exit_code == 1 and len(broken.stderr.strip().splitlines()) == 1


def test_cli_off_topic_claim_gets_one_line_and_an_empty_json_answer(fresh, tmp_path: Path) -> None:
    import shutil


    data_dir, indexes, models, _ = fresh
    copy = tmp_path / "models"
    for model in ("relevance", "stance", "equivalence", "evidence"):  # the user's own four: their settings
        shutil.copytree(models / "shipped" / model, copy / model)
    stored = json.loads((models / "shipped" / PIPELINE_FILE).read_text())
    stored["settings"]["relevance"]["floor"] = 1.5  # above any blended score: nothing is relevant
    (copy / PIPELINE_FILE).write_text(json.dumps(stored))
    args = ["discover", "Tea or coffee", "--data-dir", str(data_dir), "--no-verify", "--index-dir", str(indexes),
            "--models-dir", str(copy)]
    shown = runner.invoke(app, args, env={"COLUMNS": "60"})
    assert shown.exit_code == 0 and shown.stdout.strip().count("\n") == 0
    assert shown.stdout.startswith("nothing in the pool is relevant") and "1.50" in shown.stdout
    data = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    assert data["perspectives"] == [] and data["notice"].startswith("nothing in the pool")
    (copy / PIPELINE_FILE).write_text('{"settings": {"relevance": {"flor": 1}}}')
    damaged = runner.invoke(app, args)
    assert damaged.exit_code == 1 and "pipeline.json is damaged" in damaged.stderr


def test_shipped_models_of_another_version_are_refused_then_unpacked_again(fresh, tmp_path: Path, capsys) -> None:
    """Shipped models unpacked by another perspectrum (their stamp names other shipped models)
    are refused by the pipeline, naming `perspectrum setup`, which unpacks them again, saying why."""
    import shutil

    from perspectrum.models.shipped import STAMP
    from perspectrum.pipeline.pipeline import NotPrepared
    from perspectrum.train import prepare

    data_dir, indexes, models, pipe = fresh
    copy = shutil.copytree(models / "shipped", tmp_path / "models" / "shipped")
    (copy / STAMP).write_text(json.dumps({"identity": "0" * 64}))
    with pytest.raises(NotPrepared, match=r"other shipped models than this perspectrum's\); run `perspectrum setup`"):
        Pipeline.load(data_dir, indexes, tmp_path / "models", verify=False)
    assert prepare(data_dir, indexes, tmp_path / "models", verify=False)["models"] == "shipped, unpacked"
    assert "other shipped models than this perspectrum's: unpacking them" in capsys.readouterr().err
    assert Pipeline.load(data_dir, indexes, tmp_path / "models", verify=False).system == "shipped"


def test_your_stance_model_answers_in_place_of_the_shipped_one(fresh, trained_dir, tmp_path: Path) -> None:
    """A stance model the user trained (or installed) answers for stance with its dev-tuned
    threshold; every other stage is still the shipped models'."""
    import shutil

    import numpy as np

    from perspectrum.models.bundle import inventory
    from perspectrum.models.inputs import claim_perspective_input
    from perspectrum.models.store import load_task, read_meta

    data_dir, indexes, models, pipe = fresh
    assert pipe.system == "shipped"
    mixed = tmp_path / "models"
    shutil.copytree(models / "shipped", mixed / "shipped", symlinks=True)
    shutil.copytree(trained_dir[2] / "stance", mixed / "stance")
    both = Pipeline.load(data_dir, indexes, mixed, verify=False)
    assert both.system == inventory(mixed)["system"] == "shipped + your stance"
    listed = {(e["name"], e["source"]): e["answers"] for e in inventory(mixed)["entries"]}
    assert listed[("stance", "yours")] and not listed[("stance", "shipped")] and listed[("relevance", "shipped")]
    pairs = [(CLAIM, "Cars pollute the air"), (CLAIM, "Public transport is cheaper")]
    member = load_task(mixed, "stance")[0]
    assert np.allclose(both.scorers.stance(pairs), member.score([claim_perspective_input(*p) for p in pairs]))
    assert both.settings["stance"]["threshold"] == read_meta(mixed, "stance")["thresholds"]["threshold"]
    assert np.array_equal(both.scorers.relevance(pairs), pipe.scorers.relevance(pairs))
    assert both.settings["relevance"] == pipe.settings["relevance"]
    assert both.discover(CLAIM).system == "shipped + your stance"


def test_concurrent_calls_match_sequential_ones(fresh) -> None:
    pipe = fresh[3]
    claims = [CLAIM, "Zoos should be banned", "Fast food should be taxed", "Voting should be compulsory"] * 2
    sequential = [pipe.discover(c).perspectives for c in claims]
    with ThreadPoolExecutor(max_workers=4) as pool:
        threaded = list(pool.map(lambda c: pipe.discover(c).perspectives, claims))
    assert threaded == sequential


def test_discover_many_matches_discover(fresh) -> None:
    pipe = fresh[3]
    claims = ["Zoos should be banned", "Homework should be abolished", "Cities should ban private cars"]
    many = pipe.discover_many(claims, batch_size=2)
    assert [m.claim for m in many] == claims
    for claim, result in zip(claims, many):
        single = pipe.discover(claim)
        assert [p.id for p in single.perspectives] == [p.id for p in result.perspectives]
        assert [p.stance for p in single.perspectives] == [p.stance for p in result.perspectives]
    with pytest.raises(ClaimError):
        pipe.discover_many(["fine claim", ""])
    with pytest.raises(ClaimError):
        pipe.discover_many("a string, not a list")


def test_config_overrides_and_validation(fresh) -> None:
    data_dir, indexes, models, pipe = fresh
    strict = Pipeline.load(data_dir, indexes, models, verify=False,
                           config=PipelineConfig(overrides={"relevance": {"k": 1}, "expand": {"agree": False}}))
    assert strict.settings["relevance"]["k"] == 1 and pipe.settings["relevance"]["k"] != 1
    phrasings = [p for found in strict.discover(CLAIM).perspectives for p in found.phrasings]
    # the rest: pool paraphrases, which the stance model reads only with expand's `agree` on
    assert len([p for p in phrasings if p.support_probability is not None]) == 1
    alone = strict.with_config(PipelineConfig(overrides={"relevance": {"k": 1}, "expand": {"neighbours": 0}}))
    assert sum(len(p.phrasings) for p in alone.discover(CLAIM).perspectives) == 1
    with pytest.raises(PerspectrumError, match="unknown stage"):
        PipelineConfig(overrides={"relevancy": {}})


def _jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_own_pools_are_indexed_apart_and_searched(fresh, tmp_path: Path) -> None:
    data_dir, indexes, models, _ = fresh
    perspectives = _jsonl(tmp_path / "p.jsonl", [
        {"id": "p-cage", "text": "Cages are cruel to wild animals"},
        {"id": "p-tax", "text": "Taxes on sugar reduce obesity"},
        {"id": "p-law", "text": "Animals deserve protection in law because they feel pain"}])
    evidence = _jsonl(tmp_path / "e.jsonl", [
        {"id": "doc-1", "text": "Animals feel pain. Pain matters morally. Laws should protect beings that suffer."},
        {"id": "doc-2", "text": "Sugar taxes in Mexico cut soda sales by a tenth."}])
    pipe = Pipeline.from_pools(perspectives, evidence, index_dir=indexes, models_dir=models, data_dir=data_dir)
    result = pipe.discover(CLAIM)
    ids = {p.id for cluster in result.perspectives for p in cluster.phrasings}
    assert ids <= {"p-cage", "p-tax", "p-law"} and "p-law" in ids
    found = [e.id for c in result.perspectives for e in c.evidence]
    assert found and all(isinstance(i, str) for i in found)
    assert (indexes / "own").is_dir() and (indexes / "perspectives" / "dense").is_dir()
    build = ["index", "build", "--perspectives", str(perspectives), "--evidence", str(evidence),
             "--index-dir", str(indexes)]
    assert runner.invoke(app, build, env={"COLUMNS": "160"}).exit_code == 0  # adds the sentence pool's
    again = runner.invoke(app, build, env={"COLUMNS": "160"})
    assert again.exit_code == 0 and "reused" in again.stdout and "built" not in again.stdout


@pytest.mark.parametrize("rows, message", [
    ([{"id": 1, "text": "a"}, {"id": 1, "text": "b"}], "line 2: duplicate id 1"),
    ([{"id": 1, "text": "a"}, {"id": 2, "text": "  "}], "line 2: empty text"),
    ([{"id": 1, "text": "a"}, "", "{not json"], "line 3: not valid JSON"),
    ([{"id": 1, "text": "a"}, ["id", "text"]], 'line 2: expected an object with "id" and "text"'),
    ([{"id": None, "text": "a"}], "line 1: id must be"),
    ([], "holds no records"),
])
def test_bad_pool_files_name_the_line(tmp_path: Path, rows, message) -> None:
    path = _jsonl(tmp_path / "pool.jsonl", rows)
    with pytest.raises(PerspectrumError, match=message):
        Pool.from_jsonl(path, "perspectives")


def test_cli_bad_pools_are_one_line_errors(tmp_path: Path) -> None:
    good = _jsonl(tmp_path / "good.jsonl", [{"id": 1, "text": "a sentence"}])
    bad = _jsonl(tmp_path / "bad.jsonl", [{"id": 1, "text": "a"}, {"id": 1, "text": "b"}])
    for args in (["--perspectives", str(good)], ["--perspectives", str(bad), "--evidence", str(good)],
                 ["--perspectives", str(tmp_path / "missing.jsonl"), "--evidence", str(good)]):
        result = runner.invoke(app, ["index", "build", *args, "--index-dir", str(tmp_path / "idx")])
        assert result.exit_code == 1, result.output
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ")
    assert not (tmp_path / "idx").exists()


def test_end_to_end_scores_follow_the_returned_clusters(fresh) -> None:
    data_dir, _, _, pipe = fresh
    dataset = load_dataset(data_dir, verify=False)
    claims = dataset.split("dev")
    results = pipe.discover_many([c.text for c in claims])
    scores = score(claims, results)
    # hand-made perfect result for the first claim: its gold clusters, right stance, gold evidence
    claim = claims[0]
    perfect = Discovery(claim.text, "test", tuple(
        _perfect(dataset, k) for k in claim.clusters), {})
    exact = score([claim], [perfect])
    assert exact["t1"]["f1"] == exact["t2"]["f1"] == exact["t3"]["f1"] == exact["t4"]["f1"] == 1.0
    empty = score([claim], [Discovery(claim.text, "test", (), {})])
    assert empty["t1"]["f1"] == empty["t2_all"]["recall"] == empty["t4_all"]["f1"] == 0.0
    assert 0.0 <= scores["t5"] <= 1.0 and scores["t5_all"] <= scores["t5"] + 1e-12


def _perfect(dataset, cluster):
    from perspectrum.pipeline.pipeline import DiscoveredPerspective, EvidenceHit, Phrasing

    phrasings = tuple(Phrasing(p, dataset.perspectives[p].text, 1.0) for p in cluster.pids)
    stance = "support" if cluster.stance == "SUPPORT" else "undermine"
    return DiscoveredPerspective(phrasings[0].text, phrasings[0].id, stance, 1.0 if stance == "support" else 0.0,
                                 1.0, 1.0, phrasings,
                                 tuple(EvidenceHit(e, dataset.evidence[e].text, 1.0) for e in cluster.evidence))
