"""The judgements the discovery pipeline asks for, behind one surface.

Two implementations: :class:`TrainedScorers` (the four fine-tuned cross-encoders and the
evidence ranker of ``perspectrum train``) and :class:`perspectrum.models.light_heads.LightScorers`
(scikit-learn heads on frozen MiniLM embeddings and the evidence ranker, fitted in a
minute or two on a fresh machine, with any fine-tuned model in a head's place). The pipeline never knows which it holds: each answers the same five
questions and carries the cut-offs that were tuned on dev for its own scores.

Settings (``Scorers.settings``), one dict per stage:

=============  =====================================================================
stage          keys
=============  =====================================================================
relevance      ``weight`` (model vs dense cosine), ``relative``, ``threshold``, ``k``,
               ``min_keep`` — as :func:`perspectrum.eval.trained.keep` takes them
stance         ``threshold`` on P(support)
equivalence    ``weight`` (model vs dense cosine), ``threshold`` (a pair is the same
               perspective at or above it; clusters are cut at distance 1 − threshold)
evidence       ``relative``, ``threshold``, ``k``, ``min_keep`` on P(evidence)
expand         ``neighbours`` (optional; pool paraphrases read per cluster, 0 = off),
               ``agree`` (optional; admit only paraphrases the stance model puts on
               their cluster's side)
=============  =====================================================================

The pipeline-level settings (the relevance ``floor``, the stance ``margin``, the
clustering cut for retrieved perspectives, expand's ``neighbours`` and ``agree``) are
chosen on dev for a whole set of models by ``perspectrum tune`` and stored beside them
in ``pipeline.json`` (:data:`PIPELINE_FILE`), keyed by pipeline stage; without it they
default to :data:`PIPELINE_DEFAULTS` (no floor, strict stance split, the equivalence
model's own cut, no expansion).

Every setting is a number except the switches ``relative`` and ``agree`` (true or
false); ``k``, ``min_keep`` and ``neighbours`` are whole numbers. The files that hold
them are JSON a person may edit, so :func:`check_settings` reads each one against that.
"""

from __future__ import annotations

import math
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

STAGES = ("relevance", "stance", "equivalence", "evidence")
#: The stages a fine-tuned cross-encoder answers (evidence is the ranker's).
CROSS_ENCODED = ("relevance", "stance", "equivalence")
#: Settings chosen on dev for the pipeline as a whole, beside a set of models.
PIPELINE_FILE = "pipeline.json"
PIPELINE_DEFAULTS: dict[str, dict[str, Any]] = {"relevance": {"floor": 0.0}, "stance": {"margin": 0.0},
                                                "expand": {"neighbours": 0, "agree": False}}
#: What ``pipeline.json`` may set, per stage: the defaults' keys, and the clustering cut
#: (the equivalence model's own, tuned on gold perspectives, unless the pipeline's tuning
#: found a stricter one better for retrieved perspectives).
PIPELINE_KEYS: dict[str, frozenset[str]] = {**{stage: frozenset(v) for stage, v in PIPELINE_DEFAULTS.items()},
                                            "cluster": frozenset({"threshold"})}
#: The settings that are true or false, and those that count (whole numbers, at least 0);
#: every other setting is a finite number (see the module docstring).
SWITCHES = frozenset({"relative", "agree"})
COUNTS = frozenset({"k", "min_keep", "neighbours"})
#: The evidence ranker's cut-off, as ``models/evidence/perspectrum.json`` stores it.
RANKER_KEYS = ("relative", "threshold", "k", "min_keep")
#: (claim, perspective) · (claim, perspective 1, perspective 2)
Pair = tuple[str, str]
Triple = tuple[str, str, str]


class Scorers(Protocol):
    """What the pipeline needs from a set of models. All scores are in [0, 1]."""

    #: "trained" or "light", shown to users and written into every result.
    kind: str
    #: Dev-tuned cut-offs per stage (see the module docstring).
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
    """The fine-tuned cross-encoders of ``models/`` and the evidence ranker.

    Args:
        models_dir: the folder ``perspectrum train`` wrote.
        store: where the evidence pool's indexes (and its sentences') live.
        evidence: the evidence pool the ranker retrieves from.

    Models load on first use, once, under a lock, so a pipeline that only ranks
    perspectives never reads the evidence ranker or its indexes, and threads share one copy.
    """

    kind = "trained"

    def __init__(self, models_dir: str | Path, store: IndexStore, evidence: Pool) -> None:
        from perspectrum.models.store import TASKS, read_meta

        self.models_dir = Path(models_dir)
        self.store = store
        self.evidence_pool = evidence
        metas = {task: read_meta(self.models_dir, task) for task in TASKS}
        if metas["evidence"].get("ranker_thresholds") is None:
            raise PerspectrumError(f"{self.models_dir / 'evidence'} has no ranker cut-off: "
                                   "run `perspectrum train evidence --tune-only`")
        self.settings = {task: stored_settings(self.models_dir, task, metas[task]) for task in STAGES}
        merge_pipeline_file(self.settings, self.models_dir)
        self._loaded: dict[str, Any] = {}
        self._lock = threading.Lock()

    def _get(self, name: str) -> Any:
        with self._lock:
            if name not in self._loaded:
                from perspectrum.models.store import load_ranker, load_task

                if name == "ranker":
                    self._loaded[name] = load_ranker(self.models_dir)
                elif name == "featurizer":
                    self._loaded[name] = Featurizer(self.store, self.evidence_pool, show_progress=True)
                else:
                    self._loaded[name] = load_task(self.models_dir, name)
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


def stored_settings(models_dir: Path, task: str, meta: Mapping[str, Any]) -> dict[str, Any]:
    """A trained model's dev-tuned cut-offs from its ``perspectrum.json``, checked; a damaged
    or hand-edited file that cannot be used is a one-line error naming it."""
    from perspectrum.encoders.cross_encoder import META_FILE

    path = models_dir / task / META_FILE
    try:
        values = (model_settings(task, meta) if task in CROSS_ENCODED
                  else {k: meta["ranker_thresholds"][k] for k in RANKER_KEYS})
    except (KeyError, TypeError, AttributeError) as exc:
        why = f"no setting {exc}" if isinstance(exc, KeyError) else "its thresholds are not a JSON object"
        raise PerspectrumError(f"{path} is damaged ({why}): run `perspectrum train {task} --tune-only` "
                               "to choose its cut-offs again") from None
    check_settings({task: values}, path)
    return values


def model_settings(task: str, meta: Mapping[str, Any]) -> dict[str, Any]:
    """A fine-tuned model's dev-tuned cut-offs, as its stage reads them (one of :data:`CROSS_ENCODED`)."""
    thresholds = meta["thresholds"]
    keys = {"relevance": tuple(thresholds), "stance": ("threshold",), "equivalence": ("weight", "threshold")}[task]
    return {k: thresholds[k] for k in keys}


def fine_tuned(models_dir: str | Path) -> tuple[str, ...]:
    """The tasks with a fine-tuned model in ``models_dir`` (the ranker is checked on load)."""
    from perspectrum.encoders.cross_encoder import META_FILE
    from perspectrum.models.store import TASKS

    return tuple(task for task in TASKS if (Path(models_dir) / task / META_FILE).is_file())


def models_present(models_dir: str | Path) -> bool:
    """Whether ``models_dir`` holds all four trained models."""
    from perspectrum.models.store import TASKS

    return fine_tuned(models_dir) == TASKS


def check_settings(settings: Mapping[str, Mapping[str, Any]], where: str | Path) -> None:
    """Refuse a stored setting of the wrong type with one line naming ``where`` (the file)
    and the key: a switch must be true or false, a count a whole number, anything else a
    finite number (see the module docstring).

    A cut-off edited by hand to ``"high"``, ``null`` or a list would otherwise fail as a
    TypeError deep inside a stage, and one edited to ``NaN`` would not fail at all: every
    comparison with it is false, so a stage would silently keep nothing (or everything).
    """
    for stage, values in settings.items():
        if not isinstance(values, Mapping):
            raise PerspectrumError(f"{where}: the {stage} settings must be a JSON object, not {reprlib.repr(values)}")
        for key, value in values.items():
            if key in SWITCHES:
                wanted, fits = "true or false", isinstance(value, bool)
            elif key in COUNTS:
                wanted, fits = "a whole number", isinstance(value, int) and not isinstance(value, bool) and value >= 0
            else:
                wanted = "a finite number"
                fits = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            if not fits:
                raise PerspectrumError(f"{where}: setting {stage}.{key} must be {wanted}, not {reprlib.repr(value)}")


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
        for stage, values in stored.items():
            if stage not in PIPELINE_KEYS or isinstance(values, Mapping) and set(values) - PIPELINE_KEYS[stage]:
                raise ValueError(f"unexpected setting under {stage!r}")
        check_settings(stored, path)
        for stage, values in stored.items():
            settings.setdefault(stage, {}).update(values)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise PerspectrumError(f"{path} is damaged ({exc}): run `perspectrum tune` again or delete it") from None


def tuned_settings(scorers: Scorers) -> dict[str, dict[str, Any]]:
    """The dev-tuned settings of ``scorers`` keyed by pipeline stage, defaults filled in."""
    tuned = scorers.settings
    return {
        "relevance": {**PIPELINE_DEFAULTS["relevance"], **tuned["relevance"]},
        "stance": {**PIPELINE_DEFAULTS["stance"], **tuned["stance"]},
        "cluster": {**tuned["equivalence"], **tuned.get("cluster", {})},
        "expand": {**PIPELINE_DEFAULTS["expand"], **tuned.get("expand", {})},
        "evidence": dict(tuned["evidence"]),
    }
