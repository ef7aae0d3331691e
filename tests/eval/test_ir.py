"""The IR baselines end to end on the fixture, and their tuning pieces."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from perspectrum.data import Dataset
from perspectrum.eval.ir import METHODS, T4_CUTOFFS, T4_QUERIES, Cutoff, evaluate_ir, t3_pairs, t4_queries
from perspectrum.eval.report import ir_table, ir_tuning, plot_recall_curves
from perspectrum.index.store import IndexStore
from perspectrum.index.search import Hit


def test_cutoff_top_k_and_relative() -> None:
    hits = [Hit(1, 10.0), Hit(2, 8.0), Hit(3, 5.0), Hit(4, 4.9)]
    assert Cutoff(2).apply(hits) == [1, 2]
    assert Cutoff(10, ratio=0.5).apply(hits) == [1, 2, 3]  # 5.0 >= 0.5 x 10, 4.9 is not
    assert Cutoff(2, ratio=0.1).apply(hits) == [1, 2]  # the cap still holds
    assert Cutoff(3, ratio=0.9).apply([]) == []


def test_t3_pairs_take_either_direction() -> None:
    neighbours = {7: {1: [2, 3], 2: [3, 1], 3: [1, 2]}}
    assert t3_pairs(neighbours, 1) == {7: {(1, 2), (2, 3), (1, 3)}}
    assert t3_pairs(neighbours, 0) == {7: set()}


def test_t4_query_modes(dataset) -> None:
    claim = dataset.claims[9]
    cluster = t4_queries(dataset, [claim], "cluster")
    assert cluster[(9, 0)] == f"{claim.text} {dataset.perspectives[25].text} {dataset.perspectives[26].text}"
    assert t4_queries(dataset, [claim], "perspective")[(9, 0)] == f"{claim.text} {dataset.perspectives[25].text}"
    assert claim.text not in t4_queries(dataset, [claim], "cluster_no_claim")[(9, 0)]
    # claim 2's second cluster has no gold evidence, so it gets no query
    assert (2, 1) not in t4_queries(dataset, [dataset.claims[2]], "cluster")
    with pytest.raises(ValueError):
        t4_queries(dataset, [claim], "title")


def test_evaluate_ir_on_the_fixture(dataset, tmp_path: Path, encoder) -> None:
    store = IndexStore(tmp_path / "idx")
    store._encoder = encoder
    result = evaluate_ir(dataset, store, split="test", tune_split="dev")
    assert set(result["methods"]) == set(METHODS)
    for scores in result["methods"].values():
        assert 0 <= scores["t1"]["f1"] <= 100 and 1 <= scores["t1"]["k"] <= 100
        assert scores["t2"]["recall"] == 100.0  # always "support"
        assert scores["t5"] == pytest.approx(
            scores["t1"]["f1"] * scores["t2"]["f1"] * scores["t4"]["f1"] / 1e4, abs=0.01)
    # the fixture's test claims are easy for BM25: each claim shares words with its perspectives
    assert result["methods"]["bm25"]["t1"]["recall"] > 0
    assert result["recall_curves"]["split"] == "dev"
    assert len(result["recall_curves"]["t1"]["bm25"]) == len(result["recall_curves"]["t1"]["k"])
    assert result["recall_curves"]["t1"]["bm25"] == sorted(result["recall_curves"]["t1"]["bm25"])
    assert {v["query"] for v in result["t4_variants"]} == {"cluster", "perspective", "cluster_no_claim"}
    assert result["latency"]["perspectives"]["bm25"]["queries"] == 2
    plot = plot_recall_curves(result, tmp_path / "curves.png")
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert ir_table(result).row_count == 4 * 3 + 1
    assert len(ir_tuning(result)) == len(METHODS)


def _choices(result: dict[str, Any]) -> dict[str, Any]:
    """Everything the IR baseline chose or drew for tuning: cut-offs, T4 variants and their dev F1, curves."""
    keep = ("k", "m", "query", "cutoff", "ratio", "dev_f1")
    return {
        "methods": {name: {task: {k: v for k, v in scores[task].items() if k in keep} for task in ("t1", "t3", "t4")}
                    for name, scores in result["methods"].items()},
        "variants": [{k: v for k, v in row.items() if k in keep or k == "method"} for row in result["t4_variants"]],
        "curves": result["recall_curves"],
    }


def _swap_labels(dataset: Dataset, split: str) -> Dataset:
    """The dataset with the gold clusters (perspectives, stances, evidence) of ``split``'s claims rotated among them."""
    claims = dataset.split(split)
    assert len(claims) >= 2
    rotated = dict(dataset.claims)
    for claim, other in zip(claims, claims[1:] + claims[:1]):
        rotated[claim.cid] = replace(claim, clusters=other.clusters)
    return replace(dataset, claims=rotated)


def test_t4_variant_is_chosen_on_dev_and_test_labels_change_no_choice(dataset, tmp_path: Path, encoder) -> None:
    store = IndexStore(tmp_path / "idx")
    store._encoder = encoder
    result = evaluate_ir(dataset, store, split="test", tune_split="dev")
    assert len(result["t4_variants"]) == len(METHODS) * len(T4_QUERIES) * len(T4_CUTOFFS)
    for name, scores in result["methods"].items():
        own = [v for v in result["t4_variants"] if v["method"] == name]
        chosen = next(v for v in own if (v["query"], v["cutoff"]) == (scores["t4"]["query"], scores["t4"]["cutoff"]))
        # the reported T4 is the dev-best variant's test score, with that variant's settings
        assert chosen["dev_f1"] == max(v["dev_f1"] for v in own) == scores["t4"]["dev_f1"]
        assert {k: scores["t4"][k] for k in chosen["macro"]} == chosen["macro"]
        assert (scores["t4"]["k"], scores["t4"]["ratio"]) == (chosen["k"], chosen["ratio"])
        assert scores["t5"] == pytest.approx(
            scores["t1"]["f1"] * scores["t2"]["f1"] * scores["t4"]["f1"] / 1e4, abs=0.01)
    assert result["recall_curves"]["split"] == "dev"
    lines = ir_tuning(result)
    assert len(lines) == len(result["methods"])
    for line, (name, scores) in zip(lines, result["methods"].items()):
        assert line.startswith(f"{name}: ") and f"T4 {scores['t4']['query']} query" in line

    # other test labels: the test scores move, but no choice, dev figure or curve does
    relabelled = evaluate_ir(_swap_labels(dataset, "test"), store, split="test", tune_split="dev")
    assert _choices(relabelled) == _choices(result)
    assert [v["macro"] for v in relabelled["t4_variants"]] != [v["macro"] for v in result["t4_variants"]]
    assert relabelled["methods"]["bm25"]["t1"]["f1"] != result["methods"]["bm25"]["t1"]["f1"]
    # the same change to dev labels does move them, so the check above can fail
    dev_changed = evaluate_ir(_swap_labels(dataset, "dev"), store, split="test", tune_split="dev")
    assert _choices(dev_changed)["curves"] != _choices(result)["curves"]
    assert _choices(dev_changed)["variants"] != _choices(result)["variants"]
