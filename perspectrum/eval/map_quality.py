"""`map` on PERSPECTRUM: does a pile of paragraphs map to the claim's gold perspectives?

Each claim of a split becomes one pile: its gold evidence paragraphs, plus as many
paragraphs of other claims that share one of its topics (distractors, drawn with a fixed
seed; other claims' paragraphs when the topic has too few). The pile is mapped for the
claim (:meth:`perspectrum.Pipeline.map`'s steps: every paragraph mined, the units grouped
by :func:`perspectrum.pipeline.map.build_map`), and each map perspective's key point
is judged against the gold perspectives by the equivalence model, blended and cut as
`mine`'s evaluation judges units (:class:`perspectrum.eval.mine_quality.Judge`):

- **coverage**: of the claim's gold clusters with evidence, the share some map
  perspective is judged equivalent to (beside `mine`'s cluster hit share);
- **purity**: of the map perspectives, the share whose units all come from paragraphs
  of one gold cluster's evidence (a distractor's unit makes a perspective impure);
- **side accuracy** of the matched perspectives against their best-matching cluster's
  stance: strict (a perspective shown as "side unclear" counts wrong) and over those shown on a side;
- **prevalence**: Spearman correlation, over matched perspectives, between how many
  documents make one and how many evidence paragraphs its cluster has;
- **key point matching mAP** as the ArgKP-2021 shared task computes it (Friedman et al., 2021;
  :func:`argkp_map`), on these pairs: each paragraph (argument) is matched to the gold cluster
  (key point) that the map predicts best for it, the highest judge score of any map perspective
  quoting it against any of the cluster's perspectives. Predictions are grouped by claim (topic)
  and the cluster's side (stance); in each group the top half by score is kept and its average
  precision taken; mAP is their mean. A pair is a match when the paragraph is the cluster's gold
  evidence. PERSPECTRUM never judged a paragraph of the claim against its other clusters: those
  pairs are "undecided", wrong in the strict figure and right in the relaxed one, as the task
  treats pairs its annotators left undecided. A distractor's pair is never a match. As in the
  task's script, a paragraph with no prediction (no unit mined from it) is left out; the
  share of paragraphs predicted is reported beside it.

Mining is the costly part and does not depend on the grouping, so each pile is mined
once and mapped at every candidate threshold (:func:`evaluate_map`).
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from perspectrum._progress import progress
from perspectrum.data import Claim, Dataset
from perspectrum.eval.metrics import f1, percent
from perspectrum.eval.mine_quality import Judge
from perspectrum.pipeline.map import JOIN, LOWER, MappedPerspective, MapSettings, build_map
from perspectrum.pipeline.stages import ClusterStage, Stance
from perspectrum.text.mining import MinedUnit

#: The seed distractors are drawn with.
SEED = 13
#: Figures given in percent.
SHARES = ("coverage", "purity", "purity_shown", "side_accuracy", "side_accuracy_on_a_side", "f1", "unclear",
          "quoted_share", "doc_side_accuracy", "doc_side_on_a_side",
          "argkp_map_strict", "argkp_map_relaxed", "argkp_map", "argkp_predicted")
#: Of each topic and stance's predictions, the top share by score that ArgKP-2021's mAP reads.
TOP_SHARE = 0.5


@dataclass(frozen=True)
class Pile:
    """One claim's documents (evidence ids as text → paragraph) and, for each gold
    paragraph, the indices of the claim's clusters that cite it."""

    claim: Claim
    documents: dict[str, str]
    citing: dict[str, tuple[int, ...]]


def piles(dataset: Dataset, split: str, seed: int = SEED) -> list[Pile]:
    """Every ``split`` claim with gold evidence as a :class:`Pile` (see the module docstring)."""
    owners: dict[int, set[int]] = {}
    for claim in dataset.claims.values():
        for cluster in claim.clusters:
            for eid in cluster.evidence:
                owners.setdefault(eid, set()).add(claim.cid)
    by_topic: dict[str, set[int]] = {}
    for eid, cids in owners.items():
        for cid in cids:
            for topic in dataset.claims[cid].topics:
                by_topic.setdefault(topic, set()).add(eid)
    rng = random.Random(seed)
    out = []
    for claim in dataset.split(split):
        citing: dict[str, list[int]] = {}
        for k, cluster in enumerate(claim.clusters):
            for eid in cluster.evidence:
                citing.setdefault(str(eid), []).append(k)
        if not citing:
            continue
        gold = {int(e) for e in citing}
        near = sorted({e for t in claim.topics for e in by_topic.get(t, ())} - gold)
        far = sorted(set(owners) - gold - set(near))
        picked = rng.sample(near, min(len(gold), len(near)))
        picked += rng.sample(far, len(gold) - len(picked))
        eids = sorted(gold | set(picked))
        out.append(Pile(claim, {str(e): dataset.evidence[e].text for e in eids},
                        {e: tuple(ks) for e, ks in citing.items()}))
    return out


def score_pile(dataset: Dataset, pile: Pile, found: Sequence[MappedPerspective], judge: Any) -> dict[str, Any]:
    """Counts for one pile's map (summed over piles by :func:`figures`)."""
    claim = pile.claim
    with_evidence = [k for k, cluster in enumerate(claim.clusters) if cluster.evidence]
    triples, where = [], []
    for p, perspective in enumerate(found):
        for k in with_evidence:
            for pid in claim.clusters[k].pids:
                triples.append((claim.text, perspective.key_point, dataset.perspectives[pid].text))
                where.append((p, k))
    best: dict[int, tuple[float, int]] = {}
    covered: set[int] = set()
    scored = judge.scores(triples) if triples else []
    for (p, k), score in zip(where, scored):
        if score >= judge.threshold:
            covered.add(k)
            if score > best.get(p, (-1.0, -1))[0]:
                best[p] = (float(score), k)
    evidence = [set(claim.clusters[k].evidence) for k in with_evidence]

    def pure(perspective: MappedPerspective) -> bool:
        docs = {int(q.document) for q in perspective.quotes}
        return any(docs <= e for e in evidence)

    sides = [(found[p].side, "support" if claim.clusters[k].stance == "SUPPORT" else "undermine")
             for p, (_, k) in best.items()]
    pair: dict[tuple[int, int], float] = {}
    for (p, k), score in zip(where, scored):
        pair[p, k] = max(pair.get((p, k), 0.0), float(score))
    predicted: dict[str, tuple[float, int]] = {}  # paragraph → (best score, cluster), first best kept
    for p, perspective in enumerate(found):
        for doc in dict.fromkeys(q.document for q in perspective.quotes):
            for k in with_evidence:
                if pair.get((p, k), 0.0) > predicted.get(doc, (-1.0, -1))[0]:
                    predicted[doc] = (pair.get((p, k), 0.0), k)
    argkp = [(f"{claim.cid}:{claim.clusters[k].stance}", score, k in pile.citing.get(doc, ()),
              k in pile.citing.get(doc, ()) or doc in pile.citing) for doc, (score, k) in predicted.items()]
    return {**document_counts(pile, found), "clusters": len(with_evidence), "covered": len(covered),
            "perspectives": len(found),
            "pure": sum(pure(p) for p in found), "shown": sum(p.documents >= 2 for p in found),
            "pure_shown": sum(pure(p) for p in found if p.documents >= 2),
            "matched": len(best), "right": sum(a == b for a, b in sides),
            "on_a_side": sum(a != "unclear" for a, _ in sides),
            "right_on_a_side": sum(a == b for a, b in sides if a != "unclear"),
            "prevalence": [(found[p].documents, len(claim.clusters[k].evidence)) for p, (_, k) in best.items()],
            "paragraphs": len(pile.documents), "argkp": argkp}


def owner(pile: Pile, perspective: MappedPerspective) -> int | None:
    """The gold cluster whose evidence most of a perspective's documents are (ties: the first),
    or ``None`` when most are not the claim's evidence."""
    held = [k for doc in perspective.made_by for k in pile.citing.get(doc, ())]
    if 2 * sum(doc in pile.citing for doc in perspective.made_by) <= len(perspective.made_by) or not held:
        return None
    return max(sorted(set(held)), key=held.count)


def document_counts(pile: Pile, found: Sequence[MappedPerspective]) -> dict[str, Any]:
    """What a map does with each document, read from the gold evidence alone (no judge): see
    :func:`figures` (``quoted_share``, ``per_gold_*``, ``doc_side_*``, ``cluster_counts``)."""
    claim = pile.claim
    shown = [p for p in found if p.documents >= 2]
    also = [p for p in found if p.documents < 2]
    clusters = [k for k, cluster in enumerate(claim.clusters) if cluster.evidence]
    stance = {k: "support" if claim.clusters[k].stance == "SUPPORT" else "undermine" for k in clusters}
    quoted = {doc for p in shown for doc in p.made_by if doc in pile.citing}
    doc_side = [(p.side, {stance[k] for k in pile.citing[doc]}) for p in shown for doc in p.made_by
                if doc in pile.citing]
    doc_side = [(shown_side, next(iter(gold))) for shown_side, gold in doc_side if len(gold) == 1]
    owners_shown = [owner(pile, p) for p in shown]
    owners_also = [owner(pile, p) for p in also]
    largest: dict[int, int] = {}
    for p, k in zip(shown, owners_shown):
        if k is not None:
            largest[k] = max(largest.get(k, 0), p.documents)
    return {"gold_documents": len(pile.citing), "quoted": len(quoted),
            "owned_shown": sum(k is not None for k in owners_shown), "owned_also": sum(k is not None for k in owners_also),
            "gold_clusters": len(clusters), "doc_sides": len(doc_side),
            "doc_right": sum(a == b for a, b in doc_side), "doc_on_a_side": sum(a != "unclear" for a, _ in doc_side),
            "doc_right_on_a_side": sum(a == b for a, b in doc_side if a != "unclear"),
            "cluster_counts": [(n, len(claim.clusters[k].evidence)) for k, n in largest.items()]}


def figures(counts: Sequence[dict[str, Any]]) -> dict[str, float]:
    """The module docstring's figures (fractions) from :func:`score_pile` counts."""
    from scipy.stats import spearmanr

    summed = [key for key in (counts[0] if counts else {}) if key not in ("prevalence", "argkp", "cluster_counts")]
    total = {key: sum(c[key] for c in counts) for key in summed}
    pairs = [pair for c in counts for pair in c["prevalence"]]
    rho = float(spearmanr(*zip(*pairs)).statistic) if len(pairs) > 2 and len({a for a, _ in pairs}) > 1 else 0.0
    coverage = total.get("covered", 0) / max(1, total.get("clusters", 0))
    purity = total.get("pure", 0) / max(1, total.get("perspectives", 0))
    return {"coverage": coverage, "purity": purity, "f1": f1(coverage, purity),
            "purity_shown": total.get("pure_shown", 0) / max(1, total.get("shown", 0)),
            "side_accuracy": total.get("right", 0) / max(1, total.get("matched", 0)),
            "side_accuracy_on_a_side": total.get("right_on_a_side", 0) / max(1, total.get("on_a_side", 0)),
            "unclear": 1 - total.get("on_a_side", 0) / max(1, total.get("matched", 0)),
            "spearman": round(rho, 4), "prevalence_pairs": float(len(pairs)),
            "perspectives_per_claim": total.get("perspectives", 0) / max(1, len(counts)),
            **judge_free(counts, total),
            **argkp_map([row for c in counts for row in c.get("argkp", ())], total.get("paragraphs", 0)),
            "claims": float(len(counts))}


def judge_free(counts: Sequence[dict[str, Any]], total: dict[str, Any]) -> dict[str, float]:
    """The figures read from the gold evidence alone (:func:`document_counts`):

    - ``quoted_share``: of the gold evidence paragraphs, the share a main-list perspective (made by
      ≥ 2 documents) quotes;
    - ``per_gold_shown`` / ``per_gold_also``: main-list / also-mentioned perspectives owned by a gold
      cluster (most of their documents are its evidence), per gold cluster with evidence;
    - ``doc_side_accuracy`` (strict: "unclear" is wrong) and ``doc_side_on_a_side``: the side of
      every quoted gold paragraph (its main-list perspective's side against the stance of the
      cluster it is evidence for; a paragraph cited by clusters of both stances is left out);
    - ``cluster_spearman``: over gold clusters some main-list perspective owns, Spearman between the
      document count the map shows for its largest such perspective and the cluster's evidence
      count: each gold perspective once, however many pieces the map cut it into (the per-perspective
      ``spearman`` pairs every piece, most of them made by one document, with its cluster's count,
      and almost half the clusters have a single evidence paragraph: ties leave it little to rank)."""
    from scipy.stats import spearmanr

    if "gold_documents" not in total:
        return {}
    pairs = [pair for c in counts for pair in c.get("cluster_counts", ())]
    rho = (float(spearmanr(*zip(*pairs)).statistic)
           if len(pairs) > 2 and len({a for a, _ in pairs}) > 1 and len({b for _, b in pairs}) > 1 else 0.0)
    return {"quoted_share": total["quoted"] / max(1, total["gold_documents"]),
            "per_gold_shown": total["owned_shown"] / max(1, total["gold_clusters"]),
            "per_gold_also": total["owned_also"] / max(1, total["gold_clusters"]),
            "doc_side_accuracy": total["doc_right"] / max(1, total["doc_sides"]),
            "doc_side_on_a_side": total["doc_right_on_a_side"] / max(1, total["doc_on_a_side"]),
            "cluster_spearman": round(rho, 4), "cluster_pairs": float(len(pairs))}


def argkp_map(rows: Sequence[tuple[str, float, bool, bool]], paragraphs: int = 0) -> dict[str, float]:
    """ArgKP-2021's key point matching mAP over ``rows`` of (topic and stance, score, strict
    match, relaxed match), one per argument (see the module docstring): in each topic and
    stance the top :data:`TOP_SHARE` of predictions by score (``int(n × share)`` of them, as the
    task's script counts; a group whose top share holds none is left out), average precision
    (scikit-learn's, 0 without a match), and the mean over groups; ``argkp_map`` is the mean of
    strict and relaxed, the task's headline. ``paragraphs``: how many arguments there were, for
    ``argkp_predicted``."""
    from sklearn.metrics import average_precision_score

    grouped: dict[str, list[tuple[float, bool, bool]]] = {}
    for group, score, strict, relaxed in rows:
        grouped.setdefault(group, []).append((score, strict, relaxed))
    out: dict[str, list[float]] = {"strict": [], "relaxed": []}
    for found in grouped.values():
        top = sorted(found, key=lambda row: -row[0])[:int(len(found) * TOP_SHARE)]
        if not top:
            continue
        for name, column in (("strict", 1), ("relaxed", 2)):
            labels = [int(row[column]) for row in top]
            out[name].append(float(average_precision_score(labels, [row[0] for row in top])) if any(labels) else 0.0)
    strict = float(np.mean(out["strict"])) if out["strict"] else 0.0
    relaxed = float(np.mean(out["relaxed"])) if out["relaxed"] else 0.0
    return {"argkp_map_strict": strict, "argkp_map_relaxed": relaxed, "argkp_map": (strict + relaxed) / 2,
            "argkp_groups": float(len(out["strict"])), "argkp_predicted": len(rows) / max(1, paragraphs)}


class CachedJudge:
    """:class:`~perspectrum.eval.mine_quality.Judge` that reads each triple once, and never reads one
    whose cosine is too low to pass even at a model score of 1 (it scores 0)."""

    def __init__(self, judge: Judge, encode: Any) -> None:
        self.judge, self.encode, self.threshold = judge, encode, judge.threshold
        self.scored: dict[tuple[str, str, str], float] = {}

    def scores(self, triples: Sequence[tuple[str, str, str]]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(triples) if t not in self.scored]
        if missing:
            texts = list(dict.fromkeys(x for _, a, b in missing for x in (a, b)))
            vectors = dict(zip(texts, self.encode(texts)))
            lowest = (self.threshold - self.judge.weight) / (1 - self.judge.weight) if self.judge.weight < 1 else -1.0
            read = [t for t in missing if float(vectors[t[1]] @ vectors[t[2]]) >= lowest]
            self.scored.update({t: 0.0 for t in missing})
            self.scored.update(zip(read, (float(x) for x in self.judge.scores(read))))
        return np.array([self.scored[t] for t in triples])


def mine_piles(pipe: Any, found: Sequence[Pile], show_progress: bool = False) -> list[list[tuple[str, MinedUnit]]]:
    """Every pile's (document id, unit) pairs, mined with ``pipe`` as ``map`` mines a pile
    (:meth:`perspectrum.pipeline.pipeline.Pipeline.mine_pile`)."""
    out = []
    with progress("map: mining", sum(len(p.documents) for p in found), enabled=show_progress) as advance:
        for pile in found:
            ids = list(pile.documents)
            found_units = pipe.mine_pile([pile.documents[d] for d in ids], pile.claim.text)
            out.append([(doc_id, u) for doc_id, units in zip(ids, found_units) for u in units])
            advance(len(ids))
    return out


def evaluate_map(dataset: Dataset, pipe: Any, split: str = "dev", settings: Sequence[tuple[float, float | None]] = (
                 (LOWER, JOIN),), show_progress: bool = False,
                 mined: Sequence[Sequence[tuple[str, MinedUnit]]] | None = None) -> dict[str, Any]:
    """Mine every ``split`` pile once with ``pipe`` and map it at each of ``settings``: (how far
    the clustering cut is lowered, the second pass's join or ``None`` for none); the figures for
    each (percent; counts as counts). On test, run it with the dev-chosen setting alone.
    """
    started = time.perf_counter()
    stance, cluster = pipe.stage(Stance), pipe.stage(ClusterStage)
    encoder = pipe.store.encoder
    found = piles(dataset, split)
    units_of = list(mined) if mined is not None else mine_piles(pipe, found, show_progress)
    mined_pairs = list(zip(found, units_of))
    mining = time.perf_counter() - started
    vectors: dict[str, np.ndarray] = {}

    def encode(texts: list[str]) -> np.ndarray:  # each unit encoded once across the thresholds
        missing = [t for t in dict.fromkeys(texts) if t not in vectors]
        if missing:
            vectors.update(zip(missing, encoder.encode(missing)))
        return np.array([vectors[t] for t in texts])

    scored: dict[tuple[str, str, str], float] = {}

    def equivalence(triples: list[tuple[str, str, str]]) -> list[float]:  # each pair read once
        missing = [t for t in dict.fromkeys(triples) if t not in scored]
        if missing:
            scored.update(zip(missing, (float(s) for s in pipe.scorers.equivalence(missing))))
        return [scored[t] for t in triples]

    judge = CachedJudge(Judge(pipe.scorers, encoder), encode)
    tried = []
    with progress("map: grouping and judging", len(settings) * len(mined_pairs), enabled=show_progress) as advance:
        for lower, join in settings:
            threshold = max(0.0, cluster.threshold - lower)
            chosen = replace(MapSettings(), threshold=threshold, join=join)
            counts = []
            for pile, units in mined_pairs:
                shown, also = build_map(pile.claim.text, units, encode, len(pile.documents), equivalence,
                                        stance, chosen, cluster.weight, threshold)
                counts.append(score_pile(dataset, pile, [*shown, *also], judge))
                advance(1)
            tried.append({"lower": lower, "threshold": round(threshold, 4), "join": join,
                          **percent(figures(counts), (), SHARES)})
    return {"system": pipe.system, "split": split, "seed": SEED,
            "judge": {"weight": judge.judge.weight, "threshold": judge.threshold},
            "documents": sum(len(p.documents) for p, _ in mined_pairs), "units": sum(len(u) for _, u in mined_pairs),
            "tried": tried, "seconds_mining": round(mining, 1), "seconds": round(time.perf_counter() - started, 1)}
