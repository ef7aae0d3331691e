"""Which arguments a long text makes: sentence-max matching, sharpened by competition.

Mirkin et al. (EMNLP 2018) found that scoring each sentence of a speech against an
argument and taking the best sentence beats scoring the whole speech. Here every
sentence, every paragraph and every argument is embedded once (MiniLM), and an
argument's score is

    best sentence cosine
    + sentence_margin × (that cosine − the best other argument's cosine at that sentence)
    + paragraph_margin × (its best paragraph cosine − the best other argument's there)

so a sentence that says one argument plainly counts for it, while a sentence that is as
close to a rival argument (the usual case for an argument the text never makes but
that shares its topic) counts less. The argument is *made* at or above the dev-tuned
threshold. On dev, reading each argument's best sentences with the equivalence
cross-encoder instead did no better than the cosine (``eval/results/match_trained_dev.json``),
and the margins did. A 10,000-word text with 16 arguments answers in 5.7 s on 2 cores with
the models loaded, 9.4 s as a whole command (``eval/results/bench_text_trained_nosplit.json``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from perspectrum.text.document import Span
from perspectrum.errors import PerspectrumError

#: Most arguments one call reads (a motion in Mirkin et al. has ~16 candidates).
MAX_ARGUMENTS = 200
#: Longest argument, in characters.
MAX_ARGUMENT_CHARS = 1000


@dataclass(frozen=True)
class MatchSettings:
    """How :func:`perspectrum.pipeline.match.match_arguments` decides, chosen on dev (``eval/results/match_trained_dev.json``).

    Attributes:
        sentence_margin: weight of the margin over rival arguments at the best sentence.
        paragraph_margin: weight of the margin over rival arguments at the best paragraph.
        threshold: score at or above which an argument is made.
    """

    sentence_margin: float = 1.0
    paragraph_margin: float = 1.0
    threshold: float = 0.69

    def score(self, top: np.ndarray, sentence_margin: np.ndarray, paragraph_margin: np.ndarray) -> np.ndarray:
        """Each argument's score from its best sentence cosine and its two margins (the
        module docstring's rule; dev tuning reads stored margins through it too)."""
        return top + self.sentence_margin * sentence_margin + self.paragraph_margin * paragraph_margin


@dataclass(frozen=True)
class ArgumentMatch:
    """One argument and whether the text makes it.

    Attributes:
        score: the argument's score (see the module docstring).
        sentence: the sentence that makes it best, with offsets into the text.
    """

    argument: str
    made: bool
    score: float
    sentence: Span | None

    def to_dict(self) -> dict[str, Any]:
        best = None if self.sentence is None else {"start": self.sentence.start, "end": self.sentence.end,
                                                   "text": self.sentence.text}
        return {"argument": self.argument, "made": self.made, "score": round(self.score, 4), "sentence": best}


def check_arguments(arguments: Sequence[str]) -> list[str]:
    """The arguments stripped, empty lines dropped; a one-line error when none are left,
    too many are given, or one is too long."""
    if isinstance(arguments, str):
        raise PerspectrumError("arguments must be a list of texts, not one text")
    kept = [" ".join(a.split()) for a in arguments if isinstance(a, str) and a.strip()]
    if len(kept) != sum(1 for a in arguments if not isinstance(a, str) or a.strip()):
        raise PerspectrumError("every argument must be text")
    if not kept:
        raise PerspectrumError("the argument list is empty")
    if len(kept) > MAX_ARGUMENTS:
        raise PerspectrumError(f"{len(kept):,} arguments; at most {MAX_ARGUMENTS} are read at once")
    longest = max(kept, key=len)
    if len(longest) > MAX_ARGUMENT_CHARS:
        raise PerspectrumError(f"an argument is {len(longest):,} characters long; the limit is {MAX_ARGUMENT_CHARS:,}")
    return kept


def margins(cosine: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For an (arguments × parts) cosine matrix: each argument's best part, its cosine
    there, and its margin there over the best other argument (0 when it has no rival)."""
    best = cosine.argmax(axis=1)
    top = cosine[np.arange(len(cosine)), best]
    if len(cosine) < 2:
        return best, top, np.zeros(len(cosine))
    at_best = cosine[:, best]  # column a: every argument's cosine at argument a's best part
    np.fill_diagonal(at_best, -np.inf)
    return best, top, top - at_best.max(axis=0)


def argument_scores(sentence_cosine: np.ndarray, paragraph_cosine: np.ndarray,
                    settings: MatchSettings) -> tuple[np.ndarray, np.ndarray]:
    """Each argument's score (see the module docstring) and the index of its best sentence."""
    best, top, sentence_margin = margins(sentence_cosine)
    _, _, paragraph_margin = margins(paragraph_cosine)
    return settings.score(top, sentence_margin, paragraph_margin), best
