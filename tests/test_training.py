"""Fine-tuning, saving and tuning: determinism, round trips, and thresholds from dev only.

The four models are trained once per module in ``--quick`` mode on the ten-claim
fixture (about a minute on 2 cores); what they score is not the point, how they are
made, saved and tuned is.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from perspectrum.cli import app
from perspectrum.crossencoder import META_FILE, CrossEncoderModel, TrainParams, fine_tune
from perspectrum.data import data_checksum, load_dataset
from perspectrum.errors import PerspectrumError
from perspectrum.eval import trained
from perspectrum.index import IndexStore
from perspectrum.models import TASKS, load_task
from perspectrum.ranker import RANKER_FILE, EvidenceRanker
from perspectrum.training import train_task
from tests.conftest import CLAIMS, write_dataset

PAIRS = [("Zoos should be banned", "Cages are cruel"), ("Zoos should be banned", "Zoos save species"),
         ("Homework should go", "Children need play"), ("Homework should go", "Practice helps learning")] * 3
TARGETS = [1.0, 0.0, 1.0, 0.0] * 3
TINY = TrainParams(epochs=1, batch_size=4, max_length=32, seed=5)


def _weights(model) -> dict:
    return {k: v.clone() for k, v in model.state_dict().items()}


def test_fine_tune_is_deterministic_for_a_seed():
    first, _, stats = fine_tune(PAIRS, TARGETS, TINY)
    again, _, _ = fine_tune(PAIRS, TARGETS, TINY)
    other, _, _ = fine_tune(PAIRS, TARGETS, TrainParams(**{**TINY.to_dict(), "seed": 6}))
    a, b, c = _weights(first), _weights(again), _weights(other)
    assert all((a[k] == b[k]).all() for k in a)
    assert any(not (a[k] == c[k]).all() for k in a)
    assert stats["steps"] == 3 and stats["examples"] == 12 and stats["positives"] == 6


def test_fine_tune_rejects_bad_targets():
    with pytest.raises(ValueError):
        fine_tune(PAIRS[:2], [1.0, 2.0], TINY)
    with pytest.raises(PerspectrumError):
        fine_tune([], [], TINY)


@pytest.fixture(scope="module")
def trained_dir(tmp_path_factory) -> tuple[Path, Path, Path]:
    """(data, indexes, models) with all four tasks trained in quick mode."""
    root = tmp_path_factory.mktemp("trained")
    data = write_dataset(root / "data")
    args = ["train", "all", "--quick", "--data-dir", str(data), "--no-verify", "--index-dir", str(root / "indexes"),
            "--models-dir", str(root / "models"), "--json", str(root / "train.json")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert set(json.loads((root / "train.json").read_text())) == set(TASKS)
    return data, root / "indexes", root / "models"


def test_saved_models_round_trip_with_card(trained_dir):
    data, indexes, models = trained_dir
    for task in TASKS:
        folder = models / task
        assert (folder / "config.json").is_file() and (folder / "model.safetensors").is_file()
        meta = json.loads((folder / META_FILE).read_text())
        assert meta["task"] == task and meta["seeds"] == [13] and meta["tuned_on"] == "dev"
        card = (folder / "README.md").read_text()
        assert meta["data_checksum"] == data_checksum(data) and meta["data_checksum"] in card
        assert "base_model: sentence-transformers/all-MiniLM-L6-v2" in card
        members = load_task(models, task)
        assert members[0].meta["thresholds"] == meta["thresholds"]
        again = load_task(models, task)[0]
        assert (members[0].score(PAIRS[:4]) == again.score(PAIRS[:4])).all()
        assert not [p for p in models.iterdir() if p.name.startswith(".")]  # no temp folders left
        assert (folder / RANKER_FILE).is_file() == (task == "evidence") == ("ranker" in meta)
    assert "evidence ranker (`ranker.joblib`" in (models / "evidence" / "README.md").read_text()


def test_models_marked_unquantized_load_in_float(trained_dir):
    """Stance is scored in float (int8 costs MPNet its accuracy); the others in int8."""
    import torch

    def quantized(task: str) -> bool:
        model = load_task(trained_dir[2], task)[0].model
        if isinstance(model, torch.jit.ScriptModule):  # the traced copy: read its graph
            return "quantized::linear_dynamic" in str(model.inlined_graph)
        return not any(type(m) is torch.nn.Linear for m in model.modules())

    assert json.loads((trained_dir[2] / "stance" / META_FILE).read_text())["quantize"] is False
    assert not quantized("stance") and quantized("relevance")


def test_stored_thresholds_are_the_dev_optimum(trained_dir):
    data, indexes, models = trained_dir
    dataset = load_dataset(data, verify=False)
    dev = dataset.split("dev")[:4]
    for task in TASKS:
        members = load_task(models, task)
        ranker = EvidenceRanker.load(models / task) if task == "evidence" else None
        scores = trained.score_split(task, members, dataset, dev, IndexStore(indexes), ranker=ranker)
        setting, _ = trained.tune(task, dev, scores)
        assert setting == members[0].meta["thresholds"]


def test_test_labels_never_reach_the_thresholds(tmp_path, trained_dir):
    """Flip every test-split stance label: the stance model and its thresholds stay the same."""
    flipped = write_dataset(tmp_path / "data")
    claims_file = flipped / "perspectrum_with_answers_v1.0.json"
    rows = json.loads(claims_file.read_text())
    for row in rows:
        if CLAIMS[row["cId"]][1] == "test":
            for cluster in row["perspectives"]:
                cluster["stance_label_3"] = "SUPPORT" if cluster["stance_label_3"] == "UNDERMINE" else "UNDERMINE"
                cluster["voter_counts"] = cluster["voter_counts"][::-1]
    claims_file.write_text(json.dumps(rows))
    meta = train_task("stance", load_dataset(flipped, verify=False), IndexStore(tmp_path / "idx"),
                      tmp_path / "models", seed=13, is_quick=True)
    original = json.loads((trained_dir[2] / "stance" / META_FILE).read_text())
    assert meta["thresholds"] == original["thresholds"] and meta["dev"] == original["dev"]


def test_loading_what_is_not_a_model_is_one_clear_error(tmp_path):
    with pytest.raises(PerspectrumError, match="no trained model"):
        CrossEncoderModel.load(tmp_path)
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / META_FILE).write_text("{not json")
    with pytest.raises(PerspectrumError, match="not valid JSON"):
        CrossEncoderModel.load(tmp_path)


def test_cli_evaluate_trained_writes_table_json_plot_and_cards(tmp_path, trained_dir):
    data, indexes, models = trained_dir
    out, png = tmp_path / "trained.json", tmp_path / "pr.png"
    args = ["evaluate", "--system", "trained", "--split", "test", "--data-dir", str(data), "--no-verify",
            "--index-dir", str(indexes), "--models-dir", str(models), "--json", str(out), "--plot", str(png)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "paper IR+BERT" in result.output and "T5 overall" in result.output
    report = json.loads(out.read_text())
    assert set(report["tasks"]) == {"t1", "t2", "t3", "t4"} and "accuracy" in report["tasks"]["t2"]
    expected_t5 = report["tasks"]["t1"]["f1"] * report["tasks"]["t2"]["f1"] * report["tasks"]["t4"]["f1"] / 1e4
    assert report["t5"] == pytest.approx(expected_t5, abs=0.01)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((models / "stance" / META_FILE).read_text())["test"] == {
        k: v for k, v in report["tasks"]["t2"].items() if k not in ("setting", "members")}


def test_cli_train_and_evaluate_fail_in_one_line(tmp_path, data_dir):
    runner = CliRunner()
    result = runner.invoke(app, ["evaluate", "--system", "trained", "--data-dir", str(data_dir), "--no-verify",
                                 "--models-dir", str(tmp_path / "none"), "--index-dir", str(tmp_path / "idx")])
    assert result.exit_code == 1
    assert result.output.strip().startswith("error: no trained model in") and "Traceback" not in result.output
    result = runner.invoke(app, ["train", "sentiment", "--data-dir", str(data_dir)])
    assert result.exit_code == 2
