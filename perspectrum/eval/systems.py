"""Our systems as implementations of the harness's protocol (:mod:`perspectrum.eval.harness`).

- :class:`IRSystem`: the paper's IR row (Section 6.1) on one retriever, hybrid BM25 +
  dense by default. Its cut-offs are chosen in ``prepare`` on dev with the helpers of
  :mod:`perspectrum.eval.ir`, by running its own answers on dev and scoring them.
- :class:`PipelineSystem`: a :class:`~perspectrum.pipeline.pipeline.Pipeline` answering each task
  with its own stage(s), run on a :class:`~perspectrum.pipeline.stages.ClaimState` built from the
  input the harness gives. Whether the user's or the shipped models answer is the models
  folder's business (``Pipeline.system``), so the built-in ``trained`` and ``pipeline``
  systems are both this class (:func:`builtin_system`).

Both are what ``evaluate --system ir|trained|pipeline`` scores through the harness
(with ``--oracle`` or ``--harness``); without those flags ``ir``, ``trained`` and
``pipeline`` keep their detailed reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perspectrum import folders
from perspectrum.data import Dataset, Pool
from perspectrum.errors import PerspectrumError
from perspectrum.eval.harness import CHAIN
from perspectrum.eval.ir import (DEPTH, METHODS, RELATIVE_CAPS, RELATIVE_RATIOS, T4_CUTOFFS, T4_QUERIES, Cutoff,
                                 Retrieval, best_of, t3_pairs, t4_queries)
from perspectrum.eval.metrics import t1_relevance, t3_equivalence, t4_evidence
from perspectrum.index.store import IndexStore
from perspectrum.pipeline.pipeline import Pipeline
from perspectrum.models.rules import ranked
from perspectrum.index.search import DocId
from perspectrum.pipeline.stages import Candidate, ClaimState, Group, Member, Stance

#: The T4 cut-offs dev chooses among, per kind (the grids of ``evaluate --system ir``).
T4_GRIDS: dict[str, list[Cutoff]] = {"top_k": [Cutoff(k) for k in range(1, 31)],
                                     "relative": [Cutoff(k, r) for r in RELATIVE_RATIOS for k in RELATIVE_CAPS]}


def evidence_query(claim: str, texts: Sequence[str], mode: str) -> str:
    """The T4 query for one cluster, formed as :func:`perspectrum.eval.ir.t4_queries` forms
    it for a gold cluster, but from any cluster's texts (the one a system returned)."""
    if mode == "cluster":
        return " ".join([claim, *texts])
    if mode == "perspective":
        return f"{claim} {texts[0]}"
    return " ".join(texts)


def components(ids: Sequence[DocId], pairs: set[tuple[DocId, DocId]]) -> list[list[DocId]]:
    """The connected components of ``pairs`` over ``ids``, each in the order of ``ids``:
    clusters must partition the perspectives, and neighbour pairs need not be transitive."""
    parent = {pid: pid for pid in ids}

    def root(pid: DocId) -> DocId:
        while parent[pid] != pid:
            pid = parent[pid]
        return pid

    for a, b in pairs:
        parent[root(a)] = root(b)
    out: dict[DocId, list[DocId]] = {}
    for pid in ids:
        out.setdefault(root(pid), []).append(pid)
    return list(out.values())


class IRSystem:
    """The paper's IR row: retrieval alone, every cut-off chosen on dev.

    - retrieve: the retriever's top :data:`~perspectrum.eval.ir.DEPTH` for the claim;
    - relevance: the candidates ranked by the retriever's score for the claim, top ``k``;
    - stance: always "support" (the paper's IR row has no stance model);
    - equivalence: two perspectives are linked when one is among the other's top ``m``
      neighbours among the claim's perspectives, clusters are the linked components;
    - evidence: the evidence pool searched with the dev-chosen query form (claim and
      cluster, claim and first perspective, or cluster alone), cut as dev chose.

    ``prepare`` tunes ``k``, ``m`` and the T4 variant on dev (train when dev is the split
    under evaluation) by scoring the system's own answers there; it never sees the
    evaluated split. :attr:`settings` records the choices.
    """

    tasks = frozenset(CHAIN)

    def __init__(self, store: IndexStore, method: str = "hybrid", build_missing: bool = True,
                 show_progress: bool = False) -> None:
        if method not in METHODS:
            raise PerspectrumError(f"unknown retriever {method!r}: choose one of {', '.join(METHODS)}")
        self.name = f"ir ({method})"
        self.store, self.method = store, method
        self.build_missing, self.show_progress = build_missing, show_progress
        self.settings: dict[str, Any] = {}

    def prepare(self, data: Dataset) -> None:
        tune_split = "dev" if data.split("dev") else "train"
        tune = data.split(tune_split)
        if not tune:
            raise PerspectrumError("the IR system chooses its cut-offs on dev or train claims, and got none")
        self._texts = {pid: p.text for pid, p in data.perspectives.items()}
        self._perspectives = Retrieval(self.store, Pool.from_dataset(data, "perspectives"), self.build_missing,
                                       self.show_progress)
        self._evidence = Retrieval(self.store, Pool.from_dataset(data, "evidence"), self.build_missing,
                                   self.show_progress)
        claims = [c.text for c in tune]
        ranking = [self._ranked(claim, ids) for claim, ids in zip(claims, self.retrieve(claims))]
        self._k, t1_dev = best_of(range(1, DEPTH + 1), lambda k: t1_relevance(
            tune, {c.cid: ids[:k] for c, ids in zip(tune, ranking)})["f1"])
        gold = [sorted(c.gold_pids) for c in tune]
        neighbours = [self._neighbours(ids) for ids in gold]
        self._m, t3_dev = best_of(range(0, max(map(len, gold))), lambda m: t3_equivalence(tune, {
            c.cid: self._linked(ids, order, m) for c, ids, order in zip(tune, gold, neighbours)})["f1"])
        variants: list[tuple[float, str, Cutoff]] = []
        for mode in T4_QUERIES:
            run = self._evidence.runs(t4_queries(data, tune, mode))[self.method]
            for kind in T4_CUTOFFS:
                cutoff, f1 = best_of(T4_GRIDS[kind], lambda c: t4_evidence(
                    tune, {key: c.apply(hits) for key, hits in run.items()})["f1"])
                variants.append((f1, mode, cutoff))
        chosen, _ = best_of(range(len(variants)), lambda i: variants[i][0])
        t4_dev, self._query, self._cutoff = variants[chosen]
        self.settings = {"method": self.method, "tuned_on": tune_split,
                         "t1": {"k": self._k, "dev_f1": round(t1_dev * 100, 2)},
                         "t3": {"m": self._m, "dev_f1": round(t3_dev * 100, 2)},
                         "t4": {"query": self._query, **self._cutoff.to_dict(), "dev_f1": round(t4_dev * 100, 2)}}

    def retrieve(self, claims: list[str]) -> list[list[DocId]]:
        runs = self._perspectives.runs(dict(enumerate(claims)))[self.method]
        return [[hit.doc_id for hit in runs[n]] for n in range(len(claims))]

    def _ranked(self, claim: str, ids: Sequence[DocId]) -> list[DocId]:
        """``ids`` by the retriever's score for ``claim``, best first (ties: the given order)."""
        if not ids:
            return []
        scores = self._perspectives.searchers[self.method].score([claim], list(ids))[0]
        return [ids[i] for i in np.lexsort((np.arange(len(ids)), -scores))]

    def relevance(self, claims: list[str], candidates: list[list[DocId]]) -> list[list[DocId]]:
        return [self._ranked(claim, ids)[:self._k] for claim, ids in zip(claims, candidates)]

    def stance(self, claims: list[str], perspectives: list[list[DocId]]) -> list[list[float]]:
        return [[1.0] * len(ids) for ids in perspectives]

    def _neighbours(self, ids: Sequence[DocId]) -> dict[DocId, list[DocId]]:
        """Each perspective's others, nearest first (as :func:`perspectrum.eval.ir.t3_neighbours` orders them)."""
        if not ids:
            return {}
        scores = self._perspectives.searchers[self.method].score([self._texts[p] for p in ids], list(ids))
        return {pid: [ids[j] for j in np.lexsort((np.arange(len(ids)), -scores[row])) if ids[j] != pid]
                for row, pid in enumerate(ids)}

    def _linked(self, ids: Sequence[DocId], neighbours: dict[DocId, list[DocId]], m: int) -> set[tuple[DocId, DocId]]:
        """Pairs in one cluster when the top-``m`` neighbour pairs are closed into components."""
        clusters = components(ids, t3_pairs({0: neighbours}, m)[0])
        return {(a, b) for k in clusters for i, a in enumerate(k) for b in k[i + 1:]}

    def equivalence(self, claims: list[str], perspectives: list[list[DocId]]) -> list[list[list[DocId]]]:
        return [components(ids, t3_pairs({0: self._neighbours(ids)}, self._m)[0]) for ids in perspectives]

    def evidence(self, claims: list[str], clusters: list[list[list[DocId]]]) -> list[list[list[DocId]]]:
        queries = {(n, j): evidence_query(claim, [self._texts[p] for p in cluster], self._query)
                   for n, (claim, groups) in enumerate(zip(claims, clusters))
                   for j, cluster in enumerate(groups) if cluster}
        run = self._evidence.runs(queries)[self.method] if queries else {}
        return [[self._cutoff.apply(run.get((n, j), [])) for j in range(len(groups))]
                for n, groups in enumerate(clusters)]


def centred(support: float, threshold: float) -> float:
    """P(support) mapped piecewise-linearly so the dev-tuned ``threshold`` lands on the
    harness's 0.5 (monotone, 0 and 1 fixed): the pipeline's own decision, its ranking kept."""
    if support >= threshold:
        return 0.5 + 0.5 * (support - threshold) / (1 - threshold) if threshold < 1 else 1.0
    return 0.5 * support / threshold


class PipelineSystem:
    """A :class:`~perspectrum.pipeline.pipeline.Pipeline`, task by task, through its own stages.

    Each task builds a :class:`~perspectrum.pipeline.stages.ClaimState` from its input and runs the
    stage(s) that produce the answer, with the pipeline's dev-tuned settings:

    - retrieve: the retrieve stage;
    - relevance: the relevance stage on the given candidates (with their dense cosine);
    - stance: the stance stage on the given perspectives, P(support) :func:`centred` on
      the pipeline's threshold;
    - equivalence: stance, cluster and expand on the given perspectives, as the pipeline
      clusters (so a cluster may hold a pool paraphrase that was not given);
    - evidence: the evidence stage on the given clusters (verify only picks the window
      shown, never which paragraphs, so it is not run);
    - mine, match: :meth:`~perspectrum.pipeline.pipeline.Pipeline.mine` and
      :meth:`~perspectrum.pipeline.pipeline.Pipeline.match` on each text, when ``tasks`` names them
      (``evaluate --system trained`` scores the chain; `python -m benchmarks.text_tasks` scores these
      two beside their baselines, with the same scorers).

    Perspectives are put in the order relevance ranked them when this system kept them
    all (its own input), else by dense cosine to the claim, so the representative of a
    cluster never depends on the order the harness gives. ``prepare`` only loads the
    models: their cut-offs were tuned on dev when they were trained.
    """

    def __init__(self, pipe: Pipeline, tasks: Sequence[str] = CHAIN) -> None:
        self.pipe = pipe
        self.tasks = frozenset(tasks)
        self._relevance: dict[tuple[str, DocId], float] = {}

    @property
    def name(self) -> str:
        """``"shipped"``, ``"trained"`` or the scorers' kind: which models answer."""
        return self.pipe.system

    @property
    def settings(self) -> dict[str, dict[str, Any]]:
        return self.pipe.settings

    def prepare(self, data: Dataset) -> None:
        self.pipe.warm_up()

    def _run(self, states: list[ClaimState], stages: Sequence[str]) -> list[ClaimState]:
        self.pipe.advance(states, stages)
        return states

    def _states(self, claims: list[str]) -> tuple[list[ClaimState], Any]:
        from perspectrum.pipeline.pipeline import check_claim

        context = self.pipe._get().context
        texts = [check_claim(c) for c in claims]
        vectors = context.dense.encoder.encode(texts)
        return [ClaimState(text, vector=vector) for text, vector in zip(texts, vectors)], context

    def _members(self, state: ClaimState, ids: Sequence[DocId], context: Any) -> list[Member]:
        ids = list(dict.fromkeys(ids))
        known = [self._relevance.get((state.claim, pid)) for pid in ids]
        if ids and None in known:
            known = list(context.dense.vectors(ids) @ state.vector)
        return [Member(pid, float(score)) for score, pid in ranked(zip(ids, known))]

    def retrieve(self, claims: list[str]) -> list[list[DocId]]:
        return [[c.id for c in state.candidates] for state in self.pipe.run_stages(claims, until="retrieve")]

    def relevance(self, claims: list[str], candidates: list[list[DocId]]) -> list[list[DocId]]:
        states, context = self._states(claims)
        for state, ids in zip(states, candidates):
            cosines = context.dense.vectors(ids) @ state.vector if ids else []
            state.candidates = [Candidate(pid, float(c)) for pid, c in zip(ids, cosines)]
        out = []
        for state in self._run(states, ["relevance"]):
            self._relevance.update({(state.claim, m.id): m.relevance for m in state.kept})
            out.append([m.id for m in state.kept])
        return out

    def stance(self, claims: list[str], perspectives: list[list[DocId]]) -> list[list[float]]:
        states, context = self._states(claims)
        for state, ids in zip(states, perspectives):
            state.kept = self._members(state, ids, context)
        threshold = self.pipe.stage(Stance).threshold
        out = []
        for state, ids in zip(self._run(states, ["stance"]), perspectives):
            support = {m.id: m.support for m in state.kept}
            out.append([centred(support[pid], threshold) for pid in ids])
        return out

    def equivalence(self, claims: list[str], perspectives: list[list[DocId]]) -> list[list[list[DocId]]]:
        states, context = self._states(claims)
        for state, ids in zip(states, perspectives):
            state.kept = self._members(state, ids, context)
        return [[[state.kept[i].id for i in group.members] for group in state.groups]
                for state in self._run(states, ["stance", "cluster", "expand"])]

    def evidence(self, claims: list[str], clusters: list[list[list[DocId]]]) -> list[list[list[DocId]]]:
        states, _ = self._states(claims)
        shown: list[list[int | None]] = []  # per given cluster, its group's index (None: an empty cluster)
        for state, given in zip(states, clusters):
            where: list[int | None] = []
            for cluster in given:
                if not cluster:
                    where.append(None)
                    continue
                start = len(state.kept)
                state.kept += [Member(pid, 0.0) for pid in cluster]
                state.groups.append(Group(list(range(start, len(state.kept)))))
                where.append(len(state.groups) - 1)
            shown.append(where)
        return [[[] if g is None else [hit.id for hit in state.groups[g].evidence] for g in where]
                for state, where in zip(self._run(states, ["evidence"]), shown)]

    def mine(self, texts: list[str], claims: list[str]) -> list[list[tuple[int, int, str, float]]]:
        return [[(u.start, u.end, u.stance, u.score) for u in self.pipe.mine(text, claim)]
                for text, claim in zip(texts, claims)]

    def match(self, texts: list[str], claims: list[str], arguments: list[list[str]]) -> list[list[bool]]:
        return [[m.made for m in self.pipe.match(text, claim, listed)]
                for text, claim, listed in zip(texts, claims, arguments)]


def builtin_system(name: str, data_dir: str | Path | None, index_dir: str | Path | None,
                   models_dir: str | Path | None, verify: bool) -> IRSystem | PipelineSystem:
    """The system ``evaluate --system NAME`` scores through the harness: ``ir``, or the
    pipeline (``trained``, ``pipeline``: the models that answer, the user's or the shipped ones)."""
    if name == "ir":
        return IRSystem(IndexStore(folders.index_dir(index_dir)), show_progress=True)
    models = folders.models_dir(models_dir)
    return PipelineSystem(Pipeline.load(data_dir, folders.index_dir(index_dir), models, verify=verify,
                                        show_progress=True))


def reference_pipeline(system: Any, dataset: Dataset) -> Pipeline:
    """Our pipeline, whose models judge any system's mined units and whose indexes choose
    the candidate arguments `match` is scored on: the system's own when it is a
    :class:`PipelineSystem`, else one over the dataset's pools and the default folders
    (``$PERSPECTRUM_INDEXES``, ``$PERSPECTRUM_MODELS``)."""
    if isinstance(system, PipelineSystem):
        return system.pipe
    return Pipeline(Pool.from_dataset(dataset, "perspectives"), Pool.from_dataset(dataset, "evidence"),
                    IndexStore(folders.index_dir(None)))
