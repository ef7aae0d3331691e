"""Indexes over a pool, one engine a file: the folder format (``files``), BM25 in process
(``bm25``, bm25s), dense search in process (``dense``, faiss), Lucene (``lucene``, pyserini) and
Milvus (``milvus``); ``store`` opens, builds and updates them, ``search`` fuses rankings and
``pools`` edits a pool file with its indexes."""

from perspectrum.index.bm25 import BM25Index
from perspectrum.index.dense import DenseIndex
from perspectrum.index.search import Hit, HybridSearcher
from perspectrum.index.store import IndexStore

__all__ = ["BM25Index", "DenseIndex", "Hit", "HybridSearcher", "IndexStore"]
