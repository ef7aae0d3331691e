"""Light heads: every judgement of the pipeline from frozen MiniLM embeddings, in minutes.

The fine-tuned cross-encoders of ``perspectrum train`` take hours on a CPU, so a fresh
machine without them would have no answer. :func:`train_light` fits one small
scikit-learn classifier per stage on features of the bi-encoder embeddings the dense
indexes already store, so only the claims are encoded, and the whole job (fit, score
dev, tune) takes about 40 s on 2 cores for all of PERSPECTRUM. Cut-offs are tuned on dev with the
grids and metrics of the trained models (:func:`perspectrum.eval.trained.tune`); the
test split is never read.

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

import hashlib
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, combinations
from pathlib import Path
from typing import Any

import numpy as np

from perspectrum._io import atomic_folder
from perspectrum._progress import progress
from perspectrum.data import Claim, Dataset, Pool
from perspectrum.errors import PerspectrumError
from perspectrum.eval.ir import percent
from perspectrum.eval.trained import RELEVANCE_DEPTH, Matrices, Scored, tune
from perspectrum.index import DenseIndex, IndexStore
from perspectrum.ranker import DEPTH, Debate, Key
from perspectrum.scorers import STAGES, Pair, Triple
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


def evidence_rows(lexical: Searcher, dense: DenseIndex,
                  debates: Sequence[DebateVectors]) -> tuple[list[Key], np.ndarray]:
    """Each cluster's hybrid top-:data:`DEPTH` paragraphs as (debate key, cluster, paragraph id), with features.

    BM25 reads the paraphrases joined by spaces (as :class:`perspectrum.ranker.Featurizer`);
    the dense side searches with the centroid of the paraphrases' vectors instead of an
    encoding of that long text. Dev recall@20 of gold evidence is the same (83.0 % against
    82.3 %), and training then encodes no cluster query (about a minute saved on 2 cores).
    """
    clusters = [cluster for _, _, own in debates for cluster in own]
    hybrid = HybridSearcher(lexical, dense)
    depth = max(DEPTH, hybrid.params.depth)
    runs = iter(hybrid.fuse(lexical.batch_search([" ".join(texts) for texts, _ in clusters], depth),
                            dense.search_vectors(np.array([_centroid(v) for _, v in clusters]), depth), DEPTH)
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


def _probability(head: Any, features: np.ndarray) -> np.ndarray:
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
        return _probability(self.heads[stage], features(embed([c for c, _ in pairs]), embed([p for _, p in pairs])))

    def relevance(self, pairs: Sequence[Pair]) -> np.ndarray:
        return self._pairs("relevance", pairs, pair_features)

    def stance(self, pairs: Sequence[Pair]) -> np.ndarray:
        return self._pairs("stance", pairs, stance_features)

    def equivalence(self, triples: Sequence[Triple]) -> np.ndarray:
        if not triples:
            return np.zeros(0)
        embed = _embedder(self.store, [t for triple in triples for t in triple])
        claims, first, second = (embed([t[n] for t in triples]) for n in range(3))
        return _probability(self.heads["equivalence"], equivalence_features(claims, first, second))

    def evidence(self, debates: Mapping[Any, Debate]) -> tuple[list[Key], np.ndarray]:
        bm25, dense = self._evidence_indexes()
        embed = _embedder(self.store, [t for d in debates.values() for t in (d.claim, *chain(*d.clusters))])
        rows = [(key, embed([d.claim])[0], [(list(c), embed(c)) for c in d.clusters]) for key, d in debates.items()]
        keys, features = evidence_rows(bm25, dense, rows)
        return keys, _probability(self.heads["evidence"], features)

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
        """Read heads saved by :func:`train_light`. ``heads.joblib`` is a pickle: load only heads you trained."""
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
        return cls(heads, settings, store, evidence)


# ------------------------------------------------------------------------ training
def _logistic(seed: int) -> Any:
    """Standardised features (raw products are ~1/384 each), then a well-regularised
    logistic regression (C chosen on dev; lbfgs is deterministic)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(C=0.05, max_iter=500, random_state=seed))


def _trees(seed: int) -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(max_iter=300, learning_rate=0.05, early_stopping=False, random_state=seed)


def _fit(make: Callable[[int], Any], seed: int, features: np.ndarray, labels: Sequence[bool], stage: str) -> Any:
    labels = np.asarray(labels, dtype=bool)
    if labels.all() or not labels.any():
        raise PerspectrumError(f"the light {stage} head needs both positive and negative training examples")
    return make(seed).fit(features, labels)


@dataclass
class _Inputs:
    """What every head is built from: the dataset, its splits and their vectors."""

    dataset: Dataset
    train: list[Claim]
    dev: list[Claim]
    claims: dict[int, np.ndarray]
    perspectives: DenseIndex

    def pairs(self, split: Sequence[Claim], pick: Callable[[Claim], Sequence[int]],
              features: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> tuple[list[tuple[int, int]], np.ndarray]:
        """(claim id, perspective id) for the perspectives ``pick`` chooses per claim, with features."""
        keys = [(c.cid, pid) for c in split for pid in pick(c)]
        return keys, features(np.array([self.claims[cid] for cid, _ in keys]),
                              self.perspectives.vectors([pid for _, pid in keys]))


def _relevance(inputs: _Inputs, seed: int) -> tuple[Any, Scored]:
    """Fit on gold ∪ each train claim's dense top-50; score each dev claim's top-50, with cosines.

    The runs are :func:`perspectrum.eval.trained.relevance_candidates`' (the claim's dense
    top-50), searched with the claim vectors already encoded.
    """
    dataset = inputs.dataset
    claims = [*inputs.train, *inputs.dev]
    runs = dict(zip((c.cid for c in claims), inputs.perspectives.search_vectors(
        np.array([inputs.claims[c.cid] for c in claims]), RELEVANCE_DEPTH)))
    keys, x = inputs.pairs(inputs.train, lambda c: list(dict.fromkeys([*sorted(c.gold_pids),
                                                                       *(h.doc_id for h in runs[c.cid])])),
                           pair_features)
    head = _fit(_logistic, seed, x, [pid in dataset.claims[cid].gold_pids for cid, pid in keys], "relevance")
    keys, x = inputs.pairs(inputs.dev, lambda c: [h.doc_id for h in runs[c.cid]], pair_features)
    cosine = {(c.cid, h.doc_id): h.score for c in inputs.dev for h in runs[c.cid]}
    groups: dict[int, list[tuple[int, float, float]]] = {c.cid: [] for c in inputs.dev}
    for (cid, pid), p in zip(keys, _probability(head, x)):
        groups[cid].append((pid, float(p), cosine[(cid, pid)]))
    return head, Scored(groups)


def _stance(inputs: _Inputs, seed: int) -> tuple[Any, dict[tuple[int, int], float]]:
    """Every gold (claim, perspective) pair, labelled by whether its cluster supports the claim."""
    def gold(claim: Claim) -> list[int]:
        return [pid for k in claim.clusters for pid in k.pids]

    keys, x = inputs.pairs(inputs.train, gold, stance_features)
    support = {(c.cid, pid): k.stance == "SUPPORT" for c in inputs.train for k in c.clusters for pid in k.pids}
    head = _fit(_logistic, seed, x, [support[key] for key in keys], "stance")
    keys, x = inputs.pairs(inputs.dev, gold, stance_features)
    return head, {key: float(p) for key, p in zip(keys, _probability(head, x))}


def _equivalence(inputs: _Inputs, seed: int) -> tuple[Any, Matrices]:
    """Every pair of a claim's gold perspectives, labelled by whether one cluster holds both."""
    def pairs(split: Sequence[Claim]) -> tuple[list[tuple[int, int, int]], np.ndarray]:
        keys = [(c.cid, p, q) for c in split for p, q in combinations(sorted(c.gold_pids), 2)]
        vectors = inputs.perspectives.vectors
        return keys, equivalence_features(np.array([inputs.claims[cid] for cid, _, _ in keys]),
                                          vectors([p for _, p, _ in keys]), vectors([q for _, _, q in keys]))

    keys, x = pairs(inputs.train)
    same = [any({p, q} <= set(k.pids) for k in inputs.dataset.claims[cid].clusters) for cid, p, q in keys]
    head = _fit(_logistic, seed, x, same, "equivalence")
    keys, x = pairs(inputs.dev)
    probability = dict(zip(keys, _probability(head, x)))
    matrices: Matrices = {}
    for claim in inputs.dev:
        pids = sorted(claim.gold_pids)
        model = np.eye(len(pids), dtype=np.float32)
        for i, j in combinations(range(len(pids)), 2):
            model[i, j] = model[j, i] = probability[(claim.cid, pids[i], pids[j])]
        vectors = inputs.perspectives.vectors(pids)
        matrices[claim.cid] = (pids, model, vectors @ vectors.T)
    return head, matrices


def _evidence(inputs: _Inputs, bm25: Searcher, dense: DenseIndex, seed: int) -> tuple[Any, dict[str, Scored]]:
    """Each gold cluster's candidates, labelled by the cluster's gold evidence.

    Every cluster of a dev claim takes part in the sibling comparisons; only those with
    gold evidence are scored, as T4 is.
    """
    dataset = inputs.dataset

    def table(split: Sequence[Claim]) -> tuple[list[Key], np.ndarray]:
        return evidence_rows(bm25, dense, [
            (c.cid, inputs.claims[c.cid], [([dataset.perspectives[p].text for p in k.pids],
                                            inputs.perspectives.vectors(list(k.pids))) for k in c.clusters])
            for c in split])

    keys, x = table(inputs.train)
    head = _fit(_trees, seed, x, [d in dataset.claims[cid].clusters[i].evidence for cid, i, d in keys], "evidence")
    keys, x = table(inputs.dev)
    groups: dict[tuple[int, int], list[tuple[Any, float, float]]] = {}
    for (cid, i, d), p in zip(keys, _probability(head, x)):
        if dataset.claims[cid].clusters[i].evidence:
            groups.setdefault((cid, i), []).append((d, float(p), float(p)))
    return head, {"max": Scored(groups)}


def _fingerprint(dataset: Dataset, claims: Sequence[Claim]) -> str:
    """SHA-256 of what training read: the claims with their gold labels, and both pools."""
    labels = [[c.cid, c.text, c.split, [[k.pids, k.stance, k.evidence] for k in c.clusters]] for c in claims]
    digest = hashlib.sha256(json.dumps(labels).encode())
    for name in ("perspectives", "evidence"):
        digest.update(Pool.from_dataset(dataset, name).fingerprint.encode())
    return digest.hexdigest()


def train_light(dataset: Dataset, store: IndexStore, folder: str | Path, seed: int = 13,
                show_progress: bool = False) -> LightScorers:
    """Fit the four heads on train, tune their cut-offs on dev, and save them to ``folder``.

    Training examples: relevance, every gold perspective and every non-gold one of the
    claim's dense top-50; stance, every gold pair (label: its cluster supports the claim);
    equivalence, every pair of a claim's gold perspectives (label: same cluster);
    evidence, each gold cluster's hybrid top-20 (label: that cluster's gold evidence).
    Deterministic for a seed. ``folder`` gets ``heads.joblib`` (a pickle) and
    ``light.json`` (settings, dev metrics, seed, seconds, encoder and data identity),
    swapped in whole.
    """
    import joblib
    import sklearn

    started = time.perf_counter()
    evidence_pool = Pool.from_dataset(dataset, "evidence")
    train, dev = dataset.split("train"), dataset.split("dev")
    if not train or not dev:
        raise PerspectrumError("the light heads need claims in both the train and the dev split")
    bm25, dense = (store.open(evidence_pool, kind, show_progress=show_progress) for kind in ("bm25", "dense"))
    perspectives = store.open(Pool.from_dataset(dataset, "perspectives"), "dense", show_progress=show_progress)
    heads: dict[str, Any] = {}
    settings: dict[str, dict[str, Any]] = {}
    metrics: dict[str, dict[str, float]] = {}
    with progress("light heads", 1 + 2 * len(STAGES), enabled=show_progress) as advance:
        advance(0, "encoding claims")
        vectors = store.encoder.encode([c.text for c in (*train, *dev)])
        inputs = _Inputs(dataset, train, dev, dict(zip((c.cid for c in (*train, *dev)), vectors)), perspectives)
        advance(1)
        fitters = {"relevance": _relevance, "stance": _stance, "equivalence": _equivalence,
                   "evidence": lambda i, s: _evidence(i, bm25, dense, s)}
        for stage in STAGES:
            advance(0, f"fitting {stage}")
            heads[stage], scores = fitters[stage](inputs, seed)
            advance(1, f"tuning {stage} on dev")
            setting, measured = tune(stage, dev, scores, only=ONLY.get(stage))
            settings[stage] = {k: setting[k] for k in SETTING_KEYS[stage]}
            metrics[stage] = percent(measured)
            advance(1)
    meta = {"kind": LightScorers.kind, "settings": settings, "dev": metrics, "seed": seed,
            "seconds": round(time.perf_counter() - started, 1), "encoder": store.encoder.identity,
            "data_fingerprint": _fingerprint(dataset, [*train, *dev]), "sklearn": sklearn.__version__,
            "claims": {"train": len(train), "dev": len(dev)}}

    def write(tmp: Path) -> None:
        joblib.dump({**heads, "evidence_features": EVIDENCE_FEATURES}, tmp / HEADS_FILE)
        (tmp / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")

    atomic_folder(folder, write)
    return LightScorers(heads, settings, store, evidence_pool)
