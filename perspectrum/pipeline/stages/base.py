"""What every stage shares: the per-claim record it reads and writes, the context it
reads models and indexes from, and how its settings are checked.

A stage is a frozen dataclass whose fields are its settings (its class in
:mod:`perspectrum.models.settings`, which gives their types and defaults), with a
``name`` and one method, ``run(states, context)``, that advances every claim of a batch
by one step (so each model is called once per stage per batch). Stages talk only
through the named fields of :class:`ClaimState`, never through positions in tuples.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar, Protocol, TypeVar

import numpy as np

from perspectrum.errors import PerspectrumError
from perspectrum.pipeline.results import EvidenceHit
from perspectrum.models.scorers import Scorers
from perspectrum.models.settings import check_settings
from perspectrum.index.search import DocId, HybridSearcher


@dataclass
class Candidate:
    """A retrieved perspective: dense cosine to the claim, relevance model score, their blend."""

    id: DocId
    cosine: float
    model: float = 0.0
    score: float = 0.0


@dataclass
class Member:
    """A kept perspective: its relevance and, once the stance stage has read it, its P(support).

    ``side`` is +1 or −1 when the stance model is confident (P(support) at least
    ``margin`` from the threshold), else 0; clustering never joins +1 with −1.
    ``added`` marks a paraphrase the expand stage brought in from the pool.
    """

    id: DocId
    relevance: float
    support: float | None = None
    side: int = 0
    added: bool = False


@dataclass
class Group:
    """A cluster: indices into :attr:`ClaimState.kept`, representative first.

    ``rivals``: for each paragraph kept as its evidence, how far the best-scoring cluster
    leaning the other way rated it above this one (negative: below; absent: none rated it),
    for ``--explain``.
    """

    members: list[int]
    support: float = 0.5
    evidence: list[EvidenceHit] = field(default_factory=list)
    rivals: dict[DocId, float] = field(default_factory=dict)


@dataclass
class ClaimState:
    """One claim's state as it passes through the stages."""

    claim: str
    vector: np.ndarray | None = None
    candidates: list[Candidate] = field(default_factory=list)
    kept: list[Member] = field(default_factory=list)
    groups: list[Group] = field(default_factory=list)
    pairs: list[dict[str, Any]] = field(default_factory=list)  # equivalence trace, for --explain
    notice: str | None = None


@dataclass(frozen=True)
class Context:
    """What stages read: the models, the perspective pool's indexes and both pools' texts."""

    scorers: Scorers
    hybrid: HybridSearcher
    dense: Any  # perspective pool's DenseIndex: vectors, search_vectors, the encoder
    perspective_text: Mapping[DocId, str]
    evidence_text: Mapping[DocId, str]


class Stage(Protocol):
    """One step of the pipeline (see the module docstring)."""

    name: ClassVar[str]

    def run(self, states: list[ClaimState], context: Context) -> None: ...


S = TypeVar("S")


def configure(stage: type[S], settings: Mapping[str, Any], where: str = "pipeline settings") -> S:
    """``stage`` built from ``settings``: an unknown key or a value of the wrong type
    (:func:`~perspectrum.models.settings.check_settings`), or a setting without a default
    left out, is a one-line :class:`PerspectrumError` naming ``where``, the stage and the key."""
    name = stage.name  # type: ignore[attr-defined]
    check_settings({name: settings}, where)
    kinds = {f.name: f.type for f in fields(stage)}  # type: ignore[arg-type]
    missing = [f.name for f in fields(stage) if f.name not in settings  # type: ignore[arg-type]
               and f.default is MISSING and f.default_factory is MISSING]
    if missing:
        raise PerspectrumError(f"{where}: no setting {', '.join(f'{name}.{key}' for key in missing)} "
                               f"(the {name} stage has no default for it)")
    cast = {"float": float, "int": int}
    return stage(**{key: cast[kinds[key]](value) if kinds[key] in cast else value  # type: ignore[call-arg]
                    for key, value in settings.items()})
