"""Preparing a machine to answer: the one step that builds and unpacks what ``discover`` reads.

A fresh clone has the data, the base encoders and the models that ship with perspectrum,
nothing else. :func:`prepare` builds every index the pipeline opens over PERSPECTRUM's pools
and, unless the user's own four models are in ``models/``, unpacks the shipped models
(:func:`perspectrum.models.shipped.unpack`: each difference added to its base, checked).
Nothing is trained or tuned: the settings chosen on dev ship with the models. What is
already sound is kept, so a second run takes seconds. ``perspectrum setup`` runs it;
:class:`perspectrum.Pipeline` never does, and refuses an unprepared machine at once
(:class:`perspectrum.pipeline.pipeline.NotPrepared`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from perspectrum import folders
from perspectrum._progress import say
from perspectrum.data import Pool, load_dataset
from perspectrum.index.sentence_vectors import build_sentence_index
from perspectrum.index.store import DEFAULT_BACKEND, IndexStore
from perspectrum.models.scorers import models_present
from perspectrum.models.shipped import current, unpack

#: The indexes an answer needs: the perspective pool's for retrieval, the evidence pool's for the
#: evidence ranker; and the evidence sentences' BM25, so that `perspectrum serve`'s /search
#: answers that pool by BM25 (3.6 s and 6.6 MB for PERSPECTRUM's 52,173 sentences). The
#: sentences' vectors are encoded as claims read them
#: (:class:`~perspectrum.index.sentence_vectors.SentenceVectors`), or all at once by ``full``.
NEEDED = (("perspectives", "bm25"), ("perspectives", "dense"), ("evidence", "bm25"), ("evidence", "dense"),
          ("sentences", "bm25"))
#: What ``full`` adds: every evidence sentence's vector, and their dense index for /search
#: (made from those vectors, encoding nothing again).
FULL = (("sentences", "dense"),)


def prepare(data_dir: str | Path | None = None, index_dir: str | Path | None = None,
            models_dir: str | Path | None = None, verify: bool = True, backend: str = DEFAULT_BACKEND,
            milvus_uri: str | None = None, show_progress: bool = False, full: bool = False) -> dict[str, Any]:
    """Make this machine ready to answer claims: build the missing or stale indexes, and unpack
    the shipped models unless the user's own four are there or they are unpacked already.

    Folders resolve as :meth:`perspectrum.Pipeline.load`'s do. ``full`` also encodes every
    evidence sentence not encoded yet (minutes, once; an answer otherwise encodes those it
    reads, a second or so for a new claim) and builds their dense index.

    Returns:
        What was done, as JSON-ready data: ``indexes`` (pool, kind, status: ``reused`` or
        ``built``, seconds), ``sentence_vectors`` with ``full`` (sentences encoded, seconds),
        ``models`` (``yours``, ``shipped, kept`` or ``shipped, unpacked``, with the reason)
        and the total ``seconds``.
    """
    started = time.perf_counter()
    dataset = load_dataset(data_dir, verify=verify)
    store = IndexStore(folders.index_dir(index_dir), backend=backend, milvus_uri=milvus_uri)
    evidence = Pool.from_dataset(dataset, "evidence")
    pools = {"perspectives": lambda: Pool.from_dataset(dataset, "perspectives"), "evidence": lambda: evidence,
             "sentences": lambda: store.sentences(evidence)}
    indexes = []
    extra: dict[str, Any] = {}
    for pool_name, kind in NEEDED + (FULL if full else ()):
        pool = pools[pool_name]()
        problem = store.check(pool, kind)
        seconds = 0.0
        if problem is not None and (pool_name, kind) in FULL:
            encoded, seconds = build_sentence_index(store, evidence, show_progress)
            extra["sentence_vectors"] = {"encoded": encoded, "seconds": round(seconds, 1)}
        elif problem is not None:
            say(f"{problem}: building it")
            seconds = store.build(pool, kind, show_progress=show_progress)[1]
        indexes.append({"pool": pool_name, "kind": kind, "documents": len(pool),
                        "status": "reused" if problem is None else "built", "seconds": round(seconds, 1)})
    models = folders.models_dir(models_dir)
    if models_present(models):
        done = {"models": "yours", "why": f"your four trained models in {models} answer"}
    else:
        why = current(models)
        if why is None:
            done = {"models": "shipped, kept", "why": f"the shipped models are unpacked in {models}"}
        else:
            say(f"{why}: unpacking them (once)")
            unpacking = time.perf_counter()
            unpack(models, show_progress=show_progress)
            done = {"models": "shipped, unpacked", "why": why, "seconds": round(time.perf_counter() - unpacking, 1)}
    return {"indexes": indexes, **extra, **done, "index_dir": str(store.root), "models_dir": str(models),
            "seconds": round(time.perf_counter() - started, 1)}
