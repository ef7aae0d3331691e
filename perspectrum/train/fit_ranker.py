"""Fitting the evidence ranker and its window verifier (scoring lives in
:mod:`perspectrum.models.evidence_ranker`, which imports no scikit-learn).

Stage one is fitted on the candidates' features; stage two on stage one's out-of-fold
scores, with folds grouped by claim so no claim's own labels leak into the scores it learns
from; the verifier on windows labelled as bags (:func:`window_labels`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from perspectrum.data import Claim, Dataset
from perspectrum.errors import PerspectrumError
from perspectrum.models.evidence_ranker import (
    DEPTH,
    FEATURES,
    SECOND,
    WINDOW_FEATURES,
    Debate,
    EvidenceRanker,
    Featurizer,
    Table,
    stacked_windows,
    second_stage,
)
from perspectrum.models.trees import Forest

#: Folds (by claim) of stage one's out-of-fold scores.
FOLDS = 5


def window_labels(windows: Sequence[np.ndarray], gold: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Multiple-instance labels for the verifier, per window of every candidate: (label,
    used). A gold paragraph's window closest to its cluster (``own_mean``) is the positive
    and its other windows sit out; a non-gold paragraph's windows are all negatives."""
    labels, used = [], []
    column = WINDOW_FEATURES.index("own_mean")
    for rows, is_gold in zip(windows, gold):
        mine = np.zeros(len(rows), dtype=bool)
        if is_gold and len(rows):
            mine[int(np.argmax(rows[:, column]))] = True
        labels.append(mine)
        used.append(mine if is_gold else np.ones(len(rows), dtype=bool))
    return (np.concatenate(labels) if labels else np.zeros(0, bool)), (np.concatenate(used) if used else np.zeros(0, bool))


def _classifier(seed: int) -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(max_iter=300, learning_rate=0.05, early_stopping=False, random_state=seed)


def fit_forests(table: Table, labels: np.ndarray, windows: Sequence[np.ndarray], seed: int = 13) -> EvidenceRanker:
    """Fit stage one on ``table``, stage two on stage one's out-of-fold scores, and the
    verifier on the candidates' ``windows`` (:meth:`Featurizer.windows`, one per row).

    Folds group candidates by claim so no claim's own labels leak into the
    scores stage two learns from.
    """
    from sklearn.model_selection import GroupKFold

    labels = np.asarray(labels, dtype=bool)
    if labels.all() or not labels.any():
        raise PerspectrumError("the evidence ranker needs both gold and non-gold candidates to learn from")
    order = {key: n for n, key in enumerate(dict.fromkeys(k for k, _, _ in table.keys))}
    if len(order) < 2:
        raise PerspectrumError("the evidence ranker needs candidates from at least two claims")
    if len(windows) != len(labels):
        raise ValueError("one window matrix per candidate is needed")
    claims = np.array([order[k] for k, _, _ in table.keys])
    folds = min(FOLDS, len(order))
    out_of_fold = np.zeros(len(labels))
    for train, held in GroupKFold(folds).split(table.features, labels, claims):
        if labels[train].all() or not labels[train].any():
            out_of_fold[held] = labels[train].mean()
            continue
        out_of_fold[held] = _classifier(seed).fit(table.features[train], labels[train]).predict_proba(
            table.features[held])[:, 1]
    first = Forest.of(_classifier(seed).fit(table.features, labels), table.features)
    both = np.hstack([table.features, second_stage(table.keys, out_of_fold)])
    window_rows = stacked_windows(windows)
    target, used = window_labels(windows, labels)
    if not target.any() or target[used].all():
        raise PerspectrumError("the window verifier needs windows of gold and of non-gold candidates")
    verifier = _classifier(seed).fit(window_rows[used], target[used])
    return EvidenceRanker(first, Forest.of(_classifier(seed).fit(both, labels), both), Forest.of(verifier, window_rows[used]))


def labels_for(dataset: Dataset, table: Table) -> np.ndarray:
    """Gold labels of a table built from dataset claims keyed by cid."""
    gold = {(c.cid, i): set(cluster.evidence) for c in dataset.claims.values() for i, cluster in enumerate(c.clusters)}
    return np.array([d in gold[(key, i)] for key, i, d in table.keys], dtype=bool)


def fit_ranker(featurizer: Featurizer, dataset: Dataset, claims: Sequence[Claim], seed: int,
               embed: Callable[[Sequence[str]], np.ndarray] | None = None) -> tuple[EvidenceRanker, dict[str, Any]]:
    """Fit the ranker and its window verifier on ``claims``' gold clusters and their candidates;
    say how, for a model's meta.

    ``embed`` is :meth:`Featurizer.table`'s (vectors a caller already has).
    """
    started = time.perf_counter()
    debates = {c.cid: Debate.of(dataset, c) for c in claims}
    table = featurizer.table(debates, embed=embed)
    labels = labels_for(dataset, table)
    windows = featurizer.windows([(debates[key], i, d) for key, i, d in table.keys], embed=embed)
    ranker = fit_forests(table, labels, windows, seed)
    return ranker, {"candidates": len(labels), "positives": int(labels.sum()), "depth": DEPTH, "seed": seed,
                    "features": [*FEATURES, *SECOND], "window_features": list(WINDOW_FEATURES),
                    "windows": int(sum(len(w) for w in windows)), "seconds": round(time.perf_counter() - started, 1)}
