"""``match``: which arguments a long text makes, read with the encoder.

The rule (sentence-max, sharpened by the margins over rival arguments) and its settings are
:mod:`perspectrum.text.matching`; here the encoder embeds every sentence, paragraph and
argument once. :meth:`perspectrum.Pipeline.match` checks the texts and the arguments (or finds
them: a claim's perspectives) and calls :func:`match_arguments` with its loaded encoder.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from perspectrum.encoders.bi_encoder import Encoder
from perspectrum.text.document import Span, paragraphs, split_sentences
from perspectrum.text.matching import ArgumentMatch, MatchSettings, argument_scores

__all__ = ["match_arguments", "read_text"]


def read_text(text: str, arguments: Sequence[str], encoder: Encoder) -> tuple[list[Span], np.ndarray, np.ndarray]:
    """The text's sentences, and the cosine of every argument to every sentence and to
    every paragraph (one encoder call)."""
    found, blocks = split_sentences(text), paragraphs(text)
    vectors = encoder.encode([s.text for s in found] + [b.text for b in blocks] + list(arguments))
    sentence_vectors, block_vectors = vectors[:len(found)], vectors[len(found):len(found) + len(blocks)]
    argument_vectors = vectors[len(found) + len(blocks):]
    return found, argument_vectors @ sentence_vectors.T, argument_vectors @ block_vectors.T


def match_arguments(text: str, arguments: Sequence[str], encoder: Encoder,
                    settings: MatchSettings = MatchSettings()) -> list[ArgumentMatch]:
    """Which of ``arguments`` ``text`` makes (see :mod:`perspectrum.text.matching`), in input order.

    ``text`` and ``arguments`` are expected checked (:meth:`perspectrum.Pipeline.match` checks
    them).
    """
    found, sentence_cosine, paragraph_cosine = read_text(text, arguments, encoder)
    if not found:
        return [ArgumentMatch(a, False, 0.0, None) for a in arguments]
    scores, best = argument_scores(sentence_cosine, paragraph_cosine, settings)
    return [ArgumentMatch(argument, bool(score >= settings.threshold), float(score), found[int(j)])
            for argument, score, j in zip(arguments, scores, best)]
