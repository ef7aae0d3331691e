"""What every stage shares: the per-claim record it reads and writes, the context it
reads models and indexes from, and how its settings are checked.

A stage is a frozen dataclass whose fields are its settings, with a ``name`` and one
method, ``run(states, context)``, that advances every claim of a batch by one step (so
each model is called once per stage per batch). Stages talk only through the named
fields of :class:`ClaimState`, never through positions in tuples.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Protocol, TypeVar

import numpy as np

from perspectrum.errors import PerspectrumError
from perspectrum.pipeline.results import EvidenceHit
from perspectrum.models.scorers import Scorers
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
    """A cluster: indices into :attr:`ClaimState.kept`, representative first."""

    members: list[int]
    support: float = 0.5
    evidence: list[EvidenceHit] = field(default_factory=list)


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


def configure(stage: type[S], settings: Mapping[str, Any]) -> S:
    """``stage`` built from ``settings``; an unknown key or a value of the wrong type is a
    one-line :class:`PerspectrumError` naming the stage and the key (not a silent no-op)."""
    known = {f.name: f for f in fields(stage)}  # type: ignore[arg-type]
    name = getattr(stage, "name", stage.__name__)
    unknown = sorted(set(settings) - set(known))
    if unknown:
        raise PerspectrumError(f"unknown setting(s) for the {name} stage: {', '.join(unknown)} "
                               f"(known: {', '.join(known)})")
    values = {}
    for key, value in settings.items():
        kind = known[key].type
        wanted = {"int": int, "float": (int, float), "bool": bool}.get(kind if isinstance(kind, str) else "")
        if wanted is not None and (not isinstance(value, wanted) or (isinstance(value, bool) and kind != "bool")
                                   or (kind == "float" and not math.isfinite(value))):  # NaN passes every cut
            raise PerspectrumError(f"the {name} stage's setting {key} must be {kind}, not {value!r}")
        values[key] = float(value) if kind == "float" else value
    return stage(**values)  # type: ignore[call-arg]
