"""Fitting the light heads of :mod:`perspectrum.models.light_heads` and tuning their cut-offs on dev.

Kept apart from :mod:`perspectrum.models.light_heads` because tuning scores candidate settings with
the evaluation metrics (:mod:`perspectrum.eval`), which a process that only answers
claims never needs to import.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from perspectrum import integrity
from perspectrum._io import atomic_folder
from perspectrum._progress import progress
from perspectrum.data import Claim, Dataset, Pool
from perspectrum.errors import PerspectrumError
from perspectrum.eval.metrics import percent
from perspectrum.eval.trained import RELEVANCE_DEPTH, Matrices, Scored, tune
from perspectrum.index.dense import DenseIndex
from perspectrum.index.store import IndexStore
from perspectrum.models.light_heads import (HEADS_FILE, META_FILE, ONLY, VERSION, LightScorers, LinearHead,
                                            equivalence_features, pair_features, probability, stance_features)
from perspectrum.models.evidence_ranker import Debate, EvidenceRanker, Featurizer
from perspectrum.train.evidence_ranker import fit_ranker
from perspectrum.models.scorers import CROSS_ENCODED
from perspectrum.models.settings import MODELS, model_settings


def _logistic(seed: int) -> Any:
    """Standardised features (raw products are ~1/384 each), then a well-regularised
    logistic regression (C chosen on dev; lbfgs is deterministic)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(C=0.05, max_iter=500, random_state=seed))


def _fit(make: Callable[[int], Any], seed: int, features: np.ndarray, labels: Sequence[bool], stage: str) -> LinearHead:
    """The fitted head as arrays (checked against the classifier on its training rows)."""
    labels = np.asarray(labels, dtype=bool)
    if labels.all() or not labels.any():
        raise PerspectrumError(f"the light {stage} head needs both positive and negative training examples")
    return LinearHead.of(make(seed).fit(features, labels), features)


@dataclass
class _Inputs:
    """What every head is built from: the dataset, its splits and their vectors."""

    dataset: Dataset
    train: list[Claim]
    dev: list[Claim]
    claims: dict[int, np.ndarray]
    perspectives: DenseIndex

    def pairs(self, split: Sequence[Claim], pick: Callable[[Claim], Sequence[int]],
              features: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> tuple[list[tuple[int, int]], np.ndarray]:
        """(claim id, perspective id) for the perspectives ``pick`` chooses per claim, with features."""
        keys = [(c.cid, pid) for c in split for pid in pick(c)]
        return keys, features(np.array([self.claims[cid] for cid, _ in keys]),
                              self.perspectives.vectors([pid for _, pid in keys]))


def _relevance(inputs: _Inputs, seed: int) -> tuple[LinearHead, Scored]:
    """Fit on gold ∪ each train claim's dense top-50; score each dev claim's top-50, with cosines.

    The runs are :func:`perspectrum.eval.trained.relevance_candidates`' (the claim's dense
    top-50), searched with the claim vectors already encoded.
    """
    dataset = inputs.dataset
    claims = [*inputs.train, *inputs.dev]
    runs = dict(zip((c.cid for c in claims), inputs.perspectives.search_vectors(
        np.array([inputs.claims[c.cid] for c in claims]), RELEVANCE_DEPTH)))
    keys, x = inputs.pairs(inputs.train, lambda c: list(dict.fromkeys([*sorted(c.gold_pids),
                                                                       *(h.doc_id for h in runs[c.cid])])),
                           pair_features)
    head = _fit(_logistic, seed, x, [pid in dataset.claims[cid].gold_pids for cid, pid in keys], "relevance")
    keys, x = inputs.pairs(inputs.dev, lambda c: [h.doc_id for h in runs[c.cid]], pair_features)
    cosine = {(c.cid, h.doc_id): h.score for c in inputs.dev for h in runs[c.cid]}
    groups: dict[int, list[tuple[int, float, float]]] = {c.cid: [] for c in inputs.dev}
    for (cid, pid), p in zip(keys, probability(head, x)):
        groups[cid].append((pid, float(p), cosine[(cid, pid)]))
    return head, Scored(groups)


def _stance(inputs: _Inputs, seed: int) -> tuple[LinearHead, dict[tuple[int, int], float]]:
    """Every gold (claim, perspective) pair, labelled by whether its cluster supports the claim."""
    def gold(claim: Claim) -> list[int]:
        return [pid for k in claim.clusters for pid in k.pids]

    keys, x = inputs.pairs(inputs.train, gold, stance_features)
    support = {(c.cid, pid): k.stance == "SUPPORT" for c in inputs.train for k in c.clusters for pid in k.pids}
    head = _fit(_logistic, seed, x, [support[key] for key in keys], "stance")
    keys, x = inputs.pairs(inputs.dev, gold, stance_features)
    return head, {key: float(p) for key, p in zip(keys, probability(head, x))}


def _equivalence(inputs: _Inputs, seed: int) -> tuple[LinearHead, Matrices]:
    """Every pair of a claim's gold perspectives, labelled by whether one cluster holds both."""
    def pairs(split: Sequence[Claim]) -> tuple[list[tuple[int, int, int]], np.ndarray]:
        keys = [(c.cid, p, q) for c in split for p, q in combinations(sorted(c.gold_pids), 2)]
        vectors = inputs.perspectives.vectors
        return keys, equivalence_features(np.array([inputs.claims[cid] for cid, _, _ in keys]),
                                          vectors([p for _, p, _ in keys]), vectors([q for _, _, q in keys]))

    keys, x = pairs(inputs.train)
    same = [any({p, q} <= set(k.pids) for k in inputs.dataset.claims[cid].clusters) for cid, p, q in keys]
    head = _fit(_logistic, seed, x, same, "equivalence")
    keys, x = pairs(inputs.dev)
    same_cluster = dict(zip(keys, probability(head, x)))
    matrices: Matrices = {}
    for claim in inputs.dev:
        pids = sorted(claim.gold_pids)
        model = np.eye(len(pids), dtype=np.float32)
        for i, j in combinations(range(len(pids)), 2):
            model[i, j] = model[j, i] = same_cluster[(claim.cid, pids[i], pids[j])]
        vectors = inputs.perspectives.vectors(pids)
        matrices[claim.cid] = (pids, model, vectors @ vectors.T)
    return head, matrices


def _evidence(inputs: _Inputs, store: IndexStore, seed: int,
              show_progress: bool) -> tuple[EvidenceRanker, dict[str, Scored]]:
    """The evidence ranker, fitted on the train claims' gold clusters, and its dev scores.

    Every cluster of a dev claim takes part in the sibling comparisons; only those with
    gold evidence are scored, as T4 is. Claims and perspectives take the vectors already
    at hand (the claims', and the perspective index's); only the cluster queries are encoded.
    """
    dataset = inputs.dataset
    known = {dataset.perspectives[pid].text: pid for c in [*inputs.train, *inputs.dev] for pid in c.gold_pids}
    claims = {c.text: inputs.claims[c.cid] for c in [*inputs.train, *inputs.dev]}

    def embed(texts: Sequence[str]) -> np.ndarray:
        return np.array([claims[t] if t in claims else inputs.perspectives.vectors([known[t]])[0] for t in texts])

    featurizer = Featurizer.for_dataset(store, dataset, show_progress)
    ranker, _ = fit_ranker(featurizer, dataset, inputs.train, seed, embed=embed)
    table = featurizer.table({c.cid: Debate.of(dataset, c) for c in inputs.dev}, embed=embed)
    groups: dict[tuple[int, int], list[tuple[Any, float, float]]] = {}
    for (cid, i, d), p in zip(table.keys, ranker.score(table)):
        if dataset.claims[cid].clusters[i].evidence:
            groups.setdefault((cid, i), []).append((d, float(p), float(p)))
    return ranker, {"max": Scored(groups)}


def _fingerprint(dataset: Dataset, claims: Sequence[Claim]) -> str:
    """SHA-256 of what training read: the claims with their gold labels, and both pools."""
    labels = [[c.cid, c.text, c.split, [[k.pids, k.stance, k.evidence] for k in c.clusters]] for c in claims]
    digest = hashlib.sha256(json.dumps(labels).encode())
    for name in ("perspectives", "evidence"):
        digest.update(Pool.from_dataset(dataset, name).fingerprint.encode())
    return digest.hexdigest()


def train_light(dataset: Dataset, store: IndexStore, folder: str | Path, seed: int = 13,
                show_progress: bool = False) -> LightScorers:
    """Fit the four heads on train, tune their cut-offs on dev, and save them to ``folder``.

    Training examples: relevance, every gold perspective and every non-gold one of the
    claim's dense top-50; stance, every gold pair (label: its cluster supports the claim);
    equivalence, every pair of a claim's gold perspectives (label: same cluster);
    evidence, each gold cluster's hybrid top-20 (label: that cluster's gold evidence).
    Deterministic for a seed. ``folder`` gets ``heads.npz`` (the three logistic heads as
    arrays), ``ranker.npz`` (the evidence ranker, arrays) and ``light.json`` (settings, dev
    metrics, seed, seconds, encoder and data identity, and the SHA-256 of both array
    files), swapped in whole.
    """
    import sklearn

    started = time.perf_counter()
    evidence_pool = Pool.from_dataset(dataset, "evidence")
    train, dev = dataset.split("train"), dataset.split("dev")
    if not train or not dev:
        raise PerspectrumError("the light heads need claims in both the train and the dev split")
    perspectives = store.open(Pool.from_dataset(dataset, "perspectives"), "dense", show_progress=show_progress)
    fitted: dict[str, Any] = {}
    settings: dict[str, dict[str, Any]] = {}
    metrics: dict[str, dict[str, float]] = {}
    with progress("light heads", 1 + 2 * len(MODELS), enabled=show_progress) as advance:
        advance(0, "encoding claims")
        vectors = store.encoder.encode([c.text for c in (*train, *dev)])
        inputs = _Inputs(dataset, train, dev, dict(zip((c.cid for c in (*train, *dev)), vectors)), perspectives)
        advance(1)
        fitters = {"relevance": _relevance, "stance": _stance, "equivalence": _equivalence,
                   "evidence": lambda i, s: _evidence(i, store, s, show_progress)}
        for model in MODELS:
            advance(0, f"fitting {model}")
            fitted[model], scores = fitters[model](inputs, seed)
            advance(1, f"tuning {model} on dev")
            setting, measured = tune(model, dev, scores, only=ONLY.get(model))
            settings[model] = model_settings(model, setting)
            metrics[model] = percent(measured)
            advance(1)
    heads, ranker = {stage: fitted[stage] for stage in CROSS_ENCODED}, fitted["evidence"]
    meta = {"kind": LightScorers.kind, "version": VERSION, "settings": settings, "dev": metrics, "seed": seed,
            "seconds": round(time.perf_counter() - started, 1), "encoder": store.encoder.identity,
            "data_fingerprint": _fingerprint(dataset, [*train, *dev]), "sklearn": sklearn.__version__,
            "claims": {"train": len(train), "dev": len(dev)}}

    def write(tmp: Path) -> None:
        with (tmp / HEADS_FILE).open("wb") as handle:
            np.savez(handle, **{k: v for stage, head in heads.items() for k, v in head.arrays(f"{stage}.").items()})
        ranker.save(tmp)
        meta["files"] = integrity.record(tmp)
        (tmp / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")

    atomic_folder(folder, write)
    return LightScorers(heads, ranker, settings, store, evidence_pool)


#: What ``perspectrum tune`` chose on dev for each light system (stance margin, raise of the
#: clustering cut, pool neighbours read with stance agreement): a first run keeps these and
#: chooses only the floor, which needs retrieval and relevance alone (a whole tuning run
#: would add 7 minutes to a first answer). From eval/results/tune_pipeline_light.json and
#: tune_pipeline_light_stance.json.
FIRST_RUN: dict[str, dict[str, float]] = {
    "light": {"margin": 0.2, "raise": 0.15, "neighbours": 5},
    "light + trained stance": {"margin": 0.05, "raise": 0.2, "neighbours": 5},
}
#: Settings chosen on dev end to end for a system by runs too long for a first answer, kept as
#: they are. For the fresh path (light heads and ``train stance --fast``): a one-sided answer takes
#: the most relevant of its next 10 candidates shown on the other side (claims answered with both
#: sides 79.9 % → 91.4 %, T1 F1 53.7 → 52.7, T5 found 20.9 → 20.6, strict 6.2 → 6.2;
#: eval/results/both_sides_dev.json), and a paragraph that a cluster leaning the other way rates
#: more than 0.5 above its own is dropped (the fewest opposite-side top paragraphs within 0.5 of
#: T4 and T5: 11.8 % → 11.2 %), and one the ranker gives less than 0.1 is not shown (the highest
#: floor within 0.5 of T4 and T5: T4 46.6 → 46.4, cards on a side with evidence 98.6 % → 96.9 %;
#: both in eval/results/evidence_side_dev.json).
FIRST_RUN_SETTINGS: dict[str, dict[str, dict[str, Any]]] = {
    "light + trained stance": {"stance": {"other_side": 10}, "evidence": {"rival": 0.5, "floor": 0.1}},
}


def tune_light(dataset: Dataset, store: IndexStore, models_dir: str | Path, show_progress: bool = False) -> dict[str, Any]:
    """Choose the pipeline's relevance floor for freshly trained light heads on dev (with the
    other settings ``perspectrum tune`` chose for the same system, :data:`FIRST_RUN`), and store
    them in the heads' folder. Always over PERSPECTRUM's own pools, whatever pools the
    pipeline that asked answers from.
    """
    from perspectrum.train.tune_pipeline import tune_pipeline
    from perspectrum.pipeline.pipeline import Pipeline

    pipe = Pipeline(Pool.from_dataset(dataset, "perspectives"), Pool.from_dataset(dataset, "evidence"), store,
                    models_dir, show_progress=show_progress)
    chosen = FIRST_RUN.get(pipe.system, FIRST_RUN["light"])
    return tune_pipeline(dataset, pipe, show_progress=show_progress, margins=(chosen["margin"],),
                         neighbours=(int(chosen["neighbours"]),), raises=(chosen["raise"],),
                         chosen_before=FIRST_RUN_SETTINGS.get(pipe.system))
