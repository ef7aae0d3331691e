"""Many claims from a JSONL file to a JSONL file of results: resumable, in this process or on Ray.

    perspectrum discover-batch claims.jsonl --out results.jsonl [--engine ray --workers 2]

**Claims**: one JSON object per line, ``{"claim": "...", "id": ...}``. ``id`` (a non-empty
string or an integer) defaults to the line's number; blank lines are skipped and other
keys ignored. The whole file is checked before any work starts, as
:meth:`~perspectrum.pipeline.pipeline.Pipeline.discover_many` checks its claims: a line that is not
such an object, a claim ``discover`` would refuse, or an id used twice is a one-line
error naming the line, and nothing is computed.

**Results**: one line per claim, ``{"id", "claim", "result"}``, in the order claims finish.
``claim`` is the text as given; ``result`` is what ``perspectrum discover --json`` prints
for it (:meth:`~perspectrum.pipeline.results.Discovery.to_dict`, written on one line by
:func:`~perspectrum.pipeline.results.safe_json`). Both engines batch the claims left to do as
``discover_many(claims, batch_size)`` does, so each result is its answer, ``timings``
aside (the claim's share of its batch's seconds). With fine-tuned cross-encoders a
padded batch moves scores in the fourth decimal, so a run that resumed (other claims
left, so other batches) or used another batch size can differ from an uninterrupted
one in that digit; so can single-threaded actors from a multi-threaded process.

**Resuming**: each line is appended whole and flushed to disk (``fsync``) before the next,
so a crash, a Ctrl-C or a dead worker loses at most the line being written, and leaves
it without its newline. A run first reads the results file it is given: a last line
without a newline is cut off (the file is truncated to its last complete line); every
complete line must be a result for this claims file (a known id, the same claim); the
claims found there are skipped. However often a run is interrupted and restarted, every
claim ends with exactly one line. A lock file beside the results (``.<name>.lock``) keeps
two runs from appending to one file at once.

**Engines**:

- ``local``: :meth:`Pipeline.discover_many` in this process, ``batch_size`` claims at a time.
- ``ray``: a Ray Data pipeline with one actor pool per step of :data:`STEPS` (the stages
  grouped by the model they call), ``workers`` actors each, every actor single-threaded
  (one logical CPU, ``torch.set_num_threads(1)``) and holding its own pipeline, built by
  the picklable factory it is given. Batches of ``batch_size`` claims flow whole from pool
  to pool, so while the evidence ranker reads one batch the relevance model reads the next.
  The factory's pipeline is built once in this process first, so missing indexes are
  built and light heads trained once, not by every actor at once, and a missing file is
  an error before any worker starts. A Ray cluster of this machine alone is started (no
  dashboard, no usage report sent; Ray's processes listen as Ray sets them up, with its
  token authentication) unless this process is already connected to one or ``address``
  names one (``"auto"``: the one ``ray start`` runs here).
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Union

from perspectrum._checks import whole
from perspectrum._io import cannot_write
from perspectrum._progress import progress, say
from perspectrum.data import jsonl_rows
from perspectrum.errors import PerspectrumError
from perspectrum.pipeline.pipeline import ClaimError, Pipeline, check_claim
from perspectrum.pipeline.results import Discovery, safe_json
from perspectrum.pipeline.stages import EVIDENCE_STAGES, ClaimState
from perspectrum.text.sentences import encodable

__all__ = ["ENGINES", "STEPS", "BatchClaim", "BatchSummary", "discover_batch", "read_claims", "read_results"]

ClaimId = Union[int, str]
#: A pipeline, or a function that builds one (what the ray engine needs: it must pickle).
PipelineSource = Union[Pipeline, Callable[[], Pipeline]]
ENGINES = ("local", "ray")
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
_LAYOUT = '{"claim", "id"}'


@dataclass(frozen=True)
class BatchClaim:
    """One claim of a batch: its id and its text as given."""

    id: ClaimId
    claim: str


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


def _checked(rows: Iterable[tuple[str, int, Any, Any]]) -> list[BatchClaim]:
    """``(where, line, id, claim)`` rows as claims, or a one-line error starting with ``where``."""
    out: list[BatchClaim] = []
    first: dict[ClaimId, int] = {}
    for where, line, claim_id, claim in rows:
        if isinstance(claim_id, bool) or not isinstance(claim_id, (int, str)) or claim_id == "":
            raise PerspectrumError(f"{where}: id must be a non-empty string or an integer, not {claim_id!r}")
        if not encodable(str(claim_id)):
            raise PerspectrumError(f"{where}: the id holds a lone surrogate escape (such as \\udcff), "
                                   "which is not a character")
        try:
            check_claim(claim)
        except ClaimError as exc:
            raise ClaimError(f"{where}: {exc}") from None
        if claim_id in first:
            raise PerspectrumError(f"{where}: duplicate id {claim_id!r} (first on line {first[claim_id]})")
        first[claim_id] = line
        out.append(BatchClaim(claim_id, claim))
    return out


def read_claims(path: str | Path) -> list[BatchClaim]:
    """The claims of a claims file (layout in the module docstring), every line checked.

    Each problem is a one-line :class:`PerspectrumError` naming the file and line (for a
    claim ``discover`` refuses, a :class:`~perspectrum.pipeline.pipeline.ClaimError`), as are a
    missing, empty or unreadable file (:func:`perspectrum.data.jsonl_rows`).
    """
    path = Path(path).expanduser()

    def rows() -> Iterator[tuple[str, int, Any, Any]]:
        for line, row in jsonl_rows(path, "claims file", _LAYOUT):
            where = f"{path}, line {line}"
            if not isinstance(row, dict) or "claim" not in row:
                raise PerspectrumError(f'{where}: expected an object with "claim" (and an optional "id")')
            yield where, line, row.get("id", line), row["claim"]

    claims = _checked(rows())
    if not claims:
        raise PerspectrumError(f"{path} holds no claims (JSONL: one {_LAYOUT} per line)")
    return claims


def _claims_of(claims: str | os.PathLike[str] | Mapping[ClaimId, str]) -> list[BatchClaim]:
    """The claims :func:`discover_batch` was given: a claims file, or ``{id: claim}``."""
    if isinstance(claims, (str, os.PathLike)):
        return read_claims(claims)
    if not isinstance(claims, Mapping):
        raise PerspectrumError(f"claims must be a claims file or a mapping of id to claim, "
                               f"not {type(claims).__name__}")
    out = _checked((f"claim {claim_id!r}", 0, claim_id, claim) for claim_id, claim in claims.items())
    if not out:
        raise PerspectrumError("no claims to discover")
    return out


def read_results(out: str | Path, claims: Sequence[BatchClaim]) -> set[ClaimId]:
    """The ids of the claims already in results file ``out`` (none when it does not exist),
    after cutting off a torn last line; see *Resuming* in the module docstring.

    A complete line that is not a result of ``claims`` (not JSON, an unknown id, another
    claim under a known id, an id twice) is a one-line error: appending to another
    command's output, or to the results of another claims file, would mix the two.
    """
    out = Path(out).expanduser()
    if not out.exists():
        return set()
    text = {c.id: c.claim for c in claims}
    first: dict[ClaimId, int] = {}
    kept = 0  # bytes of complete lines
    try:
        with open(out, "rb") as handle:
            for line, raw in enumerate(handle, 1):
                if not raw.endswith(b"\n"):
                    break  # the torn tail of an interrupted run: cut off below
                kept += len(raw)
                where = f"{out}, line {line}"
                try:
                    row = json.loads(raw)
                except (ValueError, RecursionError):
                    row = None
                if not isinstance(row, dict) or not {"id", "claim", "result"} <= row.keys():
                    raise PerspectrumError(f"{where} is not a discover-batch result; is {out.name} the results "
                                           "file of another command?")
                claim_id = row["id"]
                if isinstance(claim_id, bool) or not isinstance(claim_id, (int, str)) or claim_id not in text:
                    raise PerspectrumError(f"{where}: id {claim_id!r} is not among the claims; are these the "
                                           "results of another claims file?")
                if row["claim"] != text[claim_id]:
                    raise PerspectrumError(f"{where}: id {claim_id!r} was another claim; are these the results "
                                           "of another claims file?")
                if claim_id in first:
                    raise PerspectrumError(f"{where}: id {claim_id!r} is also on line {first[claim_id]}")
                first[claim_id] = line
    except IsADirectoryError:
        raise PerspectrumError(f"{out} is a folder, not a results file") from None
    except OSError as exc:
        raise PerspectrumError(f"cannot read {out}: {exc.strerror or exc}") from None
    try:
        if kept < out.stat().st_size:
            os.truncate(out, kept)
            say(f"{out}: cut off a partial last line that an interrupted run left")
    except OSError as exc:
        raise cannot_write(out, exc) from None
    return set(first)


def result_line(claim: BatchClaim, result: Discovery) -> str:
    """The results file's line for ``claim`` (without its newline)."""
    return safe_json({"id": claim.id, "claim": claim.claim, "result": result.to_dict()}, indent=None)


@contextmanager
def _sole_writer(out: Path) -> Iterator[None]:
    """Hold ``out``'s writers' lock, or fail at once: two runs appending would duplicate lines."""
    from filelock import FileLock, Timeout

    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(out.parent / f".{out.name}.lock")
        lock.acquire(timeout=0)
    except Timeout:
        raise PerspectrumError(f"another run is writing {out}; wait for it to end or choose another --out") from None
    except OSError as exc:
        raise cannot_write(out, exc) from None
    try:
        yield
    finally:
        lock.release()


@contextmanager
def _appending(out: Path) -> Iterator[Callable[[str], None]]:
    """Yield ``write(line)``, which appends ``line`` and its newline to ``out`` and returns
    once they are on disk (flush, then ``fsync``; the folder too when the file is new)."""
    try:
        new = not out.exists()
        handle = open(out, "ab")
        if new:
            folder = os.open(out.parent, os.O_RDONLY)
            try:
                os.fsync(folder)
            finally:
                os.close(folder)
    except OSError as exc:
        raise cannot_write(out, exc) from None

    def write(line: str) -> None:
        try:
            handle.write(line.encode("utf-8") + b"\n")
            handle.flush()
            os.fsync(handle.fileno())
        except OSError as exc:
            raise cannot_write(out, exc) from None

    try:
        yield write
    finally:
        handle.close()


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
        out: the results file, created or resumed (see the module docstring).
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
    if engine not in ENGINES:
        raise PerspectrumError(f"unknown engine {engine!r} (engines: {', '.join(ENGINES)})")
    workers, batch_size = whole("workers", workers), whole("batch_size", batch_size)
    top = None if top is None else whole("top", top)
    if engine == "local" and (workers != 1 or address is not None):
        raise PerspectrumError("workers and address are for the ray engine; the local engine runs in this process")
    if engine == "ray" and isinstance(pipeline, Pipeline):
        raise PerspectrumError("the ray engine builds a pipeline in every actor: give it a function that builds "
                               "one, such as functools.partial(Pipeline.load, data_dir), not a Pipeline")
    batch = _claims_of(claims)
    out = Path(out).expanduser()
    with _sole_writer(out):
        done = read_results(out, batch)
        todo = [c for c in batch if c.id not in done]
        if todo:
            pipe = pipeline if isinstance(pipeline, Pipeline) else pipeline()
            pipe.settings  # noqa: B018 - open (or build) the indexes and load (or train) the models now, once
            if engine == "local":
                lines: Any = nullcontext(_local_lines(pipe, todo, batch_size, top, evidence))
            else:
                del pipe  # the actors build their own
                lines = _ray_lines(pipeline, todo, workers, batch_size, top, evidence, address)  # type: ignore[arg-type]
            with (lines as results, _appending(out) as write,
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


# --------------------------------------------------------------------------- ray
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


class _StepWorker:
    """One actor of a step's pool: its own pipeline, one thread, only its step's stages.

    Each row it is sent is one batch of claims, a pickled list of :class:`_Work` (the
    claim states of :mod:`perspectrum.pipeline.stages` are plain dataclasses and numpy arrays), so
    every stage reads the same claims together that ``discover_many`` would batch. The
    last step turns each claim into its results line, so only text comes back to the writer.
    """

    def __init__(self, factory: Callable[[], Pipeline], names: tuple[str, ...],
                 finish: dict[str, Any] | None) -> None:
        import torch

        torch.set_num_threads(1)  # one logical CPU per actor: parallelism is the pool's, not torch's
        self.names = names
        self.finish = finish  # discovery's top and evidence, on the last step only
        # Ray reports an error raised here as the text of its traceback, one raised while
        # working on a batch as itself: so a one-line error waits for the first batch
        self.failed: PerspectrumError | None = None
        try:
            self.pipeline = factory()
            self.pipeline.settings  # noqa: B018 - load the models before the first batch comes
        except PerspectrumError as exc:
            self.failed = exc

    def __call__(self, rows: Any) -> Any:
        import pyarrow as pa

        if self.failed is not None:
            raise self.failed
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
def _ray_lines(factory: Callable[[], Pipeline], todo: list[BatchClaim], workers: int, batch_size: int,
               top: int | None, evidence: bool, address: str | None) -> Iterator[Iterator[str]]:
    """Yield the results lines of ``todo`` as the ray engine's last step sends them, once
    Ray is up and known to have a CPU for every actor; Ray is shut down after if it was
    started here, and an actor's one-line error is raised as itself."""
    ray = _import_ray()
    try:
        ray.cloudpickle.dumps(factory)
    except Exception as exc:  # noqa: BLE001 - whatever pickling raises, the answer is the same
        raise PerspectrumError(f"the ray engine cannot send the pipeline factory to its actors: {exc}") from None
    steps = _steps(evidence)
    needed = len(steps) * workers
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
            raise PerspectrumError(f"the Ray cluster has {cpus:g} CPUs; {len(steps)} steps × {workers} workers "
                                   f"need {needed} (one each)")
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
