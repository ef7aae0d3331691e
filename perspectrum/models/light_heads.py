"""Light heads: every judgement of the pipeline from frozen MiniLM embeddings, in minutes.

The fine-tuned cross-encoders of ``perspectrum train`` take over an hour on a CPU, so a
fresh machine without them would have no answer. ``perspectrum.train.light_heads`` fits a
small scikit-learn classifier per stage on features of the bi-encoder embeddings the
dense indexes already store, so only the claims and cluster queries are encoded, and the
whole job (fit, score dev, tune) took 98 s on 2 cores for all of PERSPECTRUM, most of it the
evidence ranker (eval/results/light_heads_dev.json). Cut-offs are tuned on dev with the grids and metrics of the trained
models; the test split is never read. This module is what answers at run time; fitting
and tuning live in :mod:`perspectrum.train.light_heads`. A fine-tuned relevance, stance or
equivalence model in ``models/`` answers for its stage in place of the head (``perspectrum
train stance --fast``).

- relevance: logistic regression on the (claim, perspective) pair features
  ``[u ⊙ v, |u − v|, cos]``, which a linear model can weigh dimension by dimension;
- stance: the same plus the perspective's own vector, whose wording ("should not",
  "harms") carries stance whatever the claim (dev macro-F1 62.6 against 59.6 without);
- equivalence: pair features of the two perspectives plus how each relates to the claim,
  since two paraphrases sit at the same distance from it (dev T3 F1 57.7 against 55.2);
- evidence: the evidence ranker of the fine-tuned models (:mod:`perspectrum.models.evidence_ranker`),
  which is gradient-boosted trees on retrieval features, not a fine-tuned model: how a
  paragraph and its best sentence fit the cluster *compared with the claim's other
  clusters* (dev T4 F1 60.3 on gold clusters, ``eval/results/light_heads_dev.json``, against 52.5
  for the earlier light head on nine of its columns without the sentence pool,
  ``eval/results/light_evidence_featurizer_dev.json``);
- windows: the ranker's window verifier, fitted with it (see :mod:`perspectrum.models.evidence_ranker`).
"""

from __future__ import annotations

import json
import reprlib
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from perspectrum import integrity
from perspectrum._io import tidy
from perspectrum.config import LIGHT_FOLDER
from perspectrum.data import Pool
from perspectrum.errors import PerspectrumError
from perspectrum.index.store import IndexStore
from perspectrum.models.evidence_ranker import DEPTH, RANKER_FILE, Debate, EvidenceRanker, Featurizer, Key, WindowJob
from perspectrum.models.scorers import (CROSS_ENCODED, Pair, Triple, fine_tuned, merge_pipeline_file, model_scores,
                                        models_present, stored_settings)
from perspectrum.models.settings import MODEL, MODELS, check_settings, model_settings

HEADS_FILE = "heads.npz"
META_FILE = "light.json"
#: Heads saved by another version are fitted again (2: the evidence ranker replaced a head;
#: 3: the ranker carries a window verifier; 4: heads kept as arrays, not a pickle, with sums).
VERSION = 4
#: Dev tuning restricted to what the pipeline applies (see :mod:`perspectrum.models.scorers`).
ONLY: dict[str, dict[str, Any]] = {"stance": {"centre": False}, "equivalence": {"method": "average"},
                                   "evidence": {"weight": 1.0, "aggregate": "max"}}


def _cosines(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return (u * v).sum(axis=1, keepdims=True)


def pair_features(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``[u ⊙ v, |u − v|, cos]`` of row-aligned unit vectors (symmetric in u and v)."""
    return np.hstack([u * v, np.abs(u - v), _cosines(u, v)])


def stance_features(claim: np.ndarray, perspective: np.ndarray) -> np.ndarray:
    """The pair features plus the perspective's own vector."""
    return np.hstack([pair_features(claim, perspective), perspective])


def equivalence_features(claim: np.ndarray, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """The perspectives' pair features, plus the sum and gap of their cosines to the claim."""
    a, b = _cosines(claim, first), _cosines(claim, second)
    return np.hstack([pair_features(first, second), a + b, np.abs(a - b)])


@dataclass(frozen=True)
class LinearHead:
    """A fitted ``StandardScaler`` + binary ``LogisticRegression`` as four arrays.

    Why: the fitted pipeline would be saved as a pickle, which runs whatever code it
    names when loaded, and reading it imports scikit-learn (about a second of a cold
    start). P(positive) is ``sigmoid(((x − mean) / scale) · coef + intercept)``, computed
    with scikit-learn's own operations, dtypes and order (float32 features stay float32),
    so the probabilities are the classifier's own; :meth:`of` checks that on the rows
    the classifier was fitted on before the arrays are used.
    """

    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: np.ndarray

    FIELDS = ("mean", "scale", "coef", "intercept")

    @classmethod
    def of(cls, fitted: Any, rows: np.ndarray) -> LinearHead:
        """The arrays of a fitted ``make_pipeline(StandardScaler(), LogisticRegression())``."""
        scaler, logistic = fitted[0], fitted[-1]
        head = cls(np.asarray(scaler.mean_), np.asarray(scaler.scale_), np.asarray(logistic.coef_),
                   np.asarray(logistic.intercept_))
        if len(rows) and not np.array_equal(head.predict_proba(rows), fitted.predict_proba(rows)):
            raise ValueError("the head's arrays do not reproduce the classifier's scores")
        return head

    def predict_proba(self, rows: np.ndarray) -> np.ndarray:
        """[P(negative), P(positive)] per row, as scikit-learn returns them."""
        from scipy.special import expit

        x = np.array(rows, dtype=rows.dtype if rows.dtype in (np.float32, np.float64) else np.float64)
        if x.ndim != 2 or x.shape[1] != self.mean.shape[0]:
            raise ValueError(f"expected rows of {self.mean.shape[0]} features, got shape {x.shape}")
        x -= self.mean.astype(x.dtype)
        x /= self.scale.astype(x.dtype)
        positive = expit((x @ self.coef.T.astype(x.dtype) + self.intercept.astype(x.dtype)).ravel())
        return np.vstack([1 - positive, positive]).T

    def arrays(self, prefix: str) -> dict[str, np.ndarray]:
        """The head as named arrays (for ``np.savez``), every name starting with ``prefix``."""
        return {f"{prefix}{name}": getattr(self, name) for name in self.FIELDS}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], prefix: str) -> LinearHead:
        """The head :meth:`arrays` wrote; a malformed one is an error, not a wrong score."""
        try:
            mean, scale, coef, intercept = (np.asarray(arrays[f"{prefix}{n}"]) for n in cls.FIELDS)
        except (KeyError, ValueError, TypeError):
            raise PerspectrumError(f"the light head '{prefix}' is missing or malformed") from None
        width = mean.shape[0] if mean.ndim == 1 else -1
        if not (all(np.issubdtype(a.dtype, np.floating) and np.isfinite(a).all() for a in (mean, scale, coef, intercept))
                and scale.shape == (width,) and coef.shape == (1, width) and intercept.shape == (1,)
                and (scale > 0).all()):
            raise PerspectrumError(f"the light head '{prefix}' is damaged (shapes or values out of range)")
        return cls(mean, scale, coef, intercept)


class StaleHeads(PerspectrumError):
    """Light heads made by another version or for another encoder, or damaged: fit them again
    (``perspectrum setup`` does), since they can no longer be trusted to mean what they learned."""


def _embedder(store: IndexStore, texts: Sequence[str]) -> Callable[[Sequence[str]], np.ndarray]:
    """Encode each distinct text once; return a lookup from texts to their vectors."""
    distinct = list(dict.fromkeys(texts))
    vectors = store.encoder.encode(distinct) if distinct else np.zeros((0, 0), dtype=np.float32)
    row = {t: n for n, t in enumerate(distinct)}
    return lambda wanted: vectors[[row[t] for t in wanted]]


def probability(head: Any, features: np.ndarray) -> np.ndarray:
    return head.predict_proba(features)[:, 1] if len(features) else np.zeros(0)


class LightScorers:
    """The :class:`perspectrum.models.scorers.Scorers` of fitted light heads.

    Args:
        heads: the fitted classifiers, one per stage of :data:`perspectrum.models.scorers.CROSS_ENCODED`.
        ranker: the fitted evidence ranker.
        settings: the dev-tuned settings, by model (see :mod:`perspectrum.models.scorers`).
        store: gives the encoder and the evidence pool's indexes.
        evidence: the pool :meth:`evidence` retrieves from.
        trained: fine-tuned members that answer a stage instead of its head (a stance model
            trained with ``perspectrum train stance --fast`` on a machine without the others);
            ``settings`` then holds their cut-offs for that stage.

    Safe from several threads: predicting is read-only, and the evidence indexes are
    opened once, on first use, under a lock.
    """

    kind = "light"

    def __init__(self, heads: Mapping[str, Any], ranker: EvidenceRanker, settings: dict[str, dict[str, Any]],
                 store: IndexStore, evidence: Pool, trained: Mapping[str, Sequence[Any]] | None = None) -> None:
        self.heads = dict(heads)
        self.ranker = ranker
        self.trained = dict(trained or {})
        self.kind = light_kind(self.trained)
        self.settings = settings
        self.store = store
        self.evidence_pool = evidence
        self._featurizer: Featurizer | None = None
        self._lock = threading.Lock()

    def featurizer(self) -> Featurizer:
        """The evidence featurizer (its indexes opened, or built, once)."""
        with self._lock:
            if self._featurizer is None:
                self._featurizer = Featurizer(self.store, self.evidence_pool)
            return self._featurizer

    def _pairs(self, stage: str, pairs: Sequence[Pair], features: Callable[..., np.ndarray]) -> np.ndarray:
        if not pairs:
            return np.zeros(0)
        embed = _embedder(self.store, [t for pair in pairs for t in pair])
        return probability(self.heads[stage], features(embed([c for c, _ in pairs]), embed([p for _, p in pairs])))

    def relevance(self, pairs: Sequence[Pair]) -> np.ndarray:
        if "relevance" in self.trained:
            return model_scores(self.trained["relevance"], "relevance", pairs)
        return self._pairs("relevance", pairs, pair_features)

    def stance(self, pairs: Sequence[Pair]) -> np.ndarray:
        if "stance" in self.trained:
            return model_scores(self.trained["stance"], "stance", pairs)
        return self._pairs("stance", pairs, stance_features)

    def equivalence(self, triples: Sequence[Triple]) -> np.ndarray:
        if "equivalence" in self.trained:
            return model_scores(self.trained["equivalence"], "equivalence", triples)
        if not triples:
            return np.zeros(0)
        embed = _embedder(self.store, [t for triple in triples for t in triple])
        claims, first, second = (embed([t[n] for t in triples]) for n in range(3))
        return probability(self.heads["equivalence"], equivalence_features(claims, first, second))

    def evidence(self, debates: Mapping[Any, Debate], depth: int = DEPTH) -> tuple[list[Key], np.ndarray]:
        table = self.featurizer().table(debates, depth)
        return table.keys, self.ranker.score(table)

    def windows(self, jobs: Sequence[WindowJob]) -> list[np.ndarray]:
        return self.ranker.verify(self.featurizer().windows(jobs))

    @classmethod
    def load(cls, folder: str | Path, store: IndexStore, evidence: Pool,
             models_dir: str | Path | None = None) -> LightScorers:
        """Read heads saved by :func:`perspectrum.train.light_heads.train_light`, with the
        fine-tuned relevance, stance or equivalence models ``models_dir`` holds in their place.

        Nothing read runs code: the heads and the ranker are arrays (``allow_pickle=False``),
        each file checked against the SHA-256 ``light.json`` recorded for it. A folder of
        another version (the pickled ``heads.joblib`` of versions before 4 included) is
        stale and fitted again, never read.
        """
        folder = Path(folder)
        tidy(folder)  # what an interrupted fit left beside it
        if not (folder / META_FILE).is_file():
            raise PerspectrumError(f"no light heads in {folder} ({META_FILE} is missing)")
        try:
            meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
            if meta.get("kind") != LightScorers.kind or meta.get("version") != VERSION:
                raise StaleHeads(f"the light heads in {folder} are of another kind or version")
            files = integrity.recorded(meta.get("files"), folder / META_FILE, [HEADS_FILE, RANKER_FILE])
            integrity.check(folder, files, [HEADS_FILE, RANKER_FILE])
            with np.load(folder / HEADS_FILE, allow_pickle=False) as saved:
                heads = {stage: LinearHead.from_arrays(saved, f"{stage}.") for stage in CROSS_ENCODED}
            ranker = EvidenceRanker.load(folder)
        except StaleHeads:
            raise
        except (PerspectrumError, OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise StaleHeads(f"the light heads in {folder} are damaged ({exc})".splitlines()[0]) from None
        if meta.get("encoder") != store.encoder.identity:
            raise StaleHeads(f"the light heads in {folder} were trained on another encoder's "
                             f"embeddings ({meta.get('encoder')})")
        settings = stored_light_settings(meta, folder)  # not StaleHeads: an edited value is no reason to refit
        trained = {}
        if models_dir is not None:
            from perspectrum.models.store import load_task, read_meta

            for task in replacing(models_dir):
                trained[task] = load_task(models_dir, task)
                settings[task] = stored_settings(Path(models_dir), task, read_meta(models_dir, task))
        merge_pipeline_file(settings, folder)
        return cls(heads, ranker, settings, store, evidence, trained)


def stored_light_settings(meta: Mapping[str, Any], folder: Path) -> dict[str, dict[str, Any]]:
    """The dev-tuned settings ``light.json`` stores (``settings.<model>.<setting>``), checked
    by :func:`~perspectrum.models.settings.check_settings`.

    Anything amiss (a setting missing, a section that is not an object, a threshold edited
    to ``"high"``, ``null`` or ``NaN``) is a plain one-line :class:`PerspectrumError` naming
    the file and the key, not :class:`StaleHeads`: the heads are sound, and a person edited
    the file, so fitting them again (what ``perspectrum setup``, or ``discover`` on an
    unprepared machine, does for stale heads) would silently throw their edit away.
    """
    path = folder / META_FILE
    remedy = f"correct it, or delete {folder} and run `perspectrum setup` to fit the light heads again"
    stored = meta.get("settings")
    if not isinstance(stored, Mapping):
        found = "has no settings" if stored is None else f"settings must be a JSON object, not {reprlib.repr(stored)}"
        raise PerspectrumError(f"{path}: {found}; {remedy}")
    settings = {}
    for model in MODELS:
        tuned = stored.get(model)
        if not isinstance(tuned, Mapping):
            found = (f"settings has no {model}" if tuned is None
                     else f"settings.{model} must be a JSON object, not {reprlib.repr(tuned)}")
            raise PerspectrumError(f"{path}: {found}; {remedy}")
        try:
            settings[model] = model_settings(model, tuned)
        except KeyError as exc:
            raise PerspectrumError(f"{path}: settings.{model} has no {exc.args[0]}; {remedy}") from None
    try:
        check_settings(settings, path, MODEL)
    except PerspectrumError as exc:
        raise PerspectrumError(f"{exc}; {remedy}") from None
    return settings


def unprepared(models_dir: str | Path) -> str | None:
    """Why ``models_dir`` cannot answer yet, in a few words, or ``None`` when it can: the four
    fine-tuned models, or light heads of this version (checked in full when loaded).

    Reads one small JSON file at most, so a pipeline can refuse an unprepared machine at
    once instead of on its first call.
    """
    models_dir = Path(models_dir)
    if models_present(models_dir):
        return None
    folder = models_dir / LIGHT_FOLDER
    present = fine_tuned(models_dir)
    if not (folder / META_FILE).is_file():
        return (f"only the {', '.join(present)} model(s) of the four in {models_dir}, and no light heads" if present
                else f"no models in {models_dir}")
    try:
        meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
        current = isinstance(meta, dict) and meta.get("kind") == LightScorers.kind and meta.get("version") == VERSION
    except (OSError, ValueError) as exc:
        return f"the light heads in {folder} are damaged ({exc})".splitlines()[0]
    return None if current else f"the light heads in {folder} are of another kind or version"


def replacing(models_dir: str | Path) -> tuple[str, ...]:
    """The stages whose fine-tuned model in ``models_dir`` answers instead of a light head."""
    return tuple(task for task in fine_tuned(models_dir) if task in CROSS_ENCODED)


def light_kind(trained: Sequence[str] | Mapping[str, Any]) -> str:
    """The system's name: ``light``, or ``light + trained stance`` (and so on) for the stages
    a fine-tuned model answers."""
    return "light" + (f" + trained {', '.join(t for t in CROSS_ENCODED if t in trained)}" if trained else "")
