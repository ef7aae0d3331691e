"""The pipeline's stages and rules on their own: stance-aware clustering, the relevance
floor, setting validation, one-to-one matching in end-to-end scoring, the scorer cache,
and the runtime's independence from the evaluation package.

Stages run here against hand-made scorers and vectors, so each rule is checked on a
case small enough to work out by hand.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from types import SimpleNamespace

import numpy as np
import pytest

import perspectrum
from perspectrum.data import Claim, Cluster
from perspectrum.errors import PerspectrumError
from perspectrum.eval.end_to_end import assign_clusters, score
from perspectrum.train.tune_pipeline import CachingScorers, choose_floor
from perspectrum.pipeline.results import DiscoveredPerspective, Discovery, EvidenceHit, Phrasing
from perspectrum.models.rules import above, average_linkage, keep, latin_script, ranked
from perspectrum.pipeline.stages import ClaimState, ClusterStage, Context, Member, Relevance, Stance
from perspectrum.pipeline.settings import configure


# ----------------------------------------------------------------------------- rules
def test_ranked_breaks_ties_by_id_and_keep_applies_the_floor_first() -> None:
    ranking = ranked([(9, 0.5), (10, 0.5), (3, 0.9)])
    assert ranking == [(0.9, 3), (0.5, 9), (0.5, 10)]  # 9 before 10: by value, not as text
    relative = {"relative": True, "threshold": 0.5, "k": 5, "min_keep": 1}
    assert keep(ranking, relative) == [3, 9, 10]
    assert keep(above(ranking, 0.6), relative) == [3]
    assert keep(above(ranking, 0.95), relative) == []  # min_keep cannot lift what is under the floor
    assert above(ranking, 0.0) == ranking
    assert keep(ranking, {**relative, "threshold": 0.99}) == [3]


def test_latin_script_reads_the_letters_not_the_digits_or_marks() -> None:
    assert latin_script("Animals should have lawful rights") and latin_script("Grüne Bohnen, 2024!")
    assert latin_script("Ban TikTok 禁止")  # mostly Latin letters
    assert not latin_script("社交媒体对社会的影响") and not latin_script("Мой брат любит шахматы")
    assert not latin_script("社交媒体 TV")  # four Han letters outweigh two Latin ones
    assert not latin_script("2024 !!")  # no letters at all


def test_average_linkage_undoes_merges_at_or_above_the_cut() -> None:
    # 0 and 1 are close (0.9), 2 joins them at their average similarity (0.5 and 0.3 -> 0.4)
    matrix = np.array([[1.0, 0.9, 0.5], [0.9, 1.0, 0.3], [0.5, 0.3, 1.0]])
    labels = average_linkage(matrix, 0.6)
    assert labels[0] == labels[1] != labels[2]
    assert len(set(average_linkage(matrix, 0.4))) == 2  # distance exactly 0.6 is cut, as scikit-learn cuts it
    assert len(set(average_linkage(matrix, 0.39))) == 1
    assert len(set(average_linkage(matrix, 0.95))) == 3


# ------------------------------------------------------------------------- stages
class FakeScorers:
    """Scores looked up in tables keyed by text; equivalence is 1.0 for every pair."""

    kind = "fake"

    def __init__(self, support: dict[str, float]) -> None:
        self.support = support
        self.settings: dict = {}
        self.equivalence_calls: list[tuple[str, str, str]] = []

    def relevance(self, pairs):
        return np.array([0.9 if "rights" in p else 0.1 for _, p in pairs])

    def stance(self, pairs):
        return np.array([self.support[p] for _, p in pairs])

    def equivalence(self, triples):
        self.equivalence_calls += list(triples)
        return np.ones(len(triples))


@dataclass
class FakeDense:
    """Unit vectors by id: every perspective is close to every other (cosine 0.8)."""

    ids: list[int]

    def vectors(self, ids):
        base = np.full(len(self.ids) + 1, 0.0)
        base[-1] = np.sqrt(0.8)
        rows = []
        for d in ids:
            v = base.copy()
            v[self.ids.index(d)] = np.sqrt(0.2)
            rows.append(v)
        return np.array(rows)

    def search_vectors(self, queries, k):
        from perspectrum.index.search import Hit

        return [[Hit(d, 0.8) for d in self.ids[:k]] for _ in queries]


TEXTS = {1: "animals have rights", 2: "animals deserve rights", 3: "animals have no rights", 4: "rights are for humans"}
#: The stance stage's reading at threshold 0.5, as later stages read it through their context.
HALF = Stance(threshold=0.5)


def _context(support: dict[str, float]) -> tuple[Context, FakeScorers]:
    scorers = FakeScorers(support)
    return Context(scorers, None, FakeDense(list(TEXTS)), TEXTS, {}, HALF), scorers  # type: ignore[arg-type]


def _clustered(support: dict[str, float], margin: float) -> tuple[ClaimState, FakeScorers]:
    context, scorers = _context(support)
    state = ClaimState("Animals should have rights", kept=[Member(d, 1.0 - d / 10) for d in TEXTS])
    Stance(threshold=0.5, margin=margin).run([state], context)
    ClusterStage(weight=0.5, threshold=0.6).run([state], context)
    return state, scorers


def test_clusters_never_join_confident_opposites() -> None:
    # equivalence 1.0 and cosine 0.8 for every pair: without stance, one cluster of four
    support = {TEXTS[1]: 0.9, TEXTS[2]: 0.8, TEXTS[3]: 0.1, TEXTS[4]: 0.2}
    state, scorers = _clustered(support, margin=0.0)
    assert [g.members for g in state.groups] == [[0, 1], [2, 3]]
    assert len(scorers.equivalence_calls) == 2  # the four opposite pairs were never scored
    assert state.groups[0].support == pytest.approx(0.85) and state.groups[1].support == pytest.approx(0.15)


def test_unsure_members_join_and_the_cluster_takes_its_confident_members_side() -> None:
    support = {TEXTS[1]: 0.9, TEXTS[2]: 0.45, TEXTS[3]: 0.1, TEXTS[4]: 0.55}
    state, _ = _clustered(support, margin=0.2)
    assert any({state.kept[i].leaning for i in group.members} - {0} for group in state.groups)
    for group in state.groups:
        sides = {state.kept[i].leaning for i in group.members} - {0}
        assert len(sides) <= 1
        if sides:  # the cluster's stance is its confident members' stance
            assert (group.support >= 0.5) == (sides == {1})
    assert sorted(len(g.members) for g in state.groups) != [1, 1, 1, 1]  # unsure ones did join


def test_a_merge_outweighing_a_cannot_link_is_split_again() -> None:
    from perspectrum.models.rules import cluster_support, split_sides

    matrix = np.full((4, 4), 0.9)
    matrix[0, 3] = matrix[3, 0] = 0.0
    parts = split_sides([0, 1, 2, 3], [1, 0, 0, -1], matrix, 0.6)
    assert parts[0] == [0, 1, 2] and parts[1:] == [[3]]
    assert split_sides([0, 1, 2], [1, 0, 1], matrix, 0.6) == [[0, 1, 2]]
    assert cluster_support([0.9, 0.5, 0.5], [1, 0, 0]) == 0.9
    assert cluster_support([0.4, 0.6], [0, 0]) == 0.5 and cluster_support([None], [0]) == 0.5


@pytest.mark.parametrize("agree", [False, True])
def test_expansion_admits_only_paraphrases_on_their_clusters_side_when_asked(agree: bool) -> None:
    from perspectrum.pipeline.stages import Expand
    from perspectrum.pipeline.stages.base import Group

    # pool neighbours 2 (supports) and 3 (undermines) both pass the equivalence cut
    context, scorers = _context({TEXTS[1]: 0.9, TEXTS[2]: 0.8, TEXTS[3]: 0.1, TEXTS[4]: 0.2})
    state = ClaimState("Animals should have rights", kept=[Member(1, 0.9, 0.9, 1)], groups=[Group([0], 0.9)])
    Expand(weight=0.5, threshold=0.6, neighbours=2, agree=agree).run([state], context)
    added = {m.id: m.support for m in state.kept if m.added}
    assert state.groups[0].members == list(range(len(state.kept)))
    if agree:
        assert added == {2: 0.8}  # 3 is read as undermining: kept out of a supporting cluster
    else:
        assert added == {2: None, 3: None}  # taken in unread


class GradedDense(FakeDense):
    """Perspective 1 as the unit vector e0, and each other one at a set cosine from it; the
    search returns them in the order given (not by cosine)."""

    COSINE = {1: 1.0, 2: 0.9, 3: 0.8, 4: 0.7}

    def vectors(self, ids):
        rows = []
        for d in ids:
            v = np.zeros(len(self.COSINE) + 1)
            v[0] = self.COSINE[d]
            v[d] = np.sqrt(1 - self.COSINE[d] ** 2)
            rows.append(v)
        return np.array(rows)


@pytest.mark.parametrize("budget", [0, 2])
def test_an_expand_budget_reads_each_claims_closest_neighbours_first(budget: int) -> None:
    from perspectrum.pipeline.stages import Expand
    from perspectrum.pipeline.stages.base import Group

    scorers = FakeScorers({t: 0.9 for t in TEXTS.values()})
    context = Context(scorers, None, GradedDense([1, 4, 3, 2]), TEXTS, {}, HALF)  # type: ignore[arg-type]
    state = ClaimState("Animals should have rights", kept=[Member(1, 0.9, 0.9, 1)], groups=[Group([0], 0.9)])
    Expand(weight=0.5, threshold=0.6, neighbours=3, budget=budget).run([state], context)
    read = [third for _, _, third in scorers.equivalence_calls]
    if budget:  # 4 is the farthest: left unread; the two read keep the search's order
        assert read == [TEXTS[3], TEXTS[2]]
        assert {m.id for m in state.kept if m.added} == {2, 3}
    else:
        assert read == [TEXTS[4], TEXTS[3], TEXTS[2]]
        assert {m.id for m in state.kept if m.added} == {2, 3, 4}


def test_window_features_by_hand() -> None:
    """Four sentences on axes 0 (this cluster's point), 1 (the sibling's), 2 (the claim's):
    windows start every 2 sentences and the last one is kept, so they cover 0-2 and 1-3."""
    from perspectrum.models.evidence_ranker import WINDOW_FEATURES, ParagraphWindows

    axes = np.eye(3)
    paragraph = ParagraphWindows.of(axes[[0, 1, 2, 0]], [axes[[0]], axes[[1]]], axes[2])
    assert paragraph.starts == [0, 1]
    mine, sibling = paragraph.features(0), paragraph.features(1)
    column = {name: n for n, name in enumerate(WINDOW_FEATURES)}
    assert mine[:, column["own_mean"]] == pytest.approx([1 / 3, 1 / 3])
    assert mine[:, column["mean_comp"]] == pytest.approx([0.0, 0.0])
    assert mine[:, column["max_comp"]] == pytest.approx([0.0, 0.0])
    assert sibling[:, column["own_mean"]] == pytest.approx([1 / 3, 1 / 3])
    assert mine[:, column["claim_mean"]] == pytest.approx([1 / 3, 1 / 3])
    assert mine[:, column["position"]] == pytest.approx([0.0, 0.25]) and list(mine[:, column["first"]]) == [1, 0]
    assert list(mine[:, column["windows"]]) == [2, 2]
    lopsided = ParagraphWindows.of(axes[[0, 0, 1, 2]], [axes[[0]], axes[[1]]], axes[2]).features(0)
    assert lopsided[:, column["own_mean"]] == pytest.approx([2 / 3, 1 / 3])
    assert lopsided[:, column["mean_comp"]] == pytest.approx([1 / 3, 0.0])
    assert list(lopsided[:, column["mean_rank"]]) == [0, 1] and lopsided[1, column["mean_gap"]] == pytest.approx(-1 / 3)
    assert ParagraphWindows.of(np.zeros((0, 3)), [axes[[0]]], axes[2]).features(0).shape == (0, len(WINDOW_FEATURES))


def test_relevance_floor_empties_an_off_topic_claim_with_a_notice() -> None:
    from perspectrum.pipeline.stages.base import Candidate

    context, _ = _context({})
    on, off = ClaimState("rights", candidates=[Candidate(1, 0.9), Candidate(4, 0.8)]), \
        ClaimState("bread", candidates=[Candidate(3, 0.1)])
    TEXTS[3], saved = "bread and butter", TEXTS[3]
    try:
        Relevance(weight=0.5, relative=True, threshold=0.5, k=10, min_keep=1, floor=0.5).run([on, off], context)
    finally:
        TEXTS[3] = saved
    assert [m.id for m in on.kept] == [1, 4] and on.notice is None
    assert off.kept == [] and "relevance floor of 0.50" in off.notice


def test_retrieve_answers_a_claim_in_another_script_with_a_notice_not_a_search() -> None:
    from perspectrum.pipeline.stages import Retrieve

    context, _ = _context({})
    foreign = ClaimState("社交媒体对社会的影响")
    Retrieve(candidates=5).run([foreign], context)  # the fake context has no indexes: nothing may be searched
    assert foreign.candidates == [] and "not written in the Latin alphabet" in foreign.notice
    Relevance(weight=0.5, relative=True, threshold=0.5, k=10, min_keep=1).run([foreign], context)
    assert foreign.kept == [] and "Latin alphabet" in foreign.notice  # the first reason is kept


def test_stage_settings_are_checked_by_name_and_type() -> None:
    assert configure(Stance, {"threshold": 0.7}).threshold == 0.7
    with pytest.raises(PerspectrumError, match=r"unknown setting stance\.treshold \(known: threshold, margin, scale, unclear, other_side, floor\)"):
        configure(Stance, {"treshold": 0.7})
    with pytest.raises(PerspectrumError, match=r"setting stance\.threshold must be a finite number"):
        configure(Stance, {"threshold": "high"})
    for endless in (float("nan"), float("inf")):  # NaN would pass every cut, silently
        with pytest.raises(PerspectrumError, match=r"setting stance\.threshold must be a finite number"):
            configure(Stance, {"threshold": endless})
    with pytest.raises(PerspectrumError, match=r"no setting stance\.threshold"):
        configure(Stance, {"margin": 0.1})
    with pytest.raises(PerspectrumError, match=r"^overrides: setting expand\.neighbours must be a whole number"):
        perspectrum.PipelineConfig(overrides={"expand": {"neighbours": 2.5}})
    with pytest.raises(PerspectrumError, match="unknown stage"):
        perspectrum.PipelineConfig(overrides={"equivalence": {}})
    with pytest.raises(PerspectrumError, match="whole numbers"):
        perspectrum.PipelineConfig(max_perspectives=2.5)  # type: ignore[arg-type]


# ----------------------------------------------------------------- end-to-end scoring
def _claim() -> Claim:
    return Claim(1, "claim", "fixture", "dev", (), (
        Cluster((1, 2), "SUPPORT", "SUPPORT", (), (10,)),
        Cluster((3,), "UNDERMINE", "UNDERMINE", (), (11,)),
        Cluster((4,), "SUPPORT", "SUPPORT", (), (12,)),
    ))


def _found(pids: tuple[int, ...], stance: str, evidence: tuple[int, ...]) -> DiscoveredPerspective:
    phrasings = tuple(Phrasing(p, str(p), 1.0) for p in pids)
    return DiscoveredPerspective(str(pids[0]), pids[0], stance, 0.9 if stance == "support" else 0.1, 0.9, 1.0,
                                 phrasings, tuple(EvidenceHit(e, "", 1.0) for e in evidence))


def test_found_and_all_scores_differ_by_hand() -> None:
    # clusters 1 and 2 found exactly with their gold evidence; cluster 3 (perspective 4) missed
    result = Discovery("claim", "test", (_found((1, 2), "support", (10,)), _found((3,), "undermine", (11,))), {})
    s = score([_claim()], [result])
    assert s["t4"]["f1"] == 1.0  # over the two gold clusters found
    assert s["t4_all"]["precision"] == pytest.approx(2 / 3) and s["t4_all"]["f1"] == pytest.approx(2 / 3)
    assert s["t2"]["f1"] == 1.0
    # all pairs: 4 (support) missing counts as undermine: tp 2, fp 0, fn 1
    assert s["t2_all"]["recall"] == pytest.approx(2 / 3) and s["t2_all"]["f1"] == pytest.approx(0.8)
    assert s["coverage"]["pairs"] == pytest.approx(3 / 4) and s["coverage"]["clusters"] == pytest.approx(2 / 3)
    assert s["t5_all"] < s["t5"]
    assert s["mixed"] == 0.0 and s["wrong_stance"] == 0.0 and s["both_sides"] == 1.0


def test_clusters_are_matched_one_to_one() -> None:
    # returned {1, 3} and {2}: argmax overlap would give {1, 3} to both gold {1, 2} and {3}
    assert assign_clusters([(1, 2), (3,), (4,)], [[1, 3], [2]]) == {0: 1, 1: 0}
    result = Discovery("claim", "test", (_found((1, 3), "support", (10,)), _found((2,), "support", ())), {})
    s = score([_claim()], [result])
    # gold {1,2} gets {2}'s evidence (none), gold {3} gets {1,3}'s (10, not its 11): T4 is 0
    assert s["t4"]["f1"] == 0.0 and s["t4_all"]["f1"] == 0.0
    assert s["mixed"] == 1.0 and s["wrong_stance"] == pytest.approx(1 / 3)


def test_choose_floor_separates_and_caps_the_real_claims_emptied() -> None:
    real = [0.6 + i / 1000 for i in range(200)]
    off = [0.2, 0.3, 0.35, 0.65]
    floor, rates = choose_floor(real, off)
    assert 0.35 < floor <= 0.6 and rates["real_emptied"] == 0.0 and rates["offtopic_answered"] == 0.25
    floor, rates = choose_floor([0.1, *real], [0.05])  # emptying 1 of 201 (0.5 %) is allowed
    assert 0.05 < floor <= 0.1


def test_caching_scorers_answer_as_the_inner_ones_and_call_them_once() -> None:
    inner = FakeScorers({TEXTS[1]: 0.9, TEXTS[3]: 0.2})
    calls = []
    stance = inner.stance
    inner.stance = lambda pairs: calls.append(list(pairs)) or stance(pairs)  # type: ignore[method-assign]
    cached = CachingScorers(inner)
    pairs = [("c", TEXTS[1]), ("c", TEXTS[3]), ("c", TEXTS[1])]
    assert cached.stance(pairs).tolist() == stance(pairs).tolist()
    assert cached.stance(pairs[:2]).tolist() == [0.9, 0.2] and calls == [[("c", TEXTS[1]), ("c", TEXTS[3])]]


def test_each_stage_declares_its_own_settings_and_is_listed_once() -> None:
    from dataclasses import fields

    from perspectrum.models.scorers import MODELS
    from perspectrum.pipeline.settings import BY_MODEL, BY_STAGE
    from perspectrum.pipeline.stages import ORDER
    from perspectrum.pipeline.stages.base import Stage

    assert [stage.name for stage in ORDER] == ["retrieve", "relevance", "stance", "cluster", "expand", "evidence",
                                               "verify"]
    assert list(BY_STAGE.values()) == list(ORDER) and sorted(BY_MODEL) == sorted(MODELS)
    for stage in ORDER:  # the settings are the stage's own fields, declared in the stage's module
        assert issubclass(stage, Stage) and fields(stage)
        assert all(f.name in vars(stage)["__annotations__"] or f.name in {"relative", "threshold", "k", "min_keep"}
                   for f in fields(stage))


def test_config_settings_take_the_models_then_the_pipeline_file_then_the_overrides() -> None:
    """Each stage's settings, key order included (they are shown in --explain and results):
    what tuning chooses at its default until tuned, the model's, the pipeline file's."""
    tuned = {"relevance": {"weight": 0.2, "relative": True, "threshold": 0.7, "k": 50, "min_keep": 1, "floor": 0.4},
             "stance": {"threshold": 0.6}, "equivalence": {"weight": 0.5, "threshold": 0.7},
             "cluster": {"threshold": 0.8}, "evidence": {"relative": True, "threshold": 0.5, "k": 10, "min_keep": 1}}
    config = perspectrum.PipelineConfig(overrides={"stance": {"margin": 0.1}})
    settings = config.settings(SimpleNamespace(settings=tuned))
    assert settings == {
        "retrieve": {"candidates": 50},
        "relevance": {"floor": 0.4, "weight": 0.2, "relative": True, "threshold": 0.7, "k": 30, "min_keep": 1},
        "stance": {"margin": 0.1, "scale": 1.0, "unclear": 0.0, "other_side": 0, "threshold": 0.6, "floor": 0.4},
        "cluster": {"weight": 0.5, "threshold": 0.8},
        "expand": {"neighbours": 0, "agree": False, "vote": False, "weight": 0.5, "threshold": 0.8},
        "evidence": {"rival": 1.0, "floor": 0.0, "relative": True, "threshold": 0.5, "k": 10, "min_keep": 1, "depth": 20},
        "verify": {"against": 1.0, "top": 1},
    }
    assert {name: list(values) for name, values in settings.items()} == {
        "retrieve": ["candidates"], "relevance": ["floor", "weight", "relative", "threshold", "k", "min_keep"],
        "stance": ["margin", "scale", "unclear", "other_side", "threshold", "floor"], "cluster": ["weight", "threshold"],
        "expand": ["neighbours", "agree", "vote", "weight", "threshold"],
        "evidence": ["rival", "floor", "relative", "threshold", "k", "min_keep", "depth"],
        "verify": ["against", "top"]}
    built = [configure(stage, settings[stage.name]) for stage in perspectrum.pipeline.stages.ORDER]
    assert built[4].threshold == 0.8 and built[2].leans(0.6) and not built[2].leans(0.59) and built[1].cut == {"relative": True, "threshold": 0.7, "k": 30,
                                                                  "min_keep": 1}


def test_calibrated_support_is_half_at_the_threshold_and_the_side_never_moves() -> None:
    from perspectrum.pipeline.results import calibrated, side

    for threshold in (0.3, 0.5, 0.8):
        assert calibrated(threshold, threshold, 2.7) == pytest.approx(0.5)
        for p in (0.01, 0.2, 0.45, 0.55, 0.9, 0.99):
            for scale in (0.3, 1.0, 4.0):
                assert (calibrated(p, threshold, scale) >= 0.5) == (p >= threshold)
    # a steeper scale is surer on both sides; 1 is plain logit shift
    assert calibrated(0.9, 0.5, 3.0) > calibrated(0.9, 0.5, 1.0) == pytest.approx(0.9)
    assert calibrated(0.1, 0.5, 3.0) < calibrated(0.1, 0.5, 1.0)
    assert [side(q, 0.1) for q in (0.3, 0.41, 0.5, 0.59, 0.61)] == ["undermine", "unclear", "unclear", "unclear",
                                                                  "support"]
    assert side(0.5, 0.0) == "support" and side(0.49, 0.0) == "undermine"


def _cards(right: int, of: int = 20) -> tuple[Claim, Discovery]:
    """One claim with ``of`` one-perspective gold clusters and one card each: cards alternate at
    P(support) 0.9 and 0.1, and the first ``right`` of them are on their gold side."""
    clusters, cards = [], []
    for i in range(of):
        leans = i % 2 == 0
        clusters.append(Cluster((i,), "SUPPORT" if leans == (i < right) else "UNDERMINE", "", (), ()))
        card = _found((i,), "support" if leans else "undermine", ())
        cards.append(replace(card, support_probability=0.9 if leans else 0.1))
    return Claim(1, "claim", "fixture", "dev", (), tuple(clusters)), Discovery("claim", "test", tuple(cards), {})


def test_the_calibration_is_checked_on_what_the_answers_show_and_refitted_there_when_off() -> None:
    from perspectrum.pipeline.results import calibrated
    from perspectrum.train.tune_pipeline import MAX_SHOWN_ECE, shown_calibration

    # cards shown at 90 % that are right 70 % of the time: off by 0.2, so the scale is refitted
    claim, answer = _cards(right=14)
    record = shown_calibration([claim], [answer], 0.5, {"scale": 1.0, "unclear": 0.0})
    assert record["ece_pairs_fit"] == pytest.approx(0.2) and record["refitted"]
    scale = record["settings"]["scale"]
    assert calibrated(0.9, 0.5, scale) == pytest.approx(0.7, abs=0.01) and record["ece_shown_fit"] < 0.01
    band = record["settings"]["unclear"]  # the widest band tried that leaves every card on a side
    assert band <= abs(calibrated(0.9, 0.5, scale) - 0.5) < band + 0.01
    # cards shown at 90 % that are right 90 % of the time: the fit is kept as it was
    claim, answer = _cards(right=18)
    record = shown_calibration([claim], [answer], 0.5, {"scale": 1.0, "unclear": 0.05})
    assert record["ece_pairs_fit"] <= MAX_SHOWN_ECE and not record["refitted"]
    assert record["settings"] == {"scale": 1.0, "unclear": 0.05}


def test_unclear_cards_count_neither_right_nor_wrong_and_calibration_error_by_hand() -> None:
    from perspectrum.eval.metrics import calibration_bins, calibration_error

    # 4 predictions at 0.95, 3 right; 2 at 0.65, both right: |0.95-0.75|*4/6 + |0.65-1|*2/6
    conf, right = [0.95] * 4 + [0.65] * 2, [True, True, True, False, True, True]
    assert calibration_error(conf, right) == pytest.approx(0.2 * 4 / 6 + 0.35 * 2 / 6)
    assert [(b["count"], b["accuracy"]) for b in calibration_bins(conf, right)] == [(2, 1.0), (4, 0.75)]
    assert calibration_error([1.0], [True]) == 0.0 and calibration_error([], []) == 0.0
    # gold: 1, 2 support; 3 undermine. Shown: {1, 2} support (right), {3} unclear leaning support
    unclear = replace(_found((3,), "unclear", (11,)), support_calibrated=0.55)
    s = score([_claim()], [Discovery("claim", "test", (_found((1, 2), "support", (10,)), unclear), {})])
    assert s["wrong_stance"] == 0.0 and s["shown"] == 2 and s["unclear"] == pytest.approx(1 / 2)
    assert s["t2"]["accuracy"] < 1.0  # T2 still reads the side the unclear card leans to (support: wrong)
    assert s["both_sides"] == 0.0  # an unclear card is on no side


def test_a_mislabelled_member_is_outvoted_by_its_cluster() -> None:
    from perspectrum.pipeline.stages.base import ClaimState, Group, Member
    from perspectrum.pipeline.stages.expand import Expand, weighted_support

    kept = [Member(1, 0.8, support=0.9), Member(2, 0.7, support=0.8), Member(3, 0.75, support=0.2),
            Member(4, 0.1, support=None, added=True), Member(5, 0.3, support=0.3, added=True)]
    # (0.8·0.9 + 0.7·0.8 + 0.75·0.2) / 2.25 for the three kept ones; the unread paraphrase does not vote
    assert weighted_support([0, 1, 2, 3], kept, {}) == pytest.approx((0.72 + 0.56 + 0.15) / 2.25)
    assert weighted_support([0, 1, 2, 3], kept, {}) > 0.6  # the mislabelled member (0.2) is outvoted
    assert weighted_support([2, 4], kept, {5: 0.9}) == pytest.approx((0.75 * 0.2 + 0.9 * 0.3) / 1.65)  # by similarity
    assert weighted_support([3], kept, {}) == 0.5  # nothing read
    # the stage: with vote on (and no paraphrases to read) the cluster's side is its members' vote
    state = ClaimState("claim", kept=kept[:3], groups=[Group([0, 1, 2], support=0.2)])
    Expand(weight=0.5, threshold=0.8, neighbours=0, vote=True).run([state], None)
    assert state.groups[0].support > 0.5
    unchanged = ClaimState("claim", kept=kept[:3], groups=[Group([0, 1, 2], support=0.2)])
    Expand(weight=0.5, threshold=0.8, neighbours=0).run([unchanged], None)
    assert unchanged.groups[0].support == 0.2


def test_a_card_whose_top_paragraph_argues_the_other_side_is_counted() -> None:
    # gold: cluster {1, 2} supports with paragraph 10; {3} undermines with 11
    support_with_11 = _found((1, 2), "support", (11, 10))  # its top paragraph argues for the undermining side
    s = score([_claim()], [Discovery("claim", "test", (support_with_11, _found((3,), "undermine", (11,))), {})])
    assert s["opposite_evidence"] == pytest.approx(1 / 2) and s["evidenced_cards"] == 2
    right = score([_claim()], [Discovery("claim", "test", (_found((1, 2), "support", (10,)),), {})])
    assert right["opposite_evidence"] == 0.0


def test_a_paragraph_arguing_against_its_perspective_is_dropped() -> None:

    from perspectrum.pipeline.stages.base import ClaimState, Group, Member
    from perspectrum.pipeline.stages.evidence import EvidenceStage

    # cluster 0 supports, cluster 1 undermines; paragraph "b" was kept for 0 but 1 rates it far higher
    probs = {(0, 0, "a"): 0.9, (0, 0, "b"): 0.5, (0, 1, "b"): 0.95, (0, 1, "c"): 0.8, (0, 0, "d"): 0.6}

    class Scorers:
        def evidence(self, debates, depth):
            return list(probs), list(probs.values())

    context = SimpleNamespace(scorers=Scorers(), perspective_text={1: "pro", 2: "con"},
                              evidence_text={d: d.upper() for d in "abcd"}, stance=HALF)
    cut = {"relative": False, "threshold": 0.1, "k": 5, "min_keep": 1}

    def run(rival: float, floor: float = 0.0) -> list[list[str]]:
        state = ClaimState("claim", kept=[Member(1, 0.9, support=0.9), Member(2, 0.8, support=0.1)],
                           groups=[Group([0], support=0.9), Group([1], support=0.1)])
        EvidenceStage(**cut, rival=rival, floor=floor).run([state], context)
        if not floor:
            assert state.groups[0].rivals == {"b": pytest.approx(0.45)}  # "a" and "d": no rival read them
        return [[h.id for h in g.evidence] for g in state.groups]

    assert run(1.0) == [["a", "d", "b"], ["b", "c"]]  # off: kept as ranked
    assert run(0.2) == [["a", "d"], ["b", "c"]]  # it argues the other side: dropped from the supporting card
    assert run(0.5) == [["a", "d", "b"], ["b", "c"]]  # a gap of 0.45 is within 0.5: kept
    assert run(1.0, floor=0.55) == [["a", "d"], ["b", "c"]]  # below the floor: not shown
    assert run(1.0, floor=0.92) == [[], ["b"]]  # even the one min_keep keeps: the card shows none


def test_a_one_sided_answer_takes_the_most_relevant_candidate_from_the_other_side() -> None:

    from perspectrum.pipeline.stages.base import Candidate, ClaimState, Member
    from perspectrum.pipeline.stages.stance import Stance

    support = {"k1": 0.9, "k2": 0.8, "c1": 0.7, "c2": 0.45, "c3": 0.1, "c4": 0.05, "low": 0.0}

    class Scorers:
        calls: list[int] = []

        def stance(self, pairs):
            self.calls.append(len(pairs))
            return [support[text] for _, text in pairs]

    context = SimpleNamespace(scorers=Scorers(), perspective_text={k: k for k in support})

    def run(other_side: int) -> list[str]:
        candidates = [Candidate(k, 0.5, score=s) for k, s in
                      (("k1", 0.9), ("k2", 0.8), ("c1", 0.6), ("c2", 0.55), ("c3", 0.5), ("c4", 0.45), ("low", 0.01))]
        state = ClaimState("claim", candidates=candidates, kept=[Member("k1", 0.9), Member("k2", 0.8)])
        Stance(threshold=0.5, unclear=0.1, other_side=other_side, floor=0.1).run([state], context)
        return [m.id for m in state.kept]

    assert run(0) == ["k1", "k2"]  # off: both kept perspectives support, and that is the answer
    # c1 supports too, c2 is unclear (0.45 is within 0.1 of 0.5 at scale 1): c3 is the first shown undermining
    assert run(5) == ["k1", "k2", "c3"]
    assert run(2) == ["k1", "k2"]  # only c1 and c2 read: none undermines
    Scorers.calls.clear()
    run(10)
    assert Scorers.calls == [2, 3]  # read three at a time: c3 undermines, so c4 is never read
    support["c3"] = 0.45  # now unclear: the next round reads c4, the last above the floor
    Scorers.calls.clear()
    assert run(10) == ["k1", "k2", "c4"]
    assert Scorers.calls == [2, 3, 1]  # "low" is under the floor: never read


def test_a_paragraph_whose_window_argues_the_other_side_is_dropped() -> None:

    from perspectrum.pipeline.results import EvidenceHit
    from perspectrum.pipeline.stages.base import ClaimState, Group
    from perspectrum.pipeline.stages.verify import Verify

    reads = {"zoos save species": 0.9, "cages are cruel": 0.05, "zoos are dull": 0.4}

    class Scorers:
        def stance(self, pairs):
            return [reads[window] for _, window in pairs]

    def run(against: float) -> list[list[str]]:
        hits = {w: EvidenceHit(w, "paragraph", 0.8, window=w) for w in reads}
        state = ClaimState("Zoos are good", groups=[
            Group([0], support=0.9, evidence=[hits["cages are cruel"], hits["zoos save species"]]),
            Group([1], support=0.1, evidence=[hits["zoos save species"], hits["zoos are dull"],
                                              EvidenceHit("unverified", "paragraph", 0.5)]),
            Group([2], support=0.5, evidence=[hits["cages are cruel"]])])  # side unclear: kept whatever it reads
        Verify(top=0, against=against).drop_opposite(
            [state], SimpleNamespace(scorers=Scorers(), stance=Stance(threshold=0.5, scale=1.0, unclear=0.1)))
        return [[h.id for h in g.evidence] for g in state.groups]

    assert run(0.8) == [["zoos save species"], ["zoos are dull", "unverified"], ["cages are cruel"]]
    # at 0.95 only readings that sure count: 0.05 (0.95 sure of undermining) still goes, 0.9 stays
    assert run(0.95) == [["zoos save species"], ["zoos save species", "zoos are dull", "unverified"],
                         ["cages are cruel"]]
    # "zoos are dull" reads 0.4: the undermining side, its cluster's own


def test_the_settings_carried_into_a_tune_are_the_shipped_ones_it_does_not_choose() -> None:
    from perspectrum.models.scorers import PIPELINE_FILE
    from perspectrum.models.shipped import source
    from perspectrum.pipeline.settings import check_settings
    from perspectrum.pipeline.stages.base import PIPELINE
    from perspectrum.train.tune_pipeline import TUNED, carried_settings

    carried = carried_settings()
    assert carried  # the shipped models carry settings chosen by longer dev runs
    check_settings(carried, "carried", PIPELINE)  # raises on an unknown name or a wrong type
    check_settings({stage: dict.fromkeys(names, 0.5) for stage, names in TUNED.items() if stage != "expand"},
                   "tuned", None)
    shipped = json.loads((source() / PIPELINE_FILE).read_text(encoding="utf-8"))["settings"]
    for stage, values in shipped.items():  # each shipped setting is either chosen again or carried as it is
        for key, value in values.items():
            assert (key in TUNED.get(stage, ())) != (carried.get(stage, {}).get(key) == value)
    assert perspectrum.PipelineConfig(overrides=carried).overrides == carried  # and a pipeline accepts them
