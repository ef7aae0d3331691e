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
import time
from pathlib import Path
from typing import Any

from perspectrum import integrity
from perspectrum._io import atomic_folder, atomic_write, current, folder_lock, tidy
from perspectrum._progress import say
from perspectrum.config import BM25Params, DenseParams
from perspectrum.data import Pool, paragraph_of
from perspectrum.encoders.bi_encoder import Encoder
from perspectrum.errors import PerspectrumError
from perspectrum.index.bm25 import BM25Index
from perspectrum.index.dense import DenseIndex
from perspectrum.index.files import DOCIDS, FORMAT, META, REQUIRED
from perspectrum.text.sentences import remember

KINDS = ("bm25", "dense")


#: Which engine serves each kind of index, per backend: the embedded engines run in this
#: process; ``lucene`` serves BM25 from a Lucene index (:mod:`perspectrum.index.lucene`),
#: ``milvus`` dense search from a Milvus server or milvus-lite (:mod:`perspectrum.index.milvus`).
BACKENDS = {
    "embedded": {"bm25": "bm25s", "dense": "faiss"},
    "lucene": {"bm25": "lucene", "dense": "faiss"},
    "milvus": {"bm25": "bm25s", "dense": "milvus"},
}


DEFAULT_BACKEND = "embedded"


#: How often a reader starts again when a writer swaps the index away under it.
READ_ATTEMPTS = 3


#: The cached split of the evidence pool into sentences (see :meth:`IndexStore.sentences`).
SENTENCE_CACHE = "pool.json"


class IndexStore:
    """The ``indexes/`` folder: where each (pool, kind) index lives and whether it is usable.

    Args:
        root: the folder holding all indexes (``indexes/`` by default).
        bm25: settings for BM25 indexes.
        dense: settings for dense indexes; the encoder is loaded only to build or query.
        backend: which engines serve the indexes (:data:`BACKENDS`). The embedded engines'
            folders are ``<pool>/<kind>``; another engine's are ``<pool>/<kind>-<engine>``,
            so switching backends never replaces an index.
        milvus_uri: the Milvus server of the ``milvus`` backend (see :mod:`perspectrum.index.milvus`).
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
        from perspectrum.index.milvus import resolve_uri

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
        its splits also seed :func:`perspectrum.text.sentences.sentences` (see :func:`perspectrum.text.sentences.remember`).

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
                    raise ValueError("its sentences are not the ones it records")
        except FileNotFoundError:
            pass
        except (OSError, ValueError, KeyError, TypeError, RecursionError, PerspectrumError):
            # torn, truncated, edited or another version's: never read as the split
            if path.exists():
                say(f"{path} is damaged: splitting the paragraphs again")
            pool = None
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
            from perspectrum.index.milvus import MilvusDenseIndex

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
                from perspectrum.index.lucene import LuceneBM25Index

                return LuceneBM25Index.load(base, self.bm25)
            from perspectrum.index.milvus import MilvusDenseIndex

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
            from perspectrum.index.lucene import LuceneBM25Index

            index = LuceneBM25Index.build(pool, self.bm25, show_progress)
        elif engine == "faiss":
            index = DenseIndex.build(pool, self.encoder, self.dense, show_progress)
        else:
            from perspectrum.index.milvus import MilvusDenseIndex

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
                        "precision": self.encoder.precision(self.dense.build_precision),
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
