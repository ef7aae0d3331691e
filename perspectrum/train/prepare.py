"""Preparing a machine to answer: the one step that builds and fits what ``discover`` reads.

A fresh clone has the data and the base encoder, nothing else. :func:`prepare` builds every
index the pipeline opens over PERSPECTRUM's pools and, unless the four fine-tuned models of
``perspectrum train all`` are there, fits light heads on frozen MiniLM embeddings and
chooses the pipeline's relevance floor on dev (:func:`perspectrum.train.light_heads.train_light`,
:func:`~perspectrum.train.light_heads.tune_light`). What is already sound is kept, so a second
run takes seconds. ``perspectrum setup`` runs it; :class:`perspectrum.Pipeline` never does,
and refuses an unprepared machine at once (:class:`perspectrum.pipeline.pipeline.NotPrepared`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from perspectrum import config as folders
from perspectrum._progress import say
from perspectrum.data import Pool, load_dataset
from perspectrum.index.store import DEFAULT_BACKEND, IndexStore
from perspectrum.models.light_heads import LightScorers, StaleHeads, unprepared
from perspectrum.models.scorers import models_present

#: The indexes a discovery reads (the perspective pool for retrieval, the evidence pool and
#: its sentences for the evidence ranker, whose featurizer reads sentences densely only),
#: and the sentences' BM25, so that `perspectrum serve`'s /search answers every pool and
#: method it offers (3.6 s and 6.6 MB for PERSPECTRUM's 52,173 sentences).
NEEDED = (("perspectives", "bm25"), ("perspectives", "dense"), ("evidence", "bm25"), ("evidence", "dense"),
          ("sentences", "dense"), ("sentences", "bm25"))


def prepare(data_dir: str | Path | None = None, index_dir: str | Path | None = None,
            models_dir: str | Path | None = None, verify: bool = True, backend: str = DEFAULT_BACKEND,
            milvus_uri: str | None = None, show_progress: bool = False) -> dict[str, Any]:
    """Make this machine ready to answer claims: build the missing or stale indexes, and fit
    light heads when there are neither fine-tuned models nor sound light heads.

    Folders resolve as :meth:`perspectrum.Pipeline.load`'s do. Light heads are always fitted
    over the embedded engines' indexes of PERSPECTRUM's pools (whatever ``backend`` serves),
    so every backend answers with the same heads.

    Returns:
        What was done, as JSON-ready data: ``indexes`` (pool, kind, status: ``reused`` or
        ``built``, seconds), ``models`` (``fine-tuned``, ``light heads kept`` or ``light heads
        fitted``, with the reason) and the total ``seconds``.
    """
    started = time.perf_counter()
    dataset = load_dataset(data_dir, verify=verify)
    store = IndexStore(folders.index_dir(index_dir), backend=backend, milvus_uri=milvus_uri)
    evidence = Pool.from_dataset(dataset, "evidence")
    pools = {"perspectives": lambda: Pool.from_dataset(dataset, "perspectives"), "evidence": lambda: evidence,
             "sentences": lambda: store.sentences(evidence)}
    indexes = []
    for pool_name, kind in NEEDED:
        pool = pools[pool_name]()
        problem = store.check(pool, kind)
        seconds = 0.0
        if problem is not None:
            say(f"{problem}: building it")
            seconds = store.build(pool, kind, show_progress=show_progress)[1]
        indexes.append({"pool": pool_name, "kind": kind, "documents": len(pool),
                        "status": "reused" if problem is None else "built", "seconds": round(seconds, 1)})
    models = folders.models_dir(models_dir)
    data_store = IndexStore(store.root)  # the embedded engines' indexes, which light heads are fitted with
    if models_present(models):
        done = {"models": "fine-tuned", "why": f"the four fine-tuned models in {models} answer"}
    else:
        light = models / folders.LIGHT_FOLDER
        why = unprepared(models)
        if why is None:  # light heads of this version: still fitted on this encoder, and sound?
            try:
                LightScorers.load(light, data_store, evidence)
            except StaleHeads as exc:
                why = str(exc)
        if why is None:
            done = {"models": "light heads kept", "why": f"sound light heads in {light}"}
        else:
            from perspectrum.train.light_heads import train_light, tune_light

            say(f"{why}: fitting light heads on frozen MiniLM embeddings and choosing the pipeline's floor on dev "
                "(a few minutes, once); `perspectrum train all` trains the accurate models")
            fitting = time.perf_counter()
            train_light(dataset, data_store, light, show_progress=show_progress)
            tune_light(dataset, data_store, models, show_progress=show_progress)
            done = {"models": "light heads fitted", "why": why,
                    "seconds": round(time.perf_counter() - fitting, 1)}
    return {"indexes": indexes, **done, "index_dir": str(store.root), "models_dir": str(models),
            "seconds": round(time.perf_counter() - started, 1)}
