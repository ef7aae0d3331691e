"""The server's one pipeline: loaded once on a thread of its own as the server starts (so
``GET /health`` can say ``loading`` meanwhile), and its search indexes opened on first use."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from perspectrum.data import Pool
from perspectrum.errors import PerspectrumError
from perspectrum.index.search import HybridSearcher
from perspectrum.pipeline.pipeline import Pipeline


@dataclass
class Loader:
    """Loads the pipeline once, off the event loop, and opens search indexes on first use."""

    pipeline: Pipeline
    status: str = "loading"
    error: str | None = None
    system: str | None = None
    _pools: dict[str, tuple[Pool, dict[Any, str]]] = field(default_factory=dict)
    _indexes: dict[tuple[str, str], Any] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def load(self) -> None:
        try:
            self.pipeline.warm_up()
            self.system = self.pipeline.system
            self.status = "ready"
        except Exception as exc:  # noqa: BLE001 - any failure is reported by /health, not lost in a thread
            self.error = str(exc) if isinstance(exc, PerspectrumError) else f"{type(exc).__name__}: {exc}"
            self.status = "failed"

    def unready(self) -> str | None:
        """Why model work cannot run yet (``None``: it can)."""
        if self.status == "ready":
            return None
        if self.status == "loading":
            return "the models are still loading; GET /health says when they are ready"
        return f"the pipeline failed to load: {self.error}"

    def searcher(self, pool: str, method: str) -> tuple[Any, dict[Any, str]]:
        """The searcher of one pool and method, with the pool's texts by id. Indexes are
        opened once and never built here: a missing one is an error naming the `perspectrum
        index build` that builds it (a build takes minutes; a request should not)."""
        with self._lock:
            if pool not in self._pools:
                pipe = self.pipeline
                docs = pipe.perspectives if pool == "perspectives" else pipe.evidence_pool
                if pool == "sentences":
                    docs = pipe.store.sentences(pipe.evidence_pool)
                self._pools[pool] = docs, dict(zip(docs.ids, docs.texts))
            docs, text = self._pools[pool]
            kinds = ("bm25", "dense") if method == "hybrid" else (method,)
            for kind in kinds:
                if (pool, kind) not in self._indexes:
                    self._indexes[pool, kind] = self._open(docs, pool, kind)
            found = [self._indexes[pool, kind] for kind in kinds]
        return (HybridSearcher(*found) if method == "hybrid" else found[0]), text

    def _open(self, docs: Pool, pool: str, kind: str) -> Any:
        """One index, or an error naming the command that builds exactly it."""
        try:
            return self.pipeline.store.open(docs, kind, build_missing=False)
        except PerspectrumError:
            problem = self.pipeline.store.check(docs, kind)
            if problem is None:
                raise
            raise PerspectrumError(f"{problem}; build it with `perspectrum index build --pool {pool} --kind {kind}` "
                                   "(`perspectrum setup --full` builds every index /search uses)") from None

    def search(self, query: str, pool: str, method: str, k: int) -> list[dict[str, Any]]:
        """The ``k`` best hits for ``query`` in ``pool`` by ``method``, as ``/search`` answers them."""
        searcher, text = self.searcher(pool, method)
        return [{"id": h.doc_id, "score": h.score, "text": text[h.doc_id]} for h in searcher.search(query, k)]
