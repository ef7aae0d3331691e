"""A claim's opposite, the counterfactual stance pairs built from it, and the polarity dev check."""

from __future__ import annotations

import numpy as np
import pytest

from perspectrum.text.polarity import is_restrictive, negate
from perspectrum.train.examples import counterfactual_examples, stance_examples


@pytest.mark.parametrize(("claim", "opposite"), [
    ("Zoos should be banned", "Zoos should be allowed"),
    ("Performing tests on animals must be banned", "Performing tests on animals must be allowed"),
    ("The national curriculum should be scrapped", "The national curriculum should be kept"),
    ("Tuition Fees Should Be Increased", "Tuition Fees Should Be Reduced"),
    ("Women should be allowed to take part in combat", "Women should not be allowed to take part in combat"),
    ("Animals should have legal rights", "Animals should not have legal rights"),
    ("We should not ban cars", "We should ban cars"),
    ("Goal line technology has to be adopted", "Goal line technology does not have to be adopted"),
    ("Social media does more harm than good", "Social media does more good than harm"),
    ("Make-up is bad for us", "Make-up is good for us"),
    ("Obesity is a disease", "Obesity is not a disease"),
    ("Football doesn't unify us", "Football does unify us"),
    ("Abolish standardized tests", "We should not abolish standardized tests"),
    ("I believe in manned space flight", "I do not believe in manned space flight"),
    ("Should the Cell Phones Be Allowed in Schools", "Should the Cell Phones Be Banned in Schools"),
    ("This house would ban boxing", "This house would allow boxing"),
])
def test_negate_states_the_opposite_proposal(claim, opposite):
    assert negate(claim) == opposite
    assert negate(opposite) is not None  # and the opposite can be turned round again


@pytest.mark.parametrize("claim", ["Strict parenting works best", "Accessing your spouse's email account hacking",
                                   "", "   "])
def test_a_claim_no_rule_fits_has_no_opposite(claim):
    assert negate(claim) is None


def test_restrictive_claims_are_those_that_ban_abolish_limit_or_end():
    assert is_restrictive("Zoos should be banned") and is_restrictive("Homework should have a limit")
    assert is_restrictive("It is time to end the death penalty") and is_restrictive("History has no place in class")
    assert not is_restrictive("Voting should be compulsory")
    assert not is_restrictive("Blending in is fine")  # "end" only as a word


def test_a_negated_claim_flips_every_stance_label(dataset):
    claims = dataset.split("train")
    plain = stance_examples(dataset, claims)
    flipped = counterfactual_examples(dataset, claims)
    negatable = [c for c in claims if negate(c.text) is not None]
    assert len(negatable) == len(claims)  # every fixture claim has an opposite
    assert len(flipped) == len(plain)
    for (claim, perspective), target, (opposite, same), flipped_target in zip(
            plain.pairs, plain.targets, flipped.pairs, flipped.targets):
        assert same == perspective and opposite == negate(claim) != claim
        assert flipped_target == 1.0 - target
    # a claim without an opposite adds nothing
    odd = [c for c in claims if c.cid == 3]
    assert len(counterfactual_examples(dataset, odd)) == (len(stance_examples(dataset, odd))
                                                          if negate(odd[0].text) else 0)


class _SubjectReader:
    """A stance model that reads only the perspective: right on every gold claim, blind to its negation."""

    def __init__(self, dataset):
        self.support = {dataset.perspectives[pid].text: k.stance == "SUPPORT"
                        for c in dataset.claims.values() for k in c.clusters for pid in k.pids}

    def score(self, pairs, show_progress=False, description=""):
        return np.array([0.9 if self.support[perspective] else 0.1 for _, perspective in pairs])


def test_the_polarity_check_catches_a_model_that_ignores_what_the_claim_proposes(dataset):
    from perspectrum.eval.trained import polarity_check

    claims = dataset.split("train")
    out = polarity_check([_SubjectReader(dataset)], dataset, claims, {"threshold": 0.5, "centre": False})
    pairs = sum(len(k.pids) for c in claims for k in c.clusters)
    assert out["overall"] == {"accuracy": 100.0, "pairs": pairs}
    assert out["negated"] == {"accuracy": 0.0, "pairs": pairs}  # every label flipped, every call unchanged
    restrictive = [c for c in claims if is_restrictive(c.text)]
    assert out["claims"]["restrictive"] == len(restrictive) > 0
    assert out["restrictive"]["accuracy"] == 100.0
    polarity = out["restrictive"]["pairs"] * 100.0 / (out["restrictive"]["pairs"] + pairs)
    assert out["polarity"]["accuracy"] == pytest.approx(polarity, abs=0.01)
    assert out["gap"] == pytest.approx(100.0 - polarity, abs=0.01)


@pytest.mark.parametrize(("text", "no_side"), [
    ("The question is whether social media is good or bad for us.", True),
    ("The debate over open and closed primaries, explained.", True),
    ("There's an ongoing debate about the role social media should play in education.", True),
    ("The status of English in the United States has been debated for over a century.", True),
    ("Both systems have their pros and cons for small businesses.", True),
    ("After looking the pros and cons we can conclude religion is a very positive force.", False),
    ("The question of whether a degree is necessary is debated, as many successful people have none.", False),
    ("The debate over tests continues, but there is a growing focus on alternatives.", False),
    ("Social media harms employees' productivity.", False),
    ("It is questionable whether zoos help conservation.", False),
])
def test_a_statement_that_only_frames_the_debate_takes_no_side(text, no_side):
    from perspectrum.text.polarity import takes_no_side

    assert takes_no_side(text) is no_side


def test_a_framing_statement_never_heads_a_card_and_alone_is_shown_as_unclear():
    from perspectrum.pipeline.results import Phrasing, headed

    framing = Phrasing(1, "The question is whether social media is good or bad for us.", 0.8, 0.1)
    argues = Phrasing(2, "Social media harms employees' productivity.", 0.6, 0.9)
    ordered, shown = headed((framing, argues), q=0.1, unclear=0.1)
    assert [f.id for f in ordered] == [2, 1] and shown == "undermine"  # the sided phrasing heads it
    assert headed((framing,), q=0.05, unclear=0.1) == ((framing,), "unclear")  # a confident call, still no side
    assert headed((argues,), q=0.55, unclear=0.1)[1] == "unclear"  # the usual band still applies
    assert headed((argues,), q=0.9, unclear=0.1)[1] == "support"


def test_evidence_windows_argue_their_clusters_side_and_join_the_stance_pairs_when_asked(dataset):
    """`evidence_examples`: each gold cluster's evidence, window by window, against the claim,
    with the cluster's target; `TaskConfig(evidence=s)` adds a seeded sample of s per gold pair."""
    from dataclasses import replace

    from perspectrum.train.examples import evidence_examples, stance_target
    from perspectrum.train.tasks import CONFIGS, build_examples

    claims = dataset.split("train")
    windows = evidence_examples(dataset, claims)
    side = {}
    for claim in claims:
        for cluster in claim.clusters:
            for eid in cluster.evidence:
                side.setdefault((claim.text, dataset.evidence[eid].text), set()).add(stance_target(cluster))
    assert len(windows) >= len(side) > 0  # every paragraph gives a window at least
    for (claim, window), target in zip(windows.pairs, windows.targets):
        homes = [targets for (text, paragraph), targets in side.items() if text == claim and
                 all(part in paragraph for part in window.split(". ")[:1])]
        assert homes and any(target in targets for targets in homes)
    plain = stance_examples(dataset, claims)
    recipe = replace(CONFIGS["stance"], counterfactual=0.0, forms=0.0, evidence=0.5)  # windows alone on the gold pairs
    mixed, how = build_examples("stance", dataset, claims, None, recipe, seed=13)
    assert len(mixed) == len(plain) + min(len(windows), round(0.5 * len(plain)))
    assert mixed.pairs[:len(plain)] == plain.pairs and "windows of the clusters' evidence" in how
