"""Stage 6: each cluster's evidence paragraphs, chosen by the evidence ranker (or light head).

The ranker reads every cluster of the claim at once (a paragraph usually argues one
perspective, so how much better it fits this cluster than its siblings is the signal)
and a dev-tuned cut on its probability keeps the cluster's evidence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from perspectrum.models.evidence_ranker import Debate
from perspectrum.pipeline.results import EvidenceHit
from perspectrum.models.rules import keep, ranked
from perspectrum.pipeline.stages.base import ClaimState, Context


def debate(state: ClaimState, context: Context) -> Debate:
    """The claim and its clusters' perspective texts, as the evidence ranker and verifier read them."""
    text = context.perspective_text
    return Debate(state.claim, tuple(tuple(text[state.kept[i].id] for i in g.members) for g in state.groups))


@dataclass(frozen=True)
class EvidenceStage:
    """Candidates per cluster from the evidence pool, scored against the sibling clusters.
    Not :class:`perspectrum.data.Evidence`, a paragraph of the dataset's evidence pool.

    Attributes:
        depth: hybrid candidates retrieved per cluster (the ranker was trained at 20).
        relative, threshold, k, min_keep: the dev-tuned cut on P(evidence).
    """

    name: ClassVar[str] = "evidence"
    relative: bool
    threshold: float
    k: int
    min_keep: int
    depth: int = 20

    @property
    def cut(self) -> dict[str, Any]:
        """The cut as :func:`perspectrum.models.rules.keep` takes it (also what evaluation applies)."""
        return {"relative": self.relative, "threshold": self.threshold, "k": self.k, "min_keep": self.min_keep}

    def run(self, states: list[ClaimState], context: Context) -> None:
        debates = {n: debate(state, context) for n, state in enumerate(states) if state.groups}
        keys, probs = context.scorers.evidence(debates, self.depth)
        scores: dict[tuple[int, int], list[tuple[Any, float]]] = {}
        for (n, c, doc_id), p in zip(keys, probs):
            scores.setdefault((n, c), []).append((doc_id, float(p)))
        for n, state in enumerate(states):
            for c, group in enumerate(state.groups):
                run = ranked(scores.get((n, c), []))
                prob = {d: p for p, d in run}
                group.evidence = [EvidenceHit(d, context.evidence_text[d], round(prob[d], 4))
                                  for d in keep(run, self.cut)]
