"""The engines a long run can use, and the one check of how it is asked to use them.

- ``local``: this process, with the pipeline it is given.
- ``ray``: a pool of single-threaded actors, each building its own pipeline from a picklable
  factory (:mod:`perspectrum.batch.ray_engine`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Union

from perspectrum._checks import whole
from perspectrum.errors import PerspectrumError
from perspectrum.pipeline.pipeline import Pipeline

#: A pipeline, or a function that builds one (what the ray engine needs: it must pickle).
PipelineSource = Union[Pipeline, Callable[[], Pipeline]]
ENGINES = ("local", "ray")


def check_engine(pipeline: PipelineSource, engine: str, workers: int, batch_size: int,
                 address: str | None) -> tuple[int, int]:
    """``workers`` and ``batch_size`` checked whole, or a one-line error for an unknown
    ``engine``, workers or an address for the local engine, or a built :class:`Pipeline` for
    the ray engine (whose actors each build their own)."""
    if engine not in ENGINES:
        raise PerspectrumError(f"unknown engine {engine!r} (engines: {', '.join(ENGINES)})")
    workers, batch_size = whole("workers", workers), whole("batch_size", batch_size)
    if engine == "local" and (workers != 1 or address is not None):
        raise PerspectrumError("workers and address are for the ray engine; the local engine runs in this process")
    if engine == "ray" and isinstance(pipeline, Pipeline):
        raise PerspectrumError("the ray engine builds a pipeline in every actor: give it a function that builds "
                               "one, such as functools.partial(Pipeline.load, data_dir), not a Pipeline")
    return workers, batch_size
