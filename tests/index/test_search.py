"""Reciprocal-rank fusion, top-k selection and the hybrid searcher."""

from __future__ import annotations

import numpy as np
import pytest

from perspectrum.config import HybridParams
from perspectrum.index.search import Hit, HybridSearcher, rrf_fuse, top_hits


class FixedSearcher:
    """A searcher whose scores are a fixed table, to test fusion without models."""

    name = "fixed"

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores

    def search(self, query: str, k: int) -> list[Hit]:
        return self.batch_search([query], k)[0]

    def batch_search(self, queries, k):
        ranked = sorted(self.scores.items(), key=lambda item: -item[1])[:k]
        return [[Hit(d, s) for d, s in ranked] for _ in queries]

    def score(self, queries, doc_ids):
        return np.array([[self.scores[d] for d in doc_ids] for _ in queries])


def test_rrf_by_hand() -> None:
    first = [Hit("a", 9), Hit("b", 8), Hit("c", 7)]
    second = [Hit("c", 0.9), Hit("a", 0.8)]
    fused = rrf_fuse([first, second], k=3, rrf_k=1)
    # a: 1/(1+1) + 1/(1+2) = 5/6;  c: 1/(1+3) + 1/(1+1) = 3/4;  b: 1/(1+2) = 1/3
    assert [h.doc_id for h in fused] == ["a", "c", "b"]
    assert [h.score for h in fused] == pytest.approx([5 / 6, 3 / 4, 1 / 3])
    assert len(rrf_fuse([first, second], k=2, rrf_k=1)) == 2


def test_top_hits_orders_by_score_then_position() -> None:
    scores = np.array([0.2, 0.9, 0.5, 0.9, 0.1])
    hits = top_hits(scores, ["a", "b", "c", "d", "e"], 3)
    assert [h.doc_id for h in hits] == ["b", "d", "c"]
    assert top_hits(scores, list("abcde"), 0) == []
    assert len(top_hits(scores, list("abcde"), 50)) == 5


def test_hybrid_fuses_two_searchers() -> None:
    lexical = FixedSearcher({"a": 3.0, "b": 2.0, "c": 1.0})
    dense = FixedSearcher({"a": 0.1, "b": 0.3, "c": 0.2})
    hybrid = HybridSearcher(lexical, dense, HybridParams(rrf_k=1, depth=3))
    # a: 1/2 + 1/4;  b: 1/3 + 1/2;  c: 1/4 + 1/3  ->  b, a, c
    assert [h.doc_id for h in hybrid.search("q", 3)] == ["b", "a", "c"]
    scores = hybrid.score(["q"], ["a", "b", "c"])[0]
    assert scores == pytest.approx([1 / 2 + 1 / 4, 1 / 3 + 1 / 2, 1 / 4 + 1 / 3])
    # within a subset the ranks restart: among {a, c}, a is first by BM25, c by dense
    assert hybrid.score(["q"], ["a", "c"])[0] == pytest.approx([1 / 2 + 1 / 3, 1 / 3 + 1 / 2])
