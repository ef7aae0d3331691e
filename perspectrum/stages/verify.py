"""Stage 7: the 3-sentence window of each kept paragraph that states its cluster's point.

Selection is the ranker's; the window scores (the scorers' ``windows``, by default the
mean sentence cosine of :mod:`perspectrum.highlight`) only mark which passage to show,
what the CLI highlights, for the top ``top`` paragraphs of each cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from perspectrum.rules import EVIDENCE_STRIDE
from perspectrum.stages.base import ClaimState, Context
from perspectrum.text import window_sentences, windows


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


@dataclass(frozen=True)
class Verify:
    """Best window of the top kept paragraphs (windows every ``stride`` sentences, as evaluation reads them).

    Attributes:
        top: kept paragraphs per cluster whose windows are read (0: none).
        stride: sentences between window starts.
    """

    name: ClassVar[str] = "verify"
    top: int = 1
    stride: int = EVIDENCE_STRIDE

    def run(self, states: list[ClaimState], context: Context) -> None:
        triples, owner = [], []
        for n, state in enumerate(states):
            for c, group in enumerate(state.groups):
                representative = context.perspective_text[state.kept[group.members[0]].id]
                for h, hit in enumerate(group.evidence[:self.top]):
                    for window in windows(hit.text, stride=self.stride):
                        triples.append((state.claim, representative, window))
                        owner.append((n, c, h, window))
        scores = context.scorers.windows(triples)
        best: dict[tuple[int, int, int], tuple[float, str]] = {}
        for (n, c, h, window), score in zip(owner, scores):
            if (n, c, h) not in best or score > best[(n, c, h)][0]:
                best[(n, c, h)] = (float(score), window)
        for (n, c, h), (score, window) in best.items():
            evidence = states[n].groups[c].evidence
            start, end = place(evidence[h].text, window)
            evidence[h] = replace(evidence[h], window=window, window_score=round(score, 4),
                                  window_start=start, window_end=end)
