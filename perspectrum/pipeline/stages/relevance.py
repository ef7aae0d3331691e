"""Stage 2: which candidates are relevant — model blended with cosine, cut as tuned on dev."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from perspectrum.models.rules import above, blend, keep, ranked
from perspectrum.pipeline.stages.base import MODEL, PIPELINE, ClaimState, Context, Cut, Member, Stage, setting


@dataclass(frozen=True, kw_only=True)
class Relevance(Stage, Cut):
    """Score each candidate, blend with its cosine, keep what is not under the floor by
    :func:`perspectrum.models.rules.keep`.

    Settings (declared here, once; who chooses each: :func:`~perspectrum.pipeline.stages.base.setting`).

    Attributes:
        weight: of the relevance model against the dense cosine.
        relative, threshold, k, min_keep: the dev-tuned cut (see :func:`~perspectrum.models.rules.keep`).
        floor: absolute blended score below which nothing is kept, chosen on dev
            against off-topic claims: a claim whose best candidate is under it gets an
            empty answer and a notice instead of confident nonsense (0: no floor).
    """

    name: ClassVar[str] = "relevance"
    model: ClassVar[str | None] = "relevance"
    weight: float = setting(chosen=MODEL)
    floor: float = setting(0.0, chosen=PIPELINE)

    def run(self, states: list[ClaimState], context: Context) -> None:
        pairs = [(s.claim, context.perspective_text[c.id]) for s in states for c in s.candidates]
        scores = iter(context.scorers.relevance(pairs))
        for state in states:
            for c in state.candidates:
                c.model = float(next(scores))
                c.score = blend(c.model, c.cosine, self.weight)
            ranking = ranked((c.id, c.score) for c in state.candidates)
            score = {c.id: c.score for c in state.candidates}
            state.kept = [Member(d, score[d]) for d in keep(above(ranking, self.floor), self.cut)]
            if state.notice is not None:
                continue  # an earlier stage said why it has nothing
            if not ranking:
                state.notice = "nothing in the pool was retrieved for this claim"
            elif not state.kept:
                state.notice = (f"nothing in the pool is relevant to this claim: its best candidate scores "
                                f"{ranking[0][0]:.2f}, under the relevance floor of {self.floor:.2f} chosen on dev")
