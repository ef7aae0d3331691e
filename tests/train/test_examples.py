"""Training-pair construction: which pairs are positive, which negative, and windows."""

from __future__ import annotations

from itertools import combinations

from perspectrum.encoders.cross_encoder import SEP
from perspectrum.data import Cluster
from perspectrum.train.examples import (UNIT_WORDS, equivalence_examples, relevance_examples, stance_examples,
                                        stance_target, unit_equivalence_examples)
from perspectrum.text.sentences import sentences, window_sentences, window_starts, windows


def test_relevance_positives_are_gold_and_negatives_are_retrieved_non_gold(dataset):
    claims = dataset.split("train")
    zoo = claims[0]  # gold pids 1, 2, 3
    candidates = {zoo.cid: [3, 31, 4, 32, 1, 5, 6]}  # non-gold retrieved: 31, 4, 32, 5, 6
    out = relevance_examples(dataset, [zoo], candidates, negatives_per_positive=1, seed=0)
    text_to_pid = {p.text: pid for pid, p in dataset.perspectives.items()}
    pos = {text_to_pid[b] for (a, b), t in zip(out.pairs, out.targets) if t == 1.0}
    neg = [text_to_pid[b] for (a, b), t in zip(out.pairs, out.targets) if t == 0.0]
    assert pos == {1, 2, 3}
    assert len(neg) == 3 and set(neg) <= {31, 4, 32, 5, 6}  # 1 per positive, never gold
    assert all(a == zoo.text for a, _ in out.pairs)
    # asking for more negatives than were retrieved takes them all, no repeats
    many = relevance_examples(dataset, [zoo], candidates, negatives_per_positive=10, seed=0)
    assert sorted(text_to_pid[b] for (_, b), t in zip(many.pairs, many.targets) if t == 0.0) == [4, 5, 6, 31, 32]


def test_stance_target_uses_vote_share_only_on_the_gold_side():
    def cluster(stance: str, votes: tuple[int, ...]) -> Cluster:
        return Cluster(pids=(1,), stance=stance, stance_5=stance, voter_counts=votes, evidence=())

    assert stance_target(cluster("SUPPORT", (2, 1, 1, 0, 0))) == 0.75  # 3 of 4 said support
    assert stance_target(cluster("UNDERMINE", (0, 1, 1, 2, 0))) == 0.25
    assert stance_target(cluster("SUPPORT", (0, 1, 2, 1, 0))) == 1.0  # share disagrees: gold wins
    assert stance_target(cluster("SUPPORT", (1, 0, 1, 0, 0))) == 1.0  # a tie is no evidence either way
    assert stance_target(cluster("UNDERMINE", (0, 0, 0, 0, 3))) == 0.0  # no stance votes
    assert stance_target(cluster("SUPPORT", (2, 1, 1, 0, 0)), soft=False) == 1.0


def test_stance_examples_cover_every_gold_pair(dataset):
    claims = dataset.split("train")
    out = stance_examples(dataset, claims)
    assert len(out) == sum(len(k.pids) for c in claims for k in c.clusters)
    # fixture votes are unanimous, so soft targets equal the gold labels
    expected = [1.0 if k.stance == "SUPPORT" else 0.0 for c in claims for k in c.clusters for _ in k.pids]
    assert out.targets == expected


def test_equivalence_pairs_within_clusters_positive_across_negative(dataset):
    claims = dataset.split("train")
    out = equivalence_examples(dataset, claims, negatives_per_positive=1, seed=3)
    text_to_pid = {p.text: pid for pid, p in dataset.perspectives.items()}
    cluster_of = {pid: (c.cid, i) for c in claims for i, k in enumerate(c.clusters) for pid in k.pids}
    positives = 0
    for (a, b), target in zip(out.pairs, out.targets):
        claim_text, first = a.split(f" {SEP} ")
        p, q = text_to_pid[first], text_to_pid[b]
        assert claim_text == dataset.claims[cluster_of[p][0]].text
        assert (cluster_of[p] == cluster_of[q]) == (target == 1.0)
        positives += target == 1.0
    # every within-cluster pair of the train claims is a positive, once
    assert positives == sum(len(list(combinations(k.pids, 2))) for c in claims for k in c.clusters)


def test_unit_pairs_join_one_clusters_paragraphs_and_part_other_clusters(dataset):
    claims = dataset.split("train")
    owner: dict[tuple[str, str], set[int]] = {}  # (claim, sentence) -> the clusters whose evidence holds it
    paragraphs: dict[tuple[str, str], set[int]] = {}  # (claim, sentence) -> the paragraphs holding it
    for claim in claims:
        for index, cluster in enumerate(claim.clusters):
            for eid in cluster.evidence:
                for sentence in sentences(dataset.evidence[eid].text):
                    owner.setdefault((claim.text, sentence), set()).add(index)
                    paragraphs.setdefault((claim.text, sentence), set()).add(eid)
    out = unit_equivalence_examples(dataset, claims, count=40, seed=5)
    assert 0 < len(out) <= 40 and 0 < out.positives < len(out)
    for (a, b), target in zip(out.pairs, out.targets):
        claim_text, first = a.split(f" {SEP} ")
        assert UNIT_WORDS[0] <= len(first.split()) <= UNIT_WORDS[1]
        mine, theirs = owner[(claim_text, first)], owner[(claim_text, b)]
        assert len(mine) == len(theirs) == 1  # sentences of paragraphs one cluster alone cites
        if target == 1.0:
            assert mine == theirs and paragraphs[(claim_text, first)] != paragraphs[(claim_text, b)]
        else:
            assert mine != theirs
    assert unit_equivalence_examples(dataset, claims, count=40, seed=5).pairs == out.pairs


def test_windows_are_three_sentences_and_cover_the_paragraph():
    text = "Dr. Smith came at 3.5 p.m. on Monday. It rained. We left. They stayed. Everyone slept."
    assert sentences(text)[0] == "Dr. Smith came at 3.5 p.m. on Monday."  # abbreviations kept whole
    assert len(sentences(text)) == 5
    assert windows(text) == [
        "Dr. Smith came at 3.5 p.m. on Monday. It rained. We left.",
        "It rained. We left. They stayed.",
        "We left. They stayed. Everyone slept.",
    ]
    strided = windows(text, stride=2)
    assert strided == [windows(text)[0], windows(text)[2]]  # the last sentence is still covered
    assert windows("Only one sentence here.") == ["Only one sentence here."]
    assert windows("") == []
    assert window_starts(5, stride=2) == [0, 2] and window_starts(6, stride=2) == [0, 2, 3]
    assert window_starts(2) == [0] and window_starts(0) == []
    # a window made here gives back the sentences it was joined from, without splitting it again
    assert window_sentences(windows(text)[1]) == ("It rained.", "We left.", "They stayed.")
    assert window_sentences("Never made. Split now.") == ("Never made.", "Split now.")


def test_same_seed_same_examples_other_seed_other_sample(dataset):
    claims = dataset.split("train")
    candidates = {c.cid: sorted(dataset.perspectives) for c in claims}
    first = relevance_examples(dataset, claims, candidates, 1, seed=7)
    again = relevance_examples(dataset, claims, candidates, 1, seed=7)
    other = relevance_examples(dataset, claims, candidates, 1, seed=8)
    assert first.pairs == again.pairs and first.targets == again.targets
    assert first.pairs != other.pairs
    assert first.sample(5, seed=1).pairs == first.sample(5, seed=1).pairs
    assert len(first.sample(5, seed=1)) == 5 and first.sample(None, seed=1) is first


def test_units_join_the_equivalence_pairs_when_asked(dataset):
    """`TaskConfig(units=s)` adds a seeded sample of s × (pairs) unit pairs after the perspective pairs."""
    from dataclasses import replace

    from perspectrum.train.tasks import CONFIGS, build_examples

    claims = dataset.split("train")
    recipe = CONFIGS["equivalence"]
    plain, plain_how = build_examples("equivalence", dataset, claims, None, recipe, seed=13)
    assert "evidence sentences" not in plain_how
    mixed, how = build_examples("equivalence", dataset, claims, None, replace(recipe, units=0.5), seed=13)
    added = unit_equivalence_examples(dataset, claims, count=round(0.5 * len(plain)), seed=13 + 4)
    assert 0 < len(added) <= round(0.5 * len(plain))
    assert mixed.pairs == plain.pairs + added.pairs and mixed.targets == plain.targets + added.targets
    assert "pairs of evidence sentences" in how
