"""Which of a debate's retrieved paragraphs argue *this* perspective: the evidence ranker.

Evidence retrieval finds the right debate easily; the hard part is the perspective.
On dev, 35 % of a cluster's hybrid top-20 paragraphs are gold evidence for a
*sibling* cluster of the same claim, and a cross-encoder that sees one
(perspective, window) pair at a time cannot tell them apart (the window cross-encoder
of earlier versions scored 38 T4 F1 on dev). A paragraph usually argues one perspective, so the
ranker looks at every cluster of the claim at once and asks how much better the
paragraph fits this cluster than its siblings, by dense cosine (paragraph and best
sentence), BM25, and retrieval rank.

Two stages of gradient-boosted trees (fitted with scikit-learn's
``HistGradientBoostingClassifier`` by :mod:`perspectrum.train.fit_ranker`, deterministic
for a seed, and kept as the arrays of :mod:`perspectrum.models.trees`, so scoring imports no
scikit-learn and loading runs no pickle): the first scores (cluster, paragraph) pairs from these features; the second
adds how that score compares with the same paragraph's score for the sibling clusters
and with the cluster's other candidates. The second stage
is trained on out-of-fold first-stage scores (folds by claim), so it learns from
scores like those it will see on unseen claims.

A third forest, the window verifier, scores each 3-sentence window of a candidate for
the window ``discover`` highlights. PERSPECTRUM labels paragraphs, never windows, and a
window cross-encoder trained with every window of a gold paragraph positive learned
almost nothing (loss 0.688 against chance's 0.693). The verifier treats a gold paragraph
as a bag of windows: its positive is the window whose sentences come closest to the
cluster's paraphrases, its other windows are left out, and every window of a non-gold
candidate is a negative. It reads only the window (its sentences' cosines to this
cluster, to the best sibling cluster and to the claim, and where it sits), so its best
window also says on its own whether a paragraph states the perspective (dev ROC AUC of
gold against non-gold candidates in ``eval/results/windows_verifier_trained_dev.json``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from perspectrum._io import atomic_write
from perspectrum.data import Claim, Dataset, Pool
from perspectrum.errors import PerspectrumError
from perspectrum.index.store import IndexStore
from perspectrum.models.rules import EVIDENCE_STRIDE
from perspectrum.index.search import Hit, HybridSearcher
from perspectrum.index.sentence_vectors import SentenceVectors
from perspectrum.text.sentences import WINDOW, sentences, window_starts
from perspectrum.models.trees import Forest

#: Hybrid candidates per cluster (dev T4 F1 of the first stage: 57.0 at 20, 55.9 at 40).
DEPTH = 20
#: File of a fitted ranker inside ``models/evidence/``.
RANKER_FILE = "ranker.npz"

#: Per (cluster, paragraph). "comp" = this cluster's value minus the best sibling cluster's.
FEATURES = (
    "cos", "cos_comp", "cos_rank", "claim_cos", "rrf", "rank", "bm25", "cos_gap", "in_runs", "clusters",
    "bm25_comp", "bm25_rank", "rrf_comp", "chars",
    "sent_cos", "sent_comp", "first_cos", "first_comp", "persp_cos", "persp_comp", "sent_gap",
)
#: Added by the second stage, from first-stage scores p.
SECOND = ("p", "p_comp", "siblings", "p_gap", "p_rank")
#: Per window (every :data:`perspectrum.models.rules.EVIDENCE_STRIDE` sentences, as ``discover`` reads
#: them). "own": each sentence's best cosine to this cluster's paraphrases, averaged or maxed
#: over the window; "comp": minus the best sibling cluster's; "gap" and "rank" against the
#: paragraph's other windows; position as a share of the paragraph's sentences.
WINDOW_FEATURES = ("own_mean", "own_max", "mean_comp", "max_comp", "claim_mean", "position", "first",
                   "mean_gap", "mean_rank", "windows")
#: Texts embedded before, kept by a featurizer (a claim's paraphrases are read by the ranker
#: and again by the verifier); cleared when it grows past this.
_MEMO_MAX = 50_000

#: One candidate: (claim key, cluster index, paragraph id).
Key = tuple[Any, int, int]


@dataclass(frozen=True)
class Debate:
    """A claim and its perspective clusters (each a tuple of paraphrases)."""

    claim: str
    clusters: tuple[tuple[str, ...], ...]

    @classmethod
    def of(cls, dataset: Dataset, claim: Claim) -> Debate:
        """A dataset claim with its gold clusters."""
        return cls(claim.text, tuple(tuple(dataset.perspectives[p].text for p in c.pids) for c in claim.clusters))


@dataclass
class Table:
    """Candidates and their features, one row per (claim key, cluster, paragraph)."""

    keys: list[Key]
    features: np.ndarray
    hits: dict[tuple[Any, int], list[Hit]]


#: One paragraph whose windows the verifier reads: (debate, cluster index, paragraph id).
WindowJob = tuple[Debate, int, Any]


def _unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.maximum(np.linalg.norm(vectors, axis=-1, keepdims=True), 1e-12)


def _versus_siblings(matrix: np.ndarray, own: int) -> tuple[np.ndarray, np.ndarray]:
    """Column ``own`` of a (candidates × clusters) matrix, and its margin over the best other column."""
    mine = matrix[:, own]
    others = np.delete(matrix, own, axis=1)
    return mine, mine - (others.max(axis=1) if others.shape[1] else 0.0)


class Featurizer:
    """Retrieves each cluster's candidate paragraphs and computes the :data:`FEATURES`.

    Args:
        store: where the evidence pool's BM25 and dense indexes live (built if missing), and
            its paragraphs' sentence vectors are kept
            (:class:`~perspectrum.index.sentence_vectors.SentenceVectors`, encoded as read).
        evidence: the evidence pool.
    """

    @classmethod
    def for_dataset(cls, store: IndexStore, dataset: Dataset, show_progress: bool = False) -> Featurizer:
        """The ranker's featurizer over PERSPECTRUM's own evidence pool."""
        return cls(store, Pool.from_dataset(dataset, "evidence"), show_progress)

    def __init__(self, store: IndexStore, evidence: Pool, show_progress: bool = False) -> None:
        self.bm25 = store.open(evidence, "bm25", show_progress=show_progress)
        self.dense = store.open(evidence, "dense", show_progress=show_progress)
        self.hybrid = HybridSearcher(self.bm25, self.dense)
        self.encoder = store.encoder
        self.texts = dict(zip(evidence.ids, evidence.texts))
        self._memo: dict[str, np.ndarray] = {}
        #: Each paragraph's sentence vectors, encoded when first read and kept on disk.
        self.sentence_vectors = SentenceVectors(store, evidence)

    def table(self, debates: Mapping[Any, Debate], depth: int = DEPTH,
              embed: Callable[[Sequence[str]], np.ndarray] | None = None) -> Table:
        """Every cluster's hybrid top-``depth`` paragraphs (paraphrases as the query) with features.

        ``embed`` gives unit vectors of texts (default: the store's encoder); training
        passes vectors it already has.
        """
        embed = embed or self.embed
        order = list(debates)
        queries = {key: [" ".join(c) for c in debates[key].clusters] for key in order}
        flat = [(key, i, q) for key in order for i, q in enumerate(queries[key])]
        texts = [t for key in order for c in debates[key].clusters for t in c]
        vectors = iter(embed(texts) if texts else ())
        claims = dict(zip(order, embed([debates[k].claim for k in order]))) if order else {}
        perspectives = {key: [np.array([next(vectors) for _ in c]) for c in debates[key].clusters] for key in order}
        centroids = {key: _unit(np.array([p.mean(axis=0) for p in perspectives[key]])) for key in order
                     if perspectives[key]}
        found = self.hybrid.batch_search([q for _, _, q in flat], depth)
        hits = {(key, i): run for (key, i, _), run in zip(flat, found)}
        best_bm25 = [h[0].score if h else 0.0 for h in self.bm25.batch_search([q for _, _, q in flat], 1)]
        top_bm25 = {(key, i): s or 1.0 for (key, i, _), s in zip(flat, best_bm25)}
        keys: list[Key] = []
        blocks: list[np.ndarray] = []
        for key in order:
            clusters = debates[key].clusters
            runs_of = [hits[(key, j)] for j in range(len(clusters))]
            # every candidate of the claim, scored once by each cluster's query
            candidates = list(dict.fromkeys(h.doc_id for run in runs_of for h in run))
            column = {d: n for n, d in enumerate(candidates)}
            bm25 = (self.bm25.score(queries[key], candidates).T /
                    np.array([top_bm25[(key, j)] for j in range(len(clusters))])) if candidates else \
                np.zeros((0, len(clusters)))
            rrf = [{h.doc_id: h.score / run[0].score if run[0].score else 0.0 for h in run} for run in runs_of]
            for i, run in enumerate(runs_of):
                ids = [h.doc_id for h in run]
                if not ids:
                    continue
                rows = [column[d] for d in ids]
                blocks.append(self._features(i, ids, claims[key], perspectives[key], centroids[key], bm25[rows],
                                             np.array([[r.get(d, 0.0) for r in rrf] for d in ids])))
                keys += [(key, i, d) for d in ids]
        features = np.vstack(blocks) if blocks else np.zeros((0, len(FEATURES)))
        return Table(keys, features, hits)

    def _features(self, i: int, ids: list[int], claim: np.ndarray, perspectives: list[np.ndarray],
                  centroids: np.ndarray, bm25_all: np.ndarray, rrf_all: np.ndarray) -> np.ndarray:
        """The :data:`FEATURES` of cluster ``i``'s candidates ``ids``.

        ``bm25_all`` and ``rrf_all`` are (candidates × clusters): each cluster query's
        BM25 over its top score, and the fused score in each cluster's run over its top
        hit's (0 where that run lacks the paragraph). A margin ("comp") over the best
        sibling is the value itself when the claim has one cluster.
        """
        n_clusters = len(perspectives)
        paragraphs = self.dense.vectors(ids)
        cos_all = paragraphs @ centroids.T
        cos, cos_comp = _versus_siblings(cos_all, i)
        bm25, bm25_comp = _versus_siblings(bm25_all, i)
        rrf, rrf_comp = _versus_siblings(rrf_all, i)
        persp_all = np.array([[float((v @ p.T).max()) for p in perspectives] for v in paragraphs])
        persp, persp_comp = _versus_siblings(persp_all, i)
        columns = {
            "cos": cos, "cos_comp": cos_comp, "cos_rank": (cos_all > cos[:, None]).sum(axis=1),
            "claim_cos": paragraphs @ claim, "rrf": rrf, "rank": np.arange(len(ids)),
            "bm25": bm25, "cos_gap": cos - cos.max(),
            "in_runs": (rrf_all > 0).sum(axis=1), "clusters": np.full(len(ids), n_clusters),
            "bm25_comp": bm25_comp, "bm25_rank": (bm25_all > bm25[:, None]).sum(axis=1), "rrf_comp": rrf_comp,
            "chars": np.array([len(self.texts[d]) for d in ids]),
            "persp_cos": persp, "persp_comp": persp_comp,
        }
        sentence_vectors = self.sentence_vectors.of(ids)
        sent_all = np.array([[float((s @ p.T).max()) for p in perspectives] for s in sentence_vectors])
        first_all = np.array([[float((s[0] @ p.T).max()) for p in perspectives] for s in sentence_vectors])
        sent, sent_comp = _versus_siblings(sent_all, i)
        first, first_comp = _versus_siblings(first_all, i)
        columns.update({"sent_cos": sent, "sent_comp": sent_comp, "first_cos": first, "first_comp": first_comp,
                        "sent_gap": sent - sent.max()})
        return np.column_stack([columns[name] for name in FEATURES]).astype(np.float64)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of ``texts`` from the store's encoder, remembered: the verifier reads the
        paraphrases the ranker has just read. Texts are encoded together, exactly as given,
        unless every one is remembered, so a first call's vectors match the encoder's own.
        Reads go through one reference to the memo, so a thread that starts a fresh one
        cannot empty it under another's lookup."""
        memo = self._memo
        if all(t in memo for t in texts):
            return np.array([memo[t] for t in texts]).reshape(len(texts), -1)
        vectors = self.encoder.encode(list(texts))
        if len(memo) + len(texts) > _MEMO_MAX:
            memo = self._memo = {}
        memo.update(zip(texts, vectors))
        return vectors

    def windows(self, jobs: Sequence[WindowJob],
                embed: Callable[[Sequence[str]], np.ndarray] | None = None) -> list[np.ndarray]:
        """The :data:`WINDOW_FEATURES` of each job's windows, one row per window in the order of
        ``perspectrum.text.sentences.windows(paragraph, stride=EVIDENCE_STRIDE)``.

        Sentence vectors come from the sentence index; a paragraph it splits otherwise (or
        lacks: another pool's) has its sentences encoded. ``embed`` as for :meth:`table`.
        """
        embed = embed or self.embed
        texts = list(dict.fromkeys(t for debate, _, _ in jobs for t in (debate.claim, *_paraphrases(debate))))
        vectors = dict(zip(texts, embed(texts))) if texts else {}
        read: dict[tuple[Debate, Any], ParagraphWindows] = {}  # a paragraph is a candidate for several clusters
        out = []
        for debate, index, doc_id in jobs:
            if (debate, doc_id) not in read:
                clusters = [np.array([vectors[t] for t in cluster]) for cluster in debate.clusters]
                read[(debate, doc_id)] = ParagraphWindows.of(self._sentence_vectors(doc_id), clusters, vectors[debate.claim])
            out.append(read[(debate, doc_id)].features(index))
        return out

    def _sentence_vectors(self, doc_id: Any) -> np.ndarray:
        """The paragraph's sentences' unit vectors, in order."""
        parts = sentences(self.texts[doc_id])
        if str(doc_id) in self.sentence_vectors.split:
            kept = self.sentence_vectors.of([doc_id])[0]
            if len(kept) == len(parts):
                return kept
        return self.embed(parts)


def _paraphrases(debate: Debate) -> list[str]:
    return [t for cluster in debate.clusters for t in cluster]


@dataclass(frozen=True)
class ParagraphWindows:
    """One paragraph's windows read against every cluster of a debate, once: what the
    :data:`WINDOW_FEATURES` of any one cluster are computed from.

    Made by :meth:`of` from unit vectors: the paragraph's sentences in order, each
    cluster's paraphrases (one matrix per cluster), and the claim.
    """

    starts: list[int]
    count: int
    means: np.ndarray  # windows × clusters: mean over the window of each sentence's best cosine
    maxima: np.ndarray
    claim: np.ndarray  # per window: mean sentence cosine to the claim

    @classmethod
    def of(cls, sentence_vectors: np.ndarray, clusters: list[np.ndarray], claim: np.ndarray) -> ParagraphWindows:
        count = len(sentence_vectors)
        starts = window_starts(count, WINDOW, EVIDENCE_STRIDE)
        best = np.stack([(sentence_vectors @ c.T).max(axis=1) for c in clusters], axis=1) if count else None
        to_claim = sentence_vectors @ claim
        return cls(starts, count, np.array([best[s:s + WINDOW].mean(axis=0) for s in starts]),
                   np.array([best[s:s + WINDOW].max(axis=0) for s in starts]),
                   np.array([to_claim[s:s + WINDOW].mean() for s in starts]))

    def features(self, own: int) -> np.ndarray:
        """:data:`WINDOW_FEATURES` of the windows for cluster ``own``."""
        if not self.starts:
            return np.zeros((0, len(WINDOW_FEATURES)))
        own_mean, mean_comp = _versus_siblings(self.means, own)
        own_max, max_comp = _versus_siblings(self.maxima, own)
        starts = np.array(self.starts)
        columns = {
            "own_mean": own_mean, "own_max": own_max, "mean_comp": mean_comp, "max_comp": max_comp,
            "claim_mean": self.claim, "position": starts / self.count, "first": (starts == 0).astype(float),
            "mean_gap": own_mean - own_mean.max(), "mean_rank": (own_mean[None, :] > own_mean[:, None]).sum(axis=1),
            "windows": np.full(len(starts), len(starts)),
        }
        return np.column_stack([columns[name] for name in WINDOW_FEATURES]).astype(np.float64)


def stacked_windows(windows: Sequence[np.ndarray]) -> np.ndarray:
    """Every paragraph's window rows in one matrix (none: zero rows of the right width)."""
    return np.vstack([*windows, np.zeros((0, len(WINDOW_FEATURES)))])


def second_stage(keys: Sequence[Key], first: np.ndarray) -> np.ndarray:
    """:data:`SECOND` columns: first-stage scores against siblings and cluster-mates."""
    by_paragraph: dict[tuple[Any, int], dict[int, float]] = {}
    by_cluster: dict[tuple[Any, int], list[float]] = {}
    for (key, i, d), p in zip(keys, first):
        by_paragraph.setdefault((key, d), {})[i] = float(p)
        by_cluster.setdefault((key, i), []).append(float(p))
    rows = []
    for (key, i, d), p in zip(keys, first):
        siblings = [v for j, v in by_paragraph[(key, d)].items() if j != i]
        mates = by_cluster[(key, i)]
        rows.append([p, p - max(siblings, default=0.0), len(siblings), p - max(mates), sum(m > p for m in mates)])
    return np.array(rows, dtype=np.float64).reshape(len(rows), len(SECOND))


class EvidenceRanker:
    """The two fitted stages and the window verifier: :meth:`score` gives P(paragraph is this
    cluster's evidence), :meth:`verify` how plainly each window states the cluster's point."""

    def __init__(self, first: Forest, second: Forest, verifier: Forest) -> None:
        self.first = first
        self.second = second
        self.verifier = verifier

    def score(self, table: Table) -> np.ndarray:
        """P(evidence) for every row of ``table``."""
        if not table.keys:
            return np.zeros(0)
        first = self.first.predict_proba(table.features)
        return self.second.predict_proba(np.hstack([table.features, second_stage(table.keys, first)]))

    def verify(self, windows: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Each paragraph's window scores in [0, 1] (:meth:`Featurizer.windows` gives the rows)."""
        rows = stacked_windows(windows)
        scores = self.verifier.predict_proba(rows) if len(rows) else np.zeros(0)
        return np.split(scores, np.cumsum([len(w) for w in windows])[:-1]) if windows else []

    def save(self, folder: str | Path) -> Path:
        """Write the three forests and their feature names to ``folder/ranker.npz`` (atomically)."""
        arrays = {"features": np.array(FEATURES), "second": np.array(SECOND), "windows": np.array(WINDOW_FEATURES),
                  **self.first.arrays("first."), **self.second.arrays("second."),
                  **self.verifier.arrays("verifier.")}

        def write(tmp: Path) -> None:
            with tmp.open("wb") as handle:
                np.savez(handle, **arrays)

        return atomic_write(Path(folder) / RANKER_FILE, write)

    @classmethod
    def load(cls, folder: str | Path) -> EvidenceRanker:
        """Read a ranker saved by :meth:`save` (arrays only: reading it runs no code)."""
        path = Path(folder) / RANKER_FILE
        retrain = "run `perspectrum train evidence --tune-only`"
        if not path.is_file():
            legacy = " (the pickled ranker.joblib of older versions is no longer read)" if (
                Path(folder) / "ranker.joblib").is_file() else ""
            raise PerspectrumError(f"no evidence ranker in {folder}{legacy}: {retrain}")
        try:
            with np.load(path, allow_pickle=False) as saved:
                arrays = {name: saved[name] for name in saved.files}
        except (OSError, ValueError, EOFError) as exc:
            raise PerspectrumError(f"{path} cannot be read ({exc}): {retrain}".splitlines()[0]) from None
        if (tuple(arrays.get("features", ())) != FEATURES or tuple(arrays.get("second", ())) != SECOND
                or tuple(arrays.get("windows", ())) != WINDOW_FEATURES):
            raise PerspectrumError(f"{path} was fitted on other features: {retrain}")
        try:
            forests = [Forest.from_arrays(arrays, prefix) for prefix in ("first.", "second.", "verifier.")]
        except PerspectrumError as exc:
            raise PerspectrumError(f"{path}: {exc}: {retrain}") from None
        widths = (len(FEATURES), len(FEATURES) + len(SECOND), len(WINDOW_FEATURES))
        if tuple(f.features for f in forests) != widths:
            raise PerspectrumError(f"{path} was fitted on other features: {retrain}")
        return cls(*forests)
