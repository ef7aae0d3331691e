"""The ray engine of ``discover-batch``: the claims through a Ray Data pipeline, a pool of actors per step.

One actor pool per step of :data:`STEPS` (the stages grouped by the model they call),
``workers`` actors each, every actor single-threaded (one logical CPU,
``torch.set_num_threads(1)``) and holding its own pipeline, built by the picklable factory it
is given. Batches of ``batch_size`` claims flow whole from pool to pool, so while the
evidence ranker reads one batch the relevance model reads the next. A Ray cluster of this
machine alone is started (no dashboard, no usage report sent; Ray's processes listen as Ray
sets them up, with its token authentication) unless this process is already connected to one
or ``address`` names one (``"auto"``: the one ``ray start`` runs here).

:func:`~perspectrum.batch.discover_run.discover_batch` builds the factory's pipeline once in its own
process before calling :func:`ray_lines`, so missing indexes are built and the shipped models
unpacked once, not by every actor at once.
"""

from __future__ import annotations

import logging
import os
import pickle
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from perspectrum.errors import PerspectrumError
from perspectrum.pipeline.pipeline import Pipeline, check_claim
from perspectrum.pipeline.stages import EVIDENCE_STAGES, ClaimState
from perspectrum.batch.discover_files import BatchClaim, result_line
from perspectrum.batch.map_files import units_line

#: The stages grouped by the model each group waits on, in running order; the ray engine
#: gives each group its own actor pool. Retrieval (BM25 and one bi-encoder call, a few ms a
#: claim) rides with the relevance model that reads its candidates, expansion calls the
#: equivalence model as clustering does, and the window verifier is the evidence ranker's.
STEPS: dict[str, tuple[str, ...]] = {
    "relevance": ("retrieve", "relevance"),
    "stance": ("stance",),
    "cluster": ("cluster", "expand"),
    "evidence": ("evidence", "verify"),
}


@dataclass
class _Work:
    """A claim on its way through the ray engine's steps: its state and its seconds per stage so far."""

    claim: BatchClaim
    state: ClaimState
    timings: dict[str, float] = field(default_factory=dict)


def _steps(evidence: bool) -> list[tuple[str, ...]]:
    """The stage groups to run, each a pool (without evidence, the evidence step is left out)."""
    steps = [tuple(n for n in names if evidence or n not in EVIDENCE_STAGES) for names in STEPS.values()]
    return [names for names in steps if names]


class _Actor:
    """An actor of the ray engine: its own pipeline, built by ``factory``, on one thread.

    Ray reports an error raised while an actor starts as the text of its traceback, one raised
    while working on a batch as itself: so a one-line error the factory raises waits for the
    first batch (:meth:`ready`)."""

    def __init__(self, factory: Callable[[], Pipeline]) -> None:
        import torch

        torch.set_num_threads(1)  # one logical CPU per actor: parallelism is the pool's, not torch's
        self.failed: PerspectrumError | None = None
        try:
            self.pipeline = factory()
            self.pipeline.settings  # noqa: B018 - load the models before the first batch comes
        except PerspectrumError as exc:
            self.failed = exc

    def ready(self) -> None:
        """Raise the factory's error, if it failed."""
        if self.failed is not None:
            raise self.failed


class _StepWorker(_Actor):
    """One actor of a step's pool: its own pipeline, one thread, only its step's stages.

    Each row it is sent is one batch of claims, a pickled list of :class:`_Work` (the
    claim states of :mod:`perspectrum.pipeline.stages` are plain dataclasses and numpy arrays), so
    every stage reads the same claims together that ``discover_many`` would batch. The
    last step turns each claim into its results line, so only text comes back to the writer.
    """

    def __init__(self, factory: Callable[[], Pipeline], names: tuple[str, ...],
                 finish: dict[str, Any] | None) -> None:
        super().__init__(factory)
        self.names = names
        self.finish = finish  # discovery's top and evidence, on the last step only

    def __call__(self, rows: Any) -> Any:
        import pyarrow as pa

        self.ready()
        batches: list[list[_Work]] = [pickle.loads(blob) for blob in rows.column("work").to_pylist()]
        for works in batches:
            seconds = self.pipeline.advance([w.state for w in works], self.names)
            for work in works:
                for name, spent in seconds.items():  # each claim's share, as discover_many reports it
                    work.timings[name] = spent / len(works)
        if self.finish is None:
            return pa.table({"work": pa.array([pickle.dumps(works) for works in batches], type=pa.binary())})
        lines = []
        for work in (w for works in batches for w in works):
            timings = {**work.timings, "total": sum(work.timings.values())}
            result = self.pipeline.discovery(work.state, {k: round(v, 4) for k, v in timings.items()}, **self.finish)
            lines.append(result_line(work.claim, result))
        return pa.table({"line": pa.array(lines, type=pa.string())})


def _import_ray() -> Any:
    try:
        import ray
        import ray.data  # noqa: F401 - the engine is Ray Data's
    except ImportError:
        raise PerspectrumError("the ray engine needs Ray Data: pip install 'perspectrum[ray]'") from None
    return ray


def _start_ray(ray: Any, address: str | None, cpus: int) -> None:
    """Join the cluster at ``address``, or start one of this machine alone with ``cpus``
    logical CPUs, no dashboard and no usage report (which Ray would try to send)."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        if address is None:
            ray.init(address="local", num_cpus=cpus, include_dashboard=False, logging_level=logging.WARNING)
        else:
            ray.init(address=address, logging_level=logging.WARNING)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = f"join the Ray cluster at {address}" if address else "start Ray on this machine"
        raise PerspectrumError(f"cannot {where}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None


def _perspectrum_error(exc: BaseException) -> PerspectrumError | None:
    """The :class:`PerspectrumError` behind ``exc``: an actor's one-line error, unwrapped
    from the Ray errors around it (whose text is the actor's whole traceback)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        # Ray's wrapper subclasses the actor's error type too, so ask for the type itself
        if isinstance(current, PerspectrumError) and type(current).__module__.startswith("perspectrum"):
            return current
        cause = getattr(current, "cause", None)  # where RayTaskError keeps the actor's exception
        current = cause if isinstance(cause, BaseException) else (current.__cause__ or current.__context__)
    return None


@contextmanager
def _ray_session(factory: Callable[[], Pipeline], needed: int, what: str, address: str | None) -> Iterator[Any]:
    """Yield ``ray`` once it is up (started here, or joined at ``address``) and known to have
    ``needed`` CPUs (``what`` names them in the error), with Ray Data's own bars and INFO lines
    off; Ray is shut down after if it was started here, and an actor's one-line error is raised
    as itself."""
    ray = _import_ray()
    try:
        ray.cloudpickle.dumps(factory)
    except Exception as exc:  # noqa: BLE001 - whatever pickling raises, the answer is the same
        raise PerspectrumError(f"the ray engine cannot send the pipeline factory to its actors: {exc}") from None
    started_here = not ray.is_initialized()
    if started_here:
        # Ray schedules by logical CPUs: one per actor, and at least one per core
        _start_ray(ray, address, max(os.cpu_count() or 1, needed))
    # while this runs: ours is the progress bar, so Ray Data's bars and INFO lines are off,
    # and an actor's error comes back as itself (not as "UDF failed", its type lost)
    context = ray.data.DataContext.get_current()
    ours = {"enable_progress_bars": False, "print_on_execution_start": False, "raise_original_map_exception": True}
    before = {key: getattr(context, key) for key in ours}
    data_logger = logging.getLogger("ray.data")
    level = data_logger.level
    from ray.util.debug import log_once

    log_once("ray_data_progress_manager_disabled")  # marks Ray Data's "progress bars disabled" notice as said
    try:
        data_logger.setLevel(max(level, logging.WARNING))
        for key, value in ours.items():
            setattr(context, key, value)
        cpus = ray.cluster_resources().get("CPU", 0)
        if cpus < needed:
            raise PerspectrumError(f"the Ray cluster has {cpus:g} CPUs; {what} need {needed} (one each)")
        yield ray
    except Exception as exc:
        found = _perspectrum_error(exc)
        if found is None or found is exc:
            raise
        raise PerspectrumError(str(found).split("\n", 1)[0]) from None  # Ray appends its retry notes
    finally:
        data_logger.setLevel(level)
        for key, value in before.items():
            setattr(context, key, value)
        if started_here:
            ray.shutdown()


@contextmanager
def ray_lines(factory: Callable[[], Pipeline], todo: list[BatchClaim], workers: int, batch_size: int,
              top: int | None, evidence: bool, address: str | None) -> Iterator[Iterator[str]]:
    """Yield the results lines of ``todo`` as the ray engine's last step sends them, once
    Ray is up and known to have a CPU for every actor (:func:`_ray_session`)."""
    steps = _steps(evidence)
    with _ray_session(factory, len(steps) * workers, f"{len(steps)} steps × {workers} workers", address) as ray:
        # one row per batch of claims, one block per row: every step reads a batch whole,
        # and a finished batch's lines are written while the next ones are under way
        rows = [{"work": pickle.dumps([_Work(c, ClaimState(check_claim(c.claim)))
                                       for c in todo[start:start + batch_size]])}
                for start in range(0, len(todo), batch_size)]
        data = ray.data.from_items(rows, override_num_blocks=len(rows))
        for n, names in enumerate(steps):
            finish = {"top": top, "evidence": evidence} if n == len(steps) - 1 else None
            data = data.map_batches(_StepWorker, fn_constructor_kwargs={"factory": factory, "names": names,
                                                                        "finish": finish},
                                    batch_size=1, batch_format="pyarrow", num_cpus=1,
                                    compute=ray.data.ActorPoolStrategy(size=workers))
        yield (line for table in data.iter_batches(batch_size=None, batch_format="pyarrow")
               for line in table.column("line").to_pylist())


class _MineWorker(_Actor):
    """One actor of ``map``'s mining pool: its own pipeline, one thread. Each row it is sent
    is a batch of (id, text) documents (JSON); it answers each document's units file line
    (:func:`perspectrum.batch.map_files.units_line`)."""

    def __init__(self, factory: Callable[[], Pipeline], claim: str) -> None:
        super().__init__(factory)
        self.claim = claim

    def __call__(self, rows: Any) -> Any:
        import json

        import pyarrow as pa

        self.ready()
        documents = [(doc_id, text) for blob in rows.column("documents").to_pylist() for doc_id, text in json.loads(blob)]
        found = self.pipeline.mine_pile([text for _, text in documents], self.claim) if documents else []
        lines = [units_line(doc_id, text, units) for (doc_id, text), units in zip(documents, found)]
        return pa.table({"line": pa.array(lines, type=pa.string())})


@contextmanager
def ray_mined(factory: Callable[[], Pipeline], claim: str, todo: list[tuple[str, str]], workers: int,
              batch_size: int, address: str | None) -> Iterator[Iterator[str]]:
    """Yield the units file lines of ``todo`` ((id, text) documents) as a pool of ``workers``
    single-threaded actors mines them for ``claim``, ``batch_size`` documents to a row."""
    import json

    with _ray_session(factory, workers, f"{workers} workers", address) as ray:
        rows = [{"documents": json.dumps(todo[start:start + batch_size])} for start in range(0, len(todo), batch_size)]
        data = ray.data.from_items(rows, override_num_blocks=len(rows)).map_batches(
            _MineWorker, fn_constructor_kwargs={"factory": factory, "claim": claim}, batch_size=1,
            batch_format="pyarrow", num_cpus=1, compute=ray.data.ActorPoolStrategy(size=workers))
        yield (line for table in data.iter_batches(batch_size=None, batch_format="pyarrow")
               for line in table.column("line").to_pylist())
