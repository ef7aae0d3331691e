"""A claim's form, the same claim as a question and a motion, and the stance dev check built on them."""

from __future__ import annotations

import numpy as np
import pytest

from perspectrum.text.claim_forms import form_of, rephrase


@pytest.mark.parametrize(("claim", "form", "question", "motion"), [
    ("Zoos should be banned", "modal", "Should zoos be banned?", "This house believes that zoos should be banned"),
    ("Ban junk food from schools", "imperative", "Should we ban junk food from schools?",
     "This house would ban junk food from schools"),
    ("We should build new nuclear power plants.", "we", "Should we build new nuclear power plants?",
     "This house would build new nuclear power plants"),
    ("Goal line technology has to be adopted", "modal", "Does goal line technology have to be adopted?",
     "This house believes that goal line technology has to be adopted"),
    ("Make-up is bad for us", "evaluative", "Is make-up bad for us?", "This house believes that make-up is bad for us"),
    ("Technology promotes a materialistic society", "statement",
     "Is it true that technology promotes a materialistic society?",
     "This house believes that technology promotes a materialistic society"),
    ("Should zoos be banned?", "question", "Should zoos be banned?",
     'This house believes the answer to "Should zoos be banned?" is yes'),
    ("UK schools should teach Latin", "modal", "Should UK schools teach Latin?",
     "This house believes that UK schools should teach Latin"),
])
def test_a_claim_is_restated_as_a_question_and_a_motion_proposing_the_same(claim, form, question, motion):
    assert form_of(claim) == form
    assert rephrase(claim) == {"question": question, "motion": motion}


def test_an_empty_claim_has_no_rewrites():
    assert rephrase("  ") == {}
    assert form_of("") == "statement"


class _Reader:
    """Right on every claim as stated and on its negation; reads a question as the opposite."""

    def __init__(self, dataset):
        self.support = {dataset.perspectives[pid].text: k.stance == "SUPPORT"
                        for c in dataset.claims.values() for k in c.clusters for pid in k.pids}
        self.opposite = {}
        from perspectrum.text.polarity import negate
        for claim in dataset.claims.values():
            if negate(claim.text):
                self.opposite[negate(claim.text)] = True

    def score(self, pairs, show_progress=False, description=""):
        out = []
        for claim, perspective in pairs:
            support = self.support[perspective]
            if claim.endswith("?") or claim in self.opposite:
                support = not support
            out.append(0.9 if support else 0.1)
        return np.array(out)


def test_the_forms_check_finds_a_model_that_misreads_one_form(dataset):
    from perspectrum.eval.stance_forms import forms_check

    claims = dataset.split("train")
    out = forms_check([_Reader(dataset)], dataset, claims, {"threshold": 0.5, "centre": False})
    pairs = sum(len(k.pids) for c in claims for k in c.clusters)
    assert out["stated"] == {"accuracy": 100.0, "pairs": pairs}
    assert out["rewritten"]["motion"]["accuracy"] == 100.0 and out["rewritten"]["motion"]["gap"] == 0.0
    assert out["rewritten"]["question"]["accuracy"] == 0.0 and out["rewritten"]["question"]["gap"] == 100.0
    assert out["rewritten"]["negated"]["accuracy"] == 100.0  # labels flipped, and so were the calls
    assert sum(row["claims"] for name, row in out["forms"].items() if name != "restrictive") == len(claims)
    assert all(row["gap"] in (0.0, None) for row in out["forms"].values())
    assert out["worst_gap"] == 100.0  # the question rewrite, over all six claims
    both = out["both_ways"]  # right both ways: reading the opposite too changes nothing
    assert both["stated"]["at_setting"] == both["both_ways"]["at_setting"] == 100.0


def test_forms_pairs_keep_every_stance_label_under_each_rewrite(dataset):
    from perspectrum.train.examples import forms_examples, stance_examples

    claims = dataset.split("train")
    plain = stance_examples(dataset, claims)
    restated = forms_examples(dataset, claims)
    assert len(restated) == 2 * len(plain)  # a question and a motion per claim
    target = dict(zip(((c, p) for c, p in plain.pairs), plain.targets))
    by_rewrite = {rewrite: claim.text for claim in claims for rewrite in rephrase(claim.text).values()}
    for (rewrite, perspective), value in zip(restated.pairs, restated.targets):
        assert rewrite != by_rewrite[rewrite]
        assert value == target[(by_rewrite[rewrite], perspective)]
