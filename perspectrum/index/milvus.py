"""Dense search in Milvus, through ``pymilvus`` (``pip install perspectrum[milvus]``).

The same client code talks to ``milvus-lite`` (a local ``.db`` file: the default,
``<indexes>/milvus.db``) and to a Milvus cluster (``--milvus-uri http://host:19530``, or
``$PERSPECTRUM_MILVUS_URI``; a token, if the cluster needs one, in ``$MILVUS_TOKEN``).

The vectors live in the server; the index folder holds what the store checks: the ids in
row order and ``milvus.json`` (server, collection, count). Each build writes a new
collection (named after the store folder and a fresh token) and the folder swap
publishes it, so readers never see a half-filled one; a build drops this folder's older
collections except the one still published, which readers may be using. Exact search
(``FLAT``, inner product) over normalised vectors is what :class:`perspectrum.index.dense.DenseIndex`
computes, so the two agree up to ties.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perspectrum import integrity
from perspectrum._progress import progress
from perspectrum.config import DenseParams
from perspectrum.data import Pool
from perspectrum.encoders.bi_encoder import Encoder
from perspectrum.errors import PerspectrumError
from perspectrum.index.dense import added_vectors
from perspectrum.index.files import read_docids, write_docids
from perspectrum.index.search import DocId, Hit

URI_ENV = "PERSPECTRUM_MILVUS_URI"
DEFAULT_DB = "milvus.db"
INFO = "milvus.json"
#: Rows sent per insert call.
INSERT_BATCH = 2000
#: Most rows Milvus returns for one query.
MAX_LIMIT = 16384

_clients: dict[str, Any] = {}
_clients_lock = threading.Lock()


def resolve_uri(given: str | None, root: Path) -> str:
    """``given``, else ``$PERSPECTRUM_MILVUS_URI``, else milvus-lite's file in the indexes folder."""
    uri = given or os.environ.get(URI_ENV) or str(root / DEFAULT_DB)
    return uri if "://" in uri else str(Path(uri).resolve())


def client(uri: str) -> Any:
    """One ``MilvusClient`` per server and process (milvus-lite starts one server per file)."""
    with _clients_lock:
        if uri not in _clients:
            try:
                from pymilvus import MilvusClient
            except ImportError:
                raise PerspectrumError("the milvus backend needs pymilvus: `pip install perspectrum[milvus]`") from None
            if "://" not in uri:
                Path(uri).parent.mkdir(parents=True, exist_ok=True)
            try:
                _clients[uri] = MilvusClient(uri, token=os.environ.get("MILVUS_TOKEN", ""))
            except Exception as exc:  # pymilvus raises its own types for a refused or bad address
                raise PerspectrumError(f"cannot reach Milvus at {uri}: {str(exc).splitlines()[0]}") from None
        return _clients[uri]


def collection_prefix(folder: Path) -> str:
    """Names of the collections one index folder has published: unique per store folder,
    so two stores (PERSPECTRUM's and your own pools) never share or drop each other's."""
    return "perspectrum_" + hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:12] + "_"


class MilvusDenseIndex:
    """Exact inner-product search over a pool's normalised embeddings, in a Milvus collection.

    Offers what :class:`perspectrum.index.dense.DenseIndex` offers (``search_vectors``,
    ``vectors``, ``embeddings``, the encoder), so every stage runs on it unchanged.
    """

    name = "dense"
    incremental = True

    def __init__(self, uri: str, collection: str, doc_ids: Sequence[DocId], encoder: Encoder,
                 params: DenseParams, dimension: int) -> None:
        self.uri = uri
        self.collection = collection
        self.doc_ids = list(doc_ids)
        self.encoder = encoder
        self.params = params
        self.dimension = dimension
        self._row_of = {d: i for i, d in enumerate(self.doc_ids)}
        self._embeddings: np.ndarray | None = None

    @classmethod
    def build(cls, pool: Pool, encoder: Encoder, params: DenseParams, uri: str, folder: Path,
              show_progress: bool = False) -> MilvusDenseIndex:
        """Encode the pool and load it into a new collection of ``folder``'s (see the module)."""
        vectors = encoder.encode(list(pool.texts), params.batch_size, show_progress, f"dense {pool.name}",
                                 params.build_precision)
        return cls.from_vectors(pool, vectors, encoder, params, uri, folder, show_progress)

    def updated(self, new: Pool, kept: Sequence[int], added: Pool, folder: Path,
                show_progress: bool) -> MilvusDenseIndex:
        """``new``'s index in a new collection, from the kept rows' stored vectors and the
        added texts' (the only ones encoded): the published collection is never changed,
        so the folder swap stays the one moment readers move over."""
        vectors = added_vectors(self, new, kept, added, show_progress)
        return self.from_vectors(new, vectors, self.encoder, self.params, self.uri, folder, show_progress)

    @classmethod
    def from_vectors(cls, pool: Pool, vectors: np.ndarray, encoder: Encoder, params: DenseParams, uri: str,
                     folder: Path, show_progress: bool = False) -> MilvusDenseIndex:
        """A new collection of ``folder``'s holding ``vectors`` (row ``i`` is ``pool.ids[i]``)."""
        from pymilvus import DataType

        milvus = client(uri)
        prefix = collection_prefix(folder)
        published = _published(folder)
        for old in milvus.list_collections():
            if old.startswith(prefix) and old != published:
                milvus.drop_collection(old)
        name = prefix + os.urandom(6).hex()
        schema = milvus.create_schema(auto_id=False)
        schema.add_field("row", DataType.INT64, is_primary=True)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=int(vectors.shape[1]))
        index_params = milvus.prepare_index_params()
        index_params.add_index(field_name="vector", index_type="FLAT", metric_type="IP")
        milvus.create_collection(name, schema=schema, index_params=index_params)
        try:
            with progress(f"Milvus {pool.name}", len(vectors), enabled=show_progress) as advance:
                for start in range(0, len(vectors), INSERT_BATCH):
                    rows = range(start, min(start + INSERT_BATCH, len(vectors)))
                    milvus.insert(name, [{"row": r, "vector": vectors[r].tolist()} for r in rows])
                    advance(len(rows))
            milvus.flush(name)
            milvus.load_collection(name)
        except BaseException:
            milvus.drop_collection(name)
            raise
        index = cls(uri, name, pool.ids, encoder, params, int(vectors.shape[1]))
        index._embeddings = vectors
        return index

    def save(self, folder: Path) -> None:
        info = {"uri": self.uri, "collection": self.collection, "count": len(self.doc_ids),
                "dimension": self.dimension}
        (folder / INFO).write_text(json.dumps(info, indent=2), encoding="utf-8")
        write_docids(folder, self.doc_ids)

    @staticmethod
    def problem(base: Path, uri: str) -> str | None:
        """Why the collection ``base`` names cannot serve (another server, gone, or short), or ``None``."""
        info = json.loads((base / INFO).read_text(encoding="utf-8"))
        if info["uri"] != uri:
            return f"built on the Milvus at {info['uri']}, not {uri}"
        milvus = client(uri)
        if not milvus.has_collection(info["collection"]):
            return f"its Milvus collection {info['collection']} is gone"
        count = int(milvus.get_collection_stats(info["collection"])["row_count"])
        if count != info["count"]:
            return f"its Milvus collection holds {count:,} rows, not {info['count']:,}"
        return None

    @classmethod
    def load(cls, folder: Path, encoder: Encoder, params: DenseParams, uri: str) -> MilvusDenseIndex:
        try:
            info = json.loads((folder / INFO).read_text(encoding="utf-8"))
            index = cls(uri, info["collection"], read_docids(folder, int(info["count"])), encoder, params,
                        int(info["dimension"]))
        except (ValueError, KeyError, TypeError):
            raise integrity.Damaged(f"{folder / INFO} is not a valid description of a Milvus collection") from None
        client(uri).load_collection(index.collection)
        return index

    @property
    def embeddings(self) -> np.ndarray:
        """Every row's vector, fetched once (for callers that index vectors by row)."""
        if self._embeddings is None:
            self._embeddings = self._fetch(range(len(self.doc_ids)))
        return self._embeddings

    def _fetch(self, rows: Sequence[int]) -> np.ndarray:
        milvus = client(self.uri)
        found: dict[int, list[float]] = {}
        wanted = sorted(set(rows))
        for start in range(0, len(wanted), MAX_LIMIT):
            for entity in milvus.get(self.collection, ids=wanted[start:start + MAX_LIMIT], output_fields=["vector"]):
                found[int(entity["row"])] = entity["vector"]
        return np.array([found[r] for r in rows], dtype=np.float32).reshape(len(rows), self.dimension)

    def search(self, query: str, k: int) -> list[Hit]:
        return self.batch_search([query], k)[0]

    def batch_search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        return self.search_vectors(self.encoder.encode(list(queries), self.params.batch_size), k)

    def search_vectors(self, vectors: np.ndarray, k: int) -> list[list[Hit]]:
        """Search with query vectors already encoded; ties go to the lower row, as in faiss."""
        k = min(k, len(self.doc_ids), MAX_LIMIT)
        if k <= 0 or len(vectors) == 0:
            return [[] for _ in vectors]
        found = client(self.uri).search(self.collection, data=np.asarray(vectors, dtype=np.float32).tolist(),
                                        limit=k, anns_field="vector", search_params={"metric_type": "IP"})
        runs = []
        for hits in found:
            ranked = sorted(((float(h["distance"]), int(h["row"])) for h in hits), key=lambda s: (-s[0], s[1]))
            runs.append([Hit(self.doc_ids[row], score) for score, row in ranked])
        return runs

    def score(self, queries: Sequence[str], doc_ids: Sequence[DocId]) -> np.ndarray:
        vectors = self.encoder.encode(list(queries), self.params.batch_size)
        return vectors @ self.vectors(doc_ids).T

    def vectors(self, doc_ids: Sequence[DocId]) -> np.ndarray:
        """The stored (normalised) embeddings of ``doc_ids``, one row each, in order."""
        rows = [self._row_of[d] for d in doc_ids]
        if self._embeddings is not None:
            return self._embeddings[rows]
        return self._fetch(rows)


def _published(folder: Path) -> str | None:
    """The collection the folder's current version names, if any."""
    from perspectrum._io import current

    base = current(folder)
    try:
        return json.loads((base / INFO).read_text(encoding="utf-8"))["collection"] if base else None
    except (OSError, ValueError, KeyError, TypeError):
        return None
