"""End-to-end scores: T1–T5 of what `perspectrum discover` actually returns.

The per-task evaluation (:mod:`perspectrum.eval.trained`) gives each model gold inputs:
stance is read for every gold perspective, clusters are formed from the gold
perspectives alone, evidence is sought for gold clusters. Here every stage sees only
what the stage before it returned, so the gap between the two rows is the error that
propagates through the pipeline.

- T1 from the perspectives in the returned clusters.
- T2 from the returned stance of each returned gold perspective, two ways: over the
  gold pairs the pipeline *found* (is the stance right when the perspective is there?)
  and over *all* gold pairs (a missed perspective counts as a wrong "undermine").
- T3 from the returned clusters: two gold perspectives are called equivalent when one
  returned cluster holds both (a missed perspective is equivalent to nothing).
- T4: gold clusters and returned clusters are matched one to one (:func:`assign_clusters`) and a
  gold cluster is scored on its match's evidence; over the gold clusters the pipeline
  found, and over all (a missed cluster has no evidence).
- T5 two ways: *strict*, T1 × T2 × T4 over all pairs and clusters (every miss counts in
  each factor), and *found*, T1 × T2 × T4 over what was found (T1 alone charges for
  misses). Both are reported with the coverage that separates them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from itertools import combinations
from typing import Any

import numpy as np

from perspectrum._progress import progress
from perspectrum.data import Claim, Dataset
from perspectrum.eval import offtopic
from perspectrum.eval.metrics import (ClusterKey, calibration_bins, calibration_error, percent, t1_relevance, t2_stance, t3_equivalence, t4_evidence,
                                      t5_overall)
from perspectrum.errors import PerspectrumError
from perspectrum.eval.trained import PAPER_BERT, PAPER_HUMAN
from perspectrum.pipeline.pipeline import Discovery, Pipeline
from perspectrum.models.evidence_ranker import Debate
from perspectrum.models.rules import keep, ranked
from perspectrum.models.scorers import MODELS
from perspectrum.models.store import T_METRIC
from perspectrum.pipeline.settings import configure
from perspectrum.pipeline.stages import EvidenceStage


def found_claims(claims: Sequence[Claim], found: dict[int, set[int]]) -> list[Claim]:
    """The claims with each gold cluster cut down to the perspectives the pipeline returned."""
    out = []
    for claim in claims:
        clusters = tuple(replace(k, pids=tuple(p for p in k.pids if p in found[claim.cid])) for k in claim.clusters)
        out.append(replace(claim, clusters=tuple(k for k in clusters if k.pids)))
    return out


def assign_clusters(gold: Sequence[Sequence[int]], returned: Sequence[Sequence[int]]) -> dict[int, int]:
    """Gold cluster index → returned cluster index, one to one, most shared perspectives overall.

    The assignment (Hungarian, ``scipy.optimize.linear_sum_assignment``) maximises the
    total number of gold perspectives the matched pairs share; pairs sharing none are
    not matches. So no returned cluster stands for two gold clusters, and a gold
    cluster split over several returned ones is credited with one of them.
    """
    from scipy.optimize import linear_sum_assignment

    if not gold or not returned:
        return {}
    overlap = np.array([[len(set(g) & set(r)) for r in returned] for g in gold])
    rows, cols = linear_sum_assignment(overlap, maximize=True)
    return {int(g): int(r) for g, r in zip(rows, cols) if overlap[g, r] > 0}


def score(claims: Sequence[Claim], results: Sequence[Discovery]) -> dict[str, Any]:
    """T1–T5 (fractions) of pipeline results, one per claim in order, with coverage and
    the stance-purity rates users see.

    Besides the T-metrics: ``coverage`` (share of gold pairs whose perspective was
    returned, and of gold clusters with evidence matched one to one), ``mixed`` (share
    of returned clusters holding two or more gold perspectives whose gold stances
    differ), ``wrong_stance`` (share of returned gold perspectives shown under the
    wrong stance; cards shown as "side unclear" left out), ``unclear`` (share of returned
    clusters shown as "side unclear"), ``opposite_evidence`` (share of the cards on a side
    with evidence whose top paragraph is gold evidence only of the claim's clusters on the
    other side), ``calibration_error`` (expected calibration error of
    the shown confidence over those returned gold perspectives, 10 bins; ``calibration_bins``
    its table), ``both_sides`` (share of claims answered with at least one supporting and
    one undermining cluster) and ``emptied`` (share answered with nothing).
    """
    relevant: dict[int, list[int]] = {}
    stance: dict[tuple[int, int], bool] = {}
    same: dict[int, set[tuple[int, int]]] = {}
    evidence_all: dict[ClusterKey, list[int]] = {}
    matched: set[ClusterKey] = set()
    mixed = multi = shown = wrong = both = emptied = cards = unclear = evidenced = opposite = 0
    confidences: list[float] = []
    correct: list[bool] = []
    for claim, result in zip(claims, results):
        groups = [[int(p.id) for p in found.phrasings] for found in result.perspectives]
        relevant[claim.cid] = [pid for group in groups for pid in group]
        gold_stance = {pid: k.stance == "SUPPORT" for k in reversed(claim.clusters) for pid in k.pids}
        argues = {}  # paragraph -> the gold sides it is evidence for
        for k in claim.clusters:
            for e in k.evidence:
                argues.setdefault(int(e), set()).add(k.stance == "SUPPORT")
        for found, group in zip(result.perspectives, groups):
            if found.evidence and found.stance != "unclear":
                evidenced += 1
                sides = argues.get(int(found.evidence[0].id), set())
                opposite += sides == {not found.leans_support}
            says = found.leans_support  # T2 reads the side an unclear card leans to
            stance.update({(claim.cid, pid): says for pid in group})
            golds = [gold_stance[pid] for pid in group if pid in gold_stance]
            cards += 1
            if found.stance == "unclear":  # shown on no side: neither right nor wrong to a reader
                unclear += 1
            else:
                shown += len(golds)
                wrong += sum(g != says for g in golds)
                confidences += [found.stance_confidence] * len(golds)
                correct += [g == says for g in golds]
            if len(golds) >= 2:
                multi += 1
                mixed += len(set(golds)) > 1
        both += bool(result.supporting) and bool(result.undermining)
        emptied += not result.perspectives
        same[claim.cid] = {pair for group in groups for pair in combinations(group, 2)}
        for index, returned in assign_clusters([k.pids for k in claim.clusters], groups).items():
            evidence_all[(claim.cid, index)] = [int(e.id) for e in result.perspectives[returned].evidence]
            matched.add((claim.cid, index))
    found = {cid: set(pids) for cid, pids in relevant.items()}
    t1 = t1_relevance(claims, relevant)
    t2_found = t2_stance(found_claims(claims, found), stance)
    t2_all = t2_stance(claims, stance)
    t3 = t3_equivalence(claims, same)
    t4_all = t4_evidence(claims, evidence_all)
    t4_found = t4_evidence([replace(c, clusters=tuple(k if (c.cid, i) in matched else replace(k, evidence=())
                                                      for i, k in enumerate(c.clusters))) for c in claims],
                           evidence_all)
    with_evidence = [(c.cid, i) for c in claims for i, k in enumerate(c.clusters) if k.evidence]
    n = max(1, len(claims))
    return {
        "t1": t1, "t2": t2_found, "t2_all": t2_all, "t3": t3, "t4": t4_found, "t4_all": t4_all,
        "t5": t5_overall(t1["f1"], t2_found["f1"], t4_found["f1"]),
        "t5_all": t5_overall(t1["f1"], t2_all["f1"], t4_all["f1"]),
        "coverage": {"pairs": t2_found["pairs"] / max(1.0, t2_all["pairs"]),
                     "clusters": sum(key in matched for key in with_evidence) / max(1, len(with_evidence))},
        "mixed": mixed / max(1, multi), "mixed_of": multi,
        "wrong_stance": wrong / max(1, shown), "shown": shown,
        "unclear": unclear / max(1, cards), "cards": cards,
        "opposite_evidence": opposite / max(1, evidenced), "evidenced_cards": evidenced,
        "calibration_error": calibration_error(confidences, correct),
        "calibration_bins": calibration_bins(confidences, correct),
        "both_sides": both / n, "emptied": emptied / n,
    }


def gold_input_evidence(dataset: Dataset, claims: Sequence[Claim], results: Sequence[Discovery],
                        pipe: Pipeline) -> dict[str, dict[str, float]]:
    """T4 with gold clusters as input, two ways, with the pipeline's evidence cut.

    The evidence ranker compares a cluster with its *siblings*. ``gold_siblings`` gives
    it every gold cluster of the claim (what ``evaluate --system trained`` does, and
    what the paper's system did not have); ``predicted_siblings`` gives it the gold
    cluster with the clusters the pipeline returned for the claim as siblings (all but
    the one matched to it), as a system that only knows its own answer would have.
    """
    stage = configure(EvidenceStage, pipe.settings["evidence"])
    gold: dict[Any, Debate] = {}
    predicted: dict[Any, Debate] = {}
    for claim, result in zip(claims, results):
        texts = [tuple(dataset.perspectives[p].text for p in k.pids) for k in claim.clusters]
        returned = [tuple(p.text for p in found.phrasings) for found in result.perspectives]
        matched = assign_clusters([k.pids for k in claim.clusters],
                                  [[int(p.id) for p in f.phrasings] for f in result.perspectives])
        for index, cluster in enumerate(claim.clusters):
            if cluster.evidence:
                gold[(claim.cid, index)] = Debate(claim.text, (texts[index], *texts[:index], *texts[index + 1:]))
                siblings = tuple(r for j, r in enumerate(returned) if j != matched.get(index))
                predicted[(claim.cid, index)] = Debate(claim.text, (texts[index], *siblings))
    out = {}
    for name, debates in (("gold_siblings", gold), ("predicted_siblings", predicted)):
        keys, probs = pipe.scorers.evidence(debates, stage.depth)
        scored: dict[Any, list[tuple[Any, float]]] = {}
        for (key, cluster, doc_id), p in zip(keys, probs):
            if cluster == 0:
                scored.setdefault(key, []).append((doc_id, float(p)))
        out[name] = percent(t4_evidence(claims, {key: keep(ranked(run), stage.cut) for key, run in scored.items()}))
    return out


def _oracle(pipe: Pipeline, split: str) -> dict[str, Any]:
    """The per-task scores on gold inputs recorded in each answering model's card (``evaluate --system trained``)."""
    from perspectrum.models.store import read_meta

    homes = getattr(pipe.scorers, "homes", {})
    out = {}
    for model in MODELS:
        try:
            out[T_METRIC[model]] = read_meta(homes.get(model, pipe.models_dir), model).get(split)
        except PerspectrumError:  # scorers of your own may have no cards; the column stays empty
            out[T_METRIC[model]] = None
    return out


def evaluate_pipeline(dataset: Dataset, pipe: Pipeline, split: str = "test", batch_size: int = 16,
                      show_progress: bool = False) -> dict[str, Any]:
    """Run ``discover_many`` over every claim of ``split`` and score what it returns.

    Nothing is tuned here: every cut-off is the dev-tuned one the pipeline holds.

    Returns:
        A JSON-ready dict: end-to-end T1–T5 (percent), the per-task oracle-input
        scores beside them, the paper's rows, settings, and time per claim and stage.
    """
    claims = dataset.split(split)
    started = time.perf_counter()
    pipe.warm_up()
    load_seconds = time.perf_counter() - started
    results: list[Discovery] = []
    began = time.perf_counter()
    with progress(f"discover {split}", len(claims), enabled=show_progress) as advance:
        for start in range(0, len(claims), batch_size):
            batch = claims[start:start + batch_size]
            results += pipe.discover_many([c.text for c in batch], batch_size=batch_size)
            advance(len(batch))
    run_seconds = time.perf_counter() - began
    scores = score(claims, results)
    gold_input_t4 = gold_input_evidence(dataset, claims, results, pipe)
    held_out = pipe.discover_many(list(offtopic.HELD_OUT), evidence=False)
    answered = [claim for claim, r in zip(offtopic.HELD_OUT, held_out) if r.perspectives]
    stages = {stage: round(sum(r.timings.get(stage, 0.0) for r in results), 2) for stage in results[0].timings} \
        if results else {}
    oracle = _oracle(pipe, split)
    return {
        "system": "pipeline",
        "models": pipe.system,
        "split": split,
        "tuned_on": "dev",
        "tasks": {key: percent(scores[key]) for key in ("t1", "t2", "t2_all", "t3", "t4", "t4_all")},
        "t5": round(scores["t5"] * 100, 2),
        "t5_all": round(scores["t5_all"] * 100, 2),
        "coverage": {k: round(v * 100, 2) for k, v in scores["coverage"].items()},
        "purity": {"mixed_clusters": round(scores["mixed"] * 100, 2), "of_clusters": scores["mixed_of"],
                   "wrong_stance": round(scores["wrong_stance"] * 100, 2), "of_perspectives": scores["shown"],
                   "unclear_cards": round(scores["unclear"] * 100, 2), "of_cards": scores["cards"],
                   "opposite_evidence": round(scores["opposite_evidence"] * 100, 2),
                   "of_evidenced_cards": scores["evidenced_cards"]},
        "calibration": {"error": round(scores["calibration_error"], 4), "bins": scores["calibration_bins"],
                        "over": "returned gold perspectives on a side, 10 bins of the shown confidence"},
        "both_sides": round(scores["both_sides"] * 100, 2),
        "emptied": round(scores["emptied"] * 100, 2),
        "offtopic": {"claims": len(offtopic.HELD_OUT), "answered": answered,
                     "answered_share": round(100 * len(answered) / len(offtopic.HELD_OUT), 2)},
        "oracle": oracle,
        "t4_gold_input": gold_input_t4,
        "paper": {"ir_bert": PAPER_BERT, "human": PAPER_HUMAN},
        "settings": pipe.settings,
        "config": pipe.config.to_dict(),
        "claims": len(claims),
        "clusters_returned": sum(len(r.perspectives) for r in results),
        "batch_size": batch_size,
        "stage_seconds": stages,
        "load_seconds": round(load_seconds, 2),
        "seconds_per_claim": round(run_seconds / max(1, len(claims)), 3),
        "seconds": round(time.perf_counter() - started, 1),
    }
