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
- windows: untrained cosine (see :meth:`LightScorers.windows`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from perspectrum.data import Pool
from perspectrum.errors import PerspectrumError
from perspectrum.index import DenseIndex, IndexStore
from perspectrum.ranker import DEPTH, Debate, Key
from perspectrum.scorers import STAGES, Pair, Triple, merge_pipeline_file
from perspectrum.search import Hit, HybridSearcher, Searcher

HEADS_FILE = "heads.joblib"
META_FILE = "light.json"
#: Per (cluster, candidate paragraph); "margin" = this cluster's value minus the best sibling's.
EVIDENCE_FEATURES = ("cos", "cos_margin", "best", "best_margin", "claim_cos", "rrf", "rrf_margin", "rank", "in_runs")
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


def _margins(matrix: np.ndarray) -> np.ndarray:
    """Each entry of a (candidates × clusters) matrix minus the best other entry of its row."""
    if matrix.shape[1] < 2:
        return np.zeros_like(matrix)
    top = -np.partition(-matrix, 1, axis=1)[:, :2]
    return matrix - np.where(matrix >= top[:, :1], top[:, 1:], top[:, :1])


def _centroid(paraphrases: np.ndarray) -> np.ndarray:
    mean = paraphrases.mean(axis=0)
    return mean / max(float(np.linalg.norm(mean)), 1e-12)


#: One debate for :func:`evidence_rows`: its key, the claim's unit vector, and per cluster
#: its paraphrases with their unit vectors (one row each).
DebateVectors = tuple[Any, np.ndarray, list[tuple[list[str], np.ndarray]]]


def evidence_rows(lexical: Searcher, dense: DenseIndex, debates: Sequence[DebateVectors],
                  top: int = DEPTH) -> tuple[list[Key], np.ndarray]:
    """Each cluster's hybrid top-``top`` paragraphs as (debate key, cluster, paragraph id), with features.

    BM25 reads the paraphrases joined by spaces (as :class:`perspectrum.ranker.Featurizer`);
    the dense side searches with the centroid of the paraphrases' vectors instead of an
    encoding of that long text. Dev recall@20 of gold evidence is the same (83.0 % against
    82.3 %), and training then encodes no cluster query (about a minute saved on 2 cores).
    """
    clusters = [cluster for _, _, own in debates for cluster in own]
    hybrid = HybridSearcher(lexical, dense)
    depth = max(top, hybrid.params.depth)
    runs = iter(hybrid.fuse(lexical.batch_search([" ".join(texts) for texts, _ in clusters], depth),
                            dense.search_vectors(np.array([_centroid(v) for _, v in clusters]), depth), top)
                if clusters else ())
    keys: list[Key] = []
    blocks = [np.zeros((0, len(EVIDENCE_FEATURES)))]
    for key, claim, own in debates:
        found, features = _debate_features(dense, claim, [v for _, v in own], [next(runs) for _ in own])
        keys += [(key, i, d) for i, d in found]
        blocks.append(features)
    return keys, np.vstack(blocks)


def _debate_features(paragraphs: DenseIndex, claim: np.ndarray, clusters: Sequence[np.ndarray],
                   runs: Sequence[list[Hit]]) -> tuple[list[tuple[int, Any]], np.ndarray]:
    """One debate's (cluster index, paragraph id) candidates and their :data:`EVIDENCE_FEATURES`.

    Args:
        paragraphs: the evidence pool's dense index (its stored paragraph vectors).
        claim: the claim's unit vector.
        clusters: per cluster, its paraphrases' unit vectors (one row each).
        runs: per cluster, its hybrid hits.
    """
    candidates = list(dict.fromkeys(h.doc_id for run in runs for h in run))
    if not candidates:
        return [], np.zeros((0, len(EVIDENCE_FEATURES)))
    column = {d: n for n, d in enumerate(candidates)}
    vectors = paragraphs.vectors(candidates)
    cos = vectors @ np.array([_centroid(c) for c in clusters]).T
    best = np.column_stack([(vectors @ c.T).max(axis=1) for c in clusters])
    rrf = np.zeros_like(cos)
    for i, run in enumerate(runs):
        for hit in run:
            rrf[column[hit.doc_id], i] = hit.score / run[0].score
    claim_cos, in_runs = vectors @ claim, (rrf > 0).sum(axis=1)
    cos_margin, best_margin, rrf_margin = _margins(cos), _margins(best), _margins(rrf)
    keys, rows = [], []
    for i, run in enumerate(runs):
        for rank, hit in enumerate(run):
            c = column[hit.doc_id]
            keys.append((i, hit.doc_id))
            rows.append([cos[c, i], cos_margin[c, i], best[c, i], best_margin[c, i], claim_cos[c], rrf[c, i],
                         rrf_margin[c, i], rank, in_runs[c]])
    return keys, np.array(rows, dtype=np.float64)


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
        self._indexes: tuple[Any, Any] | None = None
        self._lock = threading.Lock()

    def _evidence_indexes(self) -> tuple[Any, Any]:
        """The evidence pool's (BM25, dense) indexes, opened (or built) once."""
        with self._lock:
            if self._indexes is None:
                self._indexes = (self.store.open(self.evidence_pool, "bm25"),
                                 self.store.open(self.evidence_pool, "dense"))
            return self._indexes

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
        bm25, dense = self._evidence_indexes()
        embed = _embedder(self.store, [t for d in debates.values() for t in (d.claim, *chain(*d.clusters))])
        rows = [(key, embed([d.claim])[0], [(list(c), embed(c)) for c in d.clusters]) for key, d in debates.items()]
        keys, features = evidence_rows(bm25, dense, rows, depth)
        return keys, probability(self.heads["evidence"], features)

    def windows(self, triples: Sequence[Triple]) -> np.ndarray:
        """(cos(window, perspective) + 1) / 2, untrained.

        The pipeline keeps paragraphs by :meth:`evidence` alone; windows only choose
        which passage of a kept paragraph to show, a ranking inside one paragraph that
        needs no calibrated probability. PERSPECTRUM labels whole paragraphs, so there
        is no window-level label to train on anyway.
        """
        if not triples:
            return np.zeros(0)
        embed = _embedder(self.store, [t for _, p, w in triples for t in (p, w)])
        cos = _cosines(embed([p for _, p, _ in triples]), embed([w for _, _, w in triples]))[:, 0]
        return np.clip((cos + 1) / 2, 0.0, 1.0)

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
                                   "train them again") from None
        if meta.get("kind") != LightScorers.kind or features != EVIDENCE_FEATURES:
            raise PerspectrumError(f"{folder} holds heads of another kind or version: train them again")
        if meta.get("encoder") != store.encoder.identity:
            raise PerspectrumError(f"the light heads in {folder} were trained on another encoder's "
                                   f"embeddings ({meta.get('encoder')}): train them again")
        merge_pipeline_file(settings, folder)
        return cls(heads, settings, store, evidence)
