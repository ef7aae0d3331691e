"""Stage 1: the claim's hybrid (BM25 + dense, reciprocal-rank fused) top candidates."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from perspectrum.models.rules import latin_script
from perspectrum.pipeline.stages.base import Candidate, ClaimState, Context, Stage


@dataclass(frozen=True, kw_only=True)
class Retrieve(Stage):
    """Hybrid top-``candidates`` of the perspective pool, each with its dense cosine to the
    claim.

    Settings (declared here, once; who chooses each: :func:`~perspectrum.pipeline.stages.base.setting`).

    Attributes:
        candidates: perspectives retrieved per claim and read by the relevance model.
        latin_only: a claim mostly in another script gets no candidates and a notice
            (:func:`~perspectrum.models.rules.latin_script`); turn off for models that read it.
    """

    name: ClassVar[str] = "retrieve"
    candidates: int = 50
    latin_only: bool = True

    def run(self, states: list[ClaimState], context: Context) -> None:
        if self.latin_only:
            for state in states:
                if not latin_script(state.claim):
                    state.notice = ("the claim is not written in the Latin alphabet; perspectrum's models "
                                    "and pools are English")
            states = [s for s in states if s.notice is None]
            if not states:
                return
        hybrid, dense = context.hybrid, context.dense
        queries = [s.claim for s in states]
        vectors = dense.encoder.encode(queries)
        depth = max(self.candidates, hybrid.params.depth)
        runs = hybrid.fuse(hybrid.lexical.batch_search(queries, depth), dense.search_vectors(vectors, depth),
                           self.candidates)
        for state, run, vector in zip(states, runs, vectors):
            ids = [h.doc_id for h in run]
            cosines = dense.vectors(ids) @ vector if ids else np.zeros(0)
            state.vector = vector
            state.candidates = [Candidate(d, float(c)) for d, c in zip(ids, cosines)]
