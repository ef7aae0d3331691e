"""The judgements the discovery pipeline asks for, behind one surface.

One implementation, :class:`TrainedScorers`: the three fine-tuned cross-encoders and the
evidence ranker, the user's own (``perspectrum train``, ``models install``) or those that
ship with perspectrum (:mod:`perspectrum.models.shipped`). The pipeline never knows which
it holds, nor whether it holds an object of your own: each answers the same five questions
and carries the cut-offs that were tuned on dev for its own scores.

Settings (``Scorers.settings``) hold what was chosen on dev, as it was stored: under each
model's name, what its own tuning stored for its stage (``relevance``, ``stance``,
``equivalence`` for the cluster stage, ``evidence``), read from the model's files; and
under a stage's name, what ``perspectrum tune`` chose for the pipeline as a whole (the
relevance ``floor``, the stance ``margin``, a stricter clustering cut for retrieved
perspectives, expand's ``neighbours`` and ``agree``), stored beside the models in
``pipeline.json`` (:data:`PIPELINE_FILE`). The stages declare these settings
(:mod:`perspectrum.pipeline.stages`) and the pipeline checks each value against them when
it builds its stages (:func:`perspectrum.pipeline.settings.stage_settings`), naming the file
it came from (:attr:`TrainedScorers.sources`); here a file is only read, and refused
when it is not JSON objects.
"""

from __future__ import annotations

import reprlib
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

#: The models a fine-tuned cross-encoder is (the evidence model is the ranker).
CROSS_ENCODED = ("relevance", "stance", "equivalence")
#: Every model the pipeline asks a judgement of, in running order (``models/<model>/``).
MODELS: tuple[str, ...] = (*CROSS_ENCODED, "evidence")
#: Who stored a setting (:attr:`TrainedScorers.sources`): a model's own dev tuning, or ``perspectrum tune``.
MODEL, PIPELINE = "model", "pipeline"
#: Settings chosen on dev for the pipeline as a whole, beside a set of models.
PIPELINE_FILE = "pipeline.json"
#: (claim, perspective) · (claim, perspective 1, perspective 2)
Pair = tuple[str, str]
Triple = tuple[str, str, str]


class Scorers(Protocol):
    """What the pipeline needs from a set of models. All scores are in [0, 1]."""

    #: Which models answer ("shipped", "trained", ...), shown to users and written into every result.
    kind: str
    #: Dev-tuned settings by model and by stage, as stored (see the module docstring).
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
        from perspectrum.encoders.cross_encoder import META_FILE
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
        #: by section and key, the file each setting was read from and who stored it (``MODEL``, ``PIPELINE``)
        self.sources: dict[str, dict[str, tuple[Path, str]]] = {}
        self.settings = {model: stored_settings(self.homes[model], model, metas[model]) for model in MODELS}
        for model, values in self.settings.items():
            self.sources[model] = {key: (self.homes[model] / model / META_FILE, MODEL) for key in values}
        merge_pipeline_file(self.settings, settings_home or self.models_dir, self.sources)
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
    """What a trained model's dev tuning stored, from its ``perspectrum.json``
    (``thresholds``; the evidence ranker's ``ranker_thresholds``), as stored; a file
    without them, or with them not a JSON object, is a one-line error naming it (the
    pipeline checks each value against the stage that reads it)."""
    from perspectrum.encoders.cross_encoder import META_FILE

    values = meta.get("thresholds" if model in CROSS_ENCODED else "ranker_thresholds") \
        if isinstance(meta, Mapping) else None
    if not isinstance(values, Mapping):
        raise PerspectrumError(f"{models_dir / model / META_FILE} is damaged (its thresholds are not a JSON object): "
                               f"run `perspectrum train {model} --tune-only` to choose its cut-offs again")
    return dict(values)


def fine_tuned(models_dir: str | Path) -> tuple[str, ...]:
    """The models trained into ``models_dir`` (the ranker is checked on load)."""
    from perspectrum.encoders.cross_encoder import META_FILE

    return tuple(model for model in MODELS if (Path(models_dir) / model / META_FILE).is_file())


def models_present(models_dir: str | Path) -> bool:
    """Whether ``models_dir`` holds all four trained models."""
    return fine_tuned(models_dir) == MODELS


def merge_pipeline_file(settings: dict[str, dict[str, Any]], folder: str | Path,
                        sources: dict[str, dict[str, tuple[Path, str]]] | None = None) -> None:
    """Add the pipeline-level settings stored in ``folder/pipeline.json`` (if any) to
    ``settings``, and to ``sources`` where each came from.

    A file that cannot be read, or whose settings are not JSON objects by stage name, is a
    one-line error rather than silently ignored: it holds choices (such as the relevance
    floor) that change what users are shown. Each value is checked when the pipeline reads it.
    """
    import json

    path = Path(folder) / PIPELINE_FILE
    if not path.is_file():
        return
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))["settings"]
        for stage, values in stored.items():
            if not isinstance(values, Mapping):
                raise PerspectrumError(f"{path}: the {stage} settings must be a JSON object, "
                                       f"not {reprlib.repr(values)}")
        for stage, values in stored.items():
            settings.setdefault(stage, {}).update(values)
            if sources is not None:
                sources.setdefault(stage, {}).update({key: (path, PIPELINE) for key in values})
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise PerspectrumError(f"{path} is damaged ({exc}): run `perspectrum tune` again or delete it") from None
