"""T1–T5 on cases small enough to work out by hand (the arithmetic is in the comments)."""

from __future__ import annotations

import pytest

from perspectrum.data import Claim, Cluster
from perspectrum.eval.metrics import f1, t1_relevance, t2_stance, t3_equivalence, t4_evidence, t5_overall


def claim(cid: int, clusters: list[tuple[list[int], str, list[int]]]) -> Claim:
    return Claim(
        cid=cid,
        text=f"claim {cid}",
        source="test",
        split="test",
        topics=(),
        clusters=tuple(Cluster(tuple(p), s, s, (0, 0, 0, 0, 0), tuple(e)) for p, s, e in clusters),
    )


S, U = "SUPPORT", "UNDERMINE"


def test_f1_is_harmonic_mean_and_zero_safe() -> None:
    assert f1(0.5, 1.0) == pytest.approx(2 / 3)
    assert f1(0.0, 0.0) == 0.0


def test_t1_precision_coverage_recall_and_literal_recall() -> None:
    a = claim(1, [([1, 2], S, []), ([3], S, []), ([4], U, [])])
    b = claim(2, [([10], S, []), ([11], U, [])])
    c = claim(3, [([20], S, [])])
    # A: predicted 1,2,9,5 -> 2 gold hits of 4: P = 1/2; clusters covered: {1,2} only -> R = 1/3;
    #    literal R = hits / clusters = 2/3.
    # B: predicted 11 -> P = 1, R = 1/2, literal 1/2.   C: nothing predicted -> 0, 0, 0.
    result = t1_relevance([a, b, c], {1: [1, 2, 9, 5], 2: [11]})
    # P = (1/2 + 1 + 0)/3 = 1/2;  R = (1/3 + 1/2 + 0)/3 = 5/18;  literal = (2/3 + 1/2)/3 = 7/18
    assert result["precision"] == pytest.approx(0.5)
    assert result["recall"] == pytest.approx(5 / 18)
    assert result["recall_literal"] == pytest.approx(7 / 18)
    # F1 = 2 * 1/2 * 5/18 / (1/2 + 5/18) = (5/18) / (14/18) = 5/14
    assert result["f1"] == pytest.approx(5 / 14)
    # literal F1 = (7/18) / (16/18) = 7/16
    assert result["f1_literal"] == pytest.approx(7 / 16)


def test_t1_literal_recall_can_pass_one_and_duplicates_count_once() -> None:
    a = claim(1, [([1, 2, 3], S, [])])
    # three paraphrases of the one cluster: literal recall 3/1, coverage 1; the repeated 1 is ignored
    result = t1_relevance([a], {1: [1, 2, 3, 1]})
    assert result["recall_literal"] == pytest.approx(3.0)
    assert result["recall"] == pytest.approx(1.0)
    assert result["precision"] == pytest.approx(1.0)


def test_t2_support_class_accuracy_and_macro_f1() -> None:
    a = claim(1, [([1, 2], S, []), ([3], U, [])])
    b = claim(2, [([10], S, []), ([11, 12], U, [])])
    predicted = {(1, 1): True, (1, 2): False, (1, 3): True, (2, 10): True, (2, 11): True}
    # gold S: (1,1) (1,2) (2,10); gold U: (1,3) (2,11) (2,12), the last predicted by absence as U.
    # support: tp = (1,1),(2,10) = 2; fp = (1,3),(2,11) = 2; fn = (1,2) = 1; tn = (2,12) = 1
    result = t2_stance([a, b], predicted)
    assert result["precision"] == pytest.approx(2 / 4)
    assert result["recall"] == pytest.approx(2 / 3)
    # F1 = 2 * 1/2 * 2/3 / (1/2 + 2/3) = (2/3) / (7/6) = 4/7
    assert result["f1"] == pytest.approx(4 / 7)
    assert result["accuracy"] == pytest.approx(3 / 6)
    # undermine: tp = 1, fp = 1 (the fn above), fn = 2 -> P 1/2, R 1/3, F1 = (1/3)/(5/6) = 2/5
    assert result["f1_macro"] == pytest.approx((4 / 7 + 2 / 5) / 2)
    assert result["pairs"] == 6


def test_t3_pairwise_equivalence_within_claim() -> None:
    a = claim(1, [([1, 2, 3], S, []), ([4], U, []), ([5, 6], U, [])])
    # 6 gold perspectives -> 15 pairs; same-cluster pairs: 12 13 23 56 (4 positives)
    # predicted: {2,1} tp, {1,4} fp, {5,6} tp, {7,8} outside the gold perspectives -> ignored
    result = t3_equivalence([a], {1: [(2, 1), (1, 4), (5, 6), (7, 8)]})
    assert result["precision"] == pytest.approx(2 / 3)
    assert result["recall"] == pytest.approx(2 / 4)
    # F1 = 2 * 2/3 * 1/2 / (2/3 + 1/2) = (2/3) / (7/6) = 4/7
    assert result["f1"] == pytest.approx(4 / 7)


def test_t4_macro_over_clusters_with_evidence_and_micro() -> None:
    a = claim(1, [([1], S, [1, 2]), ([2], S, []), ([3], U, [3])])
    b = claim(2, [([10], S, [4, 5, 6])])
    predicted = {(1, 0): [1, 9], (1, 1): [7], (2, 0): [4, 5, 4]}
    # (1,0): 1 hit of 2 predicted, 2 gold -> P 1/2, R 1/2
    # (1,1): no gold evidence -> skipped;  (1,2): nothing predicted -> P 0, R 0
    # (2,0): duplicates ignored -> {4,5}: P 1, R 2/3
    macro = t4_evidence([a, b], predicted)
    assert macro["clusters"] == 3
    assert macro["precision"] == pytest.approx((0.5 + 0 + 1) / 3)
    assert macro["recall"] == pytest.approx((0.5 + 0 + 2 / 3) / 3)  # 7/18
    assert macro["f1"] == pytest.approx(7 / 16)  # 2 * 1/2 * 7/18 / (1/2 + 7/18)
    # micro: hits 1+0+2 = 3, predicted 2+0+2 = 4, gold 2+1+3 = 6 -> P 3/4, R 1/2, F1 0.6
    micro = t4_evidence([a, b], predicted, average="micro")
    assert (micro["precision"], micro["recall"], micro["f1"]) == pytest.approx((0.75, 0.5, 0.6))


def test_t4_rejects_unknown_average() -> None:
    with pytest.raises(ValueError):
        t4_evidence([], {}, average="weighted")


def test_t5_is_the_product_of_three_f1s() -> None:
    assert t5_overall(0.5, 0.6, 0.4) == pytest.approx(0.12)
    # the paper's IR row: 40.0% x 68.0% x 46.8% = 12.7%, printed as 12.8 from unrounded inputs
    assert t5_overall(0.400, 0.680, 0.468) == pytest.approx(0.1273, abs=1e-4)


def test_metrics_leave_their_inputs_alone() -> None:
    a = claim(1, [([1, 2], S, [1])])
    predicted = {1: [2, 1, 2]}
    t1_relevance([a], predicted)
    assert predicted == {1: [2, 1, 2]}
