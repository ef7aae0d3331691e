"""``mine``: the argument units of a text for a claim, read with the models.

The text's side (candidate units and clauses, their features' sum, the cut that keeps no two
overlapping) is :mod:`perspectrum.text.mining`; here the encoder gives the cosine features and
the relevance and stance models of a :class:`~perspectrum.models.scorers.Scorers` score and
label the candidates. :meth:`perspectrum.Pipeline.mine` checks the text and the claim and calls
:func:`mine` with its loaded models and its dev-tuned stance cut.
"""

from __future__ import annotations

import numpy as np

from perspectrum.encoders.bi_encoder import Encoder
from perspectrum.models.scorers import Scorers
from perspectrum.text.document import split_sentences
from perspectrum.text.key_points import is_heading
from perspectrum.text.mining import (CENTRE_REACH, Candidates, MinedUnit, MineSettings, candidates, non_overlapping,
                                     paragraphs_of, word_count)

__all__ = ["CLAUSE_REACH", "mine", "read_candidates"]

#: How far above its sentence's cosine terms a clause's may reach: a sentence further below
#: the cut than this offers no clause (see :func:`read_candidates`). Chosen on dev as the
#: smallest reach that keeps every unit the full reading keeps (``eval/results/mine_reach_shipped_dev.json``).
CLAUSE_REACH = 1.0


def read_candidates(text: str, claim: str, scorers: Scorers, encoder: Encoder,
                    settings: MineSettings | None = None) -> Candidates:
    """Every candidate unit of ``text`` (see :func:`perspectrum.text.mining.candidates`; never one in a
    heading, :func:`perspectrum.text.key_points.is_heading`) with
    the relevance model's score for ``claim`` and the cosine features: two encoder calls (the
    claim and the sentences, then the clauses; each distinct text once) and one relevance call.

    With ``settings``, less is read. A sentence's clauses are candidates only when the sentence's
    own terms (relevance at its most, 1, plus its cosine terms) come within :data:`CLAUSE_REACH` of
    ``settings.threshold``: most sentences of a long document are not arguments on the claim, and
    their clauses are not encoded. The relevance model reads only the candidates that could reach
    ``settings.threshold``: every score is in [0, 1], so a candidate whose other terms sum below
    ``threshold − 1`` cannot, and its relevance is left at 0. Without ``settings`` every candidate
    is read (dev tuning re-scores the same candidates under many settings)."""
    found = split_sentences(text)
    headings = {i for i, sentence in enumerate(found) if is_heading(text, sentence)}
    offered = [(i, span) for i, span in candidates(found) if i not in headings]  # a heading is no unit
    if not offered:
        empty = np.zeros(0)
        return Candidates([], [], empty, empty, empty, empty, empty)
    sentence_text = [s.text for s in found]
    distinct = list(dict.fromkeys([claim, *sentence_text]))
    row = {t: i for i, t in enumerate(distinct)}
    encoded = np.asarray(encoder.encode(distinct), dtype=np.float64)
    claim_vector = encoded[row[claim]]
    sentence_vectors = encoded[[row[t] for t in sentence_text]]
    starts = [para.start for para in paragraphs_of(text, found)]
    centres = np.zeros_like(sentence_vectors)
    for i in range(len(found)):
        near = [j for j in range(max(0, i - CENTRE_REACH), min(len(found), i + CENTRE_REACH + 1))
                if starts[j] == starts[i]]
        mean = sentence_vectors[near].mean(axis=0)
        centres[i] = mean / max(float(np.linalg.norm(mean)), 1e-12)
    opens = np.array([float(i == 0 or starts[i] != starts[i - 1]) for i in range(len(found))])
    if settings is not None:  # clauses only of sentences whose own cosine terms come near the cut
        near_cut = (1.0 + sentence_vectors @ claim_vector + settings.centre * np.einsum("ij,ij->i", sentence_vectors, centres)
                    + settings.first * opens + CLAUSE_REACH >= settings.threshold)
        offered = [(i, span) for i, span in offered if span == found[i] or near_cut[i]]
    clauses = [t for t in dict.fromkeys(span.text for _, span in offered) if t not in row]
    if clauses:
        row.update({t: len(encoded) + n for n, t in enumerate(clauses)})
        encoded = np.concatenate([encoded, np.asarray(encoder.encode(clauses), dtype=np.float64)])
    spans = [span for _, span in offered]
    sentence = [index for index, _ in offered]
    span_vectors = encoded[[row[s.text] for s in spans]]
    first = opens[sentence]
    relevance = np.zeros(len(spans))
    out = Candidates(spans, sentence, relevance, span_vectors @ claim_vector,
                     np.einsum("ij,ij->i", span_vectors, centres[sentence]), first,
                     np.array([float(word_count(s.text)) for s in spans]))
    read = (np.flatnonzero(out.scores(settings) + 1.0 >= settings.threshold) if settings is not None
            else np.arange(len(spans)))
    if len(read):
        relevance[read] = np.asarray(scorers.relevance([(claim, spans[i].text) for i in read]), dtype=np.float64)
    return out


def mine(text: str, claim: str, scorers: Scorers, encoder: Encoder, stance_threshold: float,
         settings: MineSettings = MineSettings()) -> list[MinedUnit]:
    """The argument units of ``text`` for ``claim``, in text order (see :mod:`perspectrum.text.mining`).

    ``scorers`` answers ``relevance`` and ``stance``, ``encoder`` the vectors; a unit supports
    the claim when the stance model's P(support) is at or above ``stance_threshold``. ``text``
    and ``claim`` are expected checked (:meth:`perspectrum.Pipeline.mine` checks them).
    """
    found = read_candidates(text, claim, scorers, encoder, settings)
    scores = found.scores(settings)
    chosen = non_overlapping(found.spans, scores, settings.threshold)
    support = scorers.stance([(claim, found.spans[i].text) for i in chosen]) if chosen else []
    units = [MinedUnit(found.spans[i].start, found.spans[i].end, found.spans[i].text, round(float(scores[i]), 4),
                       "support" if p >= stance_threshold else "undermine", round(float(p), 4), found.sentence[i])
             for i, p in zip(chosen, support)]
    return sorted(units, key=lambda u: u.start)
