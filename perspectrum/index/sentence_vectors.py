"""The evidence paragraphs' sentence vectors: encoded when a claim first reads them, kept on disk.

The evidence ranker and the window verifier read each candidate paragraph's sentences as
vectors. Encoding all 52,173 of PERSPECTRUM's sentences takes minutes on 2 cores, and a first
answer reads a few hundred of them, so nothing is encoded ahead: :meth:`SentenceVectors.of`
encodes the sentences of the paragraphs it is asked for that it has not seen, and keeps them.
``perspectrum setup --full`` (:meth:`SentenceVectors.fill`) encodes the rest in one go, so no
later answer waits for them.

Where they live: ``<indexes>/sentences/vectors/<key>/``, the key made of the encoder's identity
and the arithmetic a pool is encoded in (:meth:`perspectrum.encoders.bi_encoder.Encoder.precision`);
each paragraph's entry is found by the SHA-256 of its sentences, so a changed paragraph is a
new entry and an unchanged one is never encoded twice. Each write is one new file
(``part-<sha256>.npz``, plain arrays, read without pickle), written whole and renamed in, so
two processes never clash and a crash loses at most the part being written. A part whose
bytes no longer match its name is deleted, saying so, and its paragraphs encoded again: the
vectors are a cache, the same numbers as encoding anew. A killed writer's temporary file is
never read, and deleted once it is an hour old.
"""

from __future__ import annotations

import hashlib
import io
import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from perspectrum._io import atomic_write
from perspectrum._progress import progress, say
from perspectrum.data import Pool, paragraph_of
from perspectrum.errors import PerspectrumError

if TYPE_CHECKING:
    from perspectrum.index.store import IndexStore

#: Bumped when the files' layout changes (older folders are then ignored).
FORMAT = 1
#: Sentences encoded per part by :meth:`SentenceVectors.fill` (a part is written after each).
FILL_CHUNK = 4096
#: Parts read at open beyond which they are merged into one (fewer files, faster opens).
MERGE_ABOVE = 32
#: Seconds after which a part's temporary file (``.part-*``) is what a killed writer left: a
#: part is written from memory in one go, so no live writer holds one for long.
LEFT_AFTER = 3600


def _entry(sentences: Sequence[str]) -> str:
    """The key of a paragraph's entry: the SHA-256 of its sentences, in order."""
    return hashlib.sha256("\x1e".join(sentences).encode("utf-8", "surrogatepass")).hexdigest()[:32]


class SentenceVectors:
    """Unit vectors of each evidence paragraph's sentences, in order, encoded once.

    Args:
        store: the index store whose encoder, settings and folder they use.
        evidence: the evidence pool; its split into sentences is the store's
            (:meth:`perspectrum.index.store.IndexStore.sentences`).
    """

    def __init__(self, store: IndexStore, evidence: Pool) -> None:
        self.encoder = store.encoder
        self.batch_size = store.dense.batch_size
        self.requested = store.dense.build_precision
        #: The store's ``sentences`` pool of ``evidence``: paragraph by paragraph, in order.
        self.pool = store.sentences(evidence)
        split: dict[str, list[str]] = {}
        for doc_id, sentence in zip(self.pool.ids, self.pool.texts):
            split.setdefault(str(paragraph_of(doc_id)), []).append(sentence)
        #: Each paragraph's sentences, by its id as text (own pools may use strings).
        self.split = {doc_id: tuple(parts) for doc_id, parts in split.items()}
        self._root = store.root / "sentences" / "vectors"
        self._folder: Path | None = None
        self._known: dict[str, np.ndarray] | None = None
        self._parts: list[Path] = []
        self._lock = threading.Lock()
        self._unwritable = False

    @property
    def folder(self) -> Path:
        """Where this encoder's vectors are kept (naming it loads nothing but the torch check)."""
        if self._folder is None:
            blob = json.dumps({"format": FORMAT, "encoder": self.encoder.identity,
                               "precision": self.encoder.precision(self.requested)}, sort_keys=True)
            self._folder = self._root / hashlib.sha256(blob.encode()).hexdigest()[:16]
        return self._folder

    def of(self, doc_ids: Sequence[Any]) -> list[np.ndarray]:
        """Each paragraph's sentence vectors (sentences × dimension), encoding in one pass those
        not kept yet and keeping them. An id the split lacks is a ``KeyError``."""
        entries = [_entry(self.split[str(d)]) for d in doc_ids]
        with self._lock:
            known = self._load()
            missing = {e: self.split[str(d)] for d, e in zip(doc_ids, entries) if e not in known}
            if missing:
                self._encode(missing, known)
            return [known[e] for e in entries]

    def missing(self) -> int:
        """How many paragraphs have no vectors kept yet."""
        with self._lock:
            known = self._load()
            return sum(_entry(parts) not in known for parts in self.split.values())

    def fill(self, show_progress: bool = False) -> int:
        """Encode every paragraph not kept yet, a part at a time (an interruption keeps the parts
        written); returns how many sentences were encoded."""
        with self._lock:
            known = self._load()
            todo = {}
            for parts in self.split.values():
                todo.setdefault(_entry(parts), parts)
            todo = {e: parts for e, parts in todo.items() if e not in known}
            total = sum(map(len, todo.values()))
            with progress("sentence vectors of the evidence", total, enabled=show_progress) as advance:
                chunk: dict[str, tuple[str, ...]] = {}
                size = 0
                for n, (entry, parts) in enumerate(todo.items()):
                    chunk[entry], size = parts, size + len(parts)
                    if size >= FILL_CHUNK or n == len(todo) - 1:
                        self._encode(chunk, known)
                        advance(size)
                        chunk, size = {}, 0
            if len(self._parts) > 1 and total:
                self._merge(known)
            return total

    def all_vectors(self) -> np.ndarray | None:
        """Every sentence's vector in the order of the store's ``sentences`` pool (what its
        dense index is built from), or ``None`` while some paragraph's are not kept."""
        with self._lock:
            known = self._load()
            entries = [_entry(parts) for parts in self.split.values()]
            if not all(e in known for e in entries):
                return None
            return np.vstack([known[e] for e in entries]) if entries else None

    # -- disk --------------------------------------------------------------------------------

    def _load(self) -> dict[str, np.ndarray]:
        """Every kept entry, read from the parts on disk the first time (under the lock)."""
        if self._known is not None:
            return self._known
        known: dict[str, np.ndarray] = {}
        parts = sorted(self.folder.glob("part-*.npz")) if self.folder.is_dir() else []
        if parts:
            self._tidy()
        for path in parts:
            try:
                raw = path.read_bytes()
            except OSError:
                continue  # merged away by another process since it was listed
            if hashlib.sha256(raw).hexdigest()[:32] != path.stem.removeprefix("part-"):
                say(f"{path} is damaged: deleting it (its sentences are encoded again when read)")
                path.unlink(missing_ok=True)
                continue
            with np.load(io.BytesIO(raw), allow_pickle=False) as stored:
                entries, counts, vectors = stored["entries"], stored["counts"], stored["vectors"]
            for entry, rows in zip(entries.tolist(), np.split(vectors, np.cumsum(counts)[:-1])):
                known[entry] = rows
            self._parts.append(path)
        self._known = known
        if len(self._parts) > MERGE_ABOVE:
            self._merge(known)
        return known

    def _tidy(self) -> None:
        """Delete the temporary files of parts whose writer was killed (never read: only
        ``part-*.npz`` is)."""
        now = time.time()
        for left in self.folder.glob(".part-*"):
            try:
                if now - left.stat().st_mtime > LEFT_AFTER:
                    left.unlink()
            except OSError:
                pass  # gone already, or a folder that cannot be written: left as it is

    def _encode(self, todo: dict[str, tuple[str, ...]], known: dict[str, np.ndarray]) -> None:
        texts = [t for parts in todo.values() for t in parts]
        vectors = self.encoder.encode(texts, self.batch_size, precision=self.requested)
        counts = [len(parts) for parts in todo.values()]
        for entry, rows in zip(todo, np.split(vectors, np.cumsum(counts)[:-1])):
            known[entry] = rows
        self._write(list(todo), counts, vectors)

    def _write(self, entries: list[str], counts: list[int], vectors: np.ndarray) -> Path | None:
        """One part file, written whole and renamed in; a folder that cannot be written costs
        only the keeping (said once)."""
        if self._unwritable or not entries:
            return None
        buffer = io.BytesIO()
        np.savez(buffer, entries=np.array(entries), counts=np.array(counts, dtype=np.int64),
                 vectors=np.ascontiguousarray(vectors, dtype=np.float32))
        raw = buffer.getvalue()
        path = self.folder / f"part-{hashlib.sha256(raw).hexdigest()[:32]}.npz"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            atomic_write(path, lambda tmp: tmp.write_bytes(raw))
        except (OSError, PerspectrumError) as exc:
            self._unwritable = True
            say(f"cannot keep sentence vectors in {self.folder} ({getattr(exc, 'strerror', None) or exc}); "
                "they are encoded again in each process")
            return None
        self._parts.append(path)
        return path

    def _merge(self, known: dict[str, np.ndarray]) -> None:
        """Write every kept entry as one part, then delete the parts it replaces."""
        if not known:
            return
        merged = self._write(list(known), [len(v) for v in known.values()],
                             np.vstack(list(known.values())))
        if merged is None:
            return
        for path in self._parts:
            if path != merged:
                path.unlink(missing_ok=True)
        self._parts = [merged]


def build_sentence_index(store: IndexStore, evidence: Pool, show_progress: bool = False) -> tuple[int, float]:
    """Encode every evidence sentence not kept yet (kept as it goes), then build the ``sentences``
    pool's dense index from the kept vectors, handed to the encoder so nothing is encoded
    twice. Returns how many sentences were encoded and the seconds in all."""
    started = time.perf_counter()
    kept = SentenceVectors(store, evidence)
    encoded = kept.fill(show_progress=show_progress)
    vectors = kept.all_vectors()
    if vectors is not None:
        store.encoder.remember(list(kept.pool.texts), vectors)
    store.build(kept.pool, "dense", show_progress=show_progress)
    return encoded, time.perf_counter() - started
