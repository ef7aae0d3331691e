"""Argument units in raw text: the stretches of a document that argue for or against a claim.

A unit may be shorter than a sentence (Trautmann et al., AAAI 2020: one sentence can hold
a PRO and a CON unit), so each sentence offers itself and its clauses as candidates.
Clauses are cut where a sentence turns (``;``, ``:``, a dash, a comma before *but*,
*because*, *while*, *which*…), and a leading connective is left out of the unit
("because animals feel pain" → "animals feel pain"): a unit should read as the
perspective it states, which is how PERSPECTRUM writes them.

Each candidate is scored by the relevance model against the claim, with how central it
is to its paragraph, whether it opens it and how long it is (:class:`MineSettings`); the
best candidates that do not overlap are kept down to a dev-tuned cut, and the stance
model labels them. This module holds the text's side: candidates, their features' sum and
the non-overlapping cut; :mod:`perspectrum.pipeline.mine` reads them with the models.
Everything a candidate is made from is an offset into the caller's text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
import numpy as np

from perspectrum.text.document import Span, paragraphs

#: Where a sentence turns, strongly (``;``, ``:``, a dash) and weakly (before a connective):
#: the text between two turns of one kind (or the sentence's ends) is a clause.
_TURNS = (
    re.compile(r"\s*(?:;|:(?!\d)|\s[—–]\s?|\s--\s|—)\s*"),
    re.compile(r"\s*(?:,\s+(?=(?:but|because|while|whereas|although|though|since|so|yet|which|and|or|as|if|unless)\b)"
               r"|\s+(?=(?:but|because|whereas|although|however|therefore|thus)\b))\s*", re.IGNORECASE),
)
#: Connectives left off the front of a clause, so the unit reads as a statement.
_LEADING = re.compile(
    r"(?:(?:but|because|while|whereas|although|though|since|so|yet|which|and|or|as|however|therefore|thus"
    r"|moreover|furthermore|also|indeed|in fact|that)\b[,\s]*)+",
    re.IGNORECASE,
)
#: Fewest words a unit may have: shorter stretches ("and so on") state no position.
MIN_UNIT_WORDS = 4


@dataclass(frozen=True)
class MinedUnit:
    """One argument unit: ``text == document[start:end]``.

    Attributes:
        score: how plainly the unit states a perspective on the claim (see :class:`MineSettings`).
        stance: "support" or "undermine" the claim; ``support_probability`` is the stance
            model's P(support), compared with its dev-tuned threshold.
        sentence: index of the sentence the unit lies in (see :func:`perspectrum.text.document.split_sentences`).
    """

    start: int
    end: int
    text: str
    score: float
    stance: str
    support_probability: float
    sentence: int

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def word_count(text: str) -> int:
    """How many words ``text`` has (runs of non-space)."""
    return len(text.split())


def candidates(sentences: Sequence[Span]) -> list[tuple[int, Span]]:
    """Every sentence and each of its clauses of at least :data:`MIN_UNIT_WORDS` words,
    as (sentence index, span); a clause equal to its sentence is not repeated."""
    out = []
    for index, sentence in enumerate(sentences):
        if word_count(sentence.text) >= MIN_UNIT_WORDS:
            out.append((index, sentence))
        seen = {sentence.text}
        for turn in _TURNS:
            for piece in _clauses(sentence, turn):
                if piece.text not in seen and word_count(piece.text) >= MIN_UNIT_WORDS:
                    seen.add(piece.text)
                    out.append((index, piece))
    return out


def _clauses(sentence: Span, turn: re.Pattern[str]) -> list[Span]:
    """The sentence cut at every ``turn``, leading connectives and trailing punctuation
    trimmed (nothing when the sentence has no such turn)."""
    cuts = [0, *(i for m in turn.finditer(sentence.text) for i in m.span()), len(sentence.text)]
    out = []
    for start, end in zip(cuts[::2], cuts[1::2]) if len(cuts) > 2 else ():
        lead = _LEADING.match(sentence.text, start, end)
        start = lead.end() if lead else start
        piece = sentence.text[start:end].rstrip(" .,;:!?\"'”’")
        if piece:
            out.append(Span(sentence.start + start, sentence.start + start + len(piece), piece))
    return out


def non_overlapping(spans: Sequence[Span], scores: Sequence[float], threshold: float) -> list[int]:
    """Indices of the best-scoring spans at or above ``threshold`` that share no character,
    best first: a sentence and its clause are one unit, not two."""
    chosen: list[int] = []
    for i in sorted(range(len(spans)), key=lambda i: -scores[i]):
        if scores[i] < threshold:
            break
        if all(spans[i].end <= spans[j].start or spans[j].end <= spans[i].start for j in chosen):
            chosen.append(i)
    return chosen


#: Words past which a unit is penalised (``MineSettings.length``): PERSPECTRUM's perspectives
#: average ~10 words, and the long sentences of a paragraph rarely state one.
LONG_UNIT_WORDS = 20
#: Sentences on each side whose mean vector a candidate's centrality is measured against.
CENTRE_REACH = 5


@dataclass(frozen=True)
class MineSettings:
    """How :func:`perspectrum.pipeline.mine.mine` scores and keeps units, chosen on dev (``eval/results/mine_trained_dev.json``).

    A candidate's score is ``relevance + claim × cosine to the claim + centre × centrality
    + first × [first sentence of its paragraph] − length × max(0, words − 20) / 10``;
    units at or above ``threshold`` are kept, best first, never two overlapping. On dev,
    the relevance model alone kept units that were on topic but rarely a perspective: a
    paragraph states its point in its central sentence (the one closest to the mean of
    its neighbours), often its first, and in few words.
    """

    claim: float = 1.0
    centre: float = 1.5
    first: float = 0.3
    length: float = 0.5
    threshold: float = 1.84


@dataclass(frozen=True)
class Candidates:
    """A text's candidate units with what scoring reads, one entry per candidate."""

    spans: list[Span]
    sentence: list[int]
    relevance: np.ndarray
    claim: np.ndarray  # cosine to the claim
    centre: np.ndarray  # cosine to the mean of the sentences within CENTRE_REACH of its own
    first: np.ndarray  # 1.0 for a candidate in its paragraph's first sentence
    words: np.ndarray

    def scores(self, settings: MineSettings) -> np.ndarray:
        """Each candidate's score under ``settings`` (see :class:`MineSettings`)."""
        return (self.relevance + settings.claim * self.claim + settings.centre * self.centre
                + settings.first * self.first
                - settings.length * np.maximum(0.0, self.words - LONG_UNIT_WORDS) / 10)


def paragraphs_of(text: str, found: Sequence[Span]) -> list[Span]:
    """The paragraph (see :func:`perspectrum.text.document.paragraphs`) each sentence lies in."""
    blocks = paragraphs(text)
    out, b = [], 0
    for sentence in found:
        while blocks[b].end <= sentence.start:
            b += 1
        out.append(blocks[b])
    return out
