"""Large ``map`` runs: every document's units kept in a file a rerun resumes, mined in this process or on Ray.

    perspectrum map DOCS… --claim "…" --units units.jsonl [--engine ray --workers 2]

Mining is nearly all of a map's time (seconds a long document; grouping is the rest), so a
run over many documents can keep each document's units as they are mined, in a units file
(:mod:`perspectrum.batch.map_files`: its layout, and how a run resumes). Documents found there
are not mined again.

**Engines**: ``local`` mines in this process; ``ray`` sends batches of documents to a pool of
``workers`` single-threaded actors, each holding its own pipeline
(:func:`perspectrum.batch.ray_engine.ray_mined`). Either way the units are grouped here, once
every document is mined (:meth:`~perspectrum.pipeline.pipeline.Pipeline.map`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from perspectrum._io import appending, sole_writer
from perspectrum._progress import progress, say
from perspectrum.batch.engines import ENGINES, PipelineSource, check_engine
from perspectrum.batch.map_files import header, models_of, read_units, units_line
from perspectrum.batch.ray_engine import ray_mined
from perspectrum.errors import PerspectrumError
from perspectrum.pipeline.map import MapSettings, PerspectiveMap
from perspectrum.pipeline.pipeline import Pipeline, check_claim
from perspectrum.text.document import check_document
from perspectrum.text.mining import MinedUnit

__all__ = ["ENGINES", "map_documents"]


def map_documents(pipeline: PipelineSource, documents: Mapping[str, str], claim: str,
                  settings: MapSettings | None = None, skipped: Sequence[Any] = (), units: str | Path | None = None,
                  engine: str = "local", workers: int = 1, batch_size: int = 8, address: str | None = None,
                  show_progress: bool = False) -> PerspectiveMap:
    """Map ``documents`` (id → text) for ``claim``, keeping every document's units in the
    units file ``units`` (created, or resumed: see the module docstring) when one is given.

    Args:
        pipeline: the pipeline, or a function of no arguments that builds it (the ray
            engine needs the function, and it must pickle; each actor builds its own).
        engine: ``"local"`` or ``"ray"`` (:data:`ENGINES`); ``workers`` actors (ray only),
            ``batch_size`` documents sent to an actor at a time, ``address`` the Ray cluster
            to join (ray only).
        settings, skipped: as :meth:`Pipeline.map` takes them.
    """
    workers, batch_size = check_engine(pipeline, engine, workers, batch_size, address)
    claim = check_claim(claim)
    if not isinstance(documents, Mapping) or not documents:
        raise PerspectrumError("map_documents takes a mapping of document ids to texts, not empty")
    texts = {str(k): check_document(v, what=f"document {k}") for k, v in documents.items()}  # all, before any work
    pipe = pipeline if isinstance(pipeline, Pipeline) else pipeline()
    pipe.show_progress = show_progress
    pipe.settings  # noqa: B018 - open (or build) the indexes and load the models now, once
    if units is None and engine == "local":
        return pipe.map(texts, claim, settings, skipped)
    path = Path(units).expanduser() if units is not None else None
    with sole_writer(path, "--units") if path is not None else nullcontext():
        models = models_of(pipe)
        mined = read_units(path, claim, models, texts) if path is not None else {}
        fresh = path is not None and (not path.exists() or path.stat().st_size == 0)
        if fresh and path is not None and path.exists():  # emptied (or never written past a full disk)
            say(f"{path} is empty; mining every document again")
        with appending(path) if path is not None else nullcontext(lambda line: None) as write:
            if fresh:
                write(header(claim, models))
            if engine == "ray":
                todo = [(k, v) for k, v in texts.items() if k not in mined]
                with (ray_mined(pipeline, claim, todo, workers, batch_size, address) as lines,  # type: ignore[arg-type]
                      progress("mining the documents (ray)", len(todo), show_progress and bool(todo)) as advance):
                    for line in lines:
                        write(line)
                        row = json.loads(line)
                        mined[row["id"]] = [MinedUnit(**u) for u in row["units"]]
                        advance(1)
                return pipe.map(texts, claim, settings, skipped, mined=mined)
            return pipe.map(texts, claim, settings, skipped, mined=mined,
                            on_mined=lambda doc_id, found: write(units_line(doc_id, texts[doc_id], found)))
