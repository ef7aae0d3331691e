"""What every stage shares: the per-claim record it reads and writes, the context it
reads models and indexes from, and how a stage declares its settings (they are checked
and merged in :mod:`perspectrum.pipeline.settings`).

A stage is a frozen dataclass whose fields are its settings, declared once, in the
stage's own module, with their types, defaults and who chooses them (:func:`setting`),
with a ``name`` and one method, ``run(states, context)``, that advances every claim of a
batch by one step (so each model is called once per stage per batch). Stages talk only
through the named fields of :class:`ClaimState`, never through positions in tuples.

Who chooses a setting's value, as its field says:

- :data:`MODEL`: the dev tuning of the model that answers the stage (``perspectrum
  train``), stored beside the model under its name (:attr:`Stage.model`; the cluster
  stage's is ``equivalence``): ``thresholds`` in ``models/<model>/perspectrum.json`` (the
  evidence ranker's ``ranker_thresholds``). These have no default: a file without one is
  damaged. (The tuning grids' other keys, ``centre``, ``method`` and ``aggregate``, are
  evaluation's, not the pipeline's.)
- :data:`PIPELINE`: ``perspectrum tune``, end to end on dev, stored by stage name in
  ``pipeline.json`` beside the models; until it has run, the default.
- ``follows``: another stage's setting unless overridden (expansion admits paraphrases
  by the cluster stage's blend and cut, and sides by the stance stage's threshold).
- the rest: :class:`~perspectrum.PipelineConfig` (candidates, evidence depth, verify
  top), or its overrides.

Every setting is a finite number (``float``), a whole number of at least 0 (``int``) or
a switch (``bool``); the files that hold them are JSON a person may edit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field
from typing import Any, ClassVar, Protocol

import numpy as np

from perspectrum.pipeline.results import EvidenceHit
from perspectrum.models.scorers import Scorers
from perspectrum.index.search import DocId, HybridSearcher

#: Chosen by the dev tuning of the stage's model, stored with the model.
MODEL = "model"
#: Chosen by ``perspectrum tune`` for the pipeline as a whole, stored in ``pipeline.json``.
PIPELINE = "pipeline"


def setting(default: Any = MISSING, *, chosen: str | tuple[str, ...] = (),
            follows: tuple[str, str] | None = None) -> Any:
    """A stage setting: its default (none: it must be given), who chooses it on dev
    (:data:`MODEL`, :data:`PIPELINE`), and the (stage, setting) it copies unless given."""
    return field(default=default, metadata={"chosen": (chosen,) if isinstance(chosen, str) else tuple(chosen),
                                            "follows": follows})


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

    ``leaning`` is +1 or −1 when the stance model is confident (P(support) at least
    ``margin`` from the threshold), else 0; clustering never joins +1 with −1. (A *side*
    is what a card shows: ``"support"``, ``"undermine"`` or ``"unclear"``.)
    ``added`` marks a paraphrase the expand stage brought in from the pool.
    """

    id: DocId
    relevance: float
    support: float | None = None
    leaning: int = 0
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


class SideReading(Protocol):
    """What later stages read of the stance stage (:class:`~perspectrum.pipeline.stages.Stance`):
    which side a P(support) leans to and how sure a card shows it, never its threshold."""

    #: calibrated P(support) within this of 0.5 is shown as "side unclear"
    unclear: float

    def leans(self, support: float) -> bool:
        """Whether ``support`` is on the supporting side."""
        ...

    def confidence(self, support: float) -> float:
        """``support`` calibrated as cards show it (0.5 exactly at the threshold)."""
        ...


@dataclass(frozen=True)
class Context:
    """What stages read: the models, the perspective pool's indexes, both pools' texts, and
    the stance stage's reading of a P(support) (for the stages after it)."""

    scorers: Scorers
    hybrid: HybridSearcher
    dense: Any  # perspective pool's DenseIndex: vectors, search_vectors, the encoder
    perspective_text: Mapping[DocId, str]
    evidence_text: Mapping[DocId, str]
    stance: SideReading | None = None


class Stage:
    """One step of the pipeline (see the module docstring): a frozen dataclass of its
    settings with ``run`` added."""

    #: The stage's name: the key of its settings, overrides and timings.
    name: ClassVar[str]
    #: The model whose dev tuning chooses its :data:`MODEL` settings, if any.
    model: ClassVar[str | None] = None

    def run(self, states: list[ClaimState], context: Context) -> None:
        raise NotImplementedError


@dataclass(frozen=True, kw_only=True)
class Cut:
    """The four settings :func:`perspectrum.models.rules.keep` cuts a ranking by, each chosen
    by the dev tuning of the stage's model."""

    relative: bool = setting(chosen=MODEL)
    threshold: float = setting(chosen=MODEL)
    k: int = setting(chosen=MODEL)
    min_keep: int = setting(chosen=MODEL)

    @property
    def cut(self) -> dict[str, Any]:
        """The cut as :func:`~perspectrum.models.rules.keep` takes it (also what evaluation applies)."""
        return {"relative": self.relative, "threshold": self.threshold, "k": self.k, "min_keep": self.min_keep}
