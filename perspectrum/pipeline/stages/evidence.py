"""Stage 6: each cluster's evidence paragraphs, chosen by the evidence ranker.

The ranker reads every cluster of the claim at once (a paragraph usually argues one
perspective, so how much better it fits this cluster than its siblings is the signal)
and a dev-tuned cut on its probability keeps the cluster's evidence. A kept paragraph
that a cluster on the other side rates clearly higher (the ``rival`` setting) argues
that side, and is dropped from this one; one below the ``floor`` is not shown at all.
"""

from __future__ import annotations

from typing import Any

from perspectrum.models.evidence_ranker import Debate
from perspectrum.pipeline.results import EvidenceHit
from perspectrum.models.rules import keep, ranked
from perspectrum.models.settings import EvidenceSettings
from perspectrum.pipeline.stages.base import ClaimState, Context


def debate(state: ClaimState, context: Context) -> Debate:
    """The claim and its clusters' perspective texts, as the evidence ranker and verifier read them."""
    text = context.perspective_text
    return Debate(state.claim, tuple(tuple(text[state.kept[i].id] for i in g.members) for g in state.groups))


class EvidenceStage(EvidenceSettings):
    """Candidates per cluster from the evidence pool, scored against the sibling clusters
    (settings: :class:`~perspectrum.models.settings.EvidenceSettings`). Not
    :class:`perspectrum.data.Evidence`, a paragraph of the dataset's evidence pool."""

    def run(self, states: list[ClaimState], context: Context) -> None:
        debates = {n: debate(state, context) for n, state in enumerate(states) if state.groups}
        keys, probs = context.scorers.evidence(debates, self.depth)
        scores: dict[tuple[int, int], list[tuple[Any, float]]] = {}
        for (n, c, doc_id), p in zip(keys, probs):
            scores.setdefault((n, c), []).append((doc_id, float(p)))
        for n, state in enumerate(states):
            prob = {c: dict(scores.get((n, c), [])) for c in range(len(state.groups))}
            leans = [group.support >= self.stance_threshold for group in state.groups]
            for c, group in enumerate(state.groups):
                run = ranked(scores.get((n, c), []))
                kept = [d for d in keep(run, self.cut) if prob[c][d] >= self.floor]
                others = [prob[o] for o in range(len(state.groups)) if leans[o] != leans[c]]
                rated = {d: [other[d] for other in others if d in other] for d in kept}
                group.rivals = {d: round(max(rated[d]) - prob[c][d], 4) for d in kept if rated[d]}
                group.evidence = [EvidenceHit(d, context.evidence_text[d], round(prob[c][d], 4))
                                  for d in kept if group.rivals.get(d, -1.0) <= self.rival]
