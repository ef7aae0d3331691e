"""Light heads: every judgement of the pipeline from frozen MiniLM embeddings, in minutes.

The fine-tuned cross-encoders of ``perspectrum train`` take over an hour on a CPU, so a
fresh machine without them would have no answer. ``perspectrum.light_training`` fits a
small scikit-learn classifier per stage on features of the bi-encoder embeddings the
dense indexes already store, so only the claims and cluster queries are encoded, and the
whole job (fit, score dev, tune) took 98 s on 2 cores for all of PERSPECTRUM, most of it the
evidence ranker (eval/results/light_heads_dev.json). Cut-offs are tuned on dev with the grids and metrics of the trained
models; the test split is never read. This module is what answers at run time; fitting
and tuning live in :mod:`perspectrum.light_training`. A fine-tuned relevance, stance or
equivalence model in ``models/`` answers for its stage in place of the head (``perspectrum
train stance --fast``).

- relevance: logistic regression on the (claim, perspective) pair features
  ``[u ⊙ v, |u − v|, cos]``, which a linear model can weigh dimension by dimension;
- stance: the same plus the perspective's own vector, whose wording ("should not",
  "harms") carries stance whatever the claim (dev macro-F1 62.6 against 59.6 without);
- equivalence: pair features of the two perspectives plus how each relates to the claim,
  since two paraphrases sit at the same distance from it (dev T3 F1 57.7 against 55.2);
- evidence: the evidence ranker of the fine-tuned models (:mod:`perspectrum.ranker`),
  which is gradient-boosted trees on retrieval features, not a fine-tuned model: how a
  paragraph and its best sentence fit the cluster *compared with the claim's other
  clusters* (dev T4 F1 60.3 on gold clusters, ``eval/results/light_heads_dev.json``, against 52.5
  for the earlier light head on nine of its columns without the sentence pool,
  ``eval/results/light_evidence_featurizer_dev.json``);
- windows: the ranker's window verifier, fitted with it (see :mod:`perspectrum.ranker`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perspectrum.data import Pool
from perspectrum.errors import PerspectrumError
from perspectrum.index import IndexStore
from perspectrum.ranker import DEPTH, Debate, EvidenceRanker, Featurizer, Key, WindowJob
from perspectrum.scorers import (CROSS_ENCODED, STAGES, Pair, Triple, fine_tuned, merge_pipeline_file, model_scores,
                                 model_settings)

HEADS_FILE = "heads.joblib"
META_FILE = "light.json"
#: Heads saved by another version are fitted again (2: the evidence ranker replaced a head;
#: 3: the ranker carries a window verifier).
VERSION = 3
#: Dev tuning restricted to what the pipeline applies (see :mod:`perspectrum.scorers`).
ONLY: dict[str, dict[str, Any]] = {"stance": {"centre": False}, "equivalence": {"method": "average"},
                                   "evidence": {"weight": 1.0, "aggregate": "max"}}
#: The tuned keys each stage keeps in :attr:`LightScorers.settings`.
SETTING_KEYS = {"relevance": ("weight", "relative", "threshold", "k", "min_keep"), "stance": ("threshold",),
                "equivalence": ("weight", "threshold"), "evidence": ("relative", "threshold", "k", "min_keep")}


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


class StaleHeads(PerspectrumError):
    """Light heads made by another version or for another encoder: refit them (the
    pipeline does, saying so), since their inputs no longer mean what they learned."""


def _embedder(store: IndexStore, texts: Sequence[str]) -> Callable[[Sequence[str]], np.ndarray]:
    """Encode each distinct text once; return a lookup from texts to their vectors."""
    distinct = list(dict.fromkeys(texts))
    vectors = store.encoder.encode(distinct) if distinct else np.zeros((0, 0), dtype=np.float32)
    row = {t: n for n, t in enumerate(distinct)}
    return lambda wanted: vectors[[row[t] for t in wanted]]


def probability(head: Any, features: np.ndarray) -> np.ndarray:
    return head.predict_proba(features)[:, 1] if len(features) else np.zeros(0)


class LightScorers:
    """The :class:`perspectrum.scorers.Scorers` of fitted light heads.

    Args:
        heads: the fitted classifiers, one per stage of :data:`perspectrum.scorers.CROSS_ENCODED`.
        ranker: the fitted evidence ranker.
        settings: the dev-tuned cut-offs (schema in :mod:`perspectrum.scorers`).
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
        """Read heads saved by :func:`perspectrum.light_training.train_light`, with the
        fine-tuned relevance, stance or equivalence models ``models_dir`` holds in their place.

        ``heads.joblib`` is a pickle: load only heads you trained.
        """
        import joblib

        folder = Path(folder)
        if not (folder / META_FILE).is_file() or not (folder / HEADS_FILE).is_file():
            raise PerspectrumError(f"no light heads in {folder} ({META_FILE} or {HEADS_FILE} is missing)")
        try:
            meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
            if meta.get("kind") != LightScorers.kind or meta.get("version") != VERSION:
                raise StaleHeads(f"the light heads in {folder} are of another kind or version")
            settings = {stage: {k: meta["settings"][stage][k] for k in SETTING_KEYS[stage]} for stage in STAGES}
            saved = joblib.load(folder / HEADS_FILE)
            heads = {stage: saved[stage] for stage in CROSS_ENCODED}
            ranker = EvidenceRanker.load(folder)
        except StaleHeads:
            raise
        except Exception as exc:  # a damaged pickle can raise nearly anything; all mean the same
            raise PerspectrumError(f"the light heads in {folder} are corrupt ({type(exc).__name__}): "
                                   "delete the folder to have them fitted again") from None
        if meta.get("encoder") != store.encoder.identity:
            raise StaleHeads(f"the light heads in {folder} were trained on another encoder's "
                             f"embeddings ({meta.get('encoder')})")
        trained = {}
        if models_dir is not None:
            from perspectrum.models import load_task, read_meta

            for task in replacing(models_dir):
                trained[task] = load_task(models_dir, task)
                settings[task] = model_settings(task, read_meta(models_dir, task))
        merge_pipeline_file(settings, folder)
        return cls(heads, ranker, settings, store, evidence, trained)


def replacing(models_dir: str | Path) -> tuple[str, ...]:
    """The stages whose fine-tuned model in ``models_dir`` answers instead of a light head."""
    return tuple(task for task in fine_tuned(models_dir) if task in CROSS_ENCODED)


def light_kind(trained: Sequence[str] | Mapping[str, Any]) -> str:
    """The system's name: ``light``, or ``light + trained stance`` (and so on) for the stages
    a fine-tuned model answers."""
    return "light" + (f" + trained {', '.join(t for t in CROSS_ENCODED if t in trained)}" if trained else "")
