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
- T4: each gold cluster is matched to the returned cluster sharing most of its
  perspectives and scored on that cluster's evidence; over gold clusters the
  pipeline found, and over all (a missed cluster has no evidence).
- T5 = T1 × T2 × T4 (found), because T1 already charges for every missed perspective:
  charging again in T2 and T4 would count one miss three times. The stricter product
  over all pairs and clusters is reported beside it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from perspectrum._progress import progress
from perspectrum.data import Claim, Dataset
from perspectrum.eval.ir import percent
from perspectrum.eval.metrics import ClusterKey, t1_relevance, t2_stance, t3_equivalence, t4_evidence, t5_overall
from perspectrum.errors import PerspectrumError
from perspectrum.eval.trained import PAPER_BERT, PAPER_HUMAN, T_OF
from perspectrum.pipeline import Discovery, Pipeline


def _found_claims(claims: Sequence[Claim], found: dict[int, set[int]]) -> list[Claim]:
    """The claims with each gold cluster cut down to the perspectives the pipeline returned."""
    out = []
    for claim in claims:
        clusters = tuple(replace(k, pids=tuple(p for p in k.pids if p in found[claim.cid])) for k in claim.clusters)
        out.append(replace(claim, clusters=tuple(k for k in clusters if k.pids)))
    return out


def score(claims: Sequence[Claim], results: Sequence[Discovery]) -> dict[str, Any]:
    """T1–T5 (fractions) of pipeline results, one per claim in order."""
    relevant: dict[int, list[int]] = {}
    stance: dict[tuple[int, int], bool] = {}
    same: dict[int, set[tuple[int, int]]] = {}
    evidence_all: dict[ClusterKey, list[int]] = {}
    matched: set[ClusterKey] = set()
    for claim, result in zip(claims, results):
        groups = [[int(p.id) for p in found.phrasings] for found in result.perspectives]
        relevant[claim.cid] = [pid for group in groups for pid in group]
        for found, group in zip(result.perspectives, groups):
            stance.update({(claim.cid, pid): found.stance == "support" for pid in group})
        same[claim.cid] = {pair for group in groups for pair in combinations(group, 2)}
        for index, cluster in enumerate(claim.clusters):
            overlap = [len(set(cluster.pids) & set(group)) for group in groups]
            if overlap and max(overlap) > 0:
                best = int(np.argmax(overlap))
                evidence_all[(claim.cid, index)] = [int(e.id) for e in result.perspectives[best].evidence]
                matched.add((claim.cid, index))
    found = {cid: set(pids) for cid, pids in relevant.items()}
    t1 = t1_relevance(claims, relevant)
    t2_found = t2_stance(_found_claims(claims, found), stance)
    t2_all = t2_stance(claims, stance)
    t3 = t3_equivalence(claims, same)
    t4_all = t4_evidence(claims, evidence_all)
    t4_found = t4_evidence([replace(c, clusters=tuple(k if (c.cid, i) in matched else replace(k, evidence=())
                                                      for i, k in enumerate(c.clusters))) for c in claims],
                           evidence_all)
    return {
        "t1": t1, "t2": t2_found, "t2_all": t2_all, "t3": t3, "t4": t4_found, "t4_all": t4_all,
        "t5": t5_overall(t1["f1"], t2_found["f1"], t4_found["f1"]),
        "t5_all": t5_overall(t1["f1"], t2_all["f1"], t4_all["f1"]),
    }


def _oracle(models_dir: Path, split: str) -> dict[str, Any]:
    """The per-task scores on gold inputs recorded in each model's card (``evaluate --system trained``)."""
    from perspectrum.models import TASKS, read_meta

    out = {}
    for task in TASKS:
        try:
            out[T_OF[task]] = read_meta(models_dir, task).get(split)
        except PerspectrumError:  # a light-head pipeline has no cards; the column stays empty
            out[T_OF[task]] = None
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
    stages = {stage: round(sum(r.timings.get(stage, 0.0) for r in results), 2) for stage in results[0].timings} \
        if results else {}
    oracle = _oracle(pipe.models_dir, split)
    return {
        "system": "pipeline",
        "models": pipe.system,
        "split": split,
        "tuned_on": "dev",
        "tasks": {key: percent(value) for key, value in scores.items() if not key.startswith("t5")},
        "t5": round(scores["t5"] * 100, 2),
        "t5_all": round(scores["t5_all"] * 100, 2),
        "oracle": oracle,
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
