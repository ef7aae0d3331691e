"""Stage 7: the 3-sentence window of each kept paragraph that states its cluster's point.

Selection is the ranker's; the window scores (the scorers' ``windows``: the evidence
ranker's window verifier, which reads each window against the cluster and its siblings)
mark which passage to show, what the CLI highlights, for the top ``top`` paragraphs of
each cluster. With ``against`` below 1, the stance model then reads each chosen window
against the claim, and a paragraph whose window argues the other side of its cluster is
dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from perspectrum.models.rules import EVIDENCE_STRIDE
from perspectrum.pipeline.stages.base import PIPELINE, ClaimState, Context, Stage, setting
from perspectrum.pipeline.stages.evidence import debate
from perspectrum.text.sentences import window_sentences, windows


def place(paragraph: str, window: str) -> tuple[int | None, int | None]:
    """Character span of a window (sentences joined by spaces) inside its paragraph."""
    parts = window_sentences(window)
    if not parts:
        return None, None
    start = paragraph.find(parts[0])
    end = paragraph.find(parts[-1], max(start, 0))
    if start < 0 or end < 0:
        return None, None
    return start, end + len(parts[-1])


@dataclass(frozen=True, kw_only=True)
class Verify(Stage):
    """Best window of the top kept paragraphs (windows every :data:`EVIDENCE_STRIDE` sentences,
    as the verifier was fitted and evaluation reads them;.

    Settings (declared here, once; who chooses each: :func:`~perspectrum.pipeline.stages.base.setting`).

    Attributes:
        top: kept paragraphs per cluster whose windows are read (0: none).
        against: a verified paragraph whose window the stance model reads on the other side
            of its cluster, at least this sure (calibrated, as cards show it), argues that
            side and is dropped (1: never). Chosen on dev. Sides and their confidence are the
            stance stage's reading (clusters it shows as unclear keep their paragraphs).
    """

    name: ClassVar[str] = "verify"
    top: int = 1
    against: float = setting(1.0, chosen=PIPELINE)

    def run(self, states: list[ClaimState], context: Context) -> None:
        jobs, owner = [], []
        for n, state in enumerate(states):
            if not state.groups:
                continue
            read = debate(state, context)
            for c, group in enumerate(state.groups):
                for h, hit in enumerate(group.evidence[:self.top]):
                    jobs.append((read, c, hit.id))
                    owner.append((n, c, h))
        for (n, c, h), scores in zip(owner, context.scorers.windows(jobs)):
            if not len(scores):
                continue
            evidence = states[n].groups[c].evidence
            shown = windows(evidence[h].text, stride=EVIDENCE_STRIDE)  # the rows the verifier scored
            best = int(np.argmax(scores))
            start, end = place(evidence[h].text, shown[best])
            evidence[h] = replace(evidence[h], window=shown[best], window_score=round(float(scores[best]), 4),
                                  window_start=start, window_end=end)
        if self.against < 1.0:
            self.drop_opposite(states, context)

    def drop_opposite(self, states: list[ClaimState], context: Context) -> None:
        """Drop each verified paragraph whose window the stance model reads, at least
        ``against`` sure, on the other side of its cluster (clusters shown as unclear keep theirs)."""
        asks = []
        for state in states:
            for group in state.groups:
                q = context.stance.confidence(group.support)
                if abs(q - 0.5) < context.stance.unclear:
                    continue
                asks += [(state, group, hit, q >= 0.5) for hit in group.evidence if hit.window]
        if not asks:
            return
        scores = context.scorers.stance([(state.claim, hit.window) for state, _, hit, _ in asks])
        against = set()
        for (_, group, hit, leans), p in zip(asks, scores):
            q = context.stance.confidence(float(p))
            if (q >= 0.5) != leans and max(q, 1.0 - q) >= self.against:
                against.add((id(group), hit.id))
        for state in states:
            for group in state.groups:
                group.evidence = [hit for hit in group.evidence if (id(group), hit.id) not in against]
