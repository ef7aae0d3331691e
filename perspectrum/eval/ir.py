"""The paper's IR baselines (Section 6.1), run with BM25, dense and hybrid retrieval.

Every cut-off, and the T4 query form, is chosen on the tuning split (dev) and only
then applied to the evaluation split, so the reported numbers never see test labels
while tuning. The recall@k curves that guide candidate depths are drawn on dev too.

- T1: the top-k perspectives retrieved for the claim (k tuned).
- T2: always "support" (the paper's IR row has no stance model).
- T3: two gold perspectives of a claim are equivalent when one is among the other's
  top-m neighbours within that claim's gold perspectives (m tuned).
- T4: the evidence pool searched with one of :data:`T4_QUERIES`, cut per query either
  at a fixed top-k or relative to the top score (k, or threshold and cap, tuned); per
  retriever, the query form and cut-off kind with the best dev F1 is reported.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from perspectrum._progress import progress
from perspectrum.data import Claim, Dataset, Pool
from perspectrum.eval.metrics import (ClusterKey, percent, t1_relevance, t2_stance, t3_equivalence, t4_evidence,
                                      t5_overall)
from perspectrum.index.store import BACKENDS, IndexStore
from perspectrum.index.search import Hit, HybridSearcher, Searcher

#: Table 3 of the paper, IR row (test split, percent).
PAPER_IR = {
    "t1": {"precision": 46.8, "recall": 34.9, "f1": 40.0},
    "t2": {"precision": 51.6, "recall": 100.0, "f1": 68.0},
    "t3": {"precision": 36.5, "recall": 36.5, "f1": 36.5},
    "t4": {"precision": 42.2, "recall": 52.5, "f1": 46.8},
    "t5": 12.8,
}

METHODS = ("bm25", "dense", "hybrid")
DEPTH = 100
T1_CURVE_KS = tuple(range(5, DEPTH + 1, 5))
T4_CURVE_KS = tuple(range(10, DEPTH + 1, 10))
RELATIVE_RATIOS = tuple(round(r, 3) for r in np.arange(0.3, 1.0001, 0.025))
RELATIVE_CAPS = (1, 2, 3, 4, 5, 6, 8, 10, 15, 20)
#: How the T4 query is formed for a gold cluster (see :func:`t4_queries`).
T4_QUERIES = ("cluster", "perspective", "cluster_no_claim")
#: The T4 cut-off kinds; with :data:`T4_QUERIES`, the variants dev chooses among (ties go to the earlier one).
T4_CUTOFFS = ("top_k", "relative")
#: The query form of the T4 recall curve: the one the trained system draws its evidence candidates with.
T4_CURVE_QUERY = "cluster"

Run = dict[Any, list[Hit]]


@dataclass(frozen=True)
class Cutoff:
    """A per-query cut-off: keep the top ``k``, or hits scoring ≥ ``ratio`` × the top score.

    With ``ratio`` set, ``k`` caps the list; ``ratio=None`` is a plain top-k.
    """

    k: int
    ratio: float | None = None

    def apply(self, hits: Sequence[Hit]) -> list[Any]:
        if not hits:
            return []
        if self.ratio is None:
            return [h.doc_id for h in hits[: self.k]]
        floor = self.ratio * hits[0].score
        return [h.doc_id for h in hits[: self.k] if h.score >= floor]

    def to_dict(self) -> dict[str, Any]:
        return {"k": self.k, "ratio": self.ratio}


def best_of(candidates: Sequence[Any], objective: Callable[[Any], float]) -> tuple[Any, float]:
    """The candidate with the best objective (first one on ties) and its value."""
    best = max(candidates, key=objective)
    return best, objective(best)


class Retrieval:
    """The three searchers over one pool, with runs computed once per query set.

    Hybrid runs are fused from the BM25 and dense runs already computed, so each
    query is searched once per ranker.
    """

    def __init__(self, store: IndexStore, pool: Pool, build_missing: bool, show_progress: bool) -> None:
        bm25 = store.open(pool, "bm25", build_missing, show_progress)
        dense = store.open(pool, "dense", build_missing, show_progress)
        self.searchers: dict[str, Searcher] = {"bm25": bm25, "dense": dense}
        self.hybrid = HybridSearcher(bm25, dense)
        self.searchers["hybrid"] = self.hybrid

    def runs(self, queries: Mapping[Any, str], k: int = DEPTH) -> dict[str, Run]:
        keys, texts = list(queries), list(queries.values())
        lexical = self.searchers["bm25"].batch_search(texts, k)
        dense = self.searchers["dense"].batch_search(texts, k)
        hybrid = self.hybrid.fuse(lexical, dense, k)
        return {name: dict(zip(keys, hits)) for name, hits in
                (("bm25", lexical), ("dense", dense), ("hybrid", hybrid))}

    def t3_scores(self, dataset: Dataset, claims: Sequence[Claim]) -> dict[str, dict[int, np.ndarray]]:
        """Per retriever and claim, each gold perspective's score for every other.

        Rows (queries) and columns (documents) are the claim's gold perspective ids in
        sorted order; hybrid scores are fused from the BM25 and dense matrices.
        """
        scores: dict[str, dict[int, np.ndarray]] = {"bm25": {}, "dense": {}, "hybrid": {}}
        for claim in claims:
            pids = sorted(claim.gold_pids)
            texts = [dataset.perspectives[p].text for p in pids]
            for name in ("bm25", "dense"):
                scores[name][claim.cid] = self.searchers[name].score(texts, pids)
            scores["hybrid"][claim.cid] = self.hybrid.fuse_scores(scores["bm25"][claim.cid],
                                                                  scores["dense"][claim.cid])
        return scores


def t1_runs(retrieval: Retrieval, claims: Sequence[Claim]) -> dict[str, Run]:
    return retrieval.runs({c.cid: c.text for c in claims})


def t3_neighbours(claims: Sequence[Claim], scores: Mapping[int, np.ndarray]) -> dict[int, dict[int, list[int]]]:
    """For each claim, each gold perspective's other gold perspectives, nearest first.

    ``scores[cid]`` is the claim's matrix from :meth:`Retrieval.t3_scores`.
    """
    out: dict[int, dict[int, list[int]]] = {}
    for claim in claims:
        pids = sorted(claim.gold_pids)
        order: dict[int, list[int]] = {}
        for row, pid in enumerate(pids):
            ranked = np.lexsort((np.arange(len(pids)), -scores[claim.cid][row]))
            order[pid] = [pids[j] for j in ranked if pids[j] != pid]
        out[claim.cid] = order
    return out


def t3_pairs(neighbours: Mapping[int, Mapping[int, list[int]]], m: int) -> dict[int, set[tuple[int, int]]]:
    """Pairs called equivalent: q among p's top-m neighbours, or p among q's."""
    return {
        cid: {tuple(sorted((p, q))) for p, ranked in order.items() for q in ranked[:m]}
        for cid, order in neighbours.items()
    }


def t4_queries(dataset: Dataset, claims: Sequence[Claim], mode: str) -> dict[ClusterKey, str]:
    """One evidence query per gold cluster that has gold evidence.

    ``cluster``: the claim and every paraphrase in the cluster; ``perspective``: the
    claim and the cluster's first perspective (one perspective, as in a per-perspective
    reading of the paper); ``cluster_no_claim``: the paraphrases alone.
    """
    queries = {}
    for claim in claims:
        for index, cluster in enumerate(claim.clusters):
            if not cluster.evidence:
                continue
            texts = [dataset.perspectives[p].text for p in cluster.pids]
            if mode == "cluster":
                queries[(claim.cid, index)] = " ".join([claim.text, *texts])
            elif mode == "perspective":
                queries[(claim.cid, index)] = f"{claim.text} {texts[0]}"
            elif mode == "cluster_no_claim":
                queries[(claim.cid, index)] = " ".join(texts)
            else:
                raise ValueError(f"unknown T4 query mode {mode!r}")
    return queries


def _cut(run: Run, cutoff: Cutoff) -> dict[Any, list[Any]]:
    """A run's predictions: each query's hits cut to ids by ``cutoff``."""
    return {query: cutoff.apply(hits) for query, hits in run.items()}


def _t4_scored(cutoff: Cutoff, claims: Sequence[Claim], run: Run, average: str = "macro") -> dict[str, float]:
    return t4_evidence(claims, _cut(run, cutoff), average)


def _latency(searcher: Searcher, queries: Sequence[str], k: int = DEPTH) -> dict[str, float]:
    """p50/p95 wall time (ms) of one ``search`` call per query, as a user would issue it."""
    times = []
    for query in queries:
        start = time.perf_counter()
        searcher.search(query, k)
        times.append((time.perf_counter() - start) * 1000)
    return {"p50_ms": round(float(np.percentile(times, 50)), 2),
            "p95_ms": round(float(np.percentile(times, 95)), 2), "queries": len(times)}


def evaluate_ir(
    dataset: Dataset,
    store: IndexStore,
    split: str = "test",
    tune_split: str = "dev",
    build_missing: bool = True,
    show_progress: bool = False,
) -> dict[str, Any]:
    """Run the IR baselines with every retriever; tune on ``tune_split``, score on ``split``.

    Every choice reads ``tune_split`` labels only: T1's k, T3's m, each T4 variant's
    cut-off, and which T4 variant (query form × cut-off kind) stands for a retriever
    (the best dev F1; ties go to the earlier of :data:`T4_QUERIES` × :data:`T4_CUTOFFS`).
    The recall@k curves are drawn on ``tune_split`` as well, since they guide the
    candidate depths; ``split`` labels are used only to score.

    Returns:
        A JSON-ready dict: per-method T1–T5 (percent) with the tuned parameters (T4's
        chosen ``query`` and ``cutoff`` included), every T4 query/cut-off variant with
        its dev F1 and ``split`` macro/micro scores, recall@k curves for T1 and T4
        candidates (``recall_curves["split"]`` names the split they were drawn on),
        per-query latency, and the paper's IR row for comparison.
    """
    started = time.perf_counter()
    tune, test = dataset.split(tune_split), dataset.split(split)
    perspectives = Retrieval(store, Pool.from_dataset(dataset, "perspectives"), build_missing, show_progress)
    evidence = Retrieval(store, Pool.from_dataset(dataset, "evidence"), build_missing, show_progress)
    methods: dict[str, dict[str, Any]] = {m: {} for m in METHODS}
    curves: dict[str, Any] = {"split": tune_split, "t4_query": T4_CURVE_QUERY,
                              "t1": {"k": list(T1_CURVE_KS)}, "t4": {"k": list(T4_CURVE_KS)}}
    variants: list[dict[str, Any]] = []
    dev_f1s: list[float] = []  # each variant's unrounded dev F1, to choose by
    stance = percent(t2_stance(test, {(c.cid, p): True for c in test for p in c.gold_pids}))

    with progress("IR baselines", 4, enabled=show_progress) as advance:
        tune_runs, test_runs = t1_runs(perspectives, tune), t1_runs(perspectives, test)
        for name in METHODS:
            k, dev_f1 = best_of(range(1, DEPTH + 1),
                              lambda k: t1_relevance(tune, _cut(tune_runs[name], Cutoff(k)))["f1"])
            methods[name]["t1"] = {**percent(t1_relevance(test, _cut(test_runs[name], Cutoff(k)))), "k": k,
                                   "dev_f1": round(dev_f1 * 100, 2)}
            curves["t1"][name] = [round(t1_relevance(tune, _cut(tune_runs[name], Cutoff(k)))["recall"] * 100, 2)
                                  for k in T1_CURVE_KS]
        advance(1)

        tune_scores, test_scores = perspectives.t3_scores(dataset, tune), perspectives.t3_scores(dataset, test)
        for name in METHODS:
            tune_nb, test_nb = t3_neighbours(tune, tune_scores[name]), t3_neighbours(test, test_scores[name])
            widest = max(len(c.gold_pids) for c in tune)
            m, dev_f1 = best_of(range(0, widest), lambda m: t3_equivalence(tune, t3_pairs(tune_nb, m))["f1"])
            methods[name]["t3"] = {**percent(t3_equivalence(test, t3_pairs(test_nb, m))), "m": m,
                                   "dev_f1": round(dev_f1 * 100, 2)}
        advance(1)

        for mode in T4_QUERIES:
            tune_t4 = evidence.runs(t4_queries(dataset, tune, mode))
            test_t4 = evidence.runs(t4_queries(dataset, test, mode))
            for name in METHODS:
                grids = {"top_k": [Cutoff(k) for k in range(1, 31)],
                         "relative": [Cutoff(k, r) for r in RELATIVE_RATIOS for k in RELATIVE_CAPS]}
                for kind in T4_CUTOFFS:
                    cutoff, dev_f1 = best_of(grids[kind], lambda c: _t4_scored(c, tune, tune_t4[name])["f1"])
                    row = {"method": name, "query": mode, "cutoff": kind, **cutoff.to_dict(),
                           "dev_f1": round(dev_f1 * 100, 2),
                           "macro": percent(_t4_scored(cutoff, test, test_t4[name])),
                           "micro": percent(_t4_scored(cutoff, test, test_t4[name], "micro"))}
                    variants.append(row)
                    dev_f1s.append(dev_f1)
                if mode == T4_CURVE_QUERY:
                    curves["t4"][name] = [round(_t4_scored(Cutoff(k), tune, tune_t4[name])["recall"] * 100, 2)
                                          for k in T4_CURVE_KS]
        advance(1)

        for name in METHODS:
            own = [i for i, v in enumerate(variants) if v["method"] == name]
            index, _ = best_of(own, lambda i: dev_f1s[i])
            chosen = variants[index]
            methods[name]["t4"] = {**chosen["macro"], "query": chosen["query"], "cutoff": chosen["cutoff"],
                                   "k": chosen["k"], "ratio": chosen["ratio"], "dev_f1": chosen["dev_f1"]}
            methods[name]["t2"] = stance
            methods[name]["t5"] = round(t5_overall(methods[name]["t1"]["f1"] / 100, stance["f1"] / 100,
                                                   methods[name]["t4"]["f1"] / 100) * 100, 2)
        claims_text = [c.text for c in test]
        evidence_text = list(t4_queries(dataset, test, "perspective").values())[:200]
        latency = {
            "perspectives": {n: _latency(perspectives.searchers[n], claims_text) for n in METHODS},
            "evidence": {n: _latency(evidence.searchers[n], evidence_text) for n in METHODS},
        }
        advance(1)

    return {
        "system": "ir",
        "split": split,
        "tuned_on": tune_split,
        "backend": store.backend,
        "engines": dict(BACKENDS[store.backend]),
        "headline": {"t1": "cluster-coverage recall",
                     "t4": f"per retriever, the query form and cut-off with the best {tune_split} F1, macro"},
        "paper": PAPER_IR,
        "methods": methods,
        "t4_variants": variants,
        "recall_curves": curves,
        "latency": latency,
        "seconds": round(time.perf_counter() - started, 1),
    }
