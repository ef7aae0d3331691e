"""Claim in, substantiated perspectives out: the discovery pipeline.

Stages, each batched over every claim of a call (so :meth:`Pipeline.discover_many`
makes one model call per stage for a whole batch):

1. **retrieve** — hybrid (BM25 + dense, RRF) top-``candidates`` of the perspective pool.
2. **relevance** — each candidate scored by the relevance model, blended with its dense
   cosine to the claim, kept above a dev-tuned cut (a fraction of the claim's best), at
   most ``max_perspectives``.
3. **cluster** — every pair of kept perspectives scored by the equivalence model
   (claim-conditioned) and blended with their cosine; scikit-learn's average-linkage
   agglomerative clustering cuts at the dev-tuned distance. The most relevant member
   represents its cluster.
4. **stance** — P(support) of each cluster's representative (a cluster shares one stance;
   ``stance_members="all"`` averages over the members instead, which scored the same on dev).
5. **evidence** — for each cluster, the evidence ranker (or light head) scores the hybrid
   top paragraphs for claim + paraphrases against every sibling cluster; a dev-tuned cut
   on its probability keeps the cluster's evidence.
6. **verify** — the window model reads the 3-sentence windows (every other start, so
   every sentence is covered, as in evaluation) of the top ``verify_top`` kept
   paragraphs per cluster and marks the best one (what the CLI highlights). Verifying
   every kept paragraph moved dev T4 by only +0.3 F1 at several times the cost, so
   selection is the ranker's and the windows explain it.

Which models answer is decided once, lazily: the fine-tuned ones in ``models/`` when all
four are there, else light heads on frozen MiniLM embeddings (trained on the first run).
"""

from __future__ import annotations

import json
import threading
import time
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from perspectrum._progress import say
from perspectrum.data import Pool
from perspectrum.errors import PerspectrumError
from perspectrum.eval.trained import EVIDENCE_STRIDE, average_linkage, keep
from perspectrum.index import IndexStore
from perspectrum.ranker import Debate
from perspectrum.scorers import STAGES, Scorers
from perspectrum.search import HybridSearcher

#: Longest claim accepted, in characters (claims in PERSPECTRUM are under 300).
MAX_CLAIM_CHARS = 1000
#: Version of :meth:`Discovery.to_dict`'s layout; bumped on any incompatible change.
SCHEMA_VERSION = 1
LIGHT_FOLDER = "light"


class ClaimError(PerspectrumError):
    """A claim that cannot be searched for (empty, too long, not text). The CLI exits 2."""


def check_claim(claim: Any) -> str:
    """The claim, stripped, or a :class:`ClaimError` saying what is wrong with it."""
    if not isinstance(claim, str):
        raise ClaimError(f"a claim must be text, not {type(claim).__name__}")
    text = claim.strip()
    if not text:
        raise ClaimError("the claim is empty")
    if len(text) > MAX_CLAIM_CHARS:
        raise ClaimError(f"the claim is {len(text):,} characters long; the limit is {MAX_CLAIM_CHARS:,}")
    if any(unicodedata.category(ch) == "Cc" and not ch.isspace() for ch in text):
        raise ClaimError("the claim contains control characters; is it binary data?")
    if not any(ch.isalpha() for ch in text):
        raise ClaimError("the claim has no words in it")
    return " ".join(text.split())


@dataclass(frozen=True)
class PipelineConfig:
    """Every stage's parameters in one place.

    Cut-offs (``overrides``) default to the values tuned on dev for the loaded models
    and stored beside them (``models/<task>/perspectrum.json`` or ``models/light/``);
    pass ``{"relevance": {"threshold": 0.8}}`` to override one. The structural
    defaults below were chosen on dev for speed at no loss of T1–T5 (see the README).

    Attributes:
        candidates: perspectives retrieved per claim and read by the relevance model
            (hybrid top-50 holds ~80 % of dev gold clusters).
        max_perspectives: at most this many kept per claim, whatever the relevance cut
            allows. Clustering reads every pair, so the slowest claims were those with
            many; on dev, 30 instead of 50 gave end-to-end T5 21.6 vs 21.1 at 1.38 vs
            1.55 s per claim (20 gave 20.1).
        evidence_depth: paragraphs retrieved per cluster for the evidence ranker (20,
            the depth it was trained at).
        verify_top: kept paragraphs per cluster whose windows the window model reads.
        stance_members: ``"representative"`` reads only the representative's stance;
            ``"all"`` averages P(support) over a cluster's members. On dev they scored
            the same end to end (T2 80.2 vs 80.0 on found pairs), and one MPNet pass
            per cluster is a third faster.
        overrides: per-stage changes to the dev-tuned cut-offs (keys as in
            :mod:`perspectrum.scorers`).
    """

    candidates: int = 50
    max_perspectives: int = 30
    evidence_depth: int = 20
    verify_top: int = 1
    stance_members: str = "representative"
    overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if min(self.candidates, self.max_perspectives, self.evidence_depth) < 1 or self.verify_top < 0:
            raise PerspectrumError("candidates, max_perspectives and evidence_depth must be ≥ 1, verify_top ≥ 0")
        if self.stance_members not in ("all", "representative"):
            raise PerspectrumError("stance_members must be 'all' or 'representative'")
        unknown = set(self.overrides) - set(STAGES)
        if unknown:
            raise PerspectrumError(f"unknown stage(s) in overrides: {', '.join(sorted(unknown))}")

    def settings(self, tuned: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
        """The dev-tuned cut-offs with this config's overrides applied (and the relevance
        cap no larger than ``max_perspectives``)."""
        out = {stage: {**tuned[stage], **self.overrides.get(stage, {})} for stage in STAGES}
        out["relevance"]["k"] = min(out["relevance"]["k"], self.max_perspectives)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "overrides": {k: dict(v) for k, v in self.overrides.items()}}


# ------------------------------------------------------------------------- results
@dataclass(frozen=True)
class Phrasing:
    """One perspective sentence of the pool and its relevance to the claim."""

    id: int | str
    text: str
    relevance: float


@dataclass(frozen=True)
class EvidenceHit:
    """A paragraph backing a perspective, with its best 3-sentence window when verified.

    ``window_start``/``window_end`` are character offsets of the window in ``text``
    (``None`` when the paragraph was not verified or the window could not be placed).
    """

    id: int | str
    text: str
    probability: float
    window: str | None = None
    window_score: float | None = None
    window_start: int | None = None
    window_end: int | None = None


@dataclass(frozen=True)
class DiscoveredPerspective:
    """A cluster of equivalent perspectives: its representative, stance and evidence.

    ``stance_confidence`` rescales P(support) around the dev-tuned threshold: 0.5 at
    the threshold, 1.0 at 0 or 1, so it reads the same for either stance.
    """

    text: str
    id: int | str
    stance: str
    support_probability: float
    stance_confidence: float
    relevance: float
    phrasings: tuple[Phrasing, ...]
    evidence: tuple[EvidenceHit, ...]


@dataclass(frozen=True)
class Discovery:
    """What :meth:`Pipeline.discover` returns for one claim; plain data, JSON-ready.

    ``timings`` are seconds per stage (for :meth:`Pipeline.discover_many`, the batch's
    time divided by its claims). ``trace`` (with ``explain=True``) holds every
    candidate's scores and the settings used.
    """

    claim: str
    system: str
    perspectives: tuple[DiscoveredPerspective, ...]
    timings: dict[str, float]
    trace: dict[str, Any] | None = None

    @property
    def supporting(self) -> list[DiscoveredPerspective]:
        return [p for p in self.perspectives if p.stance == "support"]

    @property
    def undermining(self) -> list[DiscoveredPerspective]:
        return [p for p in self.perspectives if p.stance == "undermine"]

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON layout documented in the README (``schema`` = its version)."""
        out = {"schema": SCHEMA_VERSION, **asdict(self)}
        if out["trace"] is None:
            del out["trace"]
        return out

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)


# ------------------------------------------------------------------------- pipeline
@dataclass
class _Work:
    """One claim's state as it passes through the stages."""

    claim: str
    candidates: list[tuple[int | str, float, float, float]] = field(default_factory=list)  # id, model, cos, blend
    kept: list[tuple[int | str, float]] = field(default_factory=list)  # id, blended relevance
    clusters: list[list[int]] = field(default_factory=list)  # indices into kept, best first
    support: list[float] = field(default_factory=list)
    evidence: list[list[EvidenceHit]] = field(default_factory=list)
    pairs: list[dict[str, Any]] = field(default_factory=list)  # equivalence trace


def _clusters(matrix: np.ndarray, threshold: float) -> list[list[int]]:
    """Average-linkage clusters of a similarity matrix cut at distance 1 − threshold, in index order."""
    n = len(matrix)
    if n < 2:
        return [[i] for i in range(n)]
    labels = average_linkage(matrix, threshold)
    groups: dict[int, list[int]] = {}
    for i, label in enumerate(labels):
        groups.setdefault(int(label), []).append(i)
    return sorted(groups.values(), key=lambda g: g[0])


def _place(paragraph: str, window: str) -> tuple[int | None, int | None]:
    """Character span of a window (sentences joined by spaces) inside its paragraph."""
    from perspectrum.text import sentences

    parts = sentences(window)
    if not parts:
        return None, None
    start = paragraph.find(parts[0])
    end = paragraph.find(parts[-1], max(start, 0))
    if start < 0 or end < 0:
        return None, None
    return start, end + len(parts[-1])


def _confidence(p: float, threshold: float) -> float:
    if p >= threshold:
        return 0.5 + 0.5 * (p - threshold) / max(1e-9, 1.0 - threshold)
    return 0.5 + 0.5 * (threshold - p) / max(1e-9, threshold)


class Pipeline:
    """Discovers the perspectives on a claim, clustered, stanced and backed by evidence.

    Build one with :meth:`load` (PERSPECTRUM's pools) or :meth:`from_pools` (your own).
    Nothing heavy happens until the first call (or :meth:`warm_up`): indexes are opened
    (built if missing) and models loaded once, under a lock, so one pipeline serves
    concurrent calls from many threads.

    Example:
        >>> pipe = Pipeline.load()
        >>> found = pipe.discover("Animals should have lawful rights")
        >>> [p.text for p in found.supporting][:2]
    """

    def __init__(self, perspectives: Pool, evidence: Pool, store: IndexStore, models_dir: str | Path,
                 config: PipelineConfig | None = None, data_dir: str | Path | None = None,
                 show_progress: bool = False, data_store: IndexStore | None = None) -> None:
        self.perspectives = perspectives
        self.evidence_pool = evidence
        self.store = store
        #: PERSPECTRUM's own indexes, which light heads are trained with (own pools have another store)
        self.data_store = data_store or store
        self.models_dir = Path(models_dir)
        self.config = config or PipelineConfig()
        self.data_dir = data_dir
        self.show_progress = show_progress
        self._perspective_text = dict(zip(perspectives.ids, perspectives.texts))
        self._evidence_text = dict(zip(evidence.ids, evidence.texts))
        self._lock = threading.Lock()
        self._ready: tuple[HybridSearcher, Any, Scorers, dict[str, dict[str, Any]]] | None = None

    @classmethod
    def load(cls, data_dir: str | Path | None = None, index_dir: str | Path = "indexes",
             models_dir: str | Path = "models", config: PipelineConfig | None = None, verify: bool = True,
             show_progress: bool = False) -> Pipeline:
        """A pipeline over PERSPECTRUM's perspective and evidence pools (read from
        ``data_dir`` or ``$PERSPECTRUM_DATA``, checksums verified unless ``verify=False``)."""
        from perspectrum.data import load_dataset

        dataset = load_dataset(data_dir, verify=verify)
        return cls(Pool.from_dataset(dataset, "perspectives"), Pool.from_dataset(dataset, "evidence"),
                   IndexStore(index_dir), models_dir, config, data_dir, show_progress)

    @classmethod
    def from_pools(cls, perspectives: Pool | str | Path, evidence: Pool | str | Path,
                   index_dir: str | Path = "indexes", models_dir: str | Path = "models",
                   config: PipelineConfig | None = None, data_dir: str | Path | None = None,
                   show_progress: bool = False) -> Pipeline:
        """A pipeline over your own sentences and paragraphs (pools or JSONL files of
        ``{"id", "text"}``).

        Their indexes live under ``<index_dir>/own/<fingerprint>/``, one folder per pair
        of pools, so they never replace PERSPECTRUM's. The models are the ones trained
        on PERSPECTRUM (light heads need its data, via ``data_dir`` or ``$PERSPECTRUM_DATA``).
        """
        pools = [p if isinstance(p, Pool) else Pool.from_jsonl(p, name)
                 for p, name in ((perspectives, "perspectives"), (evidence, "evidence"))]
        pools = [Pool(name, p.ids, p.texts) for p, name in zip(pools, ("perspectives", "evidence"))]
        return cls(*pools, own_store(index_dir, *pools), models_dir, config, data_dir, show_progress,
                   data_store=IndexStore(index_dir))

    # --------------------------------------------------------------- loading
    def _scorers(self) -> Scorers:
        from perspectrum.light import LightScorers, train_light
        from perspectrum.scorers import TrainedScorers, models_present

        if models_present(self.models_dir):
            return TrainedScorers(self.models_dir, self.store, self.evidence_pool)
        light = self.models_dir / LIGHT_FOLDER
        if (light / "light.json").is_file():
            return LightScorers.load(light, self.store, self.evidence_pool)
        say(f"no fine-tuned models in {self.models_dir}: training light heads on frozen MiniLM embeddings "
            "(a few minutes, once); run `perspectrum train all` for the accurate models")
        from perspectrum.data import load_dataset

        started = time.perf_counter()
        train_light(load_dataset(self.data_dir, verify=False), self.data_store, light, show_progress=self.show_progress)
        say(f"light heads trained in {time.perf_counter() - started:.0f} s, saved to {light}")
        return LightScorers.load(light, self.store, self.evidence_pool)

    def _get(self) -> tuple[HybridSearcher, Any, Scorers, dict[str, dict[str, Any]]]:
        with self._lock:
            if self._ready is None:
                bm25 = self.store.open(self.perspectives, "bm25", show_progress=self.show_progress)
                dense = self.store.open(self.perspectives, "dense", show_progress=self.show_progress)
                scorers = self._scorers()
                self._ready = (HybridSearcher(bm25, dense), dense, scorers, self.config.settings(scorers.settings))
            return self._ready

    def warm_up(self) -> None:
        """Open every index and load every model now, not on the first call (for servers)."""
        _, dense, scorers, _ = self._get()
        dense.encoder.encode(["warm up"])
        if hasattr(scorers, "load_all"):
            scorers.load_all()

    @property
    def system(self) -> str:
        """``"trained"`` or ``"light"``: which models answer (loads them if needed)."""
        return self._get()[2].kind

    @property
    def settings(self) -> dict[str, dict[str, Any]]:
        """The cut-offs in use: dev-tuned, with the config's overrides."""
        return self._get()[3]

    # --------------------------------------------------------------- discovery
    def discover(self, claim: str, top: int | None = None, evidence: bool = True,
                 explain: bool = False) -> Discovery:
        """The perspectives on ``claim``: clustered, stanced and (unless ``evidence=False``)
        backed by evidence, most relevant first; at most ``top`` clusters."""
        return self.discover_many([claim], top=top, evidence=evidence, explain=explain)[0]

    def discover_many(self, claims: Sequence[str], batch_size: int = 16, top: int | None = None,
                      evidence: bool = True, explain: bool = False) -> list[Discovery]:
        """:meth:`discover` for many claims, each model called once per stage per batch.

        Results are in input order. Every claim is checked before any work starts, so
        one bad claim fails the call without wasting the others' time.
        """
        if isinstance(claims, str):
            raise ClaimError("discover_many takes a list of claims, not one string")
        if batch_size < 1:
            raise PerspectrumError("batch_size must be at least 1")
        texts = [check_claim(c) for c in claims]
        if top is not None and top < 1:
            raise PerspectrumError("top must be at least 1")
        out: list[Discovery] = []
        for start in range(0, len(texts), batch_size):
            out += self._batch(texts[start:start + batch_size], top, evidence, explain)
        return out

    def _batch(self, claims: list[str], top: int | None, with_evidence: bool, explain: bool) -> list[Discovery]:
        hybrid, dense, scorers, settings = self._get()
        work = [_Work(c) for c in claims]
        timings: dict[str, float] = {}

        def timed(stage: str, run: Any) -> None:
            started = time.perf_counter()
            run()
            timings[stage] = time.perf_counter() - started

        timed("retrieve", lambda: self._retrieve(work, hybrid, dense))
        timed("relevance", lambda: self._relevance(work, scorers, settings["relevance"]))
        timed("cluster", lambda: self._cluster(work, scorers, dense, settings["equivalence"]))
        timed("stance", lambda: self._stance(work, scorers))
        if with_evidence:
            timed("evidence", lambda: self._evidence(work, scorers, settings["evidence"]))
            timed("verify", lambda: self._verify(work, scorers))
        timings["total"] = sum(timings.values())
        share = {k: round(v / len(claims), 4) for k, v in timings.items()}
        return [self._result(w, scorers, settings, share, top, with_evidence, explain) for w in work]

    def _retrieve(self, work: list[_Work], hybrid: HybridSearcher, dense: Any) -> None:
        queries = [w.claim for w in work]
        vectors = dense.encoder.encode(queries)
        depth = max(self.config.candidates, hybrid.params.depth)
        runs = hybrid.fuse(hybrid.lexical.batch_search(queries, depth), dense.search_vectors(vectors, depth),
                           self.config.candidates)
        for w, run, vector in zip(work, runs, vectors):
            ids = [h.doc_id for h in run]
            cosines = dense.vectors(ids) @ vector if ids else np.zeros(0)
            w.candidates = [(d, 0.0, float(c), 0.0) for d, c in zip(ids, cosines)]

    def _relevance(self, work: list[_Work], scorers: Scorers, setting: Mapping[str, Any]) -> None:
        pairs = [(w.claim, self._perspective_text[d]) for w in work for d, *_ in w.candidates]
        scores = iter(scorers.relevance(pairs))
        weight = setting["weight"]
        for w in work:
            w.candidates = [(d, float(m), c, weight * float(m) + (1 - weight) * c)
                            for (d, _, c, _), m in zip(w.candidates, scores)]
            ranked = sorted(((b, d) for d, _, _, b in w.candidates), key=lambda x: (-x[0], str(x[1])))
            blended = {d: b for b, d in ranked}
            w.kept = [(d, blended[d]) for d in keep(ranked, setting)]

    def _cluster(self, work: list[_Work], scorers: Scorers, dense: Any, setting: Mapping[str, Any]) -> None:
        weight, threshold = setting["weight"], setting["threshold"]
        cosines = []
        for w in work:
            vectors = dense.vectors([d for d, _ in w.kept]) if w.kept else np.zeros((0, 1))
            cosines.append((vectors @ vectors.T).astype(np.float64))
        triples, where = [], []
        for n, w in enumerate(work):
            for i, j in combinations(range(len(w.kept)), 2):
                # a pair the model could not lift to the threshold even at 1.0 is not worth
                # a forward pass: it keeps model score 0 (what such pairs score anyway)
                if weight + (1 - weight) * cosines[n][i, j] < threshold:
                    continue
                triples.append((w.claim, self._perspective_text[w.kept[i][0]], self._perspective_text[w.kept[j][0]]))
                where.append((n, i, j))
        scores = scorers.equivalence(triples)
        matrices = [(1 - weight) * cosine for cosine in cosines]
        for (n, i, j), score in zip(where, scores):
            value = matrices[n][i, j] + weight * float(score)
            matrices[n][i, j] = matrices[n][j, i] = value
            work[n].pairs.append({"a": work[n].kept[i][0], "b": work[n].kept[j][0], "model": round(float(score), 4),
                                  "similarity": round(value, 4)})
        for w, matrix in zip(work, matrices):
            np.fill_diagonal(matrix, 1.0)
            # kept is most relevant first, so each cluster's first index is its representative
            w.clusters = _clusters(matrix, threshold)

    def _stance(self, work: list[_Work], scorers: Scorers) -> None:
        pairs, owner = [], []
        for n, w in enumerate(work):
            for c, members in enumerate(w.clusters):
                chosen = members if self.config.stance_members == "all" else members[:1]
                pairs += [(w.claim, self._perspective_text[w.kept[i][0]]) for i in chosen]
                owner += [(n, c)] * len(chosen)
        scores = scorers.stance(pairs)
        sums: dict[tuple[int, int], list[float]] = {}
        for key, score in zip(owner, scores):
            sums.setdefault(key, []).append(float(score))
        for n, w in enumerate(work):
            w.support = [float(np.mean(sums[(n, c)])) for c in range(len(w.clusters))]

    def _evidence(self, work: list[_Work], scorers: Scorers, setting: Mapping[str, Any]) -> None:
        debates = {n: Debate(w.claim, tuple(tuple(self._perspective_text[w.kept[i][0]] for i in members)
                                            for members in w.clusters))
                   for n, w in enumerate(work) if w.clusters}
        keys, probs = scorers.evidence(debates)
        ranked: dict[tuple[int, int], list[tuple[float, Any]]] = {}
        for (n, c, doc_id), p in zip(keys, probs):
            ranked.setdefault((n, c), []).append((float(p), doc_id))
        for n, w in enumerate(work):
            w.evidence = []
            for c in range(len(w.clusters)):
                run = sorted(ranked.get((n, c), []), key=lambda x: (-x[0], str(x[1])))
                prob = {d: p for p, d in run}
                w.evidence.append([EvidenceHit(d, self._evidence_text[d], round(prob[d], 4))
                                   for d in keep(run, setting)])

    def _verify(self, work: list[_Work], scorers: Scorers) -> None:
        from perspectrum.text import windows

        triples, owner = [], []
        for n, w in enumerate(work):
            for c, hits in enumerate(w.evidence):
                representative = self._perspective_text[w.kept[w.clusters[c][0]][0]]
                for h, hit in enumerate(hits[:self.config.verify_top]):
                    for window in windows(hit.text, stride=EVIDENCE_STRIDE):
                        triples.append((w.claim, representative, window))
                        owner.append((n, c, h, window))
        scores = scorers.windows(triples)
        best: dict[tuple[int, int, int], tuple[float, str]] = {}
        for (n, c, h, window), score in zip(owner, scores):
            if (n, c, h) not in best or score > best[(n, c, h)][0]:
                best[(n, c, h)] = (float(score), window)
        for (n, c, h), (score, window) in best.items():
            hit = work[n].evidence[c][h]
            start, end = _place(hit.text, window)
            work[n].evidence[c][h] = EvidenceHit(hit.id, hit.text, hit.probability, window, round(score, 4),
                                                 start, end)

    def _result(self, w: _Work, scorers: Scorers, settings: Mapping[str, Mapping[str, Any]],
                timings: dict[str, float], top: int | None, with_evidence: bool, explain: bool) -> Discovery:
        threshold = settings["stance"]["threshold"]
        found = []
        for c, members in enumerate(w.clusters):
            phrasings = tuple(Phrasing(w.kept[i][0], self._perspective_text[w.kept[i][0]], round(w.kept[i][1], 4))
                              for i in members)
            p = w.support[c]
            found.append(DiscoveredPerspective(
                text=phrasings[0].text, id=phrasings[0].id, stance="support" if p >= threshold else "undermine",
                support_probability=round(p, 4), stance_confidence=round(_confidence(p, threshold), 4),
                relevance=phrasings[0].relevance, phrasings=phrasings,
                evidence=tuple(w.evidence[c]) if with_evidence else ()))
        found.sort(key=lambda f: -f.relevance)
        trace = None
        if explain:
            trace = {"settings": {k: dict(v) for k, v in settings.items()}, "config": self.config.to_dict(),
                     "candidates": [{"id": d, "model": round(m, 4), "cosine": round(c, 4), "score": round(b, 4),
                                     "kept": any(d == k for k, _ in w.kept)} for d, m, c, b in w.candidates],
                     "pairs": w.pairs}
        return Discovery(w.claim, scorers.kind, tuple(found[:top] if top else found), timings, trace)


def own_store(index_dir: str | Path, perspectives: Pool, evidence: Pool) -> IndexStore:
    """Where the indexes of a pair of own pools live: ``<index_dir>/own/<fingerprint>/``."""
    import hashlib

    key = hashlib.sha256(f"{perspectives.fingerprint}:{evidence.fingerprint}".encode()).hexdigest()[:16]
    return IndexStore(Path(index_dir) / "own" / key)
