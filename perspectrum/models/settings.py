"""Every setting of the discovery pipeline's stages, with its type and default, once.

Each stage of :mod:`perspectrum.pipeline.stages` is one of these frozen dataclasses with
a ``run`` method added: its fields are the stage's settings, and nothing else names them
or gives their defaults. Values chosen on dev are stored and read back by stage (or
model) name and field name, and checked once, when they are read, by
:func:`check_settings`, the one check of a ``{stage: {setting: value}}`` mapping, wherever
it comes from (a stored file, a :class:`~perspectrum.PipelineConfig`'s overrides, the
settings a stage is built with).

Who chooses a value, as its field says (:func:`setting`):

- :data:`MODEL`: the dev tuning of the model that answers the stage (``perspectrum
  train``), stored beside the model under its name (:attr:`model`;
  the cluster stage's is ``equivalence``): ``thresholds`` in
  ``models/<model>/perspectrum.json`` (the evidence ranker's ``ranker_thresholds``). These have no default: a file without
  one is damaged. (The tuning grids' other keys, ``centre``, ``method`` and
  ``aggregate``, are evaluation's, not the pipeline's.)
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

import math
import reprlib
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar

from perspectrum._checks import is_whole
from perspectrum.errors import PerspectrumError
from perspectrum.models.evidence_ranker import DEPTH

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


class StageSettings:
    """What every stage's settings say about themselves."""

    #: The stage's name: the key of its settings, overrides and timings.
    name: ClassVar[str]
    #: The model whose dev tuning chooses its :data:`MODEL` settings, if any.
    model: ClassVar[str | None] = None


class Cut:
    """The four settings :func:`perspectrum.models.rules.keep` cuts a ranking by."""

    relative: bool
    threshold: float
    k: int
    min_keep: int

    @property
    def cut(self) -> dict[str, Any]:
        """The cut as :func:`~perspectrum.models.rules.keep` takes it (also what evaluation applies)."""
        return {"relative": self.relative, "threshold": self.threshold, "k": self.k, "min_keep": self.min_keep}


@dataclass(frozen=True, kw_only=True)
class RetrieveSettings(StageSettings):
    """The retrieve stage's settings (:class:`perspectrum.pipeline.stages.Retrieve`).

    Attributes:
        candidates: perspectives retrieved per claim and read by the relevance model.
        latin_only: a claim mostly in another script gets no candidates and a notice
            (:func:`~perspectrum.models.rules.latin_script`); turn off for models that read it.
    """

    name: ClassVar[str] = "retrieve"
    candidates: int = 50
    latin_only: bool = True


@dataclass(frozen=True, kw_only=True)
class RelevanceSettings(StageSettings, Cut):
    """The relevance stage's settings (:class:`perspectrum.pipeline.stages.Relevance`).

    Attributes:
        weight: of the relevance model against the dense cosine.
        relative, threshold, k, min_keep: the dev-tuned cut (see :func:`~perspectrum.models.rules.keep`).
        floor: absolute blended score below which nothing is kept, chosen on dev
            against off-topic claims: a claim whose best candidate is under it gets an
            empty answer and a notice instead of confident nonsense (0: no floor).
    """

    name: ClassVar[str] = "relevance"
    model: ClassVar[str | None] = "relevance"
    weight: float = setting(chosen=MODEL)
    relative: bool = setting(chosen=MODEL)
    threshold: float = setting(chosen=MODEL)
    k: int = setting(chosen=MODEL)
    min_keep: int = setting(chosen=MODEL)
    floor: float = setting(0.0, chosen=PIPELINE)


@dataclass(frozen=True, kw_only=True)
class StanceSettings(StageSettings):
    """The stance stage's settings (:class:`perspectrum.pipeline.stages.Stance`).

    Attributes:
        threshold: P(support) at or above it reads as support (tuned on dev).
        margin: a member is confident (side ±1) when its P(support) is at least this
            far from ``threshold``; 0 makes every member confident, so clusters split
            strictly by side. Chosen on dev.
        scale: temperature scaling of the shown confidence, fitted on dev's gold pairs:
            calibrated P(support) = σ(scale · (logit P(support) − logit threshold)), so it
            is 0.5 exactly at the threshold and the side never changes (1: unfitted).
        unclear: a perspective whose calibrated P(support) is within this of 0.5 is shown
            as "side unclear" rather than forced onto a side (0: never). Chosen on dev.
        other_side: when no kept perspective is shown on one of the two sides, read the
            stance of this many next-most-relevant candidates (under the relevance cut,
            above its floor) and keep the most relevant one shown on the missing side
            (0: never). Chosen on dev.
        floor: the relevance a candidate read by ``other_side`` must reach (the relevance
            stage's floor unless given).
    """

    name: ClassVar[str] = "stance"
    model: ClassVar[str | None] = "stance"
    threshold: float = setting(chosen=MODEL)
    margin: float = setting(0.0, chosen=PIPELINE)
    scale: float = setting(1.0, chosen=PIPELINE)
    unclear: float = setting(0.0, chosen=PIPELINE)
    other_side: int = setting(0, chosen=PIPELINE)
    floor: float = setting(0.0, follows=("relevance", "floor"))


@dataclass(frozen=True, kw_only=True)
class ClusterSettings(StageSettings):
    """The cluster stage's settings (:class:`perspectrum.pipeline.stages.ClusterStage`).

    Attributes:
        weight: of the equivalence model against the pair's cosine.
        threshold: blended similarity at or above which two perspectives are one
            (clusters are cut at distance 1 − threshold): the equivalence model's own,
            tuned on gold perspectives, unless ``perspectrum tune`` found a stricter one
            better for retrieved perspectives.
    """

    name: ClassVar[str] = "cluster"
    model: ClassVar[str | None] = "equivalence"
    weight: float = setting(chosen=MODEL)
    threshold: float = setting(chosen=(MODEL, PIPELINE))


@dataclass(frozen=True, kw_only=True)
class ExpandSettings(StageSettings):
    """The expand stage's settings (:class:`perspectrum.pipeline.stages.Expand`).

    Attributes:
        weight, threshold: the blend and cut a paraphrase must pass (the cluster
            stage's unless given, so an added member is as similar as a clustered one).
        neighbours: pool neighbours of each cluster's centroid read by the model (0: off).
        agree: read each admitted paraphrase's stance and keep it only when it falls on
            its cluster's side of ``stance_threshold`` (the stance stage's unless given).
        vote: read each admitted paraphrase's stance, admit it whatever its side, and decide
            each cluster's P(support) from all its members and paraphrases, each weighted by
            its relevance to the claim (a paraphrase by its similarity to the cluster), so one
            mislabelled member is outvoted by the rest (``agree`` is then not applied).
        budget: at most this many (cluster, neighbour) pairs read by the equivalence model per
            claim, the closest to their cluster's representative first (0: no limit). It bounds
            the work a claim with many clusters causes (issue 35's latency benchmark).
    """

    name: ClassVar[str] = "expand"
    weight: float = setting(follows=("cluster", "weight"))
    threshold: float = setting(follows=("cluster", "threshold"))
    neighbours: int = setting(0, chosen=PIPELINE)
    agree: bool = setting(False, chosen=PIPELINE)
    vote: bool = setting(False, chosen=PIPELINE)
    budget: int = setting(0)
    stance_threshold: float = setting(follows=("stance", "threshold"))


@dataclass(frozen=True, kw_only=True)
class EvidenceSettings(StageSettings, Cut):
    """The evidence stage's settings (:class:`perspectrum.pipeline.stages.EvidenceStage`).

    Attributes:
        relative, threshold, k, min_keep: the dev-tuned cut on P(evidence).
        depth: hybrid candidates retrieved per cluster (by default the depth the ranker
            was trained at, :data:`~perspectrum.models.evidence_ranker.DEPTH`).
        rival: a kept paragraph is dropped from a cluster when a cluster of the claim that
            leans the other way (by ``stance_threshold``, the stance stage's unless given)
            scored it more than this above it: it argues the other side (1: never). Chosen on dev.
        floor: a paragraph the ranker gives a probability below this is not shown, even as
            the one ``min_keep`` keeps; a card left with none says no evidence was found
            (0: all shown). Chosen on dev.
    """

    name: ClassVar[str] = "evidence"
    model: ClassVar[str | None] = "evidence"
    relative: bool = setting(chosen=MODEL)
    threshold: float = setting(chosen=MODEL)
    k: int = setting(chosen=MODEL)
    min_keep: int = setting(chosen=MODEL)
    depth: int = DEPTH
    rival: float = setting(1.0, chosen=PIPELINE)
    floor: float = setting(0.0, chosen=PIPELINE)
    stance_threshold: float = setting(0.5, follows=("stance", "threshold"))


@dataclass(frozen=True, kw_only=True)
class VerifySettings(StageSettings):
    """The verify stage's settings (:class:`perspectrum.pipeline.stages.Verify`).

    Attributes:
        top: kept paragraphs per cluster whose windows are read (0: none).
        against: a verified paragraph whose window the stance model reads on the other side
            of its cluster, at least this sure (calibrated, as cards show it), argues that
            side and is dropped (1: never). Chosen on dev. Reads the stance thresholds and
            calibration (``stance_threshold``, ``stance_scale``, ``stance_unclear``) from the
            stance stage unless given.
    """

    name: ClassVar[str] = "verify"
    top: int = 1
    against: float = setting(1.0, chosen=PIPELINE)
    stance_threshold: float = setting(0.5, follows=("stance", "threshold"))
    stance_scale: float = setting(1.0, follows=("stance", "scale"))
    stance_unclear: float = setting(0.0, follows=("stance", "unclear"))


#: Every stage's settings, in running order.
SETTINGS: tuple[type[StageSettings], ...] = (RetrieveSettings, RelevanceSettings, StanceSettings, ClusterSettings,
                                             ExpandSettings, EvidenceSettings, VerifySettings)
#: The models whose dev tuning chooses a stage's settings, one per judgement the pipeline
#: asks for (``models/<model>/``), in running order.
MODELS: tuple[str, ...] = tuple(s.model for s in SETTINGS if s.model)
_BY_STAGE = {s.name: s for s in SETTINGS}
_BY_MODEL = {s.model: s for s in SETTINGS if s.model}
#: How each type of setting is described when a value does not fit it.
_WANTED = {"bool": "true or false", "int": "a whole number", "float": "a finite number"}


def chosen_by(stage: type[StageSettings], who: str) -> tuple[str, ...]:
    """The settings of ``stage`` that ``who`` (:data:`MODEL` or :data:`PIPELINE`) chooses."""
    return tuple(f.name for f in fields(stage) if who in f.metadata.get("chosen", ()))  # type: ignore[arg-type]


def defaults(stage: type[StageSettings], who: str) -> dict[str, Any]:
    """The defaults of the settings of ``stage`` that ``who`` chooses (those that have one)."""
    return {f.name: f.default for f in fields(stage)  # type: ignore[arg-type]
            if who in f.metadata.get("chosen", ()) and f.default is not MISSING}


def followed(stage: type[StageSettings]) -> dict[str, tuple[str, str]]:
    """The settings of ``stage`` that copy another stage's unless given: name → (stage, setting)."""
    return {f.name: f.metadata["follows"] for f in fields(stage) if f.metadata.get("follows")}  # type: ignore[arg-type]


def model_settings(model: str, tuned: Mapping[str, Any]) -> dict[str, Any]:
    """What a model's dev tuning chose for its stage, out of everything ``tuned`` holds (its
    stored thresholds): every :data:`MODEL` setting, in the stage's order; a KeyError
    names one that is missing, a TypeError says ``tuned`` is not a mapping."""
    return {name: tuned[name] for name in chosen_by(_BY_MODEL[model], MODEL)}


class UnknownSetting(PerspectrumError):
    """A stage, model or setting name that the schema does not know (:func:`check_settings`)."""

    def __init__(self, message: str, name: str) -> None:
        super().__init__(message)
        #: the unknown name, as ``stage`` or ``stage.setting``
        self.name = name


def _fits(kind: Any, value: Any) -> bool:
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return is_whole(value, least=0)
    if kind == "float":  # NaN would pass (or fail) every cut silently, so it is refused
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return True


def check_settings(settings: Mapping[str, Mapping[str, Any]], where: object, chosen: str | None = None) -> None:
    """Refuse a setting the stages do not have, or a value of the wrong type, with one line
    naming ``where`` (the file, or what gave the settings) and the key: a switch must be
    true or false, a count a whole number (at least 0), anything else a finite number.

    ``settings`` is keyed by stage name, or by model name with ``chosen=MODEL`` (what a
    model's dev tuning stored); ``chosen`` limits the settings to those that it chooses
    (``PIPELINE``: what ``pipeline.json`` may hold). Unknown names raise
    :class:`UnknownSetting`.

    A cut-off edited by hand to ``"high"``, ``null`` or a list would otherwise fail as a
    TypeError deep inside a stage, and one edited to ``NaN`` would not fail at all: every
    comparison with it is false, so a stage would silently keep nothing (or everything).
    """
    by_name = _BY_MODEL if chosen == MODEL else _BY_STAGE
    for section, values in settings.items():
        stage = by_name.get(section)
        if stage is None:
            kind = "model" if chosen == MODEL else "stage"
            raise UnknownSetting(f"{where}: unknown {kind} {section!r} ({kind}s: {', '.join(by_name)})", str(section))
        if not isinstance(values, Mapping):
            raise PerspectrumError(f"{where}: the {section} settings must be a JSON object, not {reprlib.repr(values)}")
        known = {f.name: f for f in fields(stage)  # type: ignore[arg-type]
                 if chosen is None or chosen in f.metadata.get("chosen", ())}
        for key, value in values.items():
            if key not in known:
                raise UnknownSetting(f"{where}: unknown setting {section}.{key} (known: {', '.join(known)})",
                                     f"{section}.{key}")
            kind = known[key].type
            if not _fits(kind, value):
                raise PerspectrumError(f"{where}: setting {section}.{key} must be {_WANTED[kind]}, "
                                       f"not {reprlib.repr(value)}")
