"""Argument-mining metrics as pure functions: CASS, boundary similarity, AURC, entity F1.

Perspective discovery finds *units* of argument (spans with a stance) inside text, and
no single number scores that well: token F1 ignores whether a unit was found as one
piece, exact-span F1 punishes a boundary off by one word as hard as a miss, and
relation agreement is penalised a second time for every segmentation difference. The
measures here each fix one of those, from the papers that defined them:

* CASS, CASS-κ, CASS-F1 — Duthie, Lawrence, Budzynska, Reed, "The CASS Technique for
  Evaluating the Performance of Argument Mining", ArgMining 2016 (eqs. 1, 2);
* boundary similarity B and segmentation similarity S (Fournier 2013; Fournier and
  Inkpen 2012) through ``segeval``, which returns ``Decimal``: converted to float here;
* token, segment and sentence F1 of Trautmann et al., "Fine-Grained Argument Unit
  Recognition and Classification", AAAI 2020 (Section 4.1), over PRO/CON/NON tokens;
* SemEval-2013 style strict / exact / partial / ent_type entity scores through
  ``nervaluate`` (1.2 API), treating PRO/CON units as entities.

Kappa and F1 come from scikit-learn, B and S from segeval, entity scores from
nervaluate; only what those lack (span bookkeeping, AURC's segment matching and
sentence labels, the CASS combination) is written here. Spans are half-open token
ranges ``[start, end)`` like Python slices throughout; nervaluate's inclusive ends are
converted at the boundary. Each docstring states its formula and denominator.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import NamedTuple

from sklearn.metrics import cohen_kappa_score, f1_score

from perspectrum.errors import missing_extra
from perspectrum.eval.metrics import f1

try:  # the eval extra; nothing at run time imports this module
    import segeval
    from nervaluate import Evaluator
except ModuleNotFoundError as exc:
    raise missing_extra("perspectrum.eval.argmining (argument-mining metrics)", "eval", exc) from None

NON = "NON"
AURC_LABELS: tuple[str, str, str] = ("PRO", "CON", "NON")
NERVALUATE_SCHEMAS: tuple[str, str, str, str] = ("strict", "exact", "partial", "ent_type")


class Segment(NamedTuple):
    """One argument unit: ``label`` over tokens ``start .. end - 1`` (half-open)."""

    label: str
    start: int
    end: int

    @property
    def length(self) -> int:
        """Number of tokens in the unit (``end - start``)."""
        return self.end - self.start


# --------------------------------------------------------------------------- CASS


def structure_mean(propositional: Sequence[float], dialogical: Sequence[float] = ()) -> float:
    """M of CASS eq. (1): the arithmetic mean of every structure calculation.

    ::

        M = (Σ P + Σ D) / n,     n = |P| + |D|

    P are the propositional-content calculations (support/attack relations), D the
    dialogical ones (YA/TA anchoring), each one agreement score (κ, F1, ...) computed on
    its own confusion matrix. Keeping them apart from segmentation is the point of CASS:
    a differing segmentation is then penalised once, in S, not again in every relation.
    """
    scores = [*propositional, *dialogical]
    if not scores:
        raise ValueError("CASS needs at least one structure calculation")
    return sum(scores) / len(scores)


def cass(structure_scores: Sequence[float], segmentation: float) -> float:
    """CASS eq. (2): harmonic mean of the structure mean M and the segmentation score S.

    ::

        M = mean(structure_scores)             (eq. 1; see ``structure_mean``)
        CASS = 2 · M · S / (M + S)             (0 when M + S = 0)

    ``segmentation`` is S, the segmentation similarity of Fournier and Inkpen (2012) in
    the paper (``segmentation_similarity`` below); any [0, 1] segmentation score fits.
    The paper's worked example: M = 0.43, S = 0.95 gives CASS = 0.59. A harmonic mean
    is only a mean of non-negative numbers, so a below-chance (negative) κ mean is
    clipped to M = 0 ("no agreement beyond chance"), which makes CASS 0.
    """
    m = max(structure_mean(structure_scores), 0.0)
    if not 0.0 <= segmentation <= 1.0:
        raise ValueError(f"segmentation score must be in [0, 1], not {segmentation}")
    return 2 * m * segmentation / (m + segmentation) if m + segmentation else 0.0


def pairs_from_confusion(matrix: Sequence[Sequence[int]]) -> tuple[list[int], list[int]]:
    """Expand a confusion matrix into the two label sequences it counts.

    Row i is annotation A1's category i, column j annotation A2's category j, and cell
    (i, j) the number of items A1 put in i and A2 in j (CASS builds one such matrix per
    calculation, e.g. over all candidate node pairs for "related / not related"). The
    result feeds scikit-learn's ``cohen_kappa_score`` and ``f1_score`` unchanged.
    """
    a1: list[int] = []
    a2: list[int] = []
    for i, row in enumerate(matrix):
        if len(row) != len(matrix):
            raise ValueError("confusion matrix must be square")
        for j, count in enumerate(row):
            if count < 0:
                raise ValueError("confusion matrix counts must be non-negative")
            a1.extend([i] * count)
            a2.extend([j] * count)
    return a1, a2


def _check_pair(a1: Sequence[Hashable], a2: Sequence[Hashable]) -> None:
    if len(a1) != len(a2):
        raise ValueError(f"annotations label different numbers of items ({len(a1)} != {len(a2)})")
    if not a1:
        raise ValueError("a structure calculation needs at least one item")


def calculation_kappa(a1: Sequence[Hashable], a2: Sequence[Hashable]) -> float:
    """Cohen's κ of one calculation: κ = (p_o − p_e) / (1 − p_e), via scikit-learn.

    p_o is the share of items both annotations label alike, p_e the agreement expected
    from their label marginals. κ is undefined when p_e = 1, which happens only when
    both annotations use one and the same label everywhere: that is complete
    agreement, so identical sequences score 1.0 (scikit-learn would give NaN).
    """
    _check_pair(a1, a2)
    if list(a1) == list(a2):
        return 1.0
    return float(cohen_kappa_score(list(a1), list(a2)))


def calculation_f1(
    a1: Sequence[Hashable], a2: Sequence[Hashable], *, absent: Hashable = 0, average: str = "micro"
) -> float:
    """F1 of one calculation over the categories other than ``absent``, via scikit-learn.

    With A1 as reference and A2 as prediction, for the present categories (every label
    but ``absent``, e.g. "no relation between this node pair")::

        P = tp / (tp + fp),  R = tp / (tp + fn),  F1 = 2PR / (P + R)

    pooled over the present categories (``average="micro"``; for a binary related /
    not-related calculation this is the F1 of the "related" class) or averaged per
    category (``"macro"``). F1 is symmetric in A1 and A2 (P and R swap). Items both
    leave ``absent`` are true negatives that F1 ignores, unlike κ. When neither
    annotation uses any present category the two agree completely and F1 is 1.0.
    """
    _check_pair(a1, a2)
    present = sorted({*a1, *a2} - {absent}, key=repr)
    if not present:
        return 1.0
    return float(f1_score(list(a1), list(a2), labels=present, average=average, zero_division=0))


def cass_kappa(
    calculations: Sequence[tuple[Sequence[Hashable], Sequence[Hashable]]], segmentation: float
) -> float:
    """CASS-κ: CASS with Cohen's κ as the score of every structure calculation.

    ``calculations`` holds one ``(A1 labels, A2 labels)`` pair per propositional or
    dialogical calculation (``pairs_from_confusion`` turns a confusion matrix into one);
    κ_k is computed for each (``calculation_kappa``), then::

        M = (1/n) Σ_k κ_k,      CASS-κ = 2 · M · S / (M + S)

    with n the number of calculations and S the segmentation similarity.
    """
    return cass([calculation_kappa(a1, a2) for a1, a2 in calculations], segmentation)


def cass_f1(
    calculations: Sequence[tuple[Sequence[Hashable], Sequence[Hashable]]],
    segmentation: float,
    *,
    absent: Hashable = 0,
    average: str = "micro",
) -> float:
    """CASS-F1: CASS with F1 as the score of every structure calculation.

    As ``cass_kappa``, with F1_k from ``calculation_f1`` (present categories, i.e. all
    but ``absent``) in place of κ_k::

        M = (1/n) Σ_k F1_k,     CASS-F1 = 2 · M · S / (M + S)
    """
    scores = [calculation_f1(a1, a2, absent=absent, average=average) for a1, a2 in calculations]
    return cass(scores, segmentation)


# ------------------------------------------------------------- segmentation (segeval)


def masses_from_boundaries(boundaries: Iterable[int], length: int) -> tuple[int, ...]:
    """Segment masses (lengths) of a sequence of ``length`` units cut at ``boundaries``.

    A boundary b means "a new segment starts at unit b" (between units b − 1 and b).
    0 and ``length`` are the sequence's own edges, not boundaries, and are ignored;
    duplicates count once. E.g. boundaries {2, 5} over 11 tokens give masses (2, 3, 6).
    """
    if length < 1:
        raise ValueError("a segmentation needs at least one unit")
    cuts = sorted(set(boundaries))
    if cuts and (cuts[0] < 0 or cuts[-1] > length):
        raise ValueError(f"boundaries must lie in [0, {length}]")
    edges = [0, *(b for b in cuts if 0 < b < length), length]
    return tuple(b - a for a, b in zip(edges, edges[1:]))


def masses_from_spans(spans: Iterable[tuple[int, int]], length: int) -> tuple[int, ...]:
    """Segment masses when argument units are half-open spans ``(start, end)``.

    Every unit's start and end is a boundary, so the text between units (NON) forms
    segments too: units (2, 5) and (7, 9) over 11 tokens give boundaries {2, 5, 7, 9}
    and masses (2, 3, 2, 2, 2). Adjacent units share their common boundary.
    """
    cuts: list[int] = []
    for start, end in spans:
        if not 0 <= start < end <= length:
            raise ValueError(f"span ({start}, {end}) is empty or outside [0, {length}]")
        cuts += [start, end]
    return masses_from_boundaries(cuts, length)


def _segeval(metric: Callable[..., object], reference: Sequence[int], hypothesis: Sequence[int], n_t: int) -> float:
    reference, hypothesis = tuple(reference), tuple(hypothesis)
    if sum(reference) != sum(hypothesis):
        raise ValueError(f"segmentations cover different lengths ({sum(reference)} != {sum(hypothesis)})")
    if len(reference) == 1 and len(hypothesis) == 1:
        return 1.0  # neither places a boundary: identical; segeval fails on max() of no types
    return float(metric(hypothesis, reference, n_t=n_t))  # type: ignore[arg-type]  # Decimal or int


def boundary_similarity(reference: Sequence[int], hypothesis: Sequence[int], *, n_t: int = 2) -> float:
    """Boundary similarity B (Fournier 2013) of two segmentations given as masses.

    Boundary edit distance aligns the two boundary sets: a boundary in both at the same
    place is a match, one moved by fewer than ``n_t`` units is a transposition (near
    miss), and one with no partner is an addition (full miss). With segeval's default
    weights (a miss costs 1, a transposition its distance / n_t, so 1/2 for a
    one-unit shift with n_t = 2)::

        B = 1 − (|A| + Σ_T d/n_t) / (|A| + |T| + |matches|)

    The denominator counts boundary pairs compared, not potential boundaries, so
    agreement on where *no* boundary lies earns nothing (unlike S); 1.0 when neither
    segmentation has a boundary. ``segeval.boundary_similarity([2, 3, 6], [2, 2, 7])`` (a near miss)
    is 0.75. Symmetric in its arguments; the masses must sum to the same length.
    """
    return _segeval(segeval.boundary_similarity, reference, hypothesis, n_t)


def segmentation_similarity(reference: Sequence[int], hypothesis: Sequence[int], *, n_t: int = 2) -> float:
    """Segmentation similarity S (Fournier and Inkpen 2012), the S of CASS, from masses.

    The same weighted boundary edits as B, scaled by the number of potential
    boundaries (pb = length − 1) instead of the boundaries placed::

        S = (pb − (|A| + Σ_T d/n_t)) / pb

    so S rewards the many places where both put no boundary and sits much closer to 1
    than B. segeval's own example: [2, 3, 6] vs [2, 2, 7] gives S = 0.95.
    """
    return _segeval(segeval.segmentation_similarity, reference, hypothesis, n_t)


def span_boundary_similarity(
    gold_spans: Iterable[tuple[int, int]], pred_spans: Iterable[tuple[int, int]], length: int, *, n_t: int = 2
) -> float:
    """B between two sets of unit spans over the same ``length``-unit (token/char) text.

    Both span sets become masses (``masses_from_spans``) and are compared with
    ``boundary_similarity``; it scores where units start and end, not their labels.
    """
    return boundary_similarity(masses_from_spans(gold_spans, length), masses_from_spans(pred_spans, length), n_t=n_t)


# ------------------------------------------------------------------------ AURC


def token_segments(labels: Sequence[str], *, outside: str = NON) -> list[Segment]:
    """Maximal runs of one non-``outside`` label, as half-open ``Segment`` s.

    AURC's gold standard merges consecutive tokens of one stance into one unit, so a
    unit is a maximal run: ``NON PRO PRO CON NON PRO`` gives PRO[1, 3), CON[3, 4),
    PRO[5, 6). A PRO run directly followed by a CON run is two units.
    """
    segments: list[Segment] = []
    start = 0
    for i in range(1, len(labels) + 1):
        if i == len(labels) or labels[i] != labels[start]:
            if labels[start] != outside:
                segments.append(Segment(labels[start], start, i))
            start = i
    return segments


def _check_aligned(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> None:
    if len(gold) != len(pred):
        raise ValueError(f"gold has {len(gold)} sentences, predictions {len(pred)}")
    for index, (g, p) in enumerate(zip(gold, pred)):
        if len(g) != len(p):
            raise ValueError(f"sentence {index}: {len(g)} gold tokens, {len(p)} predicted")


def token_f1(
    gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]], *, labels: Sequence[str] = AURC_LABELS
) -> float:
    """AURC token F1: mean of the PRO, CON and NON F1 over all tokens of all sentences.

    Tokens of every sentence are pooled; for each class c, P_c = tp_c / predicted_c and
    R_c = tp_c / gold_c, F1_c = 2 P_c R_c / (P_c + R_c), and::

        token F1 = (F1_PRO + F1_CON + F1_NON) / 3

    (scikit-learn ``average="macro"`` with the three labels fixed: a class never
    predicted scores 0 and still counts in the /3). Note this is the mean of class F1s,
    not the F1 of macro P and R, which is why the paper's Table 4 can report
    P .632, R .638 and F1 .615.
    """
    _check_aligned(gold, pred)
    flat_gold = [t for sentence in gold for t in sentence]
    flat_pred = [t for sentence in pred for t in sentence]
    if not flat_gold:
        raise ValueError("no tokens to score")
    return float(f1_score(flat_gold, flat_pred, labels=list(labels), average="macro", zero_division=0))


def overlap_ratio(gold: Segment, pred: Segment) -> float:
    """AURC's r = |g ∩ p| / max(|g|, |p|) in tokens (labels ignored)."""
    inter = max(0, min(gold.end, pred.end) - max(gold.start, pred.start))
    return inter / max(gold.length, pred.length)


def sentence_segment_scores(
    gold: Sequence[str], pred: Sequence[str], *, outside: str = NON
) -> dict[str, float]:
    """Segment precision, recall and F1 of one sentence (AURC, Section 4.1).

    Gold units G and predicted units P are the PRO/CON runs (``token_segments``; NON is
    never a unit, so recognising NON is not rewarded here). A predicted p is a true
    positive when some g has the same label and r = |g ∩ p| / max(|g|, |p|) > 0.5
    (strictly: r = 0.5 is not enough). Since r > 0.5 means more than half of each
    unit is shared, p matches at most one g and g at most one p, so::

        P = TP / |P|,   R = TP / |G|,   F1 = 2PR / (P + R)

    A sentence with G and P both empty scores P = R = F1 = 1.0 (the model rightly
    called it all NON); when exactly one is empty, F1 = 0.
    """
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold tokens, {len(pred)} predicted")
    gold_units = token_segments(gold, outside=outside)
    pred_units = token_segments(pred, outside=outside)
    if not gold_units and not pred_units:
        return {"precision": 1.0, "recall": 1.0, "f1": 1.0, "tp": 0.0, "gold": 0.0, "predicted": 0.0}
    tp = sum(
        any(g.label == p.label and overlap_ratio(g, p) > 0.5 for g in gold_units) for p in pred_units
    )
    precision = tp / len(pred_units) if pred_units else 0.0
    recall = tp / len(gold_units) if gold_units else 0.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1(precision, recall),
        "tp": float(tp),
        "gold": float(len(gold_units)),
        "predicted": float(len(pred_units)),
    }


def segment_f1(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]], *, outside: str = NON) -> float:
    """AURC macro-averaged segment F1: the mean over sentences of each sentence's F1.

    ::

        segment F1 = (1/N) Σ_s F1_s       (F1_s from ``sentence_segment_scores``)

    N counts every sentence in the evaluation set, including all-NON ones (which score
    1.0 when nothing is predicted in them, 0 otherwise).
    """
    _check_aligned(gold, pred)
    if not gold:
        raise ValueError("no sentences to score")
    return sum(sentence_segment_scores(g, p, outside=outside)["f1"] for g, p in zip(gold, pred)) / len(gold)


def sentence_label(tokens: Sequence[str], *, outside: str = NON, rng: random.Random | None = None) -> str:
    """The AURC sentence-level label derived from token labels (Section 4).

    Only NON → NON; NON and one stance → that stance; PRO and CON both present → the
    one with more tokens. The paper breaks a PRO/CON tie "by chance": pass ``rng`` for
    that; without it the tied label whose first token comes first wins, so the
    function stays deterministic.
    """
    counts = Counter(t for t in tokens if t != outside)
    if not counts:
        return outside
    best = max(counts.values())
    tied = [label for label in dict.fromkeys(t for t in tokens if t != outside) if counts[label] == best]
    if len(tied) == 1 or rng is None:
        return tied[0]
    return rng.choice(sorted(tied))


def sentence_f1(
    gold: Sequence[Sequence[str]],
    pred: Sequence[Sequence[str]],
    *,
    labels: Sequence[str] = AURC_LABELS,
    rng: random.Random | None = None,
) -> float:
    """AURC sentence F1: one label per sentence, then the mean of the class F1s.

    Gold and predicted token labels are both reduced with ``sentence_label``; over the
    N sentences, F1_c is the F1 of class c and::

        sentence F1 = (F1_PRO + F1_CON + F1_NON) / 3

    (scikit-learn macro F1, labels fixed, a never-predicted class scores 0).
    """
    _check_aligned(gold, pred)
    if not gold:
        raise ValueError("no sentences to score")
    gold_labels = [sentence_label(s, rng=rng) for s in gold]
    pred_labels = [sentence_label(s, rng=rng) for s in pred]
    return float(f1_score(gold_labels, pred_labels, labels=list(labels), average="macro", zero_division=0))


# ------------------------------------------------------------- entities (nervaluate)


def entity_scores(
    gold: Sequence[Sequence[Segment]],
    pred: Sequence[Sequence[Segment]],
    *,
    labels: Sequence[str] = ("PRO", "CON"),
    min_overlap_percentage: float = 1.0,
) -> dict[str, dict[str, float]]:
    """nervaluate's SemEval-2013 entity scores, with argument units as entities.

    ``gold[i]`` and ``pred[i]`` are the units of document/sentence i (half-open spans;
    nervaluate's inclusive ends are made here). Each predicted unit is classed COR,
    INC, PAR or SPU and each unmatched gold unit MIS, under four schemas: ``strict``
    (same boundaries and label), ``exact`` (same boundaries, any label), ``partial``
    (some overlap, any label; PAR for overlap without exact boundaries), ``ent_type``
    (some overlap and same label). "Some overlap" is at least ``min_overlap_percentage``
    percent of the gold unit (nervaluate's default 1.0). Pooled over all documents::

        ACT = COR + INC + PAR + SPU,   POS = COR + INC + PAR + MIS
        strict, exact:     P = COR / ACT,               R = COR / POS
        partial, ent_type: P = (COR + 0.5·PAR) / ACT,   R = (COR + 0.5·PAR) / POS

    F1 = 2PR / (P + R) (0 when a denominator is 0). Returns ``{schema: {precision,
    recall, f1, correct, incorrect, partial, missed, spurious}}``.
    """
    if len(gold) != len(pred):
        raise ValueError(f"gold has {len(gold)} documents, predictions {len(pred)}")

    def dicts(docs: Sequence[Sequence[Segment]]) -> list[list[dict[str, object]]]:
        return [[{"label": s.label, "start": s.start, "end": s.end - 1} for s in doc] for doc in docs]

    overall = {}
    if gold:
        evaluator = Evaluator(
            dicts(gold), dicts(pred), tags=list(labels), loader="dict", min_overlap_percentage=min_overlap_percentage
        )
        overall = evaluator.evaluate()["overall"]
    fields = ("precision", "recall", "f1", "correct", "incorrect", "partial", "missed", "spurious")
    return {
        schema: {field: float(getattr(overall[schema], field)) if schema in overall else 0.0 for field in fields}
        for schema in NERVALUATE_SCHEMAS
    }


def entity_scores_from_tags(
    gold: Sequence[Sequence[str]],
    pred: Sequence[Sequence[str]],
    *,
    labels: Sequence[str] = ("PRO", "CON"),
    outside: str = NON,
    min_overlap_percentage: float = 1.0,
) -> dict[str, dict[str, float]]:
    """``entity_scores`` on token-labelled sentences, units being ``token_segments``."""
    _check_aligned(gold, pred)
    return entity_scores(
        [token_segments(s, outside=outside) for s in gold],
        [token_segments(s, outside=outside) for s in pred],
        labels=labels,
        min_overlap_percentage=min_overlap_percentage,
    )
