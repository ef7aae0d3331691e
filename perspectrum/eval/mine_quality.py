"""`mine` on PERSPECTRUM: do the units mined from a cluster's evidence state its perspective?

Evidence paragraphs are argumentative text for their claims, and the gold perspectives
they back say what a unit mined from them should say. So each (claim, evidence paragraph)
pair is one document, mined for the claim, and each mined unit is judged against the
perspectives of the gold clusters that cite the paragraph by the equivalence model,
blended with the cosine and cut at the dev-tuned threshold the clustering uses (the
judge is ours whatever system mined the units):

- **cluster hit share**: of the gold clusters with evidence, the share for which some
  unit mined from one of their evidence paragraphs is judged equivalent to one of their
  perspectives (the issue's target: at least 50 %);
- **stance accuracy** of those judged-equivalent units against their cluster's stance;
- **unit precision**: of all mined units, the share judged equivalent to a perspective
  of a cluster citing their paragraph (mining every sentence would buy hits with it);
- units per document, and per 100 words.

:func:`tune_mine` chooses :class:`perspectrum.text.mining.MineSettings` on dev by the F2 of
hit share and unit precision (see :data:`OBJECTIVE`), from every candidate's scores
computed once.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from perspectrum._progress import progress
from perspectrum.data import Dataset
from perspectrum.errors import PerspectrumError
from perspectrum.eval.metrics import f1, percent
from perspectrum.pipeline.mine import read_candidates
from perspectrum.text.mining import Candidates, MinedUnit, MineSettings, non_overlapping
from perspectrum.models.rules import blend


@dataclass(frozen=True)
class MineDocument:
    """One evidence paragraph of a claim, with the claim's gold clusters that cite it."""

    cid: int
    claim: str
    eid: int
    text: str
    clusters: tuple[int, ...]  # indices into the claim's clusters


def mine_documents(dataset: Dataset, split: str) -> list[MineDocument]:
    """Every (claim, evidence paragraph) pair of ``split``, in claim then paragraph order."""
    docs = []
    for claim in dataset.split(split):
        citing: dict[int, list[int]] = {}
        for index, cluster in enumerate(claim.clusters):
            for eid in cluster.evidence:
                citing.setdefault(eid, []).append(index)
        docs += [MineDocument(claim.cid, claim.text, eid, dataset.evidence[eid].text, tuple(ks))
                 for eid, ks in citing.items()]
    return docs


class Judge:
    """Our equivalence model and encoder, blended and cut as the clustering stage does."""

    def __init__(self, scorers: Any, encoder: Any) -> None:
        self.scorers, self.encoder = scorers, encoder
        self.weight = float(scorers.settings["equivalence"]["weight"])
        self.threshold = float(scorers.settings["equivalence"]["threshold"])

    def scores(self, triples: Sequence[tuple[str, str, str]]) -> np.ndarray:
        """Blended equivalence of each (claim, unit, perspective)."""
        if not triples:
            return np.zeros(0)
        texts = sorted({t for _, a, b in triples for t in (a, b)})
        vectors = dict(zip(texts, self.encoder.encode(texts)))
        cosine = np.array([float(vectors[a] @ vectors[b]) for _, a, b in triples])
        return blend(np.asarray(self.scorers.equivalence(list(triples)), dtype=np.float64), cosine, self.weight)


def judged(dataset: Dataset, docs: Sequence[MineDocument], units: Sequence[Sequence[str]],
           judge: Judge) -> list[list[dict[int, bool]]]:
    """Per document, per unit: for each citing cluster, whether the unit is judged
    equivalent to one of its perspectives."""
    triples, where = [], []
    for d, (doc, texts) in enumerate(zip(docs, units)):
        claim = dataset.claims[doc.cid]
        for u, text in enumerate(texts):
            for k in doc.clusters:
                for pid in claim.clusters[k].pids:
                    triples.append((doc.claim, text, dataset.perspectives[pid].text))
                    where.append((d, u, k))
    scores = judge.scores(triples)
    out = [[{k: False for k in doc.clusters} for _ in texts] for doc, texts in zip(docs, units)]
    for (d, u, k), score in zip(where, scores):
        out[d][u][k] = out[d][u][k] or bool(score >= judge.threshold)
    return out


def score_units(dataset: Dataset, docs: Sequence[MineDocument], verdicts: Sequence[Sequence[Mapping[int, bool]]],
                stances: Sequence[Sequence[str]] | None = None) -> dict[str, float]:
    """The module docstring's figures (fractions) from :func:`judged` verdicts and, if given,
    each unit's stance ("support"/"undermine")."""
    hit: set[tuple[int, int]] = set()
    right = said = equivalent = units = 0
    for d, doc in enumerate(docs):
        claim = dataset.claims[doc.cid]
        for u, verdict in enumerate(verdicts[d]):
            units += 1
            equivalent += any(verdict.values())
            for k, same in verdict.items():
                if same:
                    hit.add((doc.cid, k))
                    if stances is not None:
                        said += 1
                        right += (stances[d][u] == "support") == (claim.clusters[k].stance == "SUPPORT")
    clusters = {(doc.cid, k) for doc in docs for k in doc.clusters}
    share = len(hit) / max(1, len(clusters))
    precision = equivalent / max(1, units)
    words = sum(len(doc.text.split()) for doc in docs)
    out = {"cluster_hit_share": share, "unit_precision": precision, "f1": f1(share, precision),
           "f2": _f2(share, precision),
           "clusters": float(len(clusters)), "documents": float(len(docs)), "units": float(units),
           "units_per_document": units / max(1, len(docs)), "units_per_100_words": 100 * units / max(1, words)}
    if stances is not None:
        out["stance_accuracy"] = right / max(1, said)
        out["stance_judged_units"] = float(said)
    return out


def _f2(share: float, precision: float) -> float:
    """F-beta with beta 2 (recall counts four times as much as precision)."""
    return 5 * share * precision / (4 * precision + share) if share + precision else 0.0


#: What dev tuning maximises: F2 of cluster hit share and unit precision. Mined units feed
#: `discover` pools (``--add-to``), whose relevance and clustering stages filter them
#: again, and a perspective the miner leaves out is lost for good; so a miss costs more
#: than an extra unit.
OBJECTIVE = "f2"

CLAIMS = (0.0, 0.5, 1.0)
CENTRES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0)
FIRSTS = (0.0, 0.1, 0.2, 0.3)
LENGTHS = (0.0, 0.15, 0.3, 0.5)
CUTS = tuple(round(float(t), 2) for t in np.arange(-1.0, 5.001, 0.02))


#: The figures of :func:`score_units` shown in percent (the others are counts and averages).
SHARES = ("cluster_hit_share", "unit_precision", "f1", "f2", "stance_accuracy")


@dataclass
class Scored:
    """Every candidate of the documents, read once (features and the judge's verdicts)."""

    candidates: list[Candidates]
    verdicts: list[list[dict[int, bool]]]


def score_candidates(dataset: Dataset, docs: Sequence[MineDocument], pipe: Any, judge: Judge,
                     show_progress: bool = False) -> Scored:
    """Features (:func:`perspectrum.pipeline.mine.read_candidates`) and the judge's verdicts for
    every candidate of every document."""
    found = []
    with progress("mine candidates", len(docs), enabled=show_progress) as advance:
        for doc in docs:
            found.append(read_candidates(doc.text, doc.claim, pipe.scorers, pipe.store.encoder))
            advance(1)
    return Scored(found, judged(dataset, docs, [[s.text for s in c.spans] for c in found], judge))


def _sweep(docs: Sequence[MineDocument], scored: Scored, settings: MineSettings) -> list[dict[str, float]]:
    """Figures at every threshold of :data:`CUTS` for one scoring, from one greedy pass per
    document: the units kept at threshold t are the greedy picks scoring at least t."""
    picks, hits_at = [], {}
    for doc, found, verdicts in zip(docs, scored.candidates, scored.verdicts):
        values = found.scores(settings)
        for i in non_overlapping(found.spans, values, -np.inf):
            same = [k for k, v in verdicts[i].items() if v]
            picks.append((values[i], bool(same)))
            for k in same:
                key = (doc.cid, k)
                hits_at[key] = max(hits_at.get(key, -np.inf), values[i])
    clusters = len({(doc.cid, k) for doc in docs for k in doc.clusters})
    values = np.array([v for v, _ in picks])
    equivalent = np.array([e for _, e in picks])
    best = np.array(list(hits_at.values()))
    out = []
    for cut in CUTS:
        kept = values >= cut
        share = float((best >= cut).sum()) / max(1, clusters)
        precision = float(equivalent[kept].sum()) / max(1, int(kept.sum()))
        out.append({"threshold": cut, "cluster_hit_share": share, "unit_precision": precision,
                    "f1": f1(share, precision), "f2": _f2(share, precision),
                    "units_per_document": float(kept.sum()) / max(1, len(docs))})
    return out


def choose(docs: Sequence[MineDocument], scored: Scored) -> tuple[MineSettings, dict[str, float], list[dict[str, Any]]]:
    """The setting with the best :data:`OBJECTIVE` (first on ties) over every weight and
    threshold, its figures, and the best threshold's figures for every weighting tried."""
    best: tuple[float, MineSettings, dict[str, float]] | None = None
    tried = []
    for claim in CLAIMS:
        for centre in CENTRES:
            for first in FIRSTS:
                for length in LENGTHS:
                    weights = MineSettings(claim, centre, first, length)
                    sweep = _sweep(docs, scored, weights)
                    top = max(sweep, key=lambda row: row[OBJECTIVE])
                    tried.append({**asdict(weights), **percent(top, (), SHARES)})
                    if best is None or top[OBJECTIVE] > best[0]:
                        best = (top[OBJECTIVE], MineSettings(claim, centre, first, length, top["threshold"]), top)
    assert best is not None
    return best[1], percent(best[2], (), SHARES), tried


def tune_mine(dataset: Dataset, pipe: Any, tune_split: str = "dev", show_progress: bool = False) -> dict[str, Any]:
    """Choose :class:`MineSettings` on ``tune_split`` (:func:`choose`); its figures there
    beside the relevance model alone. ``pipe`` is a :class:`perspectrum.pipeline.pipeline.Pipeline`.

    Returns:
        A JSON-ready dict: the chosen setting (``MineSettings``' defaults are set to it),
        its figures, the relevance-only figures, the ceiling of the candidates (every one
        kept, overlaps and all: no cut can reach more clusters), and every weighting tried.
    """
    started = time.perf_counter()
    judge = Judge(pipe.scorers, pipe.store.encoder)
    docs = mine_documents(dataset, tune_split)
    scored = score_candidates(dataset, docs, pipe, judge, show_progress)
    setting, figures, tried = choose(docs, scored)
    relevance_only = max(_sweep(docs, scored, MineSettings(0.0, 0.0, 0.0, 0.0)), key=lambda row: row[OBJECTIVE])
    every = score_units(dataset, docs, scored.verdicts)
    return {"system": pipe.system, "tuned_on": tune_split, "objective": OBJECTIVE, "setting": asdict(setting),
            "judge": {"weight": judge.weight, "threshold": judge.threshold}, tune_split: figures,
            "relevance_only": percent(relevance_only, (), SHARES),
            "every_candidate": percent({k: every[k] for k in ("cluster_hit_share", "unit_precision",
                                                               "units_per_document")}, (), SHARES),
            "tried": tried,
            "candidates_per_document": round(sum(len(c.spans) for c in scored.candidates) / max(1, len(docs)), 2),
            "seconds": round(time.perf_counter() - started, 1)}


def evaluate_mine(dataset: Dataset, pipe: Any, split: str = "test", settings: MineSettings = MineSettings(),
                  show_progress: bool = False) -> dict[str, Any]:
    """Run :meth:`perspectrum.pipeline.pipeline.Pipeline.mine` with ``settings`` (the dev-chosen
    defaults) on every ``split`` document and judge what it returns; ``split`` labels are
    read only here, to score.

    Returns:
        A JSON-ready dict: the figures of the module docstring (percent; counts as counts)
        and the seconds mining took per document.
    """
    started = time.perf_counter()
    judge = Judge(pipe.scorers, pipe.store.encoder)
    docs = mine_documents(dataset, split)
    units: list[list[MinedUnit]] = []
    with progress(f"mine {split}", len(docs), enabled=show_progress) as advance:
        for doc in docs:
            units.append(pipe.mine(doc.text, doc.claim, settings))
            advance(1)
    seconds = time.perf_counter() - started
    verdicts = judged(dataset, docs, [[u.text for u in doc_units] for doc_units in units], judge)
    figures = percent(score_units(dataset, docs, verdicts, [[u.stance for u in du] for du in units]), (),
                      SHARES)
    return {"system": pipe.system, "split": split, "setting": asdict(settings),
            "judge": {"weight": judge.weight, "threshold": judge.threshold}, split: figures,
            "seconds_per_document": round(seconds / max(1, len(docs)), 3),
            "seconds": round(time.perf_counter() - started, 1)}


def _units(answer: Any, text: str, where: str) -> list[tuple[int, int, str]]:
    """A system's units for one text, checked: (start, end) inside the text, a known stance."""
    if not isinstance(answer, (list, tuple)):
        raise PerspectrumError(f"{where}: mine answered {type(answer).__name__}, not a list of units")
    out = []
    for unit in answer:
        try:
            start, end, stance = int(unit[0]), int(unit[1]), str(unit[2])
        except (TypeError, ValueError, IndexError):
            raise PerspectrumError(f"{where}: a unit must be (start, end, stance, score), not {unit!r}") from None
        if not 0 <= start < end <= len(text) or stance not in ("support", "undermine"):
            raise PerspectrumError(f"{where}: unit {unit!r} is not a span of the text with stance "
                                   "'support' or 'undermine'")
        out.append((start, end, stance))
    return out


def score_system(system: Any, dataset: Dataset, split: str, show_progress: bool = False) -> dict[str, float]:
    """Any system's ``mine`` on ``split`` (the harness's scorer): every (claim, evidence
    paragraph) document mined in batches, each unit judged by our equivalence model."""
    from perspectrum.eval.harness import BATCH_SIZE
    from perspectrum.eval.systems import reference_pipeline

    pipe = reference_pipeline(system, dataset)
    docs = mine_documents(dataset, split)
    units: list[list[tuple[int, int, str]]] = []
    with progress(f"mine {split}", len(docs), enabled=show_progress) as advance:
        for start in range(0, len(docs), BATCH_SIZE):
            batch = docs[start:start + BATCH_SIZE]
            answers = system.mine([d.text for d in batch], [d.claim for d in batch])
            if not isinstance(answers, (list, tuple)) or len(answers) != len(batch):
                raise PerspectrumError(f"mine answered for {len(answers) if isinstance(answers, (list, tuple)) else 0} "
                                       f"of {len(batch)} texts")
            units += [_units(a, d.text, f"claim {d.cid}, paragraph {d.eid}") for a, d in zip(answers, batch)]
            advance(len(batch))
    verdicts = judged(dataset, docs, [[d.text[a:b] for a, b, _ in du] for d, du in zip(docs, units)],
                      Judge(pipe.scorers, pipe.store.encoder))
    return percent(score_units(dataset, docs, verdicts, [[s for _, _, s in du] for du in units]), (), SHARES)
