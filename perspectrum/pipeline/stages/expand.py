"""Stage 5: bring each cluster's paraphrases in from the pool.

PERSPECTRUM's pool holds several phrasings of most perspectives, and retrieval for the
claim finds only some of them: a paraphrase can be far from the claim's wording and
close to its cluster's. For each cluster, the pool's nearest neighbours of the
cluster's centroid that the claim did not keep are read by the equivalence model
against the representative; one at or above the clustering threshold joins the
cluster it fits best. With ``agree`` on, the stance model reads each admitted
paraphrase and one it would put on the other side of its cluster's stance stays out, so
expansion never shows a phrasing under a stance the model itself disagrees with;
otherwise added members take their cluster's stance unread. With ``vote`` on, every
admitted paraphrase is read and admitted whatever its side, and the cluster's P(support)
becomes the weighted mean over all its members (kept ones by relevance, paraphrases by
their similarity to the cluster): the side is decided by the whole cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from perspectrum.models.rules import blend
from perspectrum.pipeline.stages.base import PIPELINE, ClaimState, Context, Member, Stage, setting


def weighted_support(members: list[int], kept: list[Member], similarity: dict[object, float]) -> float:
    """A cluster's P(support) from every member whose stance was read: the mean weighted by
    each kept member's relevance and each added paraphrase's similarity to the cluster
    (weights floored at 0.05, so none is silenced); 0.5 when none was read."""
    read = [(kept[i].support, similarity.get(kept[i].id, 0.0) if kept[i].added else kept[i].relevance)
            for i in members if kept[i].support is not None]
    if not read:
        return 0.5
    weights = np.array([max(w, 0.05) for _, w in read])
    return float(np.dot(weights, [s for s, _ in read]) / weights.sum())


def _decide(states: list[ClaimState], similarity: dict[tuple[int, object], float]) -> None:
    """Every cluster's P(support) by :func:`weighted_support`; ``similarity`` keyed by (claim, paraphrase id)."""
    for n, state in enumerate(states):
        own = {doc_id: value for (m, doc_id), value in similarity.items() if m == n}
        for group in state.groups:
            group.support = weighted_support(group.members, state.kept, own)


@dataclass(frozen=True, kw_only=True)
class Expand(Stage):
    """Paraphrases from the pool for every cluster, off when ``neighbours`` is 0.

    Settings (declared here, once; who chooses each: :func:`~perspectrum.pipeline.stages.base.setting`).

    Attributes:
        weight, threshold: the blend and cut a paraphrase must pass (the cluster
            stage's unless given, so an added member is as similar as a clustered one).
        neighbours: pool neighbours of each cluster's centroid read by the model (0: off).
        agree: read each admitted paraphrase's stance and keep it only when the stance stage
            puts it on its cluster's side.
        vote: read each admitted paraphrase's stance, admit it whatever its side, and decide
            each cluster's P(support) from all its members and paraphrases, each weighted by
            its relevance to the claim (a paraphrase by its similarity to the cluster), so one
            mislabelled member is outvoted by the rest (``agree`` is then not applied).
        budget: at most this many (cluster, neighbour) pairs read by the equivalence model per
            claim, the closest to their cluster's representative first (0: no limit). It bounds
            the work a claim with many clusters causes.
    """

    name: ClassVar[str] = "expand"
    weight: float = setting(follows=("cluster", "weight"))
    threshold: float = setting(follows=("cluster", "threshold"))
    neighbours: int = setting(0, chosen=PIPELINE)
    agree: bool = setting(False, chosen=PIPELINE)
    vote: bool = setting(False, chosen=PIPELINE)
    budget: int = setting(0)

    def run(self, states: list[ClaimState], context: Context) -> None:
        if self.neighbours < 1:
            if self.vote:
                _decide(states, {})
            return
        dense, text = context.dense, context.perspective_text
        queries, owners = [], []
        for n, state in enumerate(states):
            for g, group in enumerate(state.groups):
                centroid = dense.vectors([state.kept[i].id for i in group.members]).mean(axis=0)
                queries.append(centroid / max(float(np.linalg.norm(centroid)), 1e-12))
                owners.append((n, g))
        if not queries:
            return
        depth = self.neighbours + max(len(s.kept) for s in states)
        runs = dense.search_vectors(np.array(queries, dtype=np.float32), depth)
        asked: list[list[tuple[float, tuple[str, str, str], tuple[int, int, object, float]]]] = [[] for _ in states]
        for (n, g), run in zip(owners, runs):
            state = states[n]
            taken = {m.id for m in state.kept}
            representative = state.kept[state.groups[g].members[0]].id
            fresh = [h for h in run if h.doc_id not in taken][:self.neighbours]
            cosines = dense.vectors([h.doc_id for h in fresh]) @ dense.vectors([representative])[0] if fresh else []
            for hit, cosine in zip(fresh, cosines):
                if blend(1.0, float(cosine), self.weight) < self.threshold:
                    continue
                asked[n].append((float(cosine), (state.claim, text[representative], text[hit.doc_id]),
                                 (n, g, hit.doc_id, float(cosine))))
        if self.budget > 0:  # the closest pairs of each claim first; the order among them is kept
            asked = [[ask for _, ask in sorted(sorted(enumerate(mine), key=lambda a: -a[1][0])[:self.budget])]
                     for mine in asked]
        triples = [triple for mine in asked for _, triple, _ in mine]
        where = [place for mine in asked for _, _, place in mine]
        scores = context.scorers.equivalence(triples)
        best: dict[tuple[int, object], tuple[float, int]] = {}
        for (n, g, doc_id, cosine), score in zip(where, scores):
            value = blend(float(score), cosine, self.weight)
            if value >= self.threshold and value > best.get((n, doc_id), (-1.0, -1))[0]:
                best[(n, doc_id)] = (value, g)
        admitted = sorted(best.items(), key=lambda item: (item[0][0], -item[1][0], str(item[0][1])))
        similarity: dict[tuple[int, object], float] = {}
        supports: list[float | None] = [None] * len(admitted)
        if (self.agree or self.vote) and admitted:
            supports = list(map(float, context.scorers.stance([(states[n].claim, text[doc_id])
                                                                for (n, doc_id), _ in admitted])))
        for ((n, doc_id), (_, g)), support in zip(admitted, supports):
            state = states[n]
            if not self.vote and support is not None and context.stance.leans(support) != \
                    context.stance.leans(state.groups[g].support):
                continue
            cosine = float(dense.vectors([doc_id])[0] @ state.vector) if state.vector is not None else 0.0
            state.kept.append(Member(doc_id, cosine, support=support, added=True))
            state.groups[g].members.append(len(state.kept) - 1)
            similarity[(n, doc_id)] = best[(n, doc_id)][0]
        if self.vote:
            _decide(states, similarity)
