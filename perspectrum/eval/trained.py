"""The trained system, task by task on gold inputs (as the paper scores each step).

- T1: the claim's dense top-``RELEVANCE_DEPTH`` perspectives, rescored by the relevance
  cross-encoder blended with the dense cosine; keep those above an absolute floor or
  a fraction of the claim's best score, at most ``k``.
- T2: P(support) from the stance model(s) for every gold perspective, optionally
  centred on the claim's median (a claim-level bias cancels out); support ≥ threshold.
- T3: every pair of a claim's gold perspectives scored by the equivalence model,
  blended with the pair's dense cosine; pairs ≥ threshold are equivalent, either
  directly or after average-linkage clustering.
- T4: each gold cluster's candidates and P(evidence) from the evidence ranker
  (:mod:`perspectrum.models.evidence_ranker`, which compares a paragraph with every cluster of the
  claim); every 3-sentence window is scored by the ranker's window verifier, a
  paragraph's window score is its best (or mean) window, blended with the ranker's
  probability, then cut as in T1.

Every threshold is tuned on dev by :func:`tune`, stored in the model's
``perspectrum.json``, and only applied (never re-tuned) to the evaluation split.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from perspectrum.encoders.cross_encoder import CrossEncoderModel, Pair
from perspectrum.data import Claim, Dataset, Pool
from perspectrum.eval.ir import best_of
from perspectrum.eval.metrics import (ClusterKey, percent, t1_relevance, t2_stance, t3_equivalence, t4_evidence,
                                      t5_overall)
from perspectrum.models.inputs import claim_perspective_input, equivalence_input
from perspectrum.index.store import IndexStore
from perspectrum.models.store import T_METRIC, load_task, read_meta, update_meta
from perspectrum.models.evidence_ranker import Debate, EvidenceRanker, Featurizer
from perspectrum.models.rules import average_linkage, blend, keep, ranked
from perspectrum.models.scorers import CROSS_ENCODED
from perspectrum.models.scorers import MODELS
from perspectrum.index.search import Hit
from perspectrum.text.polarity import is_restrictive, negate

#: Dense candidates per claim for T1 (they cover 77.9 % of dev gold clusters; `evaluate --system ir` curves).
RELEVANCE_DEPTH = 50

THRESHOLDS = tuple(round(float(t), 2) for t in np.arange(0.02, 0.99, 0.02))
#: Relative cut-offs: keep what scores at least this fraction of the best candidate.
RATIOS = tuple(round(float(t), 2) for t in np.arange(0.5, 0.99, 0.02))
#: Weight of the model against the prior: the cross-encoder against the retriever's own
#: score, or for T4 the verifier's window score against the evidence ranker's probability
#: (1 = model alone, 0 = prior alone).
WEIGHTS = (1.0, 0.8, 0.6, 0.5, 0.4, 0.2)
EVIDENCE_WEIGHTS = (*WEIGHTS, 0.0)
T1_CAPS = (5, 10, 15, 20, 30, 50)
T4_CAPS = (1, 2, 3, 4, 5, 6, 8, 10, 15, 20)

#: A retrieved candidate: (id, model score, prior score in [0, 1]).
Candidate = tuple[int, float, float]


class Scored:
    """Retrieved candidates per claim (T1) or cluster (T4), with model and retrieval scores.

    Rankings by a blend of the two are computed once per weight and cached, because
    dev tuning cuts the same ranking thousands of ways.
    """

    def __init__(self, groups: dict[Any, list[Candidate]]) -> None:
        self.groups = groups
        self._ranked: dict[float, dict[Any, list[tuple[float, int]]]] = {}

    def ranked(self, weight: float) -> dict[Any, list[tuple[float, int]]]:
        """Per group, (weight × model + (1 − weight) × retrieval, id), best first."""
        if weight not in self._ranked:
            self._ranked[weight] = {key: ranked((item, blend(m, r, weight)) for item, m, r in candidates)
                                    for key, candidates in self.groups.items()}
        return self._ranked[weight]

    def predict(self, setting: Mapping[str, Any]) -> dict[Any, list[int]]:
        """Each group's kept ids under ``setting`` (see :func:`keep`)."""
        return {key: keep(ranked, setting) for key, ranked in self.ranked(setting["weight"]).items()}


def _timed_score(model: CrossEncoderModel, pairs: Sequence[Pair], show_progress: bool,
                 description: str, timing: dict[str, float] | None) -> np.ndarray:
    """Score pairs and record pairs/s under ``timing[description]``."""
    start = time.perf_counter()
    scores = model.score(pairs, show_progress=show_progress, description=description)
    if timing is not None and len(pairs):
        timing[description] = round(len(pairs) / (time.perf_counter() - start), 1)
    return scores


def _cut_grid(caps: Sequence[int], weights: Sequence[float] = WEIGHTS) -> list[dict[str, Any]]:
    """Every (weight, absolute or relative floor, cap, min_keep) setting :func:`keep` takes."""
    grid = []
    for weight in weights:
        for k in caps:
            grid += [{"weight": weight, "relative": False, "threshold": t, "k": k, "min_keep": m}
                     for t in THRESHOLDS for m in (0, 1)]
            grid += [{"weight": weight, "relative": True, "threshold": t, "k": k, "min_keep": 1} for t in RATIOS]
    return grid


def _group(keys: Sequence[tuple[Any, int]], model: np.ndarray, retrieval: Sequence[float]) -> Scored:
    """Candidates grouped by their claim or cluster key, in input order."""
    groups: dict[Any, list[Candidate]] = {}
    for (group, item), m, r in zip(keys, model, retrieval):
        groups.setdefault(group, []).append((item, float(m), float(r)))
    return Scored(groups)


# ----------------------------------------------------------------------------- T1
def relevance_candidates(store: IndexStore, dataset: Dataset, claims: Sequence[Claim],
                         depth: int = RELEVANCE_DEPTH) -> dict[int, list[Hit]]:
    """Each claim's dense top-``depth`` perspectives (cosine scores)."""
    dense = store.open(Pool.from_dataset(dataset, "perspectives"), "dense")
    runs = dense.batch_search([c.text for c in claims], depth)
    return {c.cid: hits for c, hits in zip(claims, runs)}


def relevance_scores(model: CrossEncoderModel, dataset: Dataset, claims: Sequence[Claim],
                     candidates: Mapping[int, Sequence[Hit]], show_progress: bool = False,
                     timing: dict[str, float] | None = None) -> Scored:
    """Each candidate with its relevance probability and dense cosine similarity."""
    hits = [(c.cid, hit) for c in claims for hit in candidates.get(c.cid, ())]
    text = {c.cid: c.text for c in claims}
    pairs = [claim_perspective_input(text[cid], dataset.perspectives[hit.doc_id].text) for cid, hit in hits]
    scores = _timed_score(model, pairs, show_progress, "relevance", timing)
    return _group([(cid, hit.doc_id) for cid, hit in hits], scores, [hit.score for _, hit in hits])


def relevance_predict(scores: Scored, setting: Mapping[str, Any]) -> dict[int, list[int]]:
    return scores.predict(setting)


# ----------------------------------------------------------------------------- T2
def stance_scores(models: Sequence[CrossEncoderModel], dataset: Dataset, claims: Sequence[Claim],
                  show_progress: bool = False, timing: dict[str, float] | None = None) -> dict[tuple[int, int], float]:
    """Mean P(support) over the ensemble for every gold (claim, perspective) pair."""
    keys = [(c.cid, pid) for c in claims for k in c.clusters for pid in k.pids]
    text = {c.cid: c.text for c in claims}
    pairs = [claim_perspective_input(text[cid], dataset.perspectives[pid].text) for cid, pid in keys]
    total = np.zeros(len(pairs), dtype=np.float64)
    for member in models:
        total += _timed_score(member, pairs, show_progress, "stance", timing)
    return {key: float(s) for key, s in zip(keys, total / max(1, len(models)))}


def centre_by_claim(scores: Mapping[tuple[int, int], float]) -> dict[tuple[int, int], float]:
    """Shift each claim's scores so their median sits at 0.5.

    Most claims have perspectives on both sides; a model that reads one claim as
    "everything supports" is corrected by comparing the claim's perspectives with each
    other. Uses only model scores, never labels.
    """
    by_claim: dict[int, list[float]] = {}
    for (cid, _), score in scores.items():
        by_claim.setdefault(cid, []).append(score)
    median = {cid: float(np.median(values)) for cid, values in by_claim.items()}
    return {key: score - median[key[0]] + 0.5 for key, score in scores.items()}


def stance_predict(scores: Mapping[tuple[int, int], float], setting: Mapping[str, Any]) -> dict[tuple[int, int], bool]:
    values = centre_by_claim(scores) if setting["centre"] else scores
    return {key: score >= setting["threshold"] for key, score in values.items()}


def polarity_check(models: Sequence[CrossEncoderModel], dataset: Dataset, claims: Sequence[Claim],
                   setting: Mapping[str, Any], show_progress: bool = False) -> dict[str, Any]:
    """Does the stance model read what a claim proposes, or only its subject?

    Accuracy on every gold (claim, perspective) pair of ``claims`` (``overall``), on the
    claims that ban, abolish, limit or end something or are stated negatively
    (``restrictive``, :func:`~perspectrum.text.polarity.is_restrictive`), and on the claims'
    negations with every label flipped (``negated``, :func:`~perspectrum.text.polarity.negate`),
    all at the model's own ``setting``. ``polarity`` pools the last two; ``gap`` is how many
    points it lies below ``overall`` (the issue's target: at most 3).
    """
    gold = {(c.cid, pid): k.stance == "SUPPORT" for c in claims for k in reversed(c.clusters) for pid in k.pids}
    scores = stance_scores(models, dataset, claims, show_progress)
    opposite = {c.cid: negate(c.text) for c in claims}
    keys = [(c.cid, pid) for c in claims if opposite[c.cid] for k in c.clusters for pid in k.pids]
    pairs = [claim_perspective_input(opposite[cid], dataset.perspectives[pid].text) for cid, pid in keys]
    flipped = np.zeros(len(pairs))
    for member in models:
        flipped += _timed_score(member, pairs, show_progress, "stance (negated claims)", None)
    flipped_scores = {(-cid - 1, pid): float(s) for (cid, pid), s in zip(keys, flipped / max(1, len(models)))}
    said = stance_predict(scores, setting) | stance_predict(flipped_scores, setting)
    right = {key: said[key] == gold[key] for key in scores}
    right |= {key: said[key] != gold[(-key[0] - 1, key[1])] for key in flipped_scores}
    restrictive = {c.cid for c in claims if is_restrictive(c.text)}
    groups = {
        "overall": [r for (cid, _), r in right.items() if cid >= 0],
        "restrictive": [r for (cid, _), r in right.items() if cid in restrictive],
        "negated": [r for (cid, _), r in right.items() if cid < 0],
    }
    groups["polarity"] = groups["restrictive"] + groups["negated"]
    out: dict[str, Any] = {name: {"accuracy": round(100 * sum(rows) / max(1, len(rows)), 2), "pairs": len(rows)}
                           for name, rows in groups.items()}
    out["claims"] = {"all": len(claims), "restrictive": len(restrictive), "negated": sum(map(bool, opposite.values()))}
    out["gap"] = round(out["overall"]["accuracy"] - out["polarity"]["accuracy"], 2)
    out["examples"] = [[c.text, opposite[c.cid]] for c in claims[:5] if opposite[c.cid]]
    return out


# ----------------------------------------------------------------------------- T3
#: Per claim: its sorted gold perspective ids, the model's and the bi-encoder's matrices.
Matrices = dict[int, tuple[list[int], np.ndarray, np.ndarray]]


def equivalence_scores(model: CrossEncoderModel, dataset: Dataset, claims: Sequence[Claim], store: IndexStore,
                       show_progress: bool = False, timing: dict[str, float] | None = None) -> Matrices:
    """Every pair of a claim's gold perspectives, by the cross-encoder and by cosine.

    The cosine of the dense index's embeddings is a second, independent view of
    "says the same thing"; dev tuning decides how much of it to blend in.
    """
    dense = store.open(Pool.from_dataset(dataset, "perspectives"), "dense")
    keys, pairs = [], []
    for claim in claims:
        pids = sorted(claim.gold_pids)
        for i, j in combinations(range(len(pids)), 2):
            keys.append((claim.cid, i, j))
            first, second = dataset.perspectives[pids[i]].text, dataset.perspectives[pids[j]].text
            pairs.append(equivalence_input(claim.text, first, second))
    scores = _timed_score(model, pairs, show_progress, "equivalence", timing)
    out: Matrices = {}
    for claim in claims:
        pids = sorted(claim.gold_pids)
        cosine = dense.score([dataset.perspectives[p].text for p in pids], pids)
        out[claim.cid] = (pids, np.eye(len(pids), dtype=np.float32), cosine)
    for (cid, i, j), score in zip(keys, scores):
        out[cid][1][i, j] = out[cid][1][j, i] = score
    return out


def equivalent_pairs(pids: Sequence[int], matrix: np.ndarray, method: str, threshold: float) -> set[tuple[int, int]]:
    """Pairs called equivalent: directly (``pairs``) or via average-linkage clusters."""
    n = len(pids)
    if method == "pairs" or n < 2:
        return {(pids[i], pids[j]) for i, j in combinations(range(n), 2) if matrix[i, j] >= threshold}
    labels = average_linkage(matrix, threshold)
    return {(pids[i], pids[j]) for i, j in combinations(range(n), 2) if labels[i] == labels[j]}


def equivalence_predict(scores: Matrices, setting: Mapping[str, Any]) -> dict[int, set[tuple[int, int]]]:
    """Pairs called equivalent after blending: weight × model + (1 − weight) × cosine."""
    weight = setting["weight"]
    return {cid: equivalent_pairs(pids, weight * model + (1 - weight) * cosine, setting["method"],
                                  setting["threshold"])
            for cid, (pids, model, cosine) in scores.items()}


# ----------------------------------------------------------------------------- T4
def evidence_scores(ranker: EvidenceRanker, featurizer: Featurizer, dataset: Dataset, claims: Sequence[Claim],
                    timing: dict[str, float] | None = None) -> dict[str, Scored]:
    """Per gold cluster with gold evidence, its ranker candidates with two scores each.

    The prior is the ranker's P(evidence); the window score is the verifier's best window
    (``"max"``) or mean window (``"mean"``) for the cluster. Every cluster of a claim takes
    part in the ranker's sibling comparisons, whether or not it has gold evidence, so no
    label decides which paragraphs compete.
    """
    debates = {c.cid: Debate.of(dataset, c) for c in claims}
    table = featurizer.table(debates)
    prior = ranker.score(table)
    scored = {(c.cid, i) for c in claims for i, cluster in enumerate(c.clusters) if cluster.evidence}
    rows = [n for n, (cid, index, _) in enumerate(table.keys) if (cid, index) in scored]
    keys = [table.keys[n] for n in rows]
    start = time.perf_counter()
    windows = ranker.verify(featurizer.windows([(debates[cid], index, d) for cid, index, d in keys]))
    if timing is not None and rows:
        timing["evidence"] = round(len(rows) / (time.perf_counter() - start), 1)
    items = [((cid, index), d) for cid, index, d in keys]
    ranks = [float(prior[n]) for n in rows]
    return {name: _group(items, np.array([agg(w) if len(w) else 0.0 for w in windows]), ranks)
            for name, agg in (("max", np.max), ("mean", np.mean))}


def evidence_predict(scores: Mapping[str, Scored], setting: Mapping[str, Any]) -> dict[ClusterKey, list[int]]:
    return scores[setting["aggregate"]].predict(setting)


# ------------------------------------------------------------------ tuning, scoring
def _grid(task: str) -> list[dict[str, Any]]:
    if task == "relevance":
        return _cut_grid(T1_CAPS)
    if task == "stance":
        return [{"threshold": t, "centre": c} for t in THRESHOLDS for c in (False, True)]
    if task == "equivalence":
        return [{"weight": w, "threshold": t, "method": m}
                for w in WEIGHTS for t in THRESHOLDS for m in ("pairs", "average")]
    if task == "evidence":
        return [{**cut, "aggregate": a} for cut in _cut_grid(T4_CAPS, EVIDENCE_WEIGHTS) for a in ("max", "mean")]
    raise ValueError(f"unknown task {task!r}")


def metric(task: str, claims: Sequence[Claim], scores: Any, setting: Mapping[str, Any]) -> dict[str, float]:
    """The task's T-metric (fractions) for ``setting`` applied to ``scores``."""
    if task == "relevance":
        return t1_relevance(claims, relevance_predict(scores, setting))
    if task == "stance":
        return t2_stance(claims, stance_predict(scores, setting))
    if task == "equivalence":
        return t3_equivalence(claims, equivalence_predict(scores, setting))
    if task == "evidence":
        return t4_evidence(claims, evidence_predict(scores, setting))
    raise ValueError(f"unknown task {task!r}")


#: What dev tuning maximises. Stance maximises macro-F1, not T2 (support F1), which a
#: low threshold buys with recall at the cost of accuracy.
OBJECTIVE = {"relevance": "f1", "stance": "f1_macro", "equivalence": "f1", "evidence": "f1"}


def tune(task: str, claims: Sequence[Claim], scores: Any,
         only: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, float]]:
    """The setting with the best dev objective (first on ties) and its dev metrics.

    ``only`` restricts the grid to settings with those values (the pipeline's
    ranker-only evidence cut is ``{"weight": 0.0, "aggregate": "max"}``).
    """
    objective: Callable[[dict[str, Any]], float] = lambda s: metric(task, claims, scores, s)[OBJECTIVE[task]]
    grid = [s for s in _grid(task) if all(s[k] == v for k, v in (only or {}).items())]
    setting, _ = best_of(grid, objective)
    return setting, metric(task, claims, scores, setting)


def pr_curve(task: str, claims: Sequence[Claim], scores: Any, setting: Mapping[str, Any]) -> list[dict[str, float]]:
    """Precision/recall as the threshold sweeps, every other setting held at its tuned value."""
    points = []
    for threshold in THRESHOLDS:
        m = metric(task, claims, scores, {**setting, "threshold": threshold})
        points.append({"threshold": threshold, "precision": m["precision"], "recall": m["recall"]})
    return points


def score_split(task: str, models: Sequence[CrossEncoderModel], dataset: Dataset, claims: Sequence[Claim],
                store: IndexStore, show_progress: bool = False, timing: dict[str, float] | None = None,
                ranker: EvidenceRanker | None = None) -> Any:
    """Retrieve what the task needs for ``claims`` and score it with the task's model(s).

    Stance averages every ensemble member; relevance and equivalence have one member.
    Evidence has none: its ``ranker`` scores paragraphs and windows.
    """
    if task == "relevance":
        candidates = relevance_candidates(store, dataset, claims)
        return relevance_scores(models[0], dataset, claims, candidates, show_progress, timing)
    if task == "stance":
        return stance_scores(models, dataset, claims, show_progress, timing)
    if task == "equivalence":
        return equivalence_scores(models[0], dataset, claims, store, show_progress, timing)
    if task == "evidence":
        if ranker is None:
            raise ValueError("evidence scoring needs the evidence ranker")
        return evidence_scores(ranker, Featurizer.for_dataset(store, dataset, show_progress), dataset, claims, timing)
    raise ValueError(f"unknown task {task!r}")


#: Table 3 of the paper (test split, percent): the best machine row and the human row.
PAPER_BERT = {"t1": {"precision": 47.3, "recall": 54.8, "f1": 50.8},
              "t2": {"precision": 70.5, "recall": 71.1, "f1": 70.8, "accuracy": 68.9},
              "t3": {"precision": 85.3, "recall": 50.8, "f1": 63.7},
              "t4": {"precision": 69.7, "recall": 46.3, "f1": 55.7}, "t5": 17.5}
PAPER_HUMAN = {"t1": {"precision": 63.8, "recall": 83.8, "f1": 72.5},
               "t2": {"precision": 91.3, "recall": 90.6, "f1": 90.9},
               "t3": {"precision": 87.5, "recall": 80.2, "f1": 83.7},
               "t4": {"precision": 70.8, "recall": 53.1, "f1": 60.7}, "t5": 40.0}


def _folder_mb(folder: Path) -> float:
    return round(sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20, 1)


def evaluate_trained(dataset: Dataset, store: IndexStore, models_dir: str | Path, split: str = "test",
                     show_progress: bool = False, record: bool = True) -> dict[str, Any]:
    """T1–T5 of the trained models on ``split`` with the thresholds stored from dev.

    Nothing is tuned here. With ``record`` and ``split == "test"``, each model's card
    gets its test metrics.

    Returns:
        A JSON-ready dict: per-task metrics (percent) and settings, T5, PR curves over
        the threshold, pairs/s per model, model sizes, and the paper's rows.
    """
    started = time.perf_counter()
    claims = dataset.split(split)
    loaded = {task: load_task(models_dir, task) if task in CROSS_ENCODED else [] for task in MODELS}  # fail fast
    metas = {task: read_meta(models_dir, task) for task in MODELS}
    ranker = EvidenceRanker.load(Path(models_dir) / "evidence")
    tasks: dict[str, Any] = {}
    curves: dict[str, Any] = {}
    timing: dict[str, float] = {}
    for task, members in loaded.items():
        setting = metas[task]["thresholds"]
        scores = score_split(task, members, dataset, claims, store, show_progress, timing, ranker)
        measured = percent(metric(task, claims, scores, setting))
        tasks[T_METRIC[task]] = {**measured, "setting": setting, "members": len(members)}
        curves[T_METRIC[task]] = [{k: (round(v * 100, 2) if k != "threshold" else v) for k, v in point.items()}
                              for point in pr_curve(task, claims, scores, setting)]
        if record and split == "test":
            update_meta(models_dir, task, {split: measured})
    t5 = t5_overall(tasks["t1"]["f1"] / 100, tasks["t2"]["f1"] / 100, tasks["t4"]["f1"] / 100)
    return {
        "system": "trained",
        "split": split,
        "tuned_on": "dev",
        "tasks": tasks,
        "t5": round(t5 * 100, 2),
        "paper": {"ir_bert": PAPER_BERT, "human": PAPER_HUMAN},
        "pr_curves": curves,
        "pairs_per_second": timing,
        "model_mb": {task: _folder_mb(Path(models_dir) / task) for task in MODELS},
        "models": {task: {"seeds": m.get("seeds"), "train_seconds": m.get("train_seconds"),
                          "quick": m.get("quick")} for task, m in metas.items()},
        "seconds": round(time.perf_counter() - started, 1),
    }
