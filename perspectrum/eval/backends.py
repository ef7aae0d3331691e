"""How far the Lucene and Milvus backends agree with the embedded engines, on one dataset.

The parity tests assert on these figures and ``python -m benchmarks.backend_parity`` stores them:

- Lucene against bm25s, on the perspective pool (every claim as a query) and the
  evidence pool (every gold cluster's T4 query): overlap@10 of the documents that
  share a word with the query (bm25s pads short lists with zero-score rows; Lucene
  returns only matches), and T1/T4 F1 on dev at fixed cut-offs from each engine.
- Milvus against faiss, exact inner-product search over the perspective pool with the
  same vectors in both, every claim as a query: overlap@10.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perspectrum.data import Dataset, Pool
from perspectrum.eval.ir import Cutoff, t4_queries
from perspectrum.eval.metrics import overlap_at_k, t1_relevance, t4_evidence
from perspectrum.index.dense import DenseIndex
from perspectrum.index.store import IndexStore
from perspectrum.index.search import Hit

#: The cut-offs at which T1 and T4 F1 are compared (dev).
T1_KS = (5, 10, 20)
T4_KS = (1, 3, 5)


def ids(runs: Sequence[Sequence[Hit]], matched_only: bool = False) -> list[list[Any]]:
    """Each run's ids; ``matched_only`` drops zero-score rows (bm25s' padding)."""
    return [[h.doc_id for h in run if not matched_only or h.score > 0] for run in runs]


def lucene_parity(dataset: Dataset, root: Path, split: str = "dev") -> dict[str, Any]:
    """Build both BM25 engines' indexes of both pools under ``root`` and compare them."""
    claims = list(dataset.claims.values())
    tuned = dataset.split(split)
    embedded, lucene = IndexStore(root), IndexStore(root, backend="lucene")
    out: dict[str, Any] = {"overlap_at_10": {}, "build_seconds": {}, "t1_f1": {}, "t4_f1": {}}
    pools = {name: Pool.from_dataset(dataset, name) for name in ("perspectives", "evidence")}
    queries = {"perspectives": [c.text for c in claims],
               "evidence": list(t4_queries(dataset, claims, "cluster").values())}
    searchers = {}
    for name, docs in pools.items():
        (a, a_seconds), (b, b_seconds) = embedded.build(docs, "bm25"), lucene.build(docs, "bm25")
        searchers[name] = (a, b)
        out["build_seconds"][name] = {"bm25s": round(a_seconds, 2), "lucene": round(b_seconds, 2)}
        out["overlap_at_10"][name] = round(overlap_at_k(ids(a.batch_search(queries[name], 10), True),
                                                        ids(b.batch_search(queries[name], 10)), 10), 4)
    for k in T1_KS:
        out["t1_f1"][k] = [round(t1_relevance(tuned, {c.cid: Cutoff(k).apply(s.search(c.text, k))
                                                      for c in tuned})["f1"] * 100, 2)
                           for s in searchers["perspectives"]]
    t4 = t4_queries(dataset, tuned, "cluster")
    for k in T4_KS:
        out["t4_f1"][k] = [round(t4_evidence(tuned, {key: Cutoff(k).apply(s.search(q, k))
                                                     for key, q in t4.items()})["f1"] * 100, 2)
                           for s in searchers["evidence"]]
    out["queries"] = {name: len(q) for name, q in queries.items()}
    out["split"] = split
    return out


class Precomputed:
    """An encoder answering from vectors computed once, so two engines index the same numbers."""

    def __init__(self, identity: str, texts: Sequence[str], vectors: np.ndarray) -> None:
        self.identity = identity
        self._vectors = dict(zip(texts, vectors))

    @classmethod
    def encoded(cls, encoder: Any, texts: Sequence[str]) -> Precomputed:
        """``texts`` encoded once by ``encoder``."""
        unique = list(dict.fromkeys(texts))
        return cls(encoder.identity, unique, encoder.encode(unique, 64))

    def encode(self, texts: Sequence[str], batch_size: int = 64, *args: Any, **kwargs: Any) -> np.ndarray:
        return np.array([self._vectors[t] for t in texts], dtype=np.float32)

    def precision(self, requested: str = "float32") -> str:
        """What an index records of how its vectors were computed: once, in float32 (:meth:`encoded`)."""
        return "float32"


def milvus_parity(dataset: Dataset, root: Path, encoder: Any, milvus_uri: str | None = None) -> dict[str, Any]:
    """Exact search in Milvus against faiss over the perspective pool, the claims as queries."""
    perspectives = Pool.from_dataset(dataset, "perspectives")
    queries = [c.text for c in dataset.claims.values()]
    same = Precomputed.encoded(encoder, [*perspectives.texts, *queries])
    started = time.perf_counter()
    faiss = DenseIndex.build(perspectives, same)
    faiss_seconds = time.perf_counter() - started
    store = IndexStore(root, backend="milvus", milvus_uri=milvus_uri, encoder=same)
    milvus, milvus_seconds = store.build(perspectives, "dense")
    vectors = same.encode(queries)
    overlap = overlap_at_k(ids(faiss.search_vectors(vectors, 10)), ids(milvus.search_vectors(vectors, 10)), 10)
    return {"overlap_at_10": round(overlap, 4), "queries": len(queries), "uri": store.milvus_uri,
            "build_seconds": {"faiss": round(faiss_seconds, 2), "milvus": round(milvus_seconds, 2)},
            "note": "build seconds exclude encoding: both engines index the same precomputed vectors"}


def milvus_fulltext_overlap(dataset: Dataset, uri: str, queries: int = 300) -> dict[str, Any]:
    """Milvus's own BM25 full-text search against bm25s on the perspective pool, the first
    ``queries`` claims as queries: why the milvus backend keeps bm25s for its lexical half.

    Milvus indexes our analyser's terms (its ``standard`` tokenizer splits them no further;
    milvus-lite offers no whitespace one) with the same k1 and b; its scores are its own.
    """
    from pymilvus import DataType, Function, FunctionType

    from perspectrum.index.milvus import client

    perspectives = Pool.from_dataset(dataset, "perspectives")
    bm25 = IndexStore(Path(uri).parent / "bm25s").build(perspectives, "bm25")[0]
    milvus, name = client(uri), "perspectrum_fulltext_trial"
    if milvus.has_collection(name):
        milvus.drop_collection(name)
    schema = milvus.create_schema(auto_id=False)
    schema.add_field("row", DataType.INT64, is_primary=True)
    schema.add_field("text", DataType.VARCHAR, max_length=65535, enable_analyzer=True,
                     analyzer_params={"tokenizer": "standard"})
    schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_function(Function(name="bm25", function_type=FunctionType.BM25, input_field_names=["text"],
                                 output_field_names=["sparse"]))
    params = milvus.prepare_index_params()
    params.add_index(field_name="sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25",
                     params={"bm25_k1": bm25.params.k1, "bm25_b": bm25.params.b})
    milvus.create_collection(name, schema=schema, index_params=params)
    terms = [" ".join(tokens) for tokens in bm25.analyzer.tokenize(perspectives.texts)]
    for start in range(0, len(terms), 2000):
        milvus.insert(name, [{"row": r, "text": terms[r] or "_"} for r in range(start, min(start + 2000, len(terms)))])
    milvus.flush(name)
    milvus.load_collection(name)
    claims = [c.text for c in list(dataset.claims.values())[:queries]]
    found = milvus.search(name, data=[" ".join(t) for t in bm25.analyzer.tokenize(claims)], anns_field="sparse",
                          limit=10, search_params={"metric_type": "BM25"}, output_fields=["row"])
    candidate = [[perspectives.ids[h["row"]] for h in hits] for hits in found]
    milvus.drop_collection(name)
    return {"overlap_at_10": round(overlap_at_k(ids(bm25.batch_search(claims, 10), True), candidate, 10), 4),
            "queries": len(claims)}
