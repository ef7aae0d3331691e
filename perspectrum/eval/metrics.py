"""T1–T5 of Chen et al. (NAACL 2019), Section 5.2, as pure functions over plain dicts.

Each function takes the gold claims of a split and a system's predictions, never
changes its inputs, and returns a dict of fractions in [0, 1] (:func:`percent` is for display).
All values are computed here, not by a library, because the paper's definitions
(per-claim and per-cluster macro averages) are not standard IR metrics; each docstring
states its formula and denominator so it can be checked by eye.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from itertools import combinations

from perspectrum.data import Claim, ClusterKey


def f1(precision: float, recall: float) -> float:
    """Harmonic mean; 0 when both are 0."""
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def prf(tp: int, fp: int, fn: int) -> dict[str, float]:
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    return {"precision": precision, "recall": recall, "f1": f1(precision, recall)}


def t1_relevance(claims: Sequence[Claim], predicted: Mapping[int, Sequence[int]]) -> dict[str, float]:
    """T1, perspective relevance, macro-averaged over claims.

    For a claim c with predicted perspectives Pred(c) and gold clusters G_1..G_n::

        P(c)         = |{p in Pred(c) : p in some G_i}| / |Pred(c)|     (0 if Pred(c) empty)
        R(c)         = |{i : G_i ∩ Pred(c) ≠ ∅}| / n                      (cluster coverage)
        R_literal(c) = |{p in Pred(c) : p in some G_i}| / n              (paper's literal form)

    P, R and R_literal are averaged over every gold claim (a claim missing from
    ``predicted`` scores 0), and F1 = 2PR / (P + R) is taken from the averages.
    ``R_literal`` can exceed 1 when several paraphrases of one cluster are returned;
    it matches the paper's Figure 6, cluster coverage its Table 3 (our headline).
    """
    sum_p = sum_r = sum_lit = 0.0
    for claim in claims:
        pred = set(predicted.get(claim.cid, ()))
        hits = len(pred & claim.gold_pids)
        covered = sum(1 for cluster in claim.clusters if pred.intersection(cluster.pids))
        sum_p += hits / len(pred) if pred else 0.0
        sum_r += covered / len(claim.clusters)
        sum_lit += hits / len(claim.clusters)
    n = len(claims) or 1
    precision, recall, literal = sum_p / n, sum_r / n, sum_lit / n
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1(precision, recall),
        "recall_literal": literal,
        "f1_literal": f1(precision, literal),
    }


def t2_stance(claims: Sequence[Claim], predicted: Mapping[tuple[int, int], bool]) -> dict[str, float]:
    """T2, stance: P/R/F1 of the *support* class over all gold (claim, perspective) pairs.

    Every perspective of every gold cluster is one pair, labelled with its cluster's
    ``stance_label_3``; ``predicted[(cid, pid)]`` is True for "supports". A pair
    missing from ``predicted`` counts as predicted *undermine*. With tp, fp, fn counted
    for the support class over all pairs::

        P = tp / (tp + fp),  R = tp / (tp + fn),  F1 = 2PR / (P + R)

    Accuracy and macro-F1 (mean of the support and undermine F1) are reported beside
    it, because F1 of one class can be bought with recall by a low threshold.
    """
    tp = fp = fn = tn = 0
    for claim in claims:
        for cluster in claim.clusters:
            gold_support = cluster.stance == "SUPPORT"
            for pid in cluster.pids:
                says_support = bool(predicted.get((claim.cid, pid), False))
                tp += gold_support and says_support
                fp += (not gold_support) and says_support
                fn += gold_support and not says_support
                tn += not gold_support and not says_support
    support = prf(tp, fp, fn)
    undermine = prf(tn, fn, fp)
    total = tp + fp + fn + tn
    return {
        **support,
        "accuracy": (tp + tn) / total if total else 0.0,
        "f1_macro": (support["f1"] + undermine["f1"]) / 2,
        "pairs": float(total),
    }


def t3_equivalence(
    claims: Sequence[Claim], predicted: Mapping[int, Iterable[tuple[int, int]]]
) -> dict[str, float]:
    """T3, perspective equivalence, over all pairs of gold perspectives of each claim.

    For each claim, every unordered pair {p, q} of its distinct gold perspectives is
    one example; it is positive when some gold cluster holds both. ``predicted[cid]``
    lists the pairs the system calls equivalent (order ignored; pairs outside the
    claim's gold perspectives are ignored). Counting tp, fp, fn of the "same cluster"
    class over the pairs of all claims (micro average)::

        P = tp / (tp + fp),  R = tp / (tp + fn),  F1 = 2PR / (P + R)
    """
    tp = fp = fn = 0
    for claim in claims:
        said = {frozenset(pair) for pair in predicted.get(claim.cid, ())}
        same = {frozenset(pair) for k in claim.clusters for pair in combinations(set(k.pids), 2)}
        for pair in combinations(sorted(claim.gold_pids), 2):
            key = frozenset(pair)
            tp += key in same and key in said
            fp += key not in same and key in said
            fn += key in same and key not in said
    return prf(tp, fp, fn)


def t4_evidence(
    claims: Sequence[Claim],
    predicted: Mapping[ClusterKey, Sequence[int]],
    average: str = "macro",
) -> dict[str, float]:
    """T4, evidence, macro-averaged over the gold clusters that have gold evidence.

    For cluster k of claim c (key ``(cid, k)``) with gold evidence E and prediction
    Pred (``predicted[(cid, k)]``, duplicates ignored)::

        P(k) = |Pred ∩ E| / |Pred|   (0 if Pred is empty),   R(k) = |Pred ∩ E| / |E|

    P and R are averaged over the clusters with non-empty E (602 of the 5,095 gold
    clusters have none, and recall is undefined for them), and F1 is taken from the
    averages. ``average="micro"`` instead pools the counts over those clusters,
    P = Σ|Pred ∩ E| / Σ|Pred| and R = Σ|Pred ∩ E| / Σ|E|: the paper says "macro",
    and micro is kept only to show how much the choice moves the number.
    """
    if average not in ("macro", "micro"):
        raise ValueError(f"average must be 'macro' or 'micro', not {average!r}")
    sum_p = sum_r = 0.0
    hits_total = pred_total = gold_total = n = 0
    for claim in claims:
        for index, cluster in enumerate(claim.clusters):
            gold = set(cluster.evidence)
            if not gold:
                continue
            pred = set(predicted.get((claim.cid, index), ()))
            hits = len(pred & gold)
            sum_p += hits / len(pred) if pred else 0.0
            sum_r += hits / len(gold)
            hits_total, pred_total, gold_total = hits_total + hits, pred_total + len(pred), gold_total + len(gold)
            n += 1
    if average == "micro":
        scores = prf(hits_total, pred_total - hits_total, gold_total - hits_total)
        return {**scores, "clusters": float(n)}
    precision, recall = (sum_p / n, sum_r / n) if n else (0.0, 0.0)
    return {"precision": precision, "recall": recall, "f1": f1(precision, recall), "clusters": float(n)}


def t5_overall(t1_f1: float, t2_f1: float, t4_f1: float) -> float:
    """T5 = F1(T1) × F1(T2) × F1(T4), the paper's one-number summary (fractions)."""
    return t1_f1 * t2_f1 * t4_f1


def calibration_bins(confidence: Iterable[float], correct: Iterable[bool], bins: int = 10) -> list[dict[str, float]]:
    """Predictions grouped by confidence into ``bins`` equal-width bins over [0, 1] (a
    confidence of exactly 1 falls in the last): each non-empty bin's count, mean
    confidence and accuracy, what a reliability diagram draws."""
    rows: list[list[tuple[float, bool]]] = [[] for _ in range(bins)]
    for c, ok in zip(confidence, correct):
        rows[min(int(float(c) * bins), bins - 1)].append((float(c), bool(ok)))
    return [{"low": n / bins, "high": (n + 1) / bins, "count": len(row),
             "confidence": sum(c for c, _ in row) / len(row), "accuracy": sum(ok for _, ok in row) / len(row)}
            for n, row in enumerate(rows) if row]


def calibration_error(confidence: Iterable[float], correct: Iterable[bool], bins: int = 10) -> float:
    """Expected calibration error: the count-weighted mean gap between confidence and
    accuracy over :func:`calibration_bins` (0 for none)."""
    table = calibration_bins(confidence, correct, bins)
    total = sum(row["count"] for row in table)
    return sum(row["count"] * abs(row["confidence"] - row["accuracy"]) for row in table) / total if total else 0.0


def overlap_at_k(reference: Sequence[Sequence[object]], candidate: Sequence[Sequence[object]], k: int) -> float:
    """How far two engines agree: the mean over queries of |R ∩ C| / |R|, where R and C
    are the first ``k`` ids of the reference and candidate rankings of one query.

    A query whose reference list is empty counts 1 when the candidate's is empty too, else 0.
    """
    shares = []
    for ref, cand in zip(reference, candidate, strict=True):
        r, c = set(ref[:k]), set(cand[:k])
        shares.append(len(r & c) / len(r) if r else float(not c))
    return sum(shares) / len(shares) if shares else 1.0


def percent(figures: Mapping[str, float], counts: Collection[str] = ("pairs", "clusters"),
            shares: Collection[str] | None = None) -> dict[str, float]:
    """Fractions to percent (two decimals), for display and JSON: every figure but the
    ``counts`` (whole numbers, kept as ints), or, when ``shares`` are named, only those
    (the others, such as averages and thresholds, rounded to three decimals)."""
    out: dict[str, float] = {}
    for key, value in figures.items():
        if key in counts:
            out[key] = int(value)
        elif shares is None or key in shares:
            out[key] = round(value * 100, 2)
        else:
            out[key] = round(value, 3)
    return out
