"""Models on their own: one task's model scores pairs or triples without the pipeline or any
index (`PairScorer`, `perspectrum score`), and `Pipeline.match` takes arguments without a
claim and many texts in one call."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from perspectrum import PairScorer, Pipeline
from perspectrum.errors import PerspectrumError
from perspectrum.models.inputs import claim_perspective_input, equivalence_input
from perspectrum.models.store import load_task
from tests.conftest import prepared

CLAIM = "Animals should have legal rights"
PAIRS = [(CLAIM, "Animals feel pain and deserve legal protection"), (CLAIM, "Rights come with duties animals cannot bear")]
TRIPLES = [(CLAIM, "Animals feel pain and deserve legal protection", "Legal rights for animals recognise that they suffer")]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def shipped(tmp_path_factory, shipped_set) -> tuple[Path, Path, Path]:
    return prepared(tmp_path_factory.mktemp("shipped"))


def test_shipped_models_score_pairs_as_the_pipeline_does_opening_no_index(shipped, tmp_path, monkeypatch) -> None:
    data, indexes, models = shipped
    pipe = Pipeline.load(data, indexes, models, verify=False)
    nowhere = tmp_path / "no-indexes"
    monkeypatch.setenv("PERSPECTRUM_INDEXES", str(nowhere))
    stance = PairScorer.load("stance", models)
    assert stance.kind == "shipped" and stance.settings["threshold"] == pipe.settings["stance"]["threshold"]
    assert np.allclose(stance.score(PAIRS), pipe.scorers.stance(PAIRS))
    equivalence = PairScorer.load("equivalence", models)
    assert np.allclose(equivalence.score(TRIPLES), pipe.scorers.equivalence(TRIPLES))
    assert stance.score([]).shape == (0,)
    assert not nowhere.exists()


def test_a_fine_tuned_model_answers_for_its_task(trained_dir) -> None:
    models = trained_dir[2]
    relevance = PairScorer.load("relevance", models)
    assert relevance.kind == "trained"
    members = load_task(models, "relevance")
    expected = np.mean([m.score([claim_perspective_input(*p) for p in PAIRS]) for m in members], axis=0)
    assert np.allclose(relevance.score(PAIRS), expected)
    equivalence = PairScorer.load("equivalence", models)
    expected = np.mean([m.score([equivalence_input(*t) for t in TRIPLES]) for m in load_task(models, "equivalence")],
                       axis=0)
    assert np.allclose(equivalence.score(TRIPLES), expected)


def test_bad_tasks_items_and_folders_are_one_line_errors(shipped, tmp_path) -> None:
    models = shipped[2]
    with pytest.raises(PerspectrumError, match="evidence ranks the evidence pool's paragraphs"):
        PairScorer.load("evidence", models)
    with pytest.raises(PerspectrumError, match="cannot score task 'stnace'"):
        PairScorer.load("stnace", models)
    with pytest.raises(PerspectrumError, match="no stance model in .*run `perspectrum setup`"):
        PairScorer.load("stance", tmp_path / "empty")
    stance = PairScorer.load("stance", models)
    with pytest.raises(PerspectrumError, match="item 1 must be 2 non-empty texts"):
        stance.score([PAIRS[0], (CLAIM,)])
    with pytest.raises(PerspectrumError, match="item 0 must be 2 non-empty texts"):
        stance.score([(CLAIM, " ")])
    with pytest.raises(PerspectrumError, match="a list of \\(claim, perspective\\) pairs"):
        stance.score("Animals feel pain")
    stale = shutil.copytree(models / "shipped", tmp_path / "stale" / "shipped")
    (stale / "shipped.json").write_text(json.dumps({"identity": "0" * 64}))
    with pytest.raises(PerspectrumError, match="other shipped models than this perspectrum's\\): run `perspectrum setup`"):
        PairScorer.load("stance", stale.parent)


def test_match_needs_no_claim_with_arguments_and_takes_many_texts(shipped) -> None:
    data, indexes, models = shipped
    pipe = Pipeline.load(data, indexes, models, verify=False)
    texts = ["Zoos keep animals in small cages. That is cruel to them.",
             "Breeding programmes in zoos save species that are extinct in the wild."]
    arguments = ["Keeping animals in cages is cruel", "Zoos save endangered species"]
    one = [pipe.match(t, arguments=arguments) for t in texts]
    many = pipe.match(texts, arguments=arguments)
    assert [[m.to_dict() for m in found] for found in many] == [[m.to_dict() for m in found] for found in one]
    assert [m.argument for m in one[0]] == arguments
    with pytest.raises(PerspectrumError, match="give the arguments to look for, or a claim"):
        pipe.match(texts[0])
    with pytest.raises(PerspectrumError):
        pipe.match([texts[0], ""], arguments=arguments)


def test_score_command_reads_jsonl_and_writes_one_score_per_line(shipped, tmp_path) -> None:
    from perspectrum.cli.app import app

    models = shipped[2]
    rows = tmp_path / "pairs.jsonl"
    rows.write_text("".join(json.dumps({"claim": c, "perspective": p}) + "\n" for c, p in PAIRS))
    result = CliRunner().invoke(app, ["score", "stance", str(rows), "--models-dir", str(models)])
    assert result.exit_code == 0, result.output
    out = [json.loads(line) for line in result.stdout.splitlines()]
    expected = PairScorer.load("stance", models).score(PAIRS)
    assert [o["perspective"] for o in out] == [p for _, p in PAIRS]
    assert np.allclose([o["score"] for o in out], expected, atol=1e-6)
    threshold = PairScorer.load("stance", models).settings["threshold"]
    assert [o["stance"] for o in out] == ["support" if s >= threshold else "undermine" for s in expected]
    rows.write_text(json.dumps({"claim": CLAIM}) + "\n")
    result = CliRunner().invoke(app, ["score", "stance", str(rows), "--models-dir", str(models)])
    assert result.exit_code == 1 and "line 1" in result.stderr and len(result.stderr.strip().splitlines()) == 1
