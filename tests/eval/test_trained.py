"""Cut-offs, clustering and dev tuning of the trained system, on hand-made scores."""

from __future__ import annotations

import numpy as np
import pytest

from perspectrum.eval import trained
from perspectrum.eval.trained import Scored, centre_by_claim, equivalent_pairs, keep


def _setting(**kw):
    return {"weight": 1.0, "relative": False, "threshold": 0.5, "k": 10, "min_keep": 0, **kw}


def test_scored_blends_model_and_retrieval_before_cutting():
    # id, model score, retrieval score
    scored = Scored({"c": [(1, 0.9, 0.1), (2, 0.6, 1.0), (3, 0.2, 0.9)]})
    assert [item for _, item in scored.ranked(1.0)["c"]] == [1, 2, 3]  # model alone
    assert [item for _, item in scored.ranked(0.0)["c"]] == [2, 3, 1]  # retrieval alone
    # weight 0.5: 1 -> 0.5, 2 -> 0.8, 3 -> 0.55
    assert scored.predict(_setting(weight=0.5, threshold=0.52)) == {"c": [2, 3]}
    assert scored.predict(_setting(weight=0.5, relative=True, threshold=0.65)) == {"c": [2, 3]}  # floor 0.52
    assert scored.predict(_setting(weight=0.5, relative=True, threshold=0.7)) == {"c": [2]}  # floor 0.56
    assert scored.ranked(0.5) is scored.ranked(0.5)  # cached, not recomputed per setting


def test_keep_caps_and_falls_back_to_the_top():
    ranked = [(0.9, 7), (0.8, 8), (0.3, 9)]
    assert keep(ranked, _setting(threshold=0.5)) == [7, 8]
    assert keep(ranked, _setting(threshold=0.5, k=1)) == [7]
    assert keep(ranked, _setting(threshold=0.95)) == []
    assert keep(ranked, _setting(threshold=0.95, min_keep=1)) == [7]
    assert keep([], _setting(min_keep=1)) == []


def test_centre_by_claim_moves_each_claims_median_to_a_half():
    scores = {(1, 10): 0.9, (1, 11): 0.8, (1, 12): 0.7, (2, 20): 0.2, (2, 21): 0.4}
    centred = centre_by_claim(scores)
    assert centred[(1, 11)] == pytest.approx(0.5) and centred[(1, 10)] == pytest.approx(0.6)
    assert centred[(2, 20)] == pytest.approx(0.4) and centred[(2, 21)] == pytest.approx(0.6)


def test_average_linkage_closes_what_pairs_leave_open():
    pids = [1, 2, 3]
    matrix = np.array([[1.0, 0.9, 0.75], [0.9, 1.0, 0.2], [0.75, 0.2, 1.0]])
    assert equivalent_pairs(pids, matrix, "pairs", 0.5) == {(1, 2), (1, 3)}
    # average linkage joins 1-2 at distance 0.1, then 3 at mean(0.25, 0.8) = 0.525 > 0.5
    assert equivalent_pairs(pids, matrix, "average", 0.5) == {(1, 2)}
    assert equivalent_pairs(pids, matrix, "average", 0.4) == {(1, 2), (1, 3), (2, 3)}


def test_tune_finds_the_dev_threshold_that_separates_the_classes(dataset):
    dev = dataset.split("dev")
    # supports score 0.8, undermines 0.6: any threshold in (0.6, 0.8] is perfect
    scores = {(c.cid, p): (0.8 if k.stance == "SUPPORT" else 0.6) for c in dev for k in c.clusters for p in k.pids}
    setting, metrics = trained.tune("stance", dev, scores)
    assert metrics["accuracy"] == 1.0 and 0.6 < setting["threshold"] <= 0.8
    assert trained.metric("stance", dev, scores, {"threshold": 0.5, "centre": False})["accuracy"] < 1.0
