"""Argument-mining metrics on hand-worked cases and the papers' own numbers.

CASS: Duthie et al. (ArgMining 2016), Section 7 and Table 1. AURC: Trautmann et al.
(AAAI 2020), Section 4.1 and the majority-baseline rows of Table 2. segeval and
nervaluate: the examples their own tests and README document. Arithmetic in comments.
"""

from __future__ import annotations

import random

import pytest

from perspectrum.eval.argmining import (
    Segment,
    boundary_similarity,
    calculation_f1,
    calculation_kappa,
    cass,
    cass_f1,
    cass_kappa,
    entity_scores,
    entity_scores_from_tags,
    masses_from_boundaries,
    masses_from_spans,
    overlap_ratio,
    pairs_from_confusion,
    segment_f1,
    segmentation_similarity,
    sentence_f1,
    sentence_label,
    sentence_segment_scores,
    span_boundary_similarity,
    structure_mean,
    token_f1,
    token_segments,
)

P, C, N = "PRO", "CON", "NON"


# ----------------------------------------------------------------------------- CASS


def test_cass_paper_worked_example() -> None:
    # Duthie et al. Section 7: M = 0.43, S = 0.95 -> CASS = 2·0.43·0.95 / 1.38 = 0.817 / 1.38 = 0.5920
    assert round(cass([0.43], 0.95), 2) == 0.59
    assert cass([0.43], 0.95) == pytest.approx(0.817 / 1.38)
    # "We sum both kappa scores giving an arithmetic mean, M, of 0.43": any two κ with mean 0.43
    assert round(cass([0.50, 0.36], 0.95), 2) == 0.59


def test_cass_f1_table1_is_consistent_with_the_same_segmentation() -> None:
    # Table 1 gives CASS-F1 = 0.74 with the same S = 0.95 but not its M; solving
    # 2·M·0.95/(M + 0.95) in [0.735, 0.745) gives M in [0.5995, 0.6127]:
    assert round(cass([0.60], 0.95), 2) == 0.74  # 1.14 / 1.55 = 0.7355
    assert round(cass([0.61], 0.95), 2) == 0.74  # 1.159 / 1.56 = 0.7429
    assert round(cass([0.59], 0.95), 2) == 0.73  # 1.121 / 1.54 = 0.7279
    assert round(cass([0.62], 0.95), 2) == 0.75  # 1.178 / 1.57 = 0.7503


def test_structure_mean_is_eq1_over_all_calculations() -> None:
    # (ΣP + ΣD) / n = (0.2 + 0.4 + 0.9) / 3 = 0.5, not the mean of the two group means (0.6)
    assert structure_mean([0.2, 0.4], [0.9]) == pytest.approx(0.5)
    assert cass([0.2, 0.4, 0.9], 1.0) == pytest.approx(2 * 0.5 / 1.5)


def test_cass_edges() -> None:
    assert cass([1.0], 1.0) == pytest.approx(1.0)
    assert cass([0.0], 0.9) == 0.0
    assert cass([-0.3], 0.9) == 0.0  # below-chance κ clipped to M = 0
    assert cass([0.0], 0.0) == 0.0
    with pytest.raises(ValueError):
        cass([], 0.9)
    with pytest.raises(ValueError):
        cass([0.5], 1.2)


def test_kappa_and_f1_of_one_calculation_from_a_confusion_matrix() -> None:
    # rows A1 (0 = no relation, 1 = relation), columns A2; 100 candidate node pairs
    a1, a2 = pairs_from_confusion([[40, 10], [5, 45]])
    assert len(a1) == len(a2) == 100 and sum(a1) == 50 and sum(a2) == 55
    # p_o = (40 + 45)/100 = 0.85; p_e = 0.50·0.45 + 0.50·0.55 = 0.5; κ = 0.35 / 0.5 = 0.7
    assert calculation_kappa(a1, a2) == pytest.approx(0.7)
    # class 1: tp 45, fn 5 (A1 only), fp 10 (A2 only): F1 = 90 / (90 + 15) = 6/7; the 40 TN are ignored
    assert calculation_f1(a1, a2) == pytest.approx(6 / 7)
    assert calculation_f1(a2, a1) == pytest.approx(6 / 7)  # symmetric


def test_cass_kappa_and_cass_f1_average_calculations_then_combine_with_s() -> None:
    first = pairs_from_confusion([[40, 10], [5, 45]])  # κ 0.7, F1 6/7
    second = pairs_from_confusion([[30, 20], [20, 30]])  # p_o 0.6, p_e 0.5: κ 0.2; F1 = 60/(60+40) = 0.6
    # M_κ = (0.7 + 0.2)/2 = 0.45; CASS-κ = 2·0.45·0.9 / 1.35 = 0.6
    assert cass_kappa([first, second], 0.9) == pytest.approx(0.6)
    # M_F1 = (6/7 + 0.6)/2 = 51/70; CASS-F1 = 2·M·0.9/(M + 0.9)
    m = (6 / 7 + 0.6) / 2
    assert cass_f1([first, second], 0.9) == pytest.approx(2 * m * 0.9 / (m + 0.9))
    assert cass_f1([first, second], 0.9) > cass_kappa([first, second], 0.9)  # F1 ignores chance


def test_calculation_edges() -> None:
    # both annotations say "no relation" everywhere: κ undefined in sklearn (NaN), complete agreement here
    assert calculation_kappa([0, 0, 0], [0, 0, 0]) == 1.0
    assert calculation_f1([0, 0, 0], [0, 0, 0]) == 1.0
    # multi-category (YA types), absent label "none": A2 swaps one type -> micro F1 over present types
    a1 = ["assert", "question", "none", "assert"]
    a2 = ["assert", "assert", "none", "assert"]
    # present labels assert, question: tp 2 (items 0, 3), item 1 is fp for assert and fn for question:
    # micro P = 2/3, R = 2/3 -> F1 2/3
    assert calculation_f1(a1, a2, absent="none") == pytest.approx(2 / 3)
    with pytest.raises(ValueError):
        calculation_kappa([0, 1], [0])
    with pytest.raises(ValueError):
        pairs_from_confusion([[1, 2]])


# --------------------------------------------------------------------- segmentation


def test_masses_from_boundaries_and_spans() -> None:
    # 11 tokens cut before tokens 2 and 5: [0,2) [2,5) [5,11)
    assert masses_from_boundaries([5, 2, 2], 11) == (2, 3, 6)
    assert masses_from_boundaries([0, 2, 5, 11], 11) == (2, 3, 6)  # sequence edges are not boundaries
    assert masses_from_boundaries([], 4) == (4,)
    # units [2,5) and [7,9): boundaries {2,5,7,9} -> (2, 3, 2, 2, 2)
    assert masses_from_spans([(2, 5), (7, 9)], 11) == (2, 3, 2, 2, 2)
    # adjacent units share a boundary: [0,3) [3,5) over 6 -> (3, 2, 1)
    assert masses_from_spans([(0, 3), (3, 5)], 6) == (3, 2, 1)
    with pytest.raises(ValueError):
        masses_from_boundaries([12], 11)
    with pytest.raises(ValueError):
        masses_from_spans([(4, 4)], 11)


def test_segeval_documented_examples() -> None:
    # segeval 2.0.11's own tests (similarity/boundary_test.py, segmentation_test.py)
    # near miss [2,3,6] vs [2,2,7]: one match, one transposition of 1 (weight 1/2):
    # B = 1 - 0.5/(1 + 1) = 0.75;  S = (10 - 0.5)/10 = 0.95 (pb = 11 - 1)
    b = boundary_similarity([2, 3, 6], [2, 2, 7])
    assert isinstance(b, float) and b == 0.75
    assert segmentation_similarity([2, 3, 6], [2, 2, 7]) == pytest.approx(0.95)
    # full miss [2,3,6] vs [5,6]: one match, one addition: B = 1 - 1/2 = 0.5; S = 9/10
    assert boundary_similarity([2, 3, 6], [5, 6]) == 0.5
    assert segmentation_similarity([2, 3, 6], [5, 6]) == pytest.approx(0.9)


def test_span_boundary_similarity_near_and_full_miss() -> None:
    # gold unit [2,6) (tokens 2..5), predicted [2,5): boundaries {2,6} vs {2,5}: end off by one
    # -> masses (2,4,5) vs (2,3,6): one match + one transposition: B = 1 - 0.5/2 = 0.75
    assert span_boundary_similarity([(2, 6)], [(2, 5)], 11) == pytest.approx(0.75)
    # predicted [8,10): {2,6} vs {8,10} share nothing, all four are full misses -> B = 0
    assert span_boundary_similarity([(2, 6)], [(8, 10)], 11) == 0.0
    # identical spans -> 1
    assert span_boundary_similarity([(2, 6), (7, 9)], [(2, 6), (7, 9)], 11) == 1.0


def test_boundary_similarity_edges() -> None:
    # neither places a boundary: identical (segeval itself raises on this case)
    assert boundary_similarity([11], [11]) == 1.0
    assert span_boundary_similarity([], [], 11) == 1.0
    # no predicted units against two gold boundaries: 2 additions, no match -> 0
    assert boundary_similarity([2, 3, 6], [11]) == 0.0
    with pytest.raises(ValueError):
        boundary_similarity([2, 3], [2, 4])  # 5 vs 6 tokens


def test_cass_with_segeval_s() -> None:
    s = segmentation_similarity([2, 3, 6], [2, 2, 7])  # 0.95, as in the paper's example
    calc = pairs_from_confusion([[40, 10], [5, 45]])  # κ 0.7
    # 2·0.7·0.95 / 1.65 = 1.33 / 1.65
    assert cass_kappa([calc], s) == pytest.approx(1.33 / 1.65)


# ----------------------------------------------------------------------------- AURC


def test_token_segments_are_maximal_runs() -> None:
    assert token_segments([N, P, P, C, N, P]) == [Segment(P, 1, 3), Segment(C, 3, 4), Segment(P, 5, 6)]
    assert token_segments([P, P, P]) == [Segment(P, 0, 3)]
    assert token_segments([N, N]) == []
    assert token_segments([]) == []
    assert Segment(P, 1, 3).length == 2


def sentence(length: int, *units: tuple[str, int, int]) -> list[str]:
    tokens = [N] * length
    for label, start, end in units:
        tokens[start:end] = [label] * (end - start)
    return tokens


def test_segment_overlap_above_half_is_a_true_positive() -> None:
    # gold PRO tokens 2..5, predicted 3..6: overlap 3, max length 4 -> 0.75 > 0.5 -> TP
    gold, pred = sentence(10, (P, 2, 6)), sentence(10, (P, 3, 7))
    assert overlap_ratio(Segment(P, 2, 6), Segment(P, 3, 7)) == 0.75
    scores = sentence_segment_scores(gold, pred)
    assert scores["tp"] == 1 and scores["f1"] == 1.0


def test_segment_overlap_exactly_half_is_not_a_true_positive() -> None:
    # gold PRO 0..3, predicted 2..5: overlap 2, max 4 -> 0.5, not > 0.5 -> no TP, F1 0
    assert sentence_segment_scores(sentence(8, (P, 0, 4)), sentence(8, (P, 2, 6)))["f1"] == 0.0
    # gold PRO 0..3, predicted 0..1 (inside it): overlap 2, max(4, 2) = 4 -> 0.5 -> no TP
    # (with min(|g|,|p|) in the denominator this would be 1.0 and a TP)
    assert sentence_segment_scores(sentence(8, (P, 0, 4)), sentence(8, (P, 0, 2)))["tp"] == 0


def test_segment_label_mismatch_is_not_a_true_positive() -> None:
    # identical span, r = 1, but PRO vs CON -> no TP
    scores = sentence_segment_scores(sentence(10, (P, 2, 6)), sentence(10, (C, 2, 6)))
    assert scores["tp"] == 0 and scores["f1"] == 0.0


def test_segment_empty_sentence_rules() -> None:
    # no gold and no predicted unit: F1 1.0 (the paper's rule)
    assert sentence_segment_scores([N] * 5, [N] * 5)["f1"] == 1.0
    # no gold but a predicted unit: P = 0/1, R undefined -> F1 0
    assert sentence_segment_scores([N] * 5, sentence(5, (P, 1, 3)))["f1"] == 0.0
    # gold unit but empty prediction: R = 0/1 -> F1 0
    assert sentence_segment_scores(sentence(5, (C, 1, 3)), [N] * 5)["f1"] == 0.0


def test_segment_f1_mixed_sentence_and_macro_average() -> None:
    gold = sentence(10, (P, 0, 4), (C, 5, 9))
    pred = sentence(10, (P, 0, 3), (C, 5, 7), (P, 8, 10))
    # PRO[0,3) vs PRO[0,4): 3/4 -> TP;  CON[5,7) vs CON[5,9): 2/4 = 0.5 -> no;  PRO[8,10) vs CON[5,9): 1/4, wrong label
    # TP 1: P = 1/3, R = 1/2, F1 = 2·(1/6)/(5/6) = 0.4
    scores = sentence_segment_scores(gold, pred)
    assert (scores["precision"], scores["recall"]) == (pytest.approx(1 / 3), 0.5)
    assert scores["f1"] == pytest.approx(0.4)
    # macro over sentences: all-NON sentence 1.0, this one 0.4, a missed unit 0.0 -> 1.4/3
    golds = [[N] * 4, gold, sentence(4, (P, 0, 4))]
    preds = [[N] * 4, pred, [N] * 4]
    assert segment_f1(golds, preds) == pytest.approx(1.4 / 3)


def test_segment_f1_punishes_a_split_unit_token_f1_does_not() -> None:
    # Section 4.1: "a gold segment may be split in half by a single NON token, resulting in
    # two incomplete predicted segments". Gold PRO 0..8 (9 tokens); predicted PRO 0..3, NON, PRO 5..8:
    # each half overlaps 4/9 < 0.5 -> no TP, segment F1 0; yet 8 of 9 tokens are right.
    gold, pred = [P] * 9, [P] * 4 + [N] + [P] * 4
    assert segment_f1([gold], [pred]) == 0.0
    # tokens: PRO P = 8/8, R = 8/9 -> 16/17; NON: tp 0 -> 0; CON absent -> 0; mean (16/17)/3
    assert token_f1([gold], [pred]) == pytest.approx(16 / 17 / 3)


def test_token_f1_is_mean_of_class_f1s_over_pooled_tokens() -> None:
    gold, pred = [[N, P, P, C]], [[N, P, C, C]]
    # PRO: tp 1, fn 1 -> P 1, R 1/2, F1 2/3;  CON: tp 1, fp 1 -> 2/3;  NON: 1  -> (2/3 + 2/3 + 1)/3 = 7/9
    assert token_f1(gold, pred) == pytest.approx(7 / 9)
    # not F1 of macro P (1 + 1/2 + 1)/3 = 5/6 and macro R 5/6, which would be 5/6 (cf. Table 4, F1 < P, R)
    assert token_f1(gold, pred) != pytest.approx(5 / 6)
    # pooled over sentences: s1 PRO PRO right; s2 gold NON CON, predicted NON NON
    # PRO F1 1; CON tp 0 -> 0; NON tp 1, fp 1 -> P 1/2, R 1 -> 2/3;  mean (1 + 0 + 2/3)/3 = 5/9
    assert token_f1([[P, P], [N, C]], [[P, P], [N, N]]) == pytest.approx(5 / 9)
    with pytest.raises(ValueError):
        token_f1([[P, P]], [[P]])


def test_sentence_label_rules() -> None:
    assert sentence_label([N, N]) == N
    assert sentence_label([N, P, P, N]) == P
    assert sentence_label([C, C, C, N, P, P]) == C  # both: more frequent (3 CON vs 2 PRO)
    assert sentence_label([C, C, N, P, P]) == C  # tie, no rng: first-occurring wins
    assert sentence_label([P, P, N, C, C]) == P
    # tie broken by chance when an rng is given: both outcomes occur over seeds
    assert {sentence_label([P, C], rng=random.Random(seed)) for seed in range(20)} == {P, C}


def test_sentence_f1_macro_over_sentence_labels() -> None:
    gold = [[P, N], [C, C], [N, N], [P, P]]  # PRO CON NON PRO
    pred = [[P, P], [P, N], [N, N], [N, N]]  # PRO PRO NON NON
    # PRO: tp 1 (s0), fp 1 (s1), fn 1 (s3) -> 1/2;  CON: tp 0 -> 0;  NON: tp 1, fp 1 -> 2/3
    # (1/2 + 0 + 2/3)/3 = 7/18
    assert sentence_f1(gold, pred) == pytest.approx(7 / 18)


@pytest.mark.parametrize(
    "non_share, paper_segment_f1, paper_sentence_f1",
    [
        (0.478, 0.478, 0.216),  # Table 2 line 4, in-domain dev
        (0.463, 0.463, 0.211),  # in-domain test
        (0.394, 0.394, 0.188),  # line 9, cross-domain dev
        (0.379, 0.379, 0.183),  # cross-domain test
    ],
)
def test_aurc_table2_majority_baseline(non_share: float, paper_segment_f1: float, paper_sentence_f1: float) -> None:
    # The majority baseline labels every token NON. Segment F1: all-NON sentences score 1.0
    # (the empty/empty rule), argumentative ones 0, so segment F1 = share q of all-NON sentences.
    # Sentence F1: PRO and CON F1 are 0; NON has P = q, R = 1, F1 = 2q/(1+q); mean over 3 classes
    # = 2q / (3(1+q)), e.g. q = 0.463: 0.926 / 4.389 = 0.2110. So the paper's sentence-F1 row
    # follows from its segment-F1 row exactly when both are defined as implemented here.
    n = 1000
    n_non = round(non_share * n)
    gold = [[N, N, N]] * n_non + [[P, P, N] if i % 2 else [N, C, C] for i in range(n - n_non)]
    pred = [[N, N, N]] * n
    assert round(segment_f1(gold, pred), 3) == paper_segment_f1
    assert round(sentence_f1(gold, pred), 3) == paper_sentence_f1


# ------------------------------------------------------------------------ nervaluate


def test_nervaluate_readme_example() -> None:
    # nervaluate 1.2.1 README: true/pred BIO lists, tags PER ORG LOC DATE, as half-open spans:
    # doc 1 "The John Smith who works at Google Inc": true PER[1,3) ORG[6,8); pred PER[2,4) ORG[6,8)
    # doc 2 "In Paris Marie Curie lived in 1895": true LOC[1,2) PER[2,4) DATE[6,7);
    #                                        pred LOC[1,3) PER[3,4) DATE[6,7)
    true = [[Segment("PER", 1, 3), Segment("ORG", 6, 8)],
            [Segment("LOC", 1, 2), Segment("PER", 2, 4), Segment("DATE", 6, 7)]]
    pred = [[Segment("PER", 2, 4), Segment("ORG", 6, 8)],
            [Segment("LOC", 1, 3), Segment("PER", 3, 4), Segment("DATE", 6, 7)]]
    scores = entity_scores(true, pred, labels=["PER", "ORG", "LOC", "DATE"])
    # README table: ent_type 5 correct -> 1.00; exact and strict 2 correct 3 incorrect -> 0.40;
    # partial 2 correct 3 partial -> (2 + 1.5)/5 = 0.70
    assert scores["ent_type"]["f1"] == pytest.approx(1.0) and scores["ent_type"]["correct"] == 5
    assert scores["strict"]["precision"] == pytest.approx(0.4) and scores["strict"]["incorrect"] == 3
    assert scores["exact"]["recall"] == pytest.approx(0.4)
    assert scores["partial"]["f1"] == pytest.approx(0.7) and scores["partial"]["partial"] == 3


def test_entity_scores_on_argument_units() -> None:
    # gold PRO[2,6) CON[8,10); predicted PRO[3,7) (shifted) and CON[8,10) (exact)
    gold = [sentence(10, (P, 2, 6), (C, 8, 10))]
    pred = [sentence(10, (P, 3, 7), (C, 8, 10))]
    scores = entity_scores_from_tags(gold, pred)
    # strict/exact: CON correct, PRO overlaps with other boundaries -> incorrect: 1/2
    assert scores["strict"]["f1"] == pytest.approx(0.5)
    assert scores["exact"]["f1"] == pytest.approx(0.5)
    # partial: CON correct, PRO partial -> (1 + 0.5)/2 = 0.75;  ent_type: overlap + same label -> 2/2
    assert scores["partial"]["f1"] == pytest.approx(0.75)
    assert scores["ent_type"]["f1"] == pytest.approx(1.0)
    # half-open spans reach nervaluate as inclusive ends: an identical span is strict-correct
    same = entity_scores([[Segment(P, 2, 5)]], [[Segment(P, 2, 5)]])
    assert same["strict"]["f1"] == 1.0
    # ... and adjacent units do not overlap: gold PRO[0,2) = tokens 0..1, predicted PRO[2,4) = 2..3
    # -> one missed, one spurious in every schema, even ent_type (any overlap would be correct there)
    adjacent = entity_scores([[Segment(P, 0, 2)]], [[Segment(P, 2, 4)]])
    assert adjacent["ent_type"]["spurious"] == 1 and adjacent["ent_type"]["f1"] == 0.0


def test_entity_scores_label_mismatch_and_empty_predictions() -> None:
    # same span, wrong stance: strict and ent_type incorrect (0), exact and partial correct (1)
    mismatch = entity_scores([[Segment(P, 0, 4)]], [[Segment(C, 0, 4)]])
    assert (mismatch["strict"]["f1"], mismatch["ent_type"]["f1"]) == (0.0, 0.0)
    assert (mismatch["exact"]["f1"], mismatch["partial"]["f1"]) == (1.0, 1.0)
    # empty predictions, first document empty on both sides (nervaluate cannot infer a loader then):
    # 2 gold units missed -> recall 0, F1 0 in every schema
    empty = entity_scores([[], [Segment(P, 0, 2), Segment(C, 3, 5)]], [[], []])
    assert set(empty) == set(mismatch) and all(empty[s]["missed"] == 2 and empty[s]["f1"] == 0.0 for s in empty)
    # no gold and no predicted unit anywhere: nervaluate scores 0 (no 1.0 rule, unlike segment F1)
    nothing = entity_scores_from_tags([[N, N]], [[N, N]])
    assert nothing["strict"]["f1"] == 0.0 and set(nothing) == {"strict", "exact", "partial", "ent_type"}
