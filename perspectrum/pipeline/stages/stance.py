"""Stage 3: P(support) of every kept perspective, read before clustering.

Reading every member (not only each cluster's representative) is what lets clustering
refuse to join perspectives the model puts on opposite sides. A claim whose kept
perspectives are all shown on one side gets its most relevant candidate from the other
side among the next ``other_side`` under the relevance cut, when one is there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from perspectrum.pipeline.results import calibrated, side
from perspectrum.pipeline.stages.base import MODEL, PIPELINE, ClaimState, Context, Member, Stage, setting


#: Candidates the other-side search reads per round (it stops at the first on the other side).
OTHER_SIDE_CHUNK = 3


@dataclass(frozen=True, kw_only=True)
class Stance(Stage):
    """P(support) per kept perspective and its confident side.

    Settings (declared here, once; who chooses each: :func:`~perspectrum.pipeline.stages.base.setting`).

    Attributes:
        threshold: P(support) at or above it reads as support (tuned on dev).
        margin: a member is confident (side ±1) when its P(support) is at least this
            far from ``threshold``; 0 makes every member confident, so clusters split
            strictly by side. Chosen on dev.
        scale: temperature scaling of the shown confidence, fitted on dev's gold pairs:
            calibrated P(support) = σ(scale · (logit P(support) − logit threshold)), so it
            is 0.5 exactly at the threshold and the side never changes (1: unfitted).
        unclear: a perspective whose calibrated P(support) is within this of 0.5 is shown
            as "side unclear" rather than forced onto a side (0: never). Chosen on dev.
        other_side: when no kept perspective is shown on one of the two sides, read the
            stance of this many next-most-relevant candidates (under the relevance cut,
            above its floor) and keep the most relevant one shown on the missing side
            (0: never). Chosen on dev.
        floor: the relevance a candidate read by ``other_side`` must reach (the relevance
            stage's floor unless given).
    """

    name: ClassVar[str] = "stance"
    model: ClassVar[str | None] = "stance"
    threshold: float = setting(chosen=MODEL)
    margin: float = setting(0.0, chosen=PIPELINE)
    scale: float = setting(1.0, chosen=PIPELINE)
    unclear: float = setting(0.0, chosen=PIPELINE)
    other_side: int = setting(0, chosen=PIPELINE)
    floor: float = setting(0.0, follows=("relevance", "floor"))

    def run(self, states: list[ClaimState], context: Context) -> None:
        pairs = [(s.claim, context.perspective_text[m.id]) for s in states for m in s.kept]
        scores = iter(context.scorers.stance(pairs))
        for state in states:
            for member in state.kept:
                member.support = float(next(scores))
                member.leaning = self.leaning(member.support)
        if self.other_side:
            self.add_other_side(states, context)

    def leans(self, support: float) -> bool:
        """Whether a P(support) is on the supporting side of the threshold."""
        return support >= self.threshold

    def confidence(self, support: float) -> float:
        """A P(support) calibrated as cards show it (:func:`~perspectrum.pipeline.results.calibrated`)."""
        return calibrated(support, self.threshold, self.scale)

    def shown(self, support: float) -> str:
        """The side a perspective of this P(support) is shown on."""
        return side(self.confidence(support), self.unclear)

    def add_other_side(self, states: list[ClaimState], context: Context) -> None:
        """For each claim answered on one side only, the most relevant of its next
        ``other_side`` candidates that is shown on the other side, kept as a member."""
        asks = []
        for state in states:
            sides = {self.shown(m.support) for m in state.kept if m.support is not None} - {"unclear"}
            if len(sides) != 1:
                continue
            kept = {m.id for m in state.kept}
            rest = sorted((c for c in state.candidates if c.id not in kept and c.score >= self.floor),
                          key=lambda c: -c.score)[:self.other_side]
            if rest:
                asks.append((state, sides.pop(), rest))
        # read in relevance order, a few at a time, and stop at the first on the other side:
        # the same perspective as reading all of them, for fewer stance pairs
        for start in range(0, self.other_side, OTHER_SIDE_CHUNK):
            if not asks:
                return
            chunks = [rest[start:start + OTHER_SIDE_CHUNK] for _, _, rest in asks]
            pairs = [(state.claim, context.perspective_text[c.id]) for (state, _, _), chunk in zip(asks, chunks)
                     for c in chunk]
            scores = iter(context.scorers.stance(pairs)) if pairs else iter(())
            waiting = []
            for (state, have, rest), chunk in zip(asks, chunks):
                read = [(c, float(next(scores))) for c in chunk]
                other = [(c, p) for c, p in read if self.shown(p) not in (have, "unclear")]
                if other:
                    c, p = other[0]
                    state.kept.append(Member(c.id, c.score, support=p, leaning=self.leaning(p)))
                elif len(rest) > start + OTHER_SIDE_CHUNK:
                    waiting.append((state, have, rest))
            asks = waiting

    def leaning(self, support: float) -> int:
        """+1 confident support, −1 confident undermine, 0 unsure."""
        if abs(support - self.threshold) < self.margin:
            return 0
        return 1 if support >= self.threshold else -1
