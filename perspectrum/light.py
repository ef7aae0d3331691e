"""Light heads: every judgement of the pipeline from frozen MiniLM embeddings, in minutes.

The fine-tuned cross-encoders of ``perspectrum train`` take hours on a CPU, so a fresh
machine without them would have no answer. ``perspectrum.light_training`` fits one small
scikit-learn classifier per stage on features of the bi-encoder embeddings the dense
indexes already store, so only the claims are encoded, and the whole job (fit, score
dev, tune) takes about 40 s on 2 cores for all of PERSPECTRUM. Cut-offs are tuned on dev with the
grids and metrics of the trained models; the test split is never read. This module
is what answers at run time; fitting and tuning live in :mod:`perspectrum.light_training`.

- relevance: logistic regression on the (claim, perspective) pair features
  ``[u ⊙ v, |u − v|, cos]``, which a linear model can weigh dimension by dimension;
- stance: the same plus the perspective's own vector, whose wording ("should not",
  "harms") carries stance whatever the claim (dev macro-F1 62.6 against 59.6 without);
- equivalence: pair features of the two perspectives plus how each relates to the claim,
  since two paraphrases sit at the same distance from it (dev T3 F1 57.7 against 55.2);
- evidence: gradient-boosted trees on how a retrieved paragraph fits its cluster
  *compared with the claim's other clusters*: 35 % of a cluster's hybrid top-20 is gold
  evidence for a sibling cluster, which similarity to one cluster alone cannot tell apart;
- windows: untrained mean sentence cosine (see :mod:`perspectrum.highlight`).
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
from perspectrum.highlight import SentenceWindows
from perspectrum.index import IndexStore
from perspectrum.ranker import DEPTH, Debate, Featurizer, Key
from perspectrum.scorers import STAGES, Pair, Triple, merge_pipeline_file

HEADS_FILE = "heads.joblib"
META_FILE = "light.json"
#: The columns of :class:`perspectrum.ranker.Featurizer` the evidence head reads: the ranker's
#: own features that need no sentence pool ("comp" = this cluster's value minus the best sibling's).
EVIDENCE_FEATURES = ("cos", "cos_comp", "persp_cos", "persp_comp", "claim_cos", "rrf", "rrf_comp", "rank", "in_runs")
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


def evidence_featurizer(store: IndexStore, evidence: Pool, show_progress: bool = False) -> Featurizer:
    """The ranker's featurizer restricted to :data:`EVIDENCE_FEATURES`, searching with cluster
    centroids: dev recall@20 of gold evidence is the same as with the joined text encoded
    (83.0 % against 82.3 %), and no long cluster text is encoded."""
    return Featurizer(store, evidence, show_progress, columns=EVIDENCE_FEATURES, dense_query="centroid")


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
        heads: the fitted classifiers, one per stage of :data:`perspectrum.scorers.STAGES`.
        settings: the dev-tuned cut-offs (schema in :mod:`perspectrum.scorers`).
        store: gives the encoder and the evidence pool's indexes.
        evidence: the pool :meth:`evidence` retrieves from.

    Safe from several threads: predicting is read-only, and the evidence indexes are
    opened once, on first use, under a lock.
    """

    kind = "light"

    def __init__(self, heads: Mapping[str, Any], settings: dict[str, dict[str, Any]], store: IndexStore,
                 evidence: Pool) -> None:
        self.heads = dict(heads)
        self.settings = settings
        self.store = store
        self.evidence_pool = evidence
        self._featurizer: Featurizer | None = None
        self._lock = threading.Lock()

    def featurizer(self) -> Featurizer:
        """The evidence featurizer (its indexes opened, or built, once)."""
        with self._lock:
            if self._featurizer is None:
                self._featurizer = evidence_featurizer(self.store, self.evidence_pool)
            return self._featurizer

    def _pairs(self, stage: str, pairs: Sequence[Pair], features: Callable[..., np.ndarray]) -> np.ndarray:
        if not pairs:
            return np.zeros(0)
        embed = _embedder(self.store, [t for pair in pairs for t in pair])
        return probability(self.heads[stage], features(embed([c for c, _ in pairs]), embed([p for _, p in pairs])))

    def relevance(self, pairs: Sequence[Pair]) -> np.ndarray:
        return self._pairs("relevance", pairs, pair_features)

    def stance(self, pairs: Sequence[Pair]) -> np.ndarray:
        return self._pairs("stance", pairs, stance_features)

    def equivalence(self, triples: Sequence[Triple]) -> np.ndarray:
        if not triples:
            return np.zeros(0)
        embed = _embedder(self.store, [t for triple in triples for t in triple])
        claims, first, second = (embed([t[n] for t in triples]) for n in range(3))
        return probability(self.heads["equivalence"], equivalence_features(claims, first, second))

    def evidence(self, debates: Mapping[Any, Debate], depth: int = DEPTH) -> tuple[list[Key], np.ndarray]:
        table = self.featurizer().table(debates, depth)
        return table.keys, probability(self.heads["evidence"], table.features)

    def windows(self, triples: Sequence[Triple]) -> np.ndarray:
        """Mean sentence cosine (:mod:`perspectrum.highlight`), sentences encoded as needed:
        the light path does not build the sentence index."""
        return SentenceWindows(self.store.encoder).score(triples)

    @classmethod
    def load(cls, folder: str | Path, store: IndexStore, evidence: Pool) -> LightScorers:
        """Read heads saved by :func:`perspectrum.light_training.train_light`.

        ``heads.joblib`` is a pickle: load only heads you trained.
        """
        import joblib

        folder = Path(folder)
        if not (folder / META_FILE).is_file() or not (folder / HEADS_FILE).is_file():
            raise PerspectrumError(f"no light heads in {folder} ({META_FILE} or {HEADS_FILE} is missing)")
        try:
            meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
            settings = {stage: {k: meta["settings"][stage][k] for k in SETTING_KEYS[stage]} for stage in STAGES}
            saved = joblib.load(folder / HEADS_FILE)
            heads = {stage: saved[stage] for stage in STAGES}
            features = tuple(saved["evidence_features"])
        except Exception as exc:  # a damaged pickle can raise nearly anything; all mean the same
            raise PerspectrumError(f"the light heads in {folder} are corrupt ({type(exc).__name__}): "
                                   "delete the folder to have them fitted again") from None
        if meta.get("kind") != LightScorers.kind or features != EVIDENCE_FEATURES:
            raise StaleHeads(f"the light heads in {folder} are of another kind or version")
        if meta.get("encoder") != store.encoder.identity:
            raise StaleHeads(f"the light heads in {folder} were trained on another encoder's "
                             f"embeddings ({meta.get('encoder')})")
        merge_pipeline_file(settings, folder)
        return cls(heads, settings, store, evidence)
