"""One search surface for every retriever, and reciprocal-rank fusion over it.

Like pyserini's searchers, each retriever offers ``search(query, k)``,
``batch_search(queries, k)`` and ``score(query, doc_ids)``, returning :class:`Hit`s;
:class:`HybridSearcher` is written against that surface alone, so any two retrievers
(BM25, dense, a future Lucene backend) fuse the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from perspectrum.config import HybridParams
from perspectrum.errors import PerspectrumError
from perspectrum.text.sentences import checked

DocId = int | str
#: Longest query accepted, in characters (as for a claim).
MAX_QUERY_CHARS = 1000


def check_query(query: str) -> str:
    """The query, stripped, or a :class:`PerspectrumError` saying what is wrong with it:
    empty, too long, or not valid Unicode (which index files and the tokenizer would
    each fail on with a traceback of their own)."""
    return checked(query, "query", MAX_QUERY_CHARS, PerspectrumError)


@dataclass(frozen=True)
class Hit:
    """One retrieved document and its score (higher is better)."""

    doc_id: DocId
    score: float


class Searcher(Protocol):
    """What every retriever offers."""

    name: str

    def search(self, query: str, k: int) -> list[Hit]: ...

    def batch_search(self, queries: Sequence[str], k: int) -> list[list[Hit]]: ...

    def score(self, queries: Sequence[str], doc_ids: Sequence[DocId]) -> np.ndarray:
        """Scores of the given pool documents for each query: shape (queries, doc_ids)."""
        ...


def rrf_fuse(rankings: Sequence[Sequence[Hit]], k: int, rrf_k: int = 60) -> list[Hit]:
    """Fuse ranked lists by reciprocal rank: score(d) = Σ_lists 1 / (rrf_k + rank(d)).

    Ranks start at 1; a document absent from a list gets nothing from it. Ties keep
    the order of first appearance, so fusion is deterministic.
    """
    fused: dict[DocId, float] = {}
    for ranking in rankings:
        for rank, hit in enumerate(ranking, start=1):
            fused[hit.doc_id] = fused.get(hit.doc_id, 0.0) + 1.0 / (rrf_k + rank)
    best = sorted(fused.items(), key=lambda item: -item[1])[:k]
    return [Hit(doc_id, score) for doc_id, score in best]


def top_hits(scores: np.ndarray, doc_ids: Sequence[DocId], k: int) -> list[Hit]:
    """The ``k`` best-scoring documents of a dense score vector, best first.

    Ties are broken by position (lower row first), also at the cut: every row tied with
    the k-th score is a candidate, so which of them make the list does not depend on
    how ``argpartition`` happened to split them (Lucene breaks ties the same way, which
    is what lets the two engines agree).
    """
    k = min(k, len(scores))
    if k <= 0:
        return []
    kth = scores[np.argpartition(-scores, k - 1)[k - 1]]
    candidates = np.flatnonzero(scores >= kth)
    best = candidates[np.lexsort((candidates, -scores[candidates]))][:k]
    return [Hit(doc_ids[i], float(scores[i])) for i in best]


class HybridSearcher:
    """BM25 and dense retrieval fused by reciprocal rank.

    Lexical matching finds the rare content words a claim and a perspective share;
    the encoder finds paraphrases with no word in common. RRF needs no score
    calibration between the two, which is why it is the fusion used here.
    """

    name = "hybrid"

    def __init__(self, lexical: Searcher, dense: Searcher, params: HybridParams = HybridParams()) -> None:
        self.lexical = lexical
        self.dense = dense
        self.params = params

    def search(self, query: str, k: int) -> list[Hit]:
        return self.batch_search([query], k)[0]

    def batch_search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        depth = max(k, self.params.depth)
        return self.fuse(self.lexical.batch_search(queries, depth), self.dense.batch_search(queries, depth), k)

    def fuse(self, lexical: Sequence[list[Hit]], dense: Sequence[list[Hit]], k: int) -> list[list[Hit]]:
        """Fuse rankings the two searchers already returned, query by query.

        Evaluation calls this with the runs it scored for BM25 and dense alone, so the
        hybrid numbers cost no second retrieval.
        """
        return [rrf_fuse(pair, k, self.params.rrf_k) for pair in zip(lexical, dense)]

    def score(self, queries: Sequence[str], doc_ids: Sequence[DocId]) -> np.ndarray:
        """RRF over the two rankings of ``doc_ids`` alone (ranks within the subset)."""
        return self.fuse_scores(self.lexical.score(queries, doc_ids), self.dense.score(queries, doc_ids))

    def fuse_scores(self, lexical: np.ndarray, dense: np.ndarray) -> np.ndarray:
        """Fuse score matrices the two searchers already returned, by rank within each row.

        Like :meth:`fuse`, this lets evaluation reuse the BM25 and dense scores it
        already computed instead of scoring every query a second time.
        """
        fused = np.zeros(lexical.shape)
        tie_break = np.arange(lexical.shape[1])
        for matrix in (lexical, dense):
            for row, scores in enumerate(matrix):
                ranks = np.empty(len(scores))
                ranks[np.lexsort((tie_break, -scores))] = np.arange(1, len(scores) + 1)
                fused[row] += 1.0 / (self.params.rrf_k + ranks)
        return fused
