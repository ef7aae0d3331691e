"""The judgements the discovery pipeline asks for, behind one surface.

One implementation, :class:`TrainedScorers`: the three fine-tuned cross-encoders and the
evidence ranker, the user's own (``perspectrum train``, ``models install``) or those that
ship with perspectrum (:mod:`perspectrum.models.shipped`). The pipeline never knows which
it holds, nor whether it holds an object of your own: each answers the same five questions
and carries the cut-offs that were tuned on dev for its own scores.

Settings (``Scorers.settings``) hold what was chosen on dev, as
:mod:`perspectrum.models.settings` names it (the one schema of every setting, its type
and default): under each model's name, the settings its own tuning chose for its stage
(``relevance``, ``stance``, ``equivalence`` for the cluster stage, ``evidence``), read from
the model's files; and under a stage's name, what ``perspectrum tune`` chose for the
pipeline as a whole (the relevance ``floor``, the stance ``margin``, a stricter clustering
cut for retrieved perspectives, expand's ``neighbours`` and ``agree``), stored beside the
models in ``pipeline.json`` (:data:`PIPELINE_FILE`). What neither holds takes the stage's
default. Every file is checked by :func:`perspectrum.models.settings.check_settings` when
it is read.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from perspectrum.data import Pool
from perspectrum.errors import PerspectrumError
from perspectrum.models.inputs import claim_perspective_input, equivalence_input
from perspectrum.index.store import IndexStore
from perspectrum.models.evidence_ranker import DEPTH, Debate, Featurizer, Key, WindowJob
from perspectrum.models.settings import MODEL, MODELS, PIPELINE, UnknownSetting, check_settings, model_settings

#: The models a fine-tuned cross-encoder is (the evidence model is the ranker).
CROSS_ENCODED = ("relevance", "stance", "equivalence")
#: Settings chosen on dev for the pipeline as a whole, beside a set of models.
PIPELINE_FILE = "pipeline.json"
#: (claim, perspective) · (claim, perspective 1, perspective 2)
Pair = tuple[str, str]
Triple = tuple[str, str, str]


class Scorers(Protocol):
    """What the pipeline needs from a set of models. All scores are in [0, 1]."""

    #: Which models answer ("shipped", "trained", ...), shown to users and written into every result.
    kind: str
    #: Dev-tuned settings by model and by stage (see the module docstring).
    settings: dict[str, dict[str, Any]]

    def relevance(self, pairs: Sequence[Pair]) -> np.ndarray:
        """P(the perspective is relevant to the claim) per (claim, perspective)."""
        ...

    def stance(self, pairs: Sequence[Pair]) -> np.ndarray:
        """P(the perspective supports the claim) per (claim, perspective)."""
        ...

    def equivalence(self, triples: Sequence[Triple]) -> np.ndarray:
        """P(the two perspectives say the same thing about the claim)."""
        ...

    def evidence(self, debates: Mapping[Any, Debate], depth: int = DEPTH) -> tuple[list[Key], np.ndarray]:
        """Each cluster's top-``depth`` candidate paragraphs, as (debate key, cluster
        index, paragraph id), with P(the paragraph is that cluster's evidence)."""
        ...

    def windows(self, jobs: Sequence[WindowJob]) -> list[np.ndarray]:
        """Per (debate, cluster index, paragraph id): how plainly each 3-sentence window of the
        paragraph (every :data:`perspectrum.models.rules.EVIDENCE_STRIDE` sentences) states that
        cluster's point rather than a sibling's, the evidence ranker's window verifier."""
        ...


class TrainedScorers:
    """The fine-tuned cross-encoders and the evidence ranker: those of ``perspectrum train``
    in ``models/``, or the shipped ones (:mod:`perspectrum.models.shipped`).

    Args:
        models_dir: the folder ``perspectrum train`` wrote.
        store: where the evidence pool's indexes (and its sentences') live.
        evidence: the evidence pool the ranker retrieves from.
        homes: the folder whose ``<model>/`` answers each model (default: ``models_dir`` for
            all).
        settings_home: the folder whose ``pipeline.json`` holds the pipeline's settings
            (default: ``models_dir``).
        kind: the system's name, as results show it.

    Models load on first use, once, under a lock, so a pipeline that only ranks
    perspectives never reads the evidence ranker or its indexes, and threads share one copy.
    """

    kind = "trained"

    def __init__(self, models_dir: str | Path, store: IndexStore, evidence: Pool,
                 homes: Mapping[str, Path] | None = None, kind: str | None = None,
                 settings_home: Path | None = None) -> None:
        from perspectrum.models.store import read_meta

        self.models_dir = Path(models_dir)
        self.homes = {model: Path(homes[model]) if homes else self.models_dir for model in MODELS}
        self.kind = kind or self.kind
        self.store = store
        self.evidence_pool = evidence
        metas = {model: read_meta(self.homes[model], model) for model in MODELS}
        if metas["evidence"].get("ranker_thresholds") is None:
            raise PerspectrumError(f"{self.homes['evidence'] / 'evidence'} has no ranker cut-off: "
                                   "run `perspectrum train evidence --tune-only`")
        self.settings = {model: stored_settings(self.homes[model], model, metas[model]) for model in MODELS}
        merge_pipeline_file(self.settings, settings_home or self.models_dir)
        self._loaded: dict[str, Any] = {}
        self._lock = threading.Lock()

    def _get(self, name: str) -> Any:
        with self._lock:
            if name not in self._loaded:
                from perspectrum.models.store import load_ranker, load_task

                if name == "ranker":
                    self._loaded[name] = load_ranker(self.homes["evidence"])
                elif name == "featurizer":
                    self._loaded[name] = Featurizer(self.store, self.evidence_pool, show_progress=True)
                else:
                    self._loaded[name] = load_task(self.homes[name], name)
            return self._loaded[name]

    def load_all(self) -> None:
        """Load every model and index now (a server's warm-up) instead of on first use."""
        for name in ("relevance", "stance", "equivalence", "ranker", "featurizer"):
            self._get(name)

    def relevance(self, pairs: Sequence[Pair]) -> np.ndarray:
        return model_scores(self._get("relevance"), "relevance", pairs)

    def stance(self, pairs: Sequence[Pair]) -> np.ndarray:
        return model_scores(self._get("stance"), "stance", pairs)

    def equivalence(self, triples: Sequence[Triple]) -> np.ndarray:
        return model_scores(self._get("equivalence"), "equivalence", triples)

    def evidence(self, debates: Mapping[Any, Debate], depth: int = DEPTH) -> tuple[list[Key], np.ndarray]:
        table = self._get("featurizer").table(debates, depth)
        return table.keys, self._get("ranker").score(table)

    def windows(self, jobs: Sequence[WindowJob]) -> list[np.ndarray]:
        return self._get("ranker").verify(self._get("featurizer").windows(jobs))


def model_scores(members: Sequence[Any], task: str, items: Sequence[Pair] | Sequence[Triple]) -> np.ndarray:
    """The mean score of a task's fine-tuned members (:class:`perspectrum.encoders.cross_encoder.CrossEncoderModel`)
    on (claim, perspective) pairs, or (claim, perspective, perspective) triples for equivalence."""
    if not items:
        return np.zeros(0, dtype=np.float32)
    inputs = ([equivalence_input(*t) for t in items] if task == "equivalence"
              else [claim_perspective_input(*p) for p in items])
    return np.mean([m.score(inputs) for m in members], axis=0)


def stored_settings(models_dir: Path, model: str, meta: Mapping[str, Any]) -> dict[str, Any]:
    """What a trained model's dev tuning chose for its stage, from its ``perspectrum.json``
    (``thresholds``; the evidence ranker's ``ranker_thresholds``), checked; a damaged or
    hand-edited file that cannot be used is a one-line error naming it."""
    from perspectrum.encoders.cross_encoder import META_FILE

    path = models_dir / model / META_FILE
    try:
        values = model_settings(model, meta["thresholds" if model in CROSS_ENCODED else "ranker_thresholds"])
    except (KeyError, TypeError, AttributeError) as exc:
        why = f"no setting {exc}" if isinstance(exc, KeyError) else "its thresholds are not a JSON object"
        raise PerspectrumError(f"{path} is damaged ({why}): run `perspectrum train {model} --tune-only` "
                               "to choose its cut-offs again") from None
    check_settings({model: values}, path, MODEL)
    return values


def fine_tuned(models_dir: str | Path) -> tuple[str, ...]:
    """The models trained into ``models_dir`` (the ranker is checked on load)."""
    from perspectrum.encoders.cross_encoder import META_FILE

    return tuple(model for model in MODELS if (Path(models_dir) / model / META_FILE).is_file())


def models_present(models_dir: str | Path) -> bool:
    """Whether ``models_dir`` holds all four trained models."""
    return fine_tuned(models_dir) == MODELS


def merge_pipeline_file(settings: dict[str, dict[str, Any]], folder: str | Path) -> None:
    """Add the pipeline-level settings stored in ``folder/pipeline.json`` (if any) to ``settings``.

    A file that cannot be read is a one-line error rather than silently ignored: it
    holds choices (such as the relevance floor) that change what users are shown.
    """
    import json

    path = Path(folder) / PIPELINE_FILE
    if not path.is_file():
        return
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))["settings"]
        check_settings(stored, path, PIPELINE)
        for stage, values in stored.items():
            settings.setdefault(stage, {}).update(values)
    except UnknownSetting as exc:
        raise PerspectrumError(f"{path} is damaged (unexpected setting {exc.name}): run `perspectrum tune` again "
                               "or delete it") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise PerspectrumError(f"{path} is damaged ({exc}): run `perspectrum tune` again or delete it") from None
