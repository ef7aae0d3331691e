"""Dense search in this process: faiss inner-product indexes over normalised embeddings."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perspectrum import integrity
from perspectrum.config import DenseParams
from perspectrum.data import Pool
from perspectrum.encoders.bi_encoder import Encoder
from perspectrum.index.files import read_docids, write_docids
from perspectrum.index.search import DocId, Hit


def faiss_structure(vectors: np.ndarray, params: DenseParams, seed: int = 13) -> Any:
    """A faiss inner-product index holding ``vectors``, of the structure ``params`` picks for
    their number: exact (``IndexFlatIP``), HNSW (``IndexHNSWFlat``), or IVF (``IndexIVFFlat``
    over about 4·√n cells, trained on a seeded sample of up to 64 points a cell, with a
    direct map so stored vectors can be read back by row)."""
    import faiss

    rows, dimension = vectors.shape
    structure = params.structure_for(rows)
    if structure == "hnsw":
        index = faiss.IndexHNSWFlat(dimension, params.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = 2 * params.hnsw_m
    elif structure == "ivf":
        cells = max(1, min(int(4 * rows ** 0.5), rows // 39))  # faiss wants ≥ 39 training points a cell
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dimension), dimension, cells, faiss.METRIC_INNER_PRODUCT)
        sample = np.random.default_rng(seed).choice(rows, size=min(rows, 64 * cells), replace=False)
        index.train(np.ascontiguousarray(vectors[np.sort(sample)]))
    else:
        index = faiss.IndexFlatIP(dimension)
    index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    if structure == "ivf":
        index.make_direct_map()
    return tuned(index, params)


def tuned(index: Any, params: DenseParams) -> Any:
    """Set the search-time knobs (HNSW's ``efSearch``, IVF's ``nprobe``) on a built or read index."""
    import faiss

    if isinstance(index, faiss.IndexHNSW):
        index.hnsw.efSearch = params.ef_search
    elif isinstance(index, faiss.IndexIVF):
        index.nprobe = params.nprobe
    return index


def added_vectors(index: Any, new: Pool, kept: Sequence[int], added: Pool, show_progress: bool) -> np.ndarray:
    """What an update of a dense ``index`` (faiss or Milvus) to ``new`` indexes: the kept
    rows' stored vectors, then the added texts' vectors, the only ones encoded."""
    fresh = index.encoder.encode(list(added.texts), index.params.batch_size, show_progress, f"dense {new.name} (added)",
                                 index.params.build_precision) if len(added) else np.zeros((0, index.dimension))
    return np.vstack([index.vectors([index.doc_ids[row] for row in kept]), fresh]).astype(np.float32)


#: The largest pool whose stored vectors :func:`lend_vectors` copies to the encoder (4 bytes a
#: dimension a row: 150 MB for MiniLM's 384 dimensions at this size).
LEND_ROWS = 100_000


def lend_vectors(index: Any, pool: Pool) -> bool:
    """Let ``index``'s encoder answer ``pool``'s texts with the vectors the index stores
    (:meth:`~perspectrum.encoders.bi_encoder.Encoder.remember`), so texts of the pool met
    again at query time are not encoded again. Only an in-process faiss index of at most
    :data:`LEND_ROWS` rows lends (another engine's vectors would have to be fetched); says
    whether it did."""
    if not isinstance(index, DenseIndex) or not len(pool) or len(pool) > LEND_ROWS:
        return False
    index.encoder.remember(list(pool.texts), index.vectors(list(pool.ids)))
    return True


class DenseIndex:
    """Inner-product search with faiss over normalised embeddings: exact for pools below
    :attr:`DenseParams.exact_below` rows (PERSPECTRUM's ≤ 45k rows take well under a
    millisecond that way and need no training), HNSW or IVF above (see :func:`faiss_structure`).
    """

    name = "dense"
    incremental = True

    def __init__(self, faiss_index: Any, doc_ids: Sequence[DocId], encoder: Encoder, params: DenseParams) -> None:
        self.faiss_index = faiss_index
        self.doc_ids = list(doc_ids)
        self.encoder = encoder
        self.params = params
        self._row_of = {d: i for i, d in enumerate(self.doc_ids)}
        self._embeddings: np.ndarray | None = None

    @property
    def embeddings(self) -> np.ndarray:
        """Every row's stored vector, read out of faiss once (for callers that index vectors by row)."""
        if self._embeddings is None:
            self._embeddings = self.faiss_index.reconstruct_n(0, self.faiss_index.ntotal)
        return self._embeddings

    @property
    def dimension(self) -> int:
        return int(self.faiss_index.d)

    @classmethod
    def build(cls, pool: Pool, encoder: Encoder, params: DenseParams = DenseParams(),
              show_progress: bool = False) -> DenseIndex:
        vectors = encoder.encode(list(pool.texts), params.batch_size, show_progress, f"dense {pool.name}",
                                 params.build_precision)
        return cls(faiss_structure(vectors, params), pool.ids, encoder, params)

    def updated(self, new: Pool, kept: Sequence[int], added: Pool, folder: Path, show_progress: bool) -> DenseIndex:
        """``new``'s index from the kept rows' stored vectors and the added texts' (the only
        ones encoded); the structure is made again for the new size, which for exact search
        is a copy."""
        vectors = added_vectors(self, new, kept, added, show_progress)
        return DenseIndex(faiss_structure(vectors, self.params), new.ids, self.encoder, self.params)

    def save(self, folder: Path) -> None:
        import faiss

        # serialised here and written by Python, so a full disk is an OSError with its reason
        (folder / "index.faiss").write_bytes(faiss.serialize_index(self.faiss_index).tobytes())
        write_docids(folder, self.doc_ids)

    @classmethod
    def load(cls, folder: Path, encoder: Encoder, params: DenseParams) -> DenseIndex:
        import faiss

        try:
            index = faiss.read_index(str(folder / "index.faiss"))
        except RuntimeError as exc:  # faiss reports a short or malformed file this way
            raise integrity.Damaged(f"{folder / 'index.faiss'} cannot be read ({exc})".splitlines()[0]) from None
        return cls(tuned(index, params), read_docids(folder, index.ntotal), encoder, params)

    def search(self, query: str, k: int) -> list[Hit]:
        return self.batch_search([query], k)[0]

    def batch_search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        vectors = self.encoder.encode(list(queries), self.params.batch_size)
        return self.search_vectors(vectors, k)

    def search_vectors(self, vectors: np.ndarray, k: int) -> list[list[Hit]]:
        """Search with query vectors already encoded (to share one encoding pass)."""
        k = min(k, len(self.doc_ids))
        scores, rows = self.faiss_index.search(np.ascontiguousarray(vectors, dtype=np.float32), k)
        return [
            [Hit(self.doc_ids[r], float(s)) for s, r in zip(srow, rrow) if r >= 0]
            for srow, rrow in zip(scores, rows)
        ]

    def score(self, queries: Sequence[str], doc_ids: Sequence[DocId]) -> np.ndarray:
        vectors = self.encoder.encode(list(queries), self.params.batch_size)
        return vectors @ self.vectors(doc_ids).T

    def vectors(self, doc_ids: Sequence[DocId]) -> np.ndarray:
        """The stored (normalised) embeddings of ``doc_ids``, one row each, in order."""
        rows = [self._row_of[d] for d in doc_ids]
        if not rows:
            return np.zeros((0, self.dimension), dtype=np.float32)
        if self._embeddings is not None:
            return self._embeddings[rows]
        return self.faiss_index.reconstruct_batch(np.array(rows, dtype=np.int64))
