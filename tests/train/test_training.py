"""Fine-tuning, saving and tuning: determinism, round trips, and thresholds from dev only.

The four models are trained once per module in ``--quick`` mode on the ten-claim
fixture (about a minute on 2 cores); what they score is not the point, how they are
made, saved and tuned is.
"""

from __future__ import annotations

import json
from itertools import cycle
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from perspectrum.cli.app import app
from perspectrum.encoders.cross_encoder import META_FILE, CrossEncoderModel
from perspectrum.train.fine_tune import TrainParams, fine_tune
from perspectrum.data import CLAIMS_FILE, data_checksum, load_dataset
from perspectrum.errors import PerspectrumError
from perspectrum.eval import trained
from perspectrum.index.store import IndexStore
from perspectrum.models.scorers import MODELS
from perspectrum.models.store import load_task, read_meta
from perspectrum.models.evidence_ranker import RANKER_FILE, Debate, EvidenceRanker, Featurizer
from perspectrum.models.scorers import CROSS_ENCODED
from perspectrum.train.tasks import _tune_on_dev, train_task
from tests.conftest import CLAIMS, EVIDENCE, PERSPECTIVES, write_dataset

PAIRS = [("Zoos should be banned", "Cages are cruel"), ("Zoos should be banned", "Zoos save species"),
         ("Homework should go", "Children need play"), ("Homework should go", "Practice helps learning")] * 3
TARGETS = [1.0, 0.0, 1.0, 0.0] * 3
TINY = TrainParams(epochs=1, batch_size=4, max_length=32, seed=5)


def _weights(model) -> dict:
    return {k: v.clone() for k, v in model.state_dict().items()}


@pytest.mark.slow  # fine-tunes three times (seconds)
def test_fine_tune_is_deterministic_for_a_seed():
    first, _, stats = fine_tune(PAIRS, TARGETS, TINY)
    again, _, _ = fine_tune(PAIRS, TARGETS, TINY)
    other, _, _ = fine_tune(PAIRS, TARGETS, TrainParams(**{**TINY.to_dict(), "seed": 6}))
    a, b, c = _weights(first), _weights(again), _weights(other)
    assert all((a[k] == b[k]).all() for k in a)
    assert any(not (a[k] == c[k]).all() for k in a)
    assert stats["steps"] == 3 and stats["examples"] == 12 and stats["positives"] == 6


def test_frozen_layers_keep_their_weights_and_length_batches_cover_every_pair():
    from perspectrum.train.fine_tune import _batches
    from perspectrum.encoders.bi_encoder import default_encoder_path, transformers_classes

    (auto,) = transformers_classes("AutoModelForSequenceClassification")
    pretrained = _weights(auto.from_pretrained(str(default_encoder_path()), num_labels=1))
    model, _, _ = fine_tune(PAIRS, TARGETS, TrainParams(**{**TINY.to_dict(), "frozen_layers": 4}))
    after = _weights(model)
    kept = [k for k in after if k.startswith(("bert.embeddings.", "bert.encoder.layer.0.", "bert.encoder.layer.3."))]
    moved = [k for k in after if k.startswith(("bert.encoder.layer.4.", "bert.encoder.layer.5."))]
    assert kept and moved
    assert all((after[k] == pretrained[k]).all() for k in kept)
    assert all(not (after[k] == pretrained[k]).all() for k in moved if k.endswith("weight"))
    with pytest.raises(PerspectrumError, match="cannot freeze 7 layers of a 6-layer model"):
        fine_tune(PAIRS, TARGETS, TrainParams(**{**TINY.to_dict(), "frozen_layers": 7}))
    import random

    texts = [("c", "x" * n) for n in (5, 50, 6, 49, 7, 48, 8, 47)] * 30
    params = TrainParams(batch_size=4, length_batches=True)
    batches = _batches(texts, params, random.Random(1))
    assert sorted(i for b in batches for i in b) == list(range(len(texts)))
    spread = [max(len(texts[i][1]) for i in b) - min(len(texts[i][1]) for i in b) for b in batches]
    assert sum(s > 3 for s in spread) <= 2  # one batch per pool at most straddles the short and long bands
    assert batches == _batches(texts, params, random.Random(1))  # the seed decides the order


def test_fine_tune_rejects_bad_targets():
    with pytest.raises(ValueError):
        fine_tune(PAIRS[:2], [1.0, 2.0], TINY)
    with pytest.raises(PerspectrumError):
        fine_tune([], [], TINY)


def test_saved_models_round_trip_with_card(trained_dir):
    data, indexes, models = trained_dir
    for task in CROSS_ENCODED:
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
        assert not (folder / RANKER_FILE).is_file() and "ranker" not in meta
    live = {p.resolve() for p in models.iterdir() if p.is_symlink()}  # each model links to its version
    assert not [p for p in models.iterdir() if p.name.startswith(".") and not p.name.endswith(".lock")
                and p not in live]  # no temp folders left


def test_the_evidence_model_is_the_ranker_alone_with_its_card(trained_dir):
    """No window cross-encoder: the folder holds the ranker (with its verifier), meta and card."""
    data, _, models = trained_dir
    folder = models / "evidence"
    assert sorted(p.name for p in folder.iterdir()) == sorted([RANKER_FILE, META_FILE, "README.md"])
    meta = json.loads((folder / META_FILE).read_text())
    assert meta["kind"] == "ranker" and meta["seeds"] == [13] and meta["tuned_on"] == "dev"
    assert set(meta["thresholds"]) >= {"weight", "aggregate"} and meta["ranker_thresholds"]["weight"] == 0.0
    card = (folder / "README.md").read_text()
    assert meta["data_checksum"] == data_checksum(data) and meta["data_checksum"] in card
    assert "window verifier" in card and "own_mean" in card
    EvidenceRanker.load(folder)  # loads: the arrays match the features


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
    for task in MODELS:
        members = load_task(models, task) if task in CROSS_ENCODED else []
        ranker = EvidenceRanker.load(models / task) if task == "evidence" else None
        scores = trained.score_split(task, members, dataset, dev, IndexStore(indexes), ranker=ranker)
        setting, _ = trained.tune(task, dev, scores)
        assert setting == read_meta(models, task)["thresholds"]


def _relabel(folder: Path, split: str) -> Path:
    """The fixture written to ``folder`` with every kind of label of ``split``'s claims changed.

    Per claim: every cluster is split into one cluster per perspective (so no pair stays
    equivalent) with the opposite stance (3- and 5-way labels, support and undermine votes
    swapped) and the next cluster's evidence ids; then an unused pool perspective and an
    unused paragraph join the first cluster (a new relevant perspective, a new equivalent
    pair, new gold evidence). Texts and pools stay as they were.
    """
    write_dataset(folder)
    used_pids = {p for _, _, clusters in CLAIMS.values() for pids, _, _ in clusters for p in pids}
    used_eids = {e for _, _, clusters in CLAIMS.values() for _, _, eids in clusters for e in eids}
    spare_pids = cycle(sorted(set(PERSPECTIVES) - used_pids))
    spare_eid = min(set(EVIDENCE) - used_eids)
    opposite = {"SUPPORT": "UNDERMINE", "UNDERMINE": "SUPPORT"}
    claims_file = folder / CLAIMS_FILE
    rows = json.loads(claims_file.read_text())
    for row in rows:
        if CLAIMS[row["cId"]][1] != split:
            continue
        old = row["perspectives"]
        new = []
        for n, cluster in enumerate(old):
            votes = cluster["voter_counts"]
            for pid in cluster["pids"]:
                new.append({"pids": [pid], "stance_label_3": opposite[cluster["stance_label_3"]],
                            "stance_label_5": opposite[cluster["stance_label_3"]],
                            "voter_counts": [votes[3], votes[2], votes[1], votes[0], votes[4]],
                            "evidence": list(old[(n + 1) % len(old)]["evidence"])})
        new[0]["pids"].append(next(spare_pids))
        new[0]["evidence"].append(spare_eid)
        row["perspectives"] = new
    claims_file.write_text(json.dumps(rows))
    return folder


def _labels(claim) -> tuple:
    """Everything gold about a claim: relevant set, equivalent pairs, and per perspective its
    stance and evidence."""
    pairs = {frozenset((p, q)) for k in claim.clusters for p in k.pids for q in k.pids if p != q}
    return (claim.gold_pids, pairs, {p: k.stance for k in claim.clusters for p in k.pids},
            {p: frozenset(k.evidence) for k in claim.clusters for p in k.pids})


def test_relabel_changes_every_kind_of_label_and_only_in_its_split(tmp_path):
    before = load_dataset(write_dataset(tmp_path / "before"), verify=False)
    after = load_dataset(_relabel(tmp_path / "after", "test"), verify=False)
    assert (after.perspectives, after.evidence) == (before.perspectives, before.evidence)
    for cid, claim in before.claims.items():
        if claim.split != "test":
            assert after.claims[cid] == claim
            continue
        gold, pairs, stance, evidence = _labels(claim)
        gold2, pairs2, stance2, evidence2 = _labels(after.claims[cid])
        assert gold < gold2 and not pairs & pairs2 and pairs2
        assert all(stance[p] != stance2[p] and evidence[p] != evidence2[p] for p in gold), cid


#: What the card says of training and tuning, less wall-clock figures.
CLOCKS = ("seconds", "build_seconds", "pairs_per_second")


def _made(meta: dict) -> dict:
    """A card's tuned settings, dev metrics and training record, without timings."""
    def still(value):
        if isinstance(value, dict):
            return {k: still(v) for k, v in value.items() if k not in CLOCKS}
        return [still(v) for v in value] if isinstance(value, list) else value

    return still({k: meta.get(k) for k in ("thresholds", "ranker_thresholds", "dev", "examples", "runs", "ranker")})


def _fixed_table(trained_dir):
    """The ranker's candidates and features for every fixture claim, from the original data."""
    data, indexes, _ = trained_dir
    dataset = load_dataset(data, verify=False)
    featurizer = Featurizer.for_dataset(IndexStore(indexes), dataset)
    return featurizer.table({c.cid: Debate.of(dataset, c) for c in dataset.claims.values()})


def test_test_labels_never_reach_any_model_setting_or_the_ranker(tmp_path, trained_dir):
    """Retrain all four tasks on data whose test labels are all changed: nothing moves.

    Same seed: every card's thresholds (and the evidence ranker's), dev metrics and
    training record, every model's weights, and the evidence ranker's probabilities on a
    fixed table come out identical to the original models'. The indexes are shared: they
    hold the pools' ids and texts only, which relabelling leaves as they were.
    """
    _, indexes, models = trained_dir
    relabelled = load_dataset(_relabel(tmp_path / "data", "test"), verify=False)
    store, again = IndexStore(indexes), tmp_path / "models"
    for task in MODELS:
        train_task(task, relabelled, store, again, seed=13, is_quick=True)
    for task in MODELS:
        original = json.loads((models / task / META_FILE).read_text())
        retrained = json.loads((again / task / META_FILE).read_text())
        assert original["thresholds"] and original["dev"]
        assert _made(retrained) == _made(original), task
        if task in CROSS_ENCODED:  # the ranker's arrays are compared by what they score, below
            weights = "model.safetensors"
            assert (again / task / weights).read_bytes() == (models / task / weights).read_bytes(), task
    assert json.loads((again / "evidence" / META_FILE).read_text())["ranker_thresholds"]
    table = _fixed_table(trained_dir)
    assert len(table.keys) > 0
    first = EvidenceRanker.load(models / "evidence").score(table)
    assert np.ptp(first) > 0  # probabilities that differ by candidate, so equal arrays say something
    assert np.array_equal(EvidenceRanker.load(again / "evidence").score(table), first)


def test_the_same_change_to_dev_labels_does_move_them(tmp_path, trained_dir):
    """The control: the comparison above can fail. Dev labels changed as the test labels
    were there move every task's dev metrics, and the evidence ranker's own tuned cut."""
    _, indexes, models = trained_dir
    store = IndexStore(indexes)
    ranker = EvidenceRanker.load(models / "evidence")
    relabelled = load_dataset(_relabel(tmp_path / "data", "dev"), verify=False)
    for task in MODELS:
        card = json.loads((models / task / META_FILE).read_text())
        members = load_task(models, task) if task in CROSS_ENCODED else []
        changes = _tune_on_dev(task, members, relabelled, store, is_quick=True,
                               show_progress=False, ranker=ranker if task == "evidence" else None)
        assert changes["dev"] != card["dev"], task
        if task == "evidence":
            assert changes["ranker_thresholds"] != card["ranker_thresholds"]


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
    assert result.output.strip().startswith("error: the shipped models are not unpacked in") and \
        "Traceback" not in result.output
    result = runner.invoke(app, ["train", "sentiment", "--data-dir", str(data_dir)])
    assert result.exit_code == 2
