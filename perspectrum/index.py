"""Build, store and reopen the BM25 and dense indexes over a pool.

An index is a folder you can inspect (as in pyserini): the engine's files, ``docids.jsonl``
(one JSON id per line, in row order, so any string round-trips, line separators included)
and ``meta.json`` (pool, settings, the key it was built for and a SHA-256 of every file).
Layout: ``<root>/<pool>/<kind>/``.

Writes are atomic and serialised (:func:`perspectrum._io.atomic_folder`): an index is
written in full into a new version folder and swapped in by one rename, and two
processes building one index take turns, the second reusing what the first built. On
open, the stored key is compared with the key of the current pool content and settings
(stale), and the folder must hold exactly the files its meta lists, each with its
recorded hash (incomplete or corrupt); either way the caller gets a clear message or a
rebuild. Readers resolve the folder once and read every file through that answer, and
read again if a writer removed it under them.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perspectrum import integrity
from perspectrum._io import atomic_folder, atomic_write, current, folder_lock, tidy
from perspectrum._progress import progress, say
from perspectrum.config import BM25Params, DenseParams
from perspectrum.data import Pool, paragraph_of
from perspectrum.encoder import Encoder
from perspectrum.errors import PerspectrumError
from perspectrum.search import DocId, Hit, top_hits
from perspectrum.text import remember

KINDS = ("bm25", "dense")
#: Which engine serves each kind of index, per backend: the embedded engines run in this
#: process; ``lucene`` serves BM25 from a Lucene index (:mod:`perspectrum.lucene`),
#: ``milvus`` dense search from a Milvus server or milvus-lite (:mod:`perspectrum.milvus`).
BACKENDS = {
    "embedded": {"bm25": "bm25s", "dense": "faiss"},
    "lucene": {"bm25": "lucene", "dense": "faiss"},
    "milvus": {"bm25": "bm25s", "dense": "milvus"},
}
DEFAULT_BACKEND = "embedded"
META = "meta.json"
DOCIDS = "docids.jsonl"
#: Bumped when what an index folder holds changes; part of the key, so older indexes are
#: rebuilt (2: ids as JSON lines).
FORMAT = 2
#: Files each engine's index must list in its meta (besides the ids); a Lucene index's
#: segment file names vary, and opening it checks them.
REQUIRED = {"bm25s": ("params.index.json", "vocab.index.json", "data.csc.index.npy"), "faiss": ("index.faiss",),
            "lucene": ("slots.json",), "milvus": ("milvus.json",)}
#: How often a reader starts again when a writer swaps the index away under it.
READ_ATTEMPTS = 3
#: The cached split of the evidence pool into sentences (see :meth:`IndexStore.sentences`).
SENTENCE_CACHE = "pool.json"


def _write_docids(folder: Path, doc_ids: Sequence[DocId]) -> None:
    # json.dumps escapes every non-ASCII character and control, so one id is one line
    (folder / DOCIDS).write_text("".join(json.dumps(i) + "\n" for i in doc_ids), encoding="ascii")


def _read_docids(folder: Path, count: int) -> list[DocId]:
    """The ids in row order; a file that does not hold ``count`` of them is damaged."""
    lines = (folder / DOCIDS).read_text(encoding="ascii").rstrip("\n")
    try:  # one JSON array: a single parse, not one per line
        ids = json.loads(f"[{lines.replace(chr(10), ',')}]")
    except ValueError:
        raise integrity.Damaged(f"{folder / DOCIDS} is not one JSON id per line") from None
    if len(ids) != count or not all(isinstance(i, (int, str)) and not isinstance(i, bool) for i in ids):
        raise integrity.Damaged(f"{folder / DOCIDS} does not hold the index's {count:,} ids")
    return ids


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
        _write_docids(folder, self.doc_ids)

    def updated(self, new: Pool, kept: Sequence[int], added: Pool, folder: Path, show_progress: bool) -> BM25Index:
        """``new``'s index: bm25s has no update, so the whole pool is indexed again."""
        return BM25Index.build(new, self.params, show_progress)

    @classmethod
    def load(cls, folder: Path, params: BM25Params) -> BM25Index:
        import bm25s

        retriever = bm25s.BM25.load(str(folder), show_progress=False)
        return cls(retriever, _read_docids(folder, int(retriever.scores["num_docs"])), params)

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
    fresh = index.encoder.encode(list(added.texts), index.params.batch_size, show_progress,
                                 f"dense {new.name} (added)") if len(added) else np.zeros((0, index.dimension))
    return np.vstack([index.vectors([index.doc_ids[row] for row in kept]), fresh]).astype(np.float32)


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
        vectors = encoder.encode(list(pool.texts), params.batch_size, show_progress, f"dense {pool.name}")
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
        _write_docids(folder, self.doc_ids)

    @classmethod
    def load(cls, folder: Path, encoder: Encoder, params: DenseParams) -> DenseIndex:
        import faiss

        try:
            index = faiss.read_index(str(folder / "index.faiss"))
        except RuntimeError as exc:  # faiss reports a short or malformed file this way
            raise integrity.Damaged(f"{folder / 'index.faiss'} cannot be read ({exc})".splitlines()[0]) from None
        return cls(tuned(index, params), _read_docids(folder, index.ntotal), encoder, params)

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


class IndexStore:
    """The ``indexes/`` folder: where each (pool, kind) index lives and whether it is usable.

    Args:
        root: the folder holding all indexes (``indexes/`` by default).
        bm25: settings for BM25 indexes.
        dense: settings for dense indexes; the encoder is loaded only to build or query.
        backend: which engines serve the indexes (:data:`BACKENDS`). The embedded engines'
            folders are ``<pool>/<kind>``; another engine's are ``<pool>/<kind>-<engine>``,
            so switching backends never replaces an index.
        milvus_uri: the Milvus server of the ``milvus`` backend (see :mod:`perspectrum.milvus`).
        encoder: an encoder already loaded (stores that share one load it once); by default
            ``dense.encoder``, loaded when first needed.
    """

    def __init__(self, root: str | Path, bm25: BM25Params = BM25Params(), dense: DenseParams = DenseParams(),
                 backend: str = DEFAULT_BACKEND, milvus_uri: str | None = None, encoder: Encoder | None = None) -> None:
        if backend not in BACKENDS:
            raise PerspectrumError(f"unknown backend {backend!r}: choose one of {', '.join(BACKENDS)}")
        self.root = Path(root)
        self.bm25 = bm25
        self.dense = dense
        self.backend = backend
        self._milvus_uri = milvus_uri
        self._encoder = encoder

    @property
    def milvus_uri(self) -> str:
        from perspectrum.milvus import resolve_uri

        return resolve_uri(self._milvus_uri, self.root)

    def like(self, root: str | Path) -> IndexStore:
        """A store at ``root`` with these settings and this backend (for own pools' indexes)."""
        return IndexStore(root, self.bm25, self.dense, self.backend, self._milvus_uri, self._encoder)

    def engine(self, kind: str) -> str:
        """The engine serving ``kind`` in this store's backend."""
        if kind not in KINDS:
            raise PerspectrumError(f"unknown index kind {kind!r}: choose one of {', '.join(KINDS)}")
        return BACKENDS[self.backend][kind]

    def _foreign(self, kind: str) -> str | None:
        """The engine serving ``kind`` when it is not the embedded one (it then names the
        folder and joins the key and settings), else ``None``."""
        engine = self.engine(kind)
        return None if engine == BACKENDS[DEFAULT_BACKEND][kind] else engine

    @property
    def encoder(self) -> Encoder:
        if self._encoder is None:
            self._encoder = Encoder(self.dense.encoder)
        return self._encoder

    def sentences(self, evidence: Pool) -> Pool:
        """The ``sentences`` pool of ``evidence``, split once and cached in ``<root>/sentences/pool.json``;
        its splits also seed :func:`perspectrum.text.sentences` (see :func:`perspectrum.text.remember`).

        Splitting every paragraph takes ~35 s on 2 cores, too long for each start of a
        pipeline; the cache is keyed by the evidence pool's fingerprint and the
        splitter's version, so changed paragraphs or a new pysbd split again, and carries
        its own sentences' fingerprint, so a damaged cache is split again rather than
        read. A cache that cannot be written (a read-only folder) only costs the split.
        """
        from importlib.metadata import version

        path = self.root / "sentences" / SENTENCE_CACHE
        splitter = f"pysbd-{version('pysbd')}"
        pool = None
        try:
            cached = json.loads(path.read_text(encoding="utf-8"))
            if cached["evidence"] == evidence.fingerprint and cached["splitter"] == splitter:
                pool = Pool("sentences", tuple(cached["ids"]), tuple(cached["texts"]))
                if pool.fingerprint != cached["sentences"]:
                    say(f"{path} is damaged: splitting the paragraphs again")
                    pool = None
        except (OSError, ValueError, KeyError, TypeError):
            pass
        if pool is None:
            pool = Pool.sentences_of(evidence)
            payload = {"evidence": evidence.fingerprint, "splitter": splitter, "sentences": pool.fingerprint,
                       "ids": list(pool.ids), "texts": list(pool.texts)}
            try:
                atomic_write(path, lambda tmp: tmp.write_text(json.dumps(payload), encoding="utf-8"))
            except PerspectrumError as exc:
                say(f"{exc}; the split is not kept")
        # the same splits, handed to the splitter so it need not make them again at run time
        parts: dict[str, list[str]] = {}
        for doc_id, sentence in zip(pool.ids, pool.texts):
            parts.setdefault(str(paragraph_of(doc_id)), []).append(sentence)
        remember({text: tuple(parts[str(d)]) for d, text in zip(evidence.ids, evidence.texts) if str(d) in parts})
        return pool

    def folder(self, pool: Pool, kind: str) -> Path:
        foreign = self._foreign(kind)
        return self.root / pool.name / (f"{kind}-{foreign}" if foreign else kind)

    def key(self, pool: Pool, kind: str) -> str:
        """What an index must have been built for: pool content, kind, settings, encoder, format
        (and the engine, when it is not the embedded one: so the embedded keys never changed)."""
        foreign = self._foreign(kind)
        if kind == "bm25":
            settings: dict[str, Any] = self.bm25.to_dict()
        else:
            settings = {"encoder": self.encoder.identity, **self.dense.structure_settings(len(pool))}
        described: dict[str, Any] = {"pool": pool.fingerprint, "kind": kind, "settings": settings, "format": FORMAT}
        if foreign:
            described["engine"] = foreign
        blob = json.dumps(described, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    def _problem(self, base: Path | None, pool: Pool, kind: str) -> str | None:
        """Why the index read from ``base`` (the resolved folder) cannot be used, or ``None``."""
        folder = self.folder(pool, kind)
        if base is None:
            return f"no {kind} index for the {pool.name} pool in {folder}"
        try:
            meta = json.loads((base / META).read_text(encoding="utf-8"))
            files = integrity.recorded(meta["files"], base / META, [DOCIDS, *REQUIRED[self.engine(kind)]])
        except (OSError, ValueError, KeyError, TypeError, integrity.Damaged):
            return f"the {kind} index in {folder} is incomplete (no valid {META})"
        if meta.get("key") != self.key(pool, kind):
            return f"the {kind} index in {folder} is stale (built for other pool content or settings, or by " \
                   "another version of perspectrum)"
        try:
            if not integrity.same_files(base, files, skip=(META,)):
                return f"the {kind} index in {folder} is corrupt (its files are not the ones {META} lists)"
            integrity.check(base, files)
        except (integrity.Damaged, OSError) as exc:  # OSError: removed while read (the caller looks again)
            return f"the {kind} index in {folder} is corrupt ({exc})"
        if self.engine(kind) == "milvus":
            from perspectrum.milvus import MilvusDenseIndex

            problem = MilvusDenseIndex.problem(base, self.milvus_uri)
            if problem:
                return f"the {kind} index in {folder} cannot serve: {problem}"
        return None

    def check(self, pool: Pool, kind: str) -> str | None:
        """Why the stored index cannot be used as it is, or ``None`` when it can."""
        return self._problem(current(self.folder(pool, kind)), pool, kind)

    def open(self, pool: Pool, kind: str, build_missing: bool = True, show_progress: bool = False) -> Any:
        """The usable index of a pool: loaded when sound, else rebuilt (or refused).

        Args:
            build_missing: rebuild a missing, stale or corrupt index (saying why on
                stderr); with ``False`` such an index raises a
                :class:`PerspectrumError` that names ``perspectrum index build``.

        A reader takes no lock: it resolves the folder once and, should a writer swap that
        version away under it, reads the new one; only if writers keep swapping does it
        wait for a gap between them. A builder takes the writers' lock and looks again
        first, so of two processes needing one index only one builds it.
        """
        folder = self.folder(pool, kind)
        for _ in range(READ_ATTEMPTS):
            base = current(folder)
            problem = self._problem(base, pool, kind)
            if base is not None and problem is None:
                try:
                    index = self._load(base, kind)
                except OSError as exc:
                    if current(folder) != base:
                        continue
                    raise PerspectrumError(f"cannot read the {kind} index in {folder}: {exc.strerror or exc}") from None
                tidy(folder)
                return index
            if base is None or current(folder) == base:
                break
        else:
            problem = None  # writers kept swapping it: read it between two of them, below
        if problem is not None and not build_missing:
            raise PerspectrumError(f"{problem}; run `perspectrum index build`")
        with folder_lock(folder):
            base = current(folder)
            problem = self._problem(base, pool, kind)
            if base is not None and problem is None:
                return self._load(base, kind)
            if not build_missing:
                raise PerspectrumError(f"{problem}; run `perspectrum index build`")
            say(f"{problem}: building it")
            return self.build(pool, kind, show_progress=show_progress)[0]

    def _load(self, base: Path, kind: str) -> Any:
        """The index in ``base``, read by this backend's engine for ``kind``: a
        :class:`BM25Index`, :class:`DenseIndex`, or a backend's searcher offering the same."""
        engine = self.engine(kind)
        try:
            if engine == "bm25s":
                return BM25Index.load(base, self.bm25)
            if engine == "faiss":
                return DenseIndex.load(base, self.encoder, self.dense)
            if engine == "lucene":
                from perspectrum.lucene import LuceneBM25Index

                return LuceneBM25Index.load(base, self.bm25)
            from perspectrum.milvus import MilvusDenseIndex

            return MilvusDenseIndex.load(base, self.encoder, self.dense, self.milvus_uri)
        except integrity.Damaged as exc:
            raise PerspectrumError(f"{exc}; run `perspectrum index build`") from None

    def build(self, pool: Pool, kind: str, show_progress: bool = False) -> tuple[Any, float]:
        """Build an index, write it atomically (one writer at a time), and return it with
        the build seconds."""
        with folder_lock(self.folder(pool, kind)):
            return self._build(pool, kind, show_progress)

    def _build(self, pool: Pool, kind: str, show_progress: bool) -> tuple[Any, float]:
        engine = self.engine(kind)
        start = time.perf_counter()
        index: Any
        if engine == "bm25s":
            index = BM25Index.build(pool, self.bm25, show_progress)
        elif engine == "lucene":
            from perspectrum.lucene import LuceneBM25Index

            index = LuceneBM25Index.build(pool, self.bm25, show_progress)
        elif engine == "faiss":
            index = DenseIndex.build(pool, self.encoder, self.dense, show_progress)
        else:
            from perspectrum.milvus import MilvusDenseIndex

            index = MilvusDenseIndex.build(pool, self.encoder, self.dense, self.milvus_uri,
                                           self.folder(pool, kind), show_progress)
        return index, self._publish(pool, kind, index, start)

    def _publish(self, pool: Pool, kind: str, index: Any, start: float, how: str = "built") -> float:
        """Write ``index`` of ``pool`` with its meta into a new version folder and swap it in;
        returns the seconds since ``start`` up to the index's files written (an update may
        do its work as it writes them)."""
        key, foreign = self.key(pool, kind), self._foreign(kind)
        if kind == "bm25":
            settings: dict[str, Any] = self.bm25.to_dict()
        else:
            settings = {**self.dense.to_dict(), "encoder_id": self.encoder.identity, "dimension": index.dimension,
                        "normalised": True, **self.dense.structure_settings(len(pool))}
        if foreign:
            settings["engine"] = foreign

        seconds = 0.0

        def write(tmp: Path) -> None:
            nonlocal seconds
            index.save(tmp)
            seconds = time.perf_counter() - start
            meta = {"kind": kind, "pool": pool.name, "count": len(pool), "key": key, "format": FORMAT,
                    "pool_fingerprint": pool.fingerprint, "settings": settings, "how": how,
                    "build_seconds": round(seconds, 2), "files": integrity.record(tmp)}
            (tmp / META).write_text(json.dumps(meta, indent=2), encoding="utf-8")

        atomic_folder(self.folder(pool, kind), write)
        return seconds

    def update(self, old: Pool, new: Pool, kind: str, show_progress: bool = False) -> tuple[Any, float, str]:
        """Bring the stored index of ``old`` to ``new`` without a full rebuild where the engine
        can, and swap it in as :meth:`build` does (a crash leaves the old index readable).

        ``new`` must be ``old`` less some documents, plus new ones at the end (what
        ``perspectrum pool add|remove`` writes); a changed text counts as removed and added.
        Each engine reuses what it can: faiss and Milvus encode only the added texts,
        Lucene copies the old segments (hard links) and deletes and adds documents, bm25s
        indexes the pool again (it has no update). Returns the index, the seconds, and how
        it was made: "updated", "re-indexed" (bm25s), "built" (no sound index of ``old`` to
        start from, or the order does not allow an update), or "unchanged".
        """
        folder = self.folder(new, kind)
        with folder_lock(folder):
            base = current(folder)
            if self._problem(base, new, kind) is None:
                return self._load(base, kind), 0.0, "unchanged"
            problem = self._problem(base, old, kind)
            now = dict(zip(new.ids, new.texts))
            kept = [row for row, (d, t) in enumerate(zip(old.ids, old.texts)) if now.get(d) == t]
            kept_ids = {old.ids[row] for row in kept}
            fresh = [(d, t) for d, t in zip(new.ids, new.texts) if d not in kept_ids]
            added = Pool(new.name, tuple(d for d, _ in fresh), tuple(t for _, t in fresh))
            if problem is None and list(new.ids) != [old.ids[r] for r in kept] + list(added.ids):
                problem = f"the {new.name} pool's kept documents changed order"
            if problem is not None:
                say(f"{problem}: building the {kind} index of the {new.name} pool")
                index, seconds = self._build(new, kind, show_progress)
                return index, seconds, "built"
            start = time.perf_counter()
            previous = self._load(base, kind)
            how = "updated" if previous.incremental else "re-indexed"
            index = previous.updated(new, kept, added, folder, show_progress)
            return index, self._publish(new, kind, index, start, how=how), how
