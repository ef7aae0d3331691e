"""Lucene-style BM25 in this process, with ``bm25s``, and the analyser every lexical engine shares."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perspectrum._progress import progress
from perspectrum.config import BM25Params
from perspectrum.data import Pool
from perspectrum.errors import PerspectrumError
from perspectrum.index.files import read_docids, write_docids
from perspectrum.index.search import DocId, Hit, top_hits


class Analyzer:
    """Text to BM25 terms: lower-casing, English stopwords, Porter stemming, as a Lucene
    ``EnglishAnalyzer`` would; every lexical engine indexes and queries through it, so
    two engines over one pool see the same terms."""

    def __init__(self, params: BM25Params) -> None:
        import Stemmer

        self.params = params
        self._stemmer = Stemmer.Stemmer(params.stemmer)
        self._lock = threading.Lock()  # PyStemmer objects are not thread-safe

    def tokenize(self, texts: Sequence[str]) -> list[list[str]]:
        import bm25s

        with self._lock:
            return bm25s.tokenize(
                list(texts),
                stopwords=self.params.stopwords,
                stemmer=self._stemmer.stemWords,
                return_ids=False,
                show_progress=False,
            )


class BM25Index:
    """Lucene-style BM25 over one pool, with ``bm25s`` as the engine (in this process)."""

    name = "bm25"
    #: Whether :meth:`updated` changes the index rather than making it again (bm25s cannot).
    incremental = False

    def __init__(self, retriever: Any, doc_ids: Sequence[DocId], params: BM25Params) -> None:
        self.retriever = retriever
        self.doc_ids = list(doc_ids)
        self.params = params
        self.analyzer = Analyzer(params)
        self._row_of = {d: i for i, d in enumerate(self.doc_ids)}

    @classmethod
    def build(cls, pool: Pool, params: BM25Params = BM25Params(), show_progress: bool = False) -> BM25Index:
        import bm25s

        index = cls(bm25s.BM25(k1=params.k1, b=params.b, method=params.method), pool.ids, params)
        with progress(f"BM25 {pool.name}", 2, enabled=show_progress) as advance:
            tokens = index.analyzer.tokenize(pool.texts)
            if not any(tokens):
                raise PerspectrumError(f"the {pool.name} pool has no word BM25 can index (its texts are only "
                                       "stopwords, numbers or symbols)")
            advance(1)
            index.retriever.index(tokens, show_progress=False)
            advance(1)
        return index

    def save(self, folder: Path) -> None:
        self.retriever.save(str(folder), show_progress=False)
        write_docids(folder, self.doc_ids)

    def updated(self, new: Pool, kept: Sequence[int], added: Pool, folder: Path, show_progress: bool) -> BM25Index:
        """``new``'s index: bm25s has no update, so the whole pool is indexed again."""
        return BM25Index.build(new, self.params, show_progress)

    @classmethod
    def load(cls, folder: Path, params: BM25Params) -> BM25Index:
        import bm25s

        retriever = bm25s.BM25.load(str(folder), show_progress=False)
        return cls(retriever, read_docids(folder, int(retriever.scores["num_docs"])), params)

    def _scores(self, query: str) -> np.ndarray:
        tokens = [t for t in self.analyzer.tokenize([query])[0] if t in self.retriever.vocab_dict]
        if not tokens:
            return np.zeros(len(self.doc_ids), dtype=np.float32)
        return self.retriever.get_scores(tokens)

    def search(self, query: str, k: int) -> list[Hit]:
        return top_hits(self._scores(query), self.doc_ids, k)

    def batch_search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        return [self.search(q, k) for q in queries]

    def score(self, queries: Sequence[str], doc_ids: Sequence[DocId]) -> np.ndarray:
        rows = [self._row_of[d] for d in doc_ids]
        return np.array([self._scores(q)[rows] for q in queries]).reshape(len(queries), len(rows))
