"""Stage 3: P(support) of every kept perspective, read before clustering.

Reading every member (not only each cluster's representative) is what lets clustering
refuse to join perspectives the model puts on opposite sides.
"""

from __future__ import annotations

from perspectrum.models.settings import StanceSettings
from perspectrum.pipeline.stages.base import ClaimState, Context


class Stance(StanceSettings):
    """P(support) per kept perspective and its confident side (settings:
    :class:`~perspectrum.models.settings.StanceSettings`)."""

    def run(self, states: list[ClaimState], context: Context) -> None:
        pairs = [(s.claim, context.perspective_text[m.id]) for s in states for m in s.kept]
        scores = iter(context.scorers.stance(pairs))
        for state in states:
            for member in state.kept:
                member.support = float(next(scores))
                member.side = self.side(member.support)

    def side(self, support: float) -> int:
        """+1 confident support, −1 confident undermine, 0 unsure."""
        if abs(support - self.threshold) < self.margin:
            return 0
        return 1 if support >= self.threshold else -1
