"""Stage settings checked, merged from where they are stored, and stages built from them.

Each stage declares its own settings in its module (:mod:`perspectrum.pipeline.stages`);
this module reads them through :data:`~perspectrum.pipeline.stages.ORDER` only, so a new
stage needs nothing here. The models carry what was stored for them as it was stored
(:attr:`~perspectrum.models.scorers.Scorers.settings`: under each model's name what its
own dev tuning chose, under each stage's name what ``perspectrum tune`` chose for the
pipeline); :func:`stage_settings` checks it against the stages, naming the file it came
from, and merges it with the defaults, the structural settings and the overrides.
"""

from __future__ import annotations

import math
import reprlib
from collections.abc import Mapping
from dataclasses import MISSING, fields
from typing import Any, TypeVar

from perspectrum._checks import is_whole
from perspectrum.errors import PerspectrumError
from perspectrum.pipeline.stages import ORDER
from perspectrum.pipeline.stages.base import MODEL, PIPELINE, Stage

#: How each type of setting is described when a value does not fit it.
WANTED = {"bool": "true or false", "int": "a whole number", "float": "a finite number"}
S = TypeVar("S", bound=Stage)
#: Each stage by its name.
BY_STAGE: dict[str, type[Stage]] = {s.name: s for s in ORDER}
#: Each stage by the model whose dev tuning chooses its :data:`MODEL` settings.
BY_MODEL: dict[str, type[Stage]] = {s.model: s for s in ORDER if s.model}


class UnknownSetting(PerspectrumError):
    """A stage, model or setting name that the stages do not know (:func:`check_stage`)."""

    def __init__(self, message: str, name: str) -> None:
        super().__init__(message)
        #: the unknown name, as ``stage`` or ``stage.setting``
        self.name = name


def chosen_by(stage: type[Stage], who: str) -> tuple[str, ...]:
    """The settings of ``stage`` that ``who`` (:data:`MODEL` or :data:`PIPELINE`) chooses."""
    return tuple(f.name for f in fields(stage) if who in f.metadata.get("chosen", ()))  # type: ignore[arg-type]


def defaults(stage: type[Stage], who: str) -> dict[str, Any]:
    """The defaults of the settings of ``stage`` that ``who`` chooses (those that have one)."""
    return {f.name: f.default for f in fields(stage)  # type: ignore[arg-type]
            if who in f.metadata.get("chosen", ()) and f.default is not MISSING}


def followed(stage: type[Stage]) -> dict[str, tuple[str, str]]:
    """The settings of ``stage`` that copy another stage's unless given: name → (stage, setting)."""
    return {f.name: f.metadata["follows"] for f in fields(stage) if f.metadata.get("follows")}  # type: ignore[arg-type]


def fits(kind: Any, value: Any) -> bool:
    """Whether ``value`` is a setting of type ``kind`` (``"bool"``, ``"int"`` or ``"float"``)."""
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return is_whole(value, least=0)
    if kind == "float":  # NaN would pass (or fail) every cut silently, so it is refused
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return True


def check_stage(stage: type[Stage], section: str, values: Any, where: object, chosen: str | None = None) -> None:
    """Refuse a setting ``stage`` does not have, or a value of the wrong type, with one line
    naming ``where`` (the file, or what gave the settings) and ``section.key``: a switch must
    be true or false, a count a whole number (at least 0), anything else a finite number.
    ``chosen`` limits the settings to those it chooses (:data:`PIPELINE`: what
    ``pipeline.json`` may hold). Unknown names raise :class:`UnknownSetting`.

    A cut-off edited by hand to ``"high"``, ``null`` or a list would otherwise fail as a
    TypeError deep inside a stage, and one edited to ``NaN`` would not fail at all: every
    comparison with it is false, so a stage would silently keep nothing (or everything).
    """
    if not isinstance(values, Mapping):
        raise PerspectrumError(f"{where}: the {section} settings must be a JSON object, not {reprlib.repr(values)}")
    known = {f.name: f for f in fields(stage)  # type: ignore[arg-type]
             if chosen is None or chosen in f.metadata.get("chosen", ())}
    for key, value in values.items():
        if key not in known:
            raise UnknownSetting(f"{where}: unknown setting {section}.{key} (known: {', '.join(known)})",
                                 f"{section}.{key}")
        kind = known[key].type
        if not fits(kind, value):
            raise PerspectrumError(f"{where}: setting {section}.{key} must be {WANTED[kind]}, "
                                   f"not {reprlib.repr(value)}")


def configure(stage: type[S], settings: Mapping[str, Any], where: str = "pipeline settings") -> S:
    """``stage`` built from ``settings``: an unknown key or a value of the wrong type
    (:func:`check_stage`), or a setting without a default left out, is a one-line
    :class:`PerspectrumError` naming ``where``, the stage and the key."""
    name = stage.name
    check_stage(stage, name, settings, where)
    kinds = {f.name: f.type for f in fields(stage)}  # type: ignore[arg-type]
    missing = [f.name for f in fields(stage) if f.name not in settings  # type: ignore[arg-type]
               and f.default is MISSING and f.default_factory is MISSING]
    if missing:
        raise PerspectrumError(f"{where}: no setting {', '.join(f'{name}.{key}' for key in missing)} "
                               f"(the {name} stage has no default for it)")
    cast = {"float": float, "int": int}
    return stage(**{key: cast[kinds[key]](value) if kinds[key] in cast else value  # type: ignore[call-arg]
                    for key, value in settings.items()})


def check_settings(settings: Mapping[str, Mapping[str, Any]], where: object, chosen: str | None = None) -> None:
    """Refuse a stage or setting the stages do not have, or a value of the wrong type, with
    one line naming ``where`` (:func:`~perspectrum.pipeline.stages.base.check_stage`).

    ``settings`` is keyed by stage name, or by model name with ``chosen=MODEL`` (what a
    model's dev tuning stored); ``chosen`` limits the settings to those that it chooses
    (``PIPELINE``: what ``pipeline.json`` may hold). Unknown names raise :class:`UnknownSetting`.
    """
    by_name = BY_MODEL if chosen == MODEL else BY_STAGE
    for section, values in settings.items():
        stage = by_name.get(section)
        if stage is None:
            kind = "model" if chosen == MODEL else "stage"
            raise UnknownSetting(f"{where}: unknown {kind} {section!r} ({kind}s: {', '.join(by_name)})", str(section))
        check_stage(stage, section, values, where, chosen)


def stage_settings(tuned: Mapping[str, Mapping[str, Any]], sources: Mapping[str, Mapping[str, tuple[object, str]]],
                   structural: Mapping[str, Mapping[str, Any]], overrides: Mapping[str, Mapping[str, Any]],
                   cap: int) -> dict[str, dict[str, Any]]:
    """Every stage's settings: the defaults, the dev-tuned values, the structural ones, then
    the overrides, each checked against the stage that declares it.

    ``tuned`` is the loaded models' stored settings (:attr:`Scorers.settings
    <perspectrum.models.scorers.Scorers.settings>`): a stage takes its model's (the cluster
    stage, the equivalence model's), then its own from ``pipeline.json``. ``sources`` says,
    by section and key, which file a value came from and who chose it (:data:`MODEL` or
    :data:`PIPELINE`), so that a damaged or hand-edited value is a one-line error naming its
    file and what to run: a model's missing cut-off, a setting ``pipeline.json`` may not
    hold, a value of the wrong type. A model file's other keys (its tuning grid's
    ``centre``, ``method``, ``aggregate``) are evaluation's and are left out. What
    ``perspectrum tune`` chooses is at its default until it has run. The relevance cap is
    never above ``cap``; a setting that follows another stage's
    (the expand stage's blend and thresholds) is that one unless overridden.
    """
    out: dict[str, dict[str, Any]] = {}
    for stage in ORDER:
        out[stage.name] = defaults(stage, PIPELINE)
        for section in dict.fromkeys(name for name in (stage.model, stage.name) if name):
            out[stage.name].update(_stored(stage, section, tuned.get(section, {}), sources.get(section, {})))
        if stage.model:
            missing = [n for n in chosen_by(stage, MODEL) if n not in out[stage.name]]
            if missing:
                raise PerspectrumError(f"{_file_of(sources.get(stage.model, {}))} is damaged (no setting {missing[0]!r}): run `perspectrum train "
                                       f"{stage.model} --tune-only` to choose its cut-offs again")
    for name, values in (*structural.items(), *overrides.items()):
        out[name].update(values)
    out["relevance"]["k"] = min(out["relevance"]["k"], cap)
    for stage in ORDER:
        for key, (source, setting) in followed(stage).items():
            out[stage.name].setdefault(key, out[source][setting])
    return out


def _stored(stage: type[Stage], section: str, values: Any, sources: Mapping[str, tuple[object, str]]
            ) -> dict[str, Any]:
    """The values stored under ``section`` that ``stage`` reads, each checked (see :func:`stage_settings`)."""
    if not isinstance(values, Mapping):
        raise PerspectrumError(f"{_file_of(sources)}: the {section} settings must be a JSON object, not {reprlib.repr(values)}")
    kept, model_keys = {}, chosen_by(stage, MODEL)
    for key, value in values.items():  # as stored: a model's cut-offs, then the pipeline file's
        where, who = sources.get(key, ("the models' settings", ""))
        if who == MODEL and key not in model_keys:
            continue  # the tuning grid's own keys
        try:
            check_stage(stage, section, {key: value}, where, PIPELINE if who == PIPELINE else None)
        except UnknownSetting as exc:
            if who == PIPELINE:
                raise PerspectrumError(f"{where} is damaged (unexpected setting {exc.name}): run `perspectrum tune` "
                                       "again or delete it") from None
            raise
        kept[key] = value
    return kept


def _file_of(sources: Mapping[str, tuple[object, str]]) -> object:
    """The file a section's settings came from (any of its keys'), or what to call them without one."""
    return next(iter(sources.values()), ("the models' settings",))[0]


__all__ = ["BY_MODEL", "BY_STAGE", "UnknownSetting", "check_settings", "check_stage", "chosen_by", "configure", "defaults",
           "followed", "stage_settings"]
