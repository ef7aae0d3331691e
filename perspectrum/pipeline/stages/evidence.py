"""Stage 6: each cluster's evidence paragraphs, chosen by the evidence ranker.

The ranker reads every cluster of the claim at once (a paragraph usually argues one
perspective, so how much better it fits this cluster than its siblings is the signal)
and a dev-tuned cut on its probability keeps the cluster's evidence. A kept paragraph
that a cluster on the other side rates clearly higher (the ``rival`` setting) argues
that side, and is dropped from this one; one below the ``floor`` is not shown at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from perspectrum.models.evidence_ranker import DEPTH, Debate
from perspectrum.pipeline.results import EvidenceHit
from perspectrum.models.rules import keep, ranked
from perspectrum.pipeline.stages.base import PIPELINE, ClaimState, Context, Cut, Stage, setting


def debate(state: ClaimState, context: Context) -> Debate:
    """The claim and its clusters' perspective texts, as the evidence ranker and verifier read them."""
    text = context.perspective_text
    return Debate(state.claim, tuple(tuple(text[state.kept[i].id] for i in g.members) for g in state.groups))


@dataclass(frozen=True, kw_only=True)
class EvidenceStage(Stage, Cut):
    """Candidates per cluster from the evidence pool, scored against the sibling clusters. Not
    :class:`perspectrum.data.Evidence`, a paragraph of the dataset's evidence pool.

    Settings (declared here, once; who chooses each: :func:`~perspectrum.pipeline.stages.base.setting`).

    Attributes:
        relative, threshold, k, min_keep: the dev-tuned cut on P(evidence).
        depth: hybrid candidates retrieved per cluster (by default the depth the ranker
            was trained at, :data:`~perspectrum.models.evidence_ranker.DEPTH`).
        rival: a kept paragraph is dropped from a cluster when a cluster of the claim that
            leans the other way (as the stance stage reads the clusters' P(support))
            scored it more than this above it: it argues the other side (1: never). Chosen on dev.
        floor: a paragraph the ranker gives a probability below this is not shown, even as
            the one ``min_keep`` keeps; a card left with none says no evidence was found
            (0: all shown). Chosen on dev.
    """

    name: ClassVar[str] = "evidence"
    model: ClassVar[str | None] = "evidence"
    depth: int = DEPTH
    rival: float = setting(1.0, chosen=PIPELINE)
    floor: float = setting(0.0, chosen=PIPELINE)

    def run(self, states: list[ClaimState], context: Context) -> None:
        debates = {n: debate(state, context) for n, state in enumerate(states) if state.groups}
        keys, probs = context.scorers.evidence(debates, self.depth)
        scores: dict[tuple[int, int], list[tuple[Any, float]]] = {}
        for (n, c, doc_id), p in zip(keys, probs):
            scores.setdefault((n, c), []).append((doc_id, float(p)))
        for n, state in enumerate(states):
            prob = {c: dict(scores.get((n, c), [])) for c in range(len(state.groups))}
            leans = [context.stance.leans(group.support) for group in state.groups]
            for c, group in enumerate(state.groups):
                run = ranked(scores.get((n, c), []))
                kept = [d for d in keep(run, self.cut) if prob[c][d] >= self.floor]
                others = [prob[o] for o in range(len(state.groups)) if leans[o] != leans[c]]
                rated = {d: [other[d] for other in others if d in other] for d in kept}
                group.rivals = {d: round(max(rated[d]) - prob[c][d], 4) for d in kept if rated[d]}
                group.evidence = [EvidenceHit(d, context.evidence_text[d], round(prob[c][d], 4))
                                  for d in kept if group.rivals.get(d, -1.0) <= self.rival]
