"""Many claims from a JSONL file to a JSONL file of results: resumable, in this process or on Ray.

    perspectrum discover-batch claims.jsonl --out results.jsonl [--engine ray --workers 2]

The claims file, the results file and how a run resumes are described in
:mod:`perspectrum.batch.discover_files` (:func:`read_claims`, :func:`read_results`): one
``{"claim", "id"}`` per line in, one ``{"id", "claim", "result"}`` per claim out, each
``result`` what ``perspectrum discover --json`` prints for it; every line is on disk before
the next is written, and a restarted run skips the claims already there.

Both engines batch the claims left to do as ``discover_many(claims, batch_size)`` does, so
each result is its answer, ``timings`` aside (the claim's share of its batch's seconds).
With fine-tuned cross-encoders a padded batch moves scores in the fourth decimal, so a run
that resumed (other claims left, so other batches) or used another batch size can differ
from an uninterrupted one in that digit; so can single-threaded actors from a
multi-threaded process.

**Engines**:

- ``local``: :meth:`Pipeline.discover_many` in this process, ``batch_size`` claims at a time.
- ``ray``: a Ray Data pipeline with one pool of ``workers`` single-threaded actors per step
  of :data:`STEPS` (the stages grouped by the model they call), each actor holding its own
  pipeline, built by the picklable factory it is given (:mod:`perspectrum.batch.ray_engine`).
  The factory's pipeline is built once in this process first, so missing indexes are
  built and the shipped models unpacked once, not by every actor at once, and a missing file is
  an error before any worker starts.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from perspectrum._checks import whole
from perspectrum._io import appending, sole_writer
from perspectrum._progress import progress
from perspectrum.batch.discover_files import BatchClaim, ClaimId, claims_of, read_claims, read_results, result_line
from perspectrum.batch.engines import ENGINES, PipelineSource, check_engine
from perspectrum.batch.ray_engine import STEPS, ray_lines
from perspectrum.pipeline.pipeline import Pipeline

__all__ = ["ENGINES", "STEPS", "BatchClaim", "BatchSummary", "discover_batch", "read_claims", "read_results"]


@dataclass(frozen=True)
class BatchSummary:
    """What one :func:`discover_batch` call did.

    ``seconds`` is the call's whole wall time: loading the pipeline and, for ray, starting
    the cluster and its actors included, so ``claims_per_second`` is what a user waits for.
    """

    claims: int
    done: int
    skipped: int
    seconds: float
    engine: str
    workers: int
    batch_size: int
    out: str

    @property
    def claims_per_second(self) -> float:
        """Claims discovered by this call per second of it (0 when none were left to do)."""
        return self.done / self.seconds if self.done and self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "seconds": round(self.seconds, 3),
                "claims_per_second": round(self.claims_per_second, 3)}


def discover_batch(pipeline: PipelineSource, claims: str | os.PathLike[str] | Mapping[ClaimId, str],
                   out: str | Path, engine: str = "local", workers: int = 1, batch_size: int = 16,
                   top: int | None = None, evidence: bool = True, address: str | None = None,
                   show_progress: bool = False) -> BatchSummary:
    """Discover the perspectives on every claim not yet in ``out`` and append one line each.

    Args:
        pipeline: the pipeline, or a function of no arguments that builds it. The ray
            engine needs the function, and it must pickle (a module-level function, or
            ``functools.partial(Pipeline.load, data_dir, index_dir, models_dir)``): each
            actor builds its own pipeline.
        claims: a claims file, or ``{id: claim}``; checked whole before any work.
        out: the results file, created or resumed (see :mod:`perspectrum.batch.discover_files`).
        engine: ``"local"`` or ``"ray"`` (:data:`ENGINES`).
        workers: actors per step of :data:`STEPS` (ray only).
        batch_size: claims per model call.
        top, evidence: as :meth:`Pipeline.discover` takes them.
        address: the Ray cluster to join (ray only; ``"auto"``: the one ``ray start`` runs here).
        show_progress: a progress bar on stderr.

    Returns:
        What was done (:class:`BatchSummary`).
    """
    started = time.perf_counter()
    workers, batch_size = check_engine(pipeline, engine, workers, batch_size, address)
    top = None if top is None else whole("top", top)
    batch = claims_of(claims)
    out = Path(out).expanduser()
    with sole_writer(out):
        done = read_results(out, batch)
        todo = [c for c in batch if c.id not in done]
        if todo:
            pipe = pipeline if isinstance(pipeline, Pipeline) else pipeline()
            pipe.settings  # noqa: B018 - open (or build) the indexes and load (or train) the models now, once
            if engine == "local":
                lines: Any = nullcontext(_local_lines(pipe, todo, batch_size, top, evidence))
            else:
                del pipe  # the actors build their own
                lines = ray_lines(pipeline, todo, workers, batch_size, top, evidence, address)  # type: ignore[arg-type]
            with (lines as results, appending(out) as write,
                  progress(f"discover-batch ({engine})", len(todo), show_progress) as advance):
                for line in results:
                    write(line)
                    advance(1)
    return BatchSummary(len(batch), len(todo), len(batch) - len(todo), time.perf_counter() - started, engine,
                        workers, batch_size, str(out))


def _local_lines(pipe: Pipeline, todo: list[BatchClaim], batch_size: int, top: int | None,
                 evidence: bool) -> Iterator[str]:
    """The results lines of ``todo`` by :meth:`Pipeline.discover_many`, a batch at a time."""
    for start in range(0, len(todo), batch_size):
        chunk = todo[start:start + batch_size]
        found = pipe.discover_many([c.claim for c in chunk], batch_size=batch_size, top=top, evidence=evidence)
        for claim, result in zip(chunk, found):
            yield result_line(claim, result)

