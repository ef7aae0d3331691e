"""Preparing a machine to answer: the one step that builds and unpacks what ``discover`` reads.

A fresh clone has the data, the base encoders and the models that ship with perspectrum,
nothing else. :func:`prepare` builds every index the pipeline opens over PERSPECTRUM's pools
and, unless the user's own four models are in ``models/``, unpacks the shipped models
(:func:`perspectrum.models.shipped.unpack`: each difference added to its base, checked).
Nothing is trained or tuned: the settings chosen on dev ship with the models. What is
already sound is kept, so a second run takes seconds: every index is checked against its sums,
and so are the unpacked models' files (a damaged one is unpacked again). Each index and the
unpacked models are written whole and swapped in (:func:`perspectrum._io.atomic_folder`), so a
run killed at any step leaves each of them as it was or finished, and the next run goes on from
there. Two runs at once take turns on each of them: the second waits (saying so), looks again
once the first is done, and keeps what it finds sound. ``perspectrum setup`` runs it;
:class:`perspectrum.Pipeline` never does, and refuses an unprepared machine at once
(:class:`perspectrum.pipeline.pipeline.NotPrepared`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from perspectrum import folders, integrity
from perspectrum._io import folder_lock
from perspectrum._progress import say
from perspectrum.data import Pool, load_dataset
from perspectrum.encoders.cross_encoder import META_FILE, json_object
from perspectrum.errors import PerspectrumError
from perspectrum.index.sentence_vectors import build_sentence_index
from perspectrum.index.store import DEFAULT_BACKEND, IndexStore
from perspectrum.models.scorers import MODELS, PIPELINE_FILE, models_present
from perspectrum.models.shipped import MANIFEST, current, source, unpack, unpacked

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
        if problem is not None:
            with folder_lock(store.folder(pool, kind)):  # another run may be building it: wait, look again
                problem = store.check(pool, kind)
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
        why = _not_unpacked(models)
        if why is not None:
            with folder_lock(unpacked(models)):  # another run may be unpacking them: wait, look again
                why = _not_unpacked(models)
                if why is not None:
                    say(f"{why}: unpacking them (once)")
                    unpacking = time.perf_counter()
                    unpack(models, show_progress=show_progress)
                    done = {"models": "shipped, unpacked", "why": why,
                            "seconds": round(time.perf_counter() - unpacking, 1)}
        if why is None:
            done = {"models": "shipped, kept", "why": f"the shipped models are unpacked in {models}"}
    return {"indexes": indexes, **extra, **done, "index_dir": str(store.root), "models_dir": str(models),
            "seconds": round(time.perf_counter() - started, 1)}


def _not_unpacked(models: Path) -> str | None:
    """Why ``models/shipped`` does not hold this package's shipped models whole, or ``None`` when
    it does: unpacked from this package's set (its stamp), and every file as it was written
    (each model's files against the sums in its ``perspectrum.json``, the pipeline's settings
    against the shipped set's manifest). They are a cache of the shipped set: damaged, they
    are unpacked again."""
    why = current(models)
    if why is not None:
        return why
    folder = unpacked(models)
    try:
        for model in MODELS:
            meta_path = folder / model / META_FILE
            integrity.check(folder / model, integrity.recorded(json_object(meta_path).get("files"), meta_path))
        settings = json_object(source() / MANIFEST).get("files", {}).get(PIPELINE_FILE)
        if integrity.sha256_file(folder / PIPELINE_FILE) != settings:
            raise PerspectrumError(f"{folder / PIPELINE_FILE} is not the shipped one (SHA-256 differs)")
    except (PerspectrumError, OSError, AttributeError) as exc:
        reason = str(exc) if isinstance(exc, PerspectrumError) else f"{folder} cannot be read ({exc})"
        return f"the unpacked shipped models are damaged: {reason.split(': build or install')[0]}"
    return None
