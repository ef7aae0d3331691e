"""Which 3-sentence window of an evidence paragraph to show for a perspective.

A window is scored by the mean cosine (MiniLM) between the perspective and each of its
sentences, so one sentence that states the point counts and a long window is not
diluted into one vector. PERSPECTRUM labels whole paragraphs, never windows, and the
window cross-encoder trained on paragraph labels spread over every window does not
learn which passage states the point: on the 47 hand-labelled dev pairs of
``eval/window_labels.json`` it picks the window holding the sentence that states it
most directly 36 % of the time, below a window picked at random (45 %), while the
sentence cosine picks it 77 % of the time (always the first window: 68 %); AUC of gold
against retrieved paragraphs 0.47 against 0.64 (``eval/results/windows_*.json``, by
``python eval/bench_windows.py``).

Evidence sentences are already embedded in the sentence index the evidence ranker
reads; handed those vectors, scoring needs no model call but the perspectives'.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from perspectrum.data import Pool
from perspectrum.encoder import Encoder
from perspectrum.index import DenseIndex
from perspectrum.text import window_sentences

#: (claim, perspective, window)
Triple = tuple[str, str, str]


class SentenceWindows:
    """Window scores in [0, 1]: the mean sentence cosine to the perspective, clipped at 0.

    Args:
        encoder: embeds perspectives, and sentences missing from ``known``.
        known: unit vectors of sentences embedded already (the evidence sentence index).
    """

    def __init__(self, encoder: Encoder, known: Mapping[str, np.ndarray] | None = None) -> None:
        self.encoder = encoder
        self.known = known or {}

    @classmethod
    def from_index(cls, encoder: Encoder, sentences: Pool, index: DenseIndex) -> SentenceWindows:
        """Scoring with the vectors of a sentence pool's dense index (rows are views: no
        second copy of them)."""
        text = dict(zip(sentences.ids, sentences.texts))
        return cls(encoder, {text[d]: index.embeddings[row] for row, d in enumerate(index.doc_ids) if d in text})

    def score(self, triples: Sequence[Triple]) -> np.ndarray:
        """One score per (claim, perspective, window); the claim is not read."""
        if not triples:
            return np.zeros(0)
        parts = [window_sentences(window) or (window,) for _, _, window in triples]
        texts = dict.fromkeys([p for _, p, _ in triples] + [s for ss in parts for s in ss])
        missing = [t for t in texts if t not in self.known]
        vectors = {**{t: self.known[t] for t in texts if t in self.known},
                   **dict(zip(missing, self.encoder.encode(missing) if missing else []))}
        return np.array([max(0.0, float(np.mean([vectors[s] @ vectors[p] for s in ss])))
                         for (_, p, _), ss in zip(triples, parts)])
