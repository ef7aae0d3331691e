"""``mine``: the argument units of a text for a claim, read with the models.

The text's side (candidate units and clauses, their features' sum, the cut that keeps no two
overlapping) is :mod:`perspectrum.text.mining`; here the encoder gives the cosine features and
the relevance and stance models of a :class:`~perspectrum.models.scorers.Scorers` score and
label the candidates. :meth:`perspectrum.Pipeline.mine` checks the text and the claim and calls
:func:`mine` with its loaded models and its dev-tuned stance cut; ``map`` mines documents in
batches (:func:`mine_many`), each model called once per batch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from perspectrum.encoders.bi_encoder import Encoder
from perspectrum.models.scorers import Scorers
from perspectrum.text.document import split_sentences
from perspectrum.text.key_points import is_heading
from perspectrum.text.mining import (CENTRE_REACH, Candidates, MinedUnit, MineSettings, candidates, non_overlapping,
                                     paragraphs_of, word_count)

__all__ = ["mine", "mine_many", "read_candidates", "read_candidates_many"]

_EMPTY = np.zeros(0)


def _encode(encoder: Encoder, texts: list[str], precision: str) -> np.ndarray:
    """``texts`` encoded in ``precision`` (:meth:`perspectrum.encoders.bi_encoder.Encoder.precision`)."""
    if precision == "float32":
        return np.asarray(encoder.encode(texts), dtype=np.float64)
    return np.asarray(encoder.encode(texts, precision=precision), dtype=np.float64)


def read_candidates_many(texts: Sequence[str], claim: str, scorers: Scorers, encoder: Encoder,
                         settings: MineSettings | None = None, precision: str = "float32") -> list[Candidates]:
    """:func:`read_candidates` for several texts at once: one encoder call for all of them (each
    distinct text once, across documents: sorted by length, the batches pad less) and one
    relevance call; each text's candidates are what :func:`read_candidates` gives it alone."""
    found = [split_sentences(text) for text in texts]
    offered = []
    for text, sentences in zip(texts, found):
        headings = {i for i, sentence in enumerate(sentences) if is_heading(text, sentence)}
        offered.append([(i, span) for i, span in candidates(sentences) if i not in headings])  # a heading is no unit
    distinct = list(dict.fromkeys([claim, *(s.text for sentences, offer in zip(found, offered) if offer
                                            for s in sentences),
                                   *(span.text for offer in offered for _, span in offer)]))
    row = {t: i for i, t in enumerate(distinct)}
    encoded = _encode(encoder, distinct, precision) if len(distinct) > 1 else np.zeros((1, 1))
    claim_vector = encoded[0]
    out, asks = [], []
    for d, (text, sentences, offer) in enumerate(zip(texts, found, offered)):
        if not offer:
            out.append(Candidates([], [], _EMPTY.copy(), _EMPTY, _EMPTY, _EMPTY, _EMPTY))
            continue
        spans = [span for _, span in offer]
        sentence = [index for index, _ in offer]
        sentence_vectors = encoded[[row[s.text] for s in sentences]]
        span_vectors = encoded[[row[s.text] for s in spans]]
        starts = [para.start for para in paragraphs_of(text, sentences)]
        centres = np.zeros_like(sentence_vectors)
        for i in range(len(sentences)):
            near = [j for j in range(max(0, i - CENTRE_REACH), min(len(sentences), i + CENTRE_REACH + 1))
                    if starts[j] == starts[i]]
            mean = sentence_vectors[near].mean(axis=0)
            centres[i] = mean / max(float(np.linalg.norm(mean)), 1e-12)
        first = np.array([float(i == 0 or starts[i] != starts[i - 1]) for i in sentence])
        found_here = Candidates(spans, sentence, np.zeros(len(spans)), span_vectors @ claim_vector,
                                np.einsum("ij,ij->i", span_vectors, centres[sentence]), first,
                                np.array([float(word_count(s.text)) for s in spans]))
        read = (np.flatnonzero(found_here.scores(settings) + 1.0 >= settings.threshold) if settings is not None
                else np.arange(len(spans)))
        asks += [(d, int(i)) for i in read]
        out.append(found_here)
    if asks:
        scores = np.asarray(scorers.relevance([(claim, out[d].spans[i].text) for d, i in asks]), dtype=np.float64)
        for (d, i), score in zip(asks, scores):
            out[d].relevance[i] = score
    return out


def read_candidates(text: str, claim: str, scorers: Scorers, encoder: Encoder,
                    settings: MineSettings | None = None, precision: str = "float32") -> Candidates:
    """Every candidate unit of ``text`` (see :func:`perspectrum.text.mining.candidates`; never one
    in a heading, :func:`perspectrum.text.key_points.is_heading`) with the relevance model's score
    for ``claim`` and the cosine features: one encoder call (each distinct text once: a sentence
    that is its own candidate is encoded once) and one relevance call.

    With ``settings``, the relevance model reads only the candidates that could reach
    ``settings.threshold``: every score is in [0, 1], so a candidate whose other terms sum
    below ``threshold − 1`` cannot, and its relevance is left at 0. What :func:`mine` keeps is
    the same either way; without ``settings`` every candidate is read (dev tuning re-scores
    the same candidates under many settings)."""
    return read_candidates_many([text], claim, scorers, encoder, settings, precision)[0]


def mine_many(texts: Sequence[str], claim: str, scorers: Scorers, encoder: Encoder, stance_threshold: float,
              settings: MineSettings = MineSettings(), precision: str = "float32") -> list[list[MinedUnit]]:
    """:func:`mine` for several texts at once, each text's units as :func:`mine` finds them alone:
    one encoder call, one relevance call and one stance call for all of them."""
    found = read_candidates_many(texts, claim, scorers, encoder, settings, precision)
    chosen = []
    for d, candidates_of in enumerate(found):
        scores = candidates_of.scores(settings)
        chosen += [(d, i, float(scores[i])) for i in non_overlapping(candidates_of.spans, scores, settings.threshold)]
    support = scorers.stance([(claim, found[d].spans[i].text) for d, i, _ in chosen]) if chosen else []
    units: list[list[MinedUnit]] = [[] for _ in texts]
    for (d, i, score), p in zip(chosen, support):
        span = found[d].spans[i]
        units[d].append(MinedUnit(span.start, span.end, span.text, round(score, 4),
                                  "support" if p >= stance_threshold else "undermine", round(float(p), 4),
                                  found[d].sentence[i]))
    return [sorted(doc_units, key=lambda u: u.start) for doc_units in units]


def mine(text: str, claim: str, scorers: Scorers, encoder: Encoder, stance_threshold: float,
         settings: MineSettings = MineSettings(), precision: str = "float32") -> list[MinedUnit]:
    """The argument units of ``text`` for ``claim``, in text order (see :mod:`perspectrum.text.mining`).

    ``scorers`` answers ``relevance`` and ``stance``, ``encoder`` the vectors (in ``precision``:
    :meth:`perspectrum.encoders.bi_encoder.Encoder.precision`); a unit supports the claim when
    the stance model's P(support) is at or above ``stance_threshold``. ``text`` and ``claim`` are
    expected checked (:meth:`perspectrum.Pipeline.mine` checks them).
    """
    return mine_many([text], claim, scorers, encoder, stance_threshold, settings, precision)[0]
