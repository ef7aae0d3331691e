"""Training pairs for the three cross-encoders, built from gold labels and retrieval.

Every builder is a pure function of the claims, the retrieved candidates and a seed,
so the same seed always yields the same pairs in the same order. Each pair is written by
:mod:`perspectrum.models.inputs`, which inference calls too, so the two can never drift apart.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

from perspectrum.data import Claim, Cluster, Dataset
from perspectrum.encoders.cross_encoder import Pair
from perspectrum.models.inputs import claim_perspective_input, equivalence_input
from perspectrum.models.rules import EVIDENCE_STRIDE
from perspectrum.text.claim_forms import rephrase
from perspectrum.text.polarity import negate
from perspectrum.text.sentences import sentences, windows


@dataclass
class Examples:
    """Parallel lists of model inputs and targets in [0, 1]."""

    pairs: list[Pair] = field(default_factory=list)
    targets: list[float] = field(default_factory=list)

    def add(self, pair: Pair, target: float) -> None:
        self.pairs.append(pair)
        self.targets.append(target)

    def __len__(self) -> int:
        return len(self.pairs)

    def __add__(self, other: Examples) -> Examples:
        """These examples, then ``other``'s, in order."""
        return Examples(self.pairs + other.pairs, self.targets + other.targets)

    @property
    def positives(self) -> int:
        return sum(t >= 0.5 for t in self.targets)

    def sample(self, limit: int | None, seed: int) -> Examples:
        """At most ``limit`` examples, drawn without replacement, original order kept."""
        if limit is None or len(self) <= limit:
            return self
        keep = sorted(random.Random(seed).sample(range(len(self)), limit))
        return Examples([self.pairs[i] for i in keep], [self.targets[i] for i in keep])


def relevance_examples(
    dataset: Dataset,
    claims: Sequence[Claim],
    candidates: Mapping[int, Sequence[int]],
    negatives_per_positive: float,
    seed: int,
) -> Examples:
    """Gold perspectives are positives; retrieved non-gold candidates are negatives.

    Per claim, ``negatives_per_positive`` × (gold count) negatives are drawn at random
    from the claim's retrieved candidates that are not gold (all of them if fewer), so
    the model learns to reject exactly what retrieval brings back.
    """
    rng = random.Random(seed)
    out = Examples()
    for claim in claims:
        gold = sorted(claim.gold_pids)
        for pid in gold:
            out.add(claim_perspective_input(claim.text, dataset.perspectives[pid].text), 1.0)
        wrong = [pid for pid in candidates.get(claim.cid, ()) if pid not in claim.gold_pids]
        for pid in rng.sample(wrong, min(len(wrong), round(negatives_per_positive * len(gold)))):
            out.add(claim_perspective_input(claim.text, dataset.perspectives[pid].text), 0.0)
    return out


def stance_target(cluster: Cluster, soft: bool = True) -> float:
    """P(support) to train towards: the annotators' vote share, on the gold side.

    The share is (support + mildly support) / (those + mildly undermine + undermine).
    It is used only when it agrees with the gold ``stance_label_3`` (strictly above or
    below one half); otherwise, or with no votes, or ``soft=False``, the hard 1/0 label.
    """
    hard = 1.0 if cluster.stance == "SUPPORT" else 0.0
    counts = tuple(cluster.voter_counts) + (0, 0, 0, 0)
    support, undermine = counts[0] + counts[1], counts[2] + counts[3]
    if not soft or support + undermine == 0:
        return hard
    share = support / (support + undermine)
    agrees = share > 0.5 if hard else share < 0.5
    return share if agrees else hard


def stance_examples(dataset: Dataset, claims: Sequence[Claim], soft: bool = True) -> Examples:
    """Every gold (claim, perspective) pair with its cluster's :func:`stance_target`."""
    out = Examples()
    for claim in claims:
        for cluster in claim.clusters:
            target = stance_target(cluster, soft)
            for pid in cluster.pids:
                out.add(claim_perspective_input(claim.text, dataset.perspectives[pid].text), target)
    return out


def counterfactual_examples(dataset: Dataset, claims: Sequence[Claim], soft: bool = True) -> Examples:
    """Every gold pair again under the claim's opposite (:func:`~perspectrum.text.polarity.negate`),
    its target flipped: a perspective that supports "X should be banned" undermines "X should
    be allowed". Claims no rule can negate are left out.
    """
    out = Examples()
    for claim in claims:
        opposite = negate(claim.text)
        if opposite is None:
            continue
        for cluster in claim.clusters:
            target = 1.0 - stance_target(cluster, soft)
            for pid in cluster.pids:
                out.add(claim_perspective_input(opposite, dataset.perspectives[pid].text), target)
    return out


def forms_examples(dataset: Dataset, claims: Sequence[Claim], soft: bool = True) -> Examples:
    """Every gold pair again under each rewrite of its claim (a question, a debate motion:
    :func:`~perspectrum.text.claim_forms.rephrase`), its target unchanged: the same proposal,
    stated as debate text states it, has the same supporters.
    """
    out = Examples()
    for claim in claims:
        for rewrite in rephrase(claim.text).values():
            for cluster in claim.clusters:
                target = stance_target(cluster, soft)
                for pid in cluster.pids:
                    out.add(claim_perspective_input(rewrite, dataset.perspectives[pid].text), target)
    return out


def evidence_examples(dataset: Dataset, claims: Sequence[Claim], soft: bool = True) -> Examples:
    """Every 3-sentence window of each gold cluster's evidence paragraphs (every
    :data:`~perspectrum.models.rules.EVIDENCE_STRIDE` sentences, as ``discover`` reads them)
    against the claim, with the cluster's :func:`stance_target`: the paragraph backs the
    cluster, so the window argues its side, or at least does not argue the other. Text like
    what ``mine`` and ``map`` read, which the perspectives alone do not teach.
    """
    out = Examples()
    for claim in claims:
        for cluster in claim.clusters:
            target = stance_target(cluster, soft)
            for eid in cluster.evidence:
                for window in windows(dataset.evidence[eid].text, stride=EVIDENCE_STRIDE):
                    out.add(claim_perspective_input(claim.text, window), target)
    return out


def equivalence_examples(
    dataset: Dataset, claims: Sequence[Claim], negatives_per_positive: float, seed: int
) -> Examples:
    """Pairs within a gold cluster are positives; pairs across a claim's clusters negatives.

    Per claim, up to ``negatives_per_positive`` × (positive count) cross-cluster pairs
    are drawn at random (at least one per claim when the claim has any), and each pair's
    order is flipped at random so the model does not learn an order.
    """
    rng = random.Random(seed)
    out = Examples()
    for claim in claims:
        owner: dict[int, int] = {}
        for index, cluster in enumerate(claim.clusters):
            for pid in cluster.pids:
                owner.setdefault(pid, index)
        same, different = [], []
        for p, q in combinations(sorted(owner), 2):
            (same if owner[p] == owner[q] else different).append((p, q))
        chosen = rng.sample(different, min(len(different), max(1, round(negatives_per_positive * len(same)))))
        for target, group in ((1.0, same), (0.0, chosen)):
            for p, q in group:
                if rng.random() < 0.5:
                    p, q = q, p
                first, second = dataset.perspectives[p].text, dataset.perspectives[q].text
                out.add(equivalence_input(claim.text, first, second), target)
    return out


#: The evidence sentences :func:`unit_equivalence_examples` pairs: as long as the units ``mine`` finds.
UNIT_WORDS = (6, 40)


def unit_equivalence_examples(dataset: Dataset, claims: Sequence[Claim], count: int, seed: int) -> Examples:
    """``count`` pairs of evidence sentences, about half of them positive: two sentences of
    different evidence paragraphs that one gold cluster cites make its point (the units ``map``
    groups are read from such text, one document each); a sentence of another cluster of the same
    claim is a hard negative. Sentences of :data:`UNIT_WORDS` words, only those of paragraphs no
    other cluster of the claim cites (their label would be ambiguous); each pair's order drawn at random."""
    rng = random.Random(seed)
    same: list[tuple[str, str, str]] = []
    different: list[tuple[str, str, str]] = []
    for claim in claims:
        citing: dict[int, set[int]] = {}
        for index, cluster in enumerate(claim.clusters):
            for eid in cluster.evidence:
                citing.setdefault(eid, set()).add(index)
        said: list[list[tuple[int, str]]] = []  # per cluster: (paragraph, sentence)
        for index, cluster in enumerate(claim.clusters):
            found = dict.fromkeys((eid, s) for eid in cluster.evidence if citing[eid] == {index}
                                  for s in sentences(dataset.evidence[eid].text)
                                  if UNIT_WORDS[0] <= len(s.split()) <= UNIT_WORDS[1])
            said.append(list(found))
        for index, mine in enumerate(said):
            others = [s for j, theirs in enumerate(said) if j > index for _, s in theirs]
            same += [(claim.text, a, b) for (p, a), (q, b) in combinations(mine, 2) if p != q]
            different += [(claim.text, a, b) for _, a in mine for b in others]
    out = Examples()
    half = count // 2
    for target, pool, n in ((1.0, same, half), (0.0, different, count - half)):
        for text, a, b in rng.sample(pool, min(n, len(pool))):
            if rng.random() < 0.5:
                a, b = b, a
            out.add(equivalence_input(text, a, b), target)
    return out
