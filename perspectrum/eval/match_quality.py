"""`match` on PERSPECTRUM: does a few-paragraph "speech" make each candidate argument?

Mirkin et al. (EMNLP 2018) asked, of a recorded debate speech and ~16 candidate
arguments for its motion, which arguments the speech makes. PERSPECTRUM gives the same
shape of problem without recordings (:func:`match_documents`):

- the text is a claim's gold evidence paragraphs, joined with blank lines;
- the candidates are one perspective per gold cluster (its first) and the claim's
  top-:data:`WRONG` retrieved perspectives that are in none of its gold clusters;
- an argument is made when its cluster cites one of those paragraphs as evidence (gold
  clusters without evidence and retrieved-but-wrong perspectives are not made).

Scored as the paper does, accuracy averaged per document, with micro P/R/F1 of the
"made" class beside it, and two baselines: answering "yes" always, and MiniLM sentence-max
(each argument's best sentence cosine against a dev-tuned threshold: our version of
their word2vec baseline). Every threshold, weight and depth is chosen on dev.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from perspectrum._progress import progress
from perspectrum.data import Dataset
from perspectrum.errors import PerspectrumError
from perspectrum.eval.ir import best_of
from perspectrum.eval.metrics import prf, percent
from perspectrum.pipeline.match import read_text
from perspectrum.text.matching import MatchSettings, margins
from perspectrum.models.rules import blend

#: Retrieved perspectives outside the claim's gold clusters, per document: with ~5 gold
#: clusters a claim, ~14 candidates of which ~35 % are made (Mirkin et al.: ~16, 39.8 %).
WRONG = 8
#: Retrieval depth searched for the wrong candidates.
SEARCH_DEPTH = 50
#: Deepest cosine pre-selection scored on dev (shallower depths are read off it).
MAX_DEPTH = 16
DEPTHS = (1, 2, 4, 8, 16)
WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
MARGINS = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0)
THRESHOLDS = tuple(round(float(t), 3) for t in np.arange(0.05, 0.951, 0.01))


@dataclass(frozen=True)
class MatchDocument:
    """One claim's speech and its candidate arguments with gold answers."""

    cid: int
    claim: str
    text: str
    arguments: tuple[str, ...]
    pids: tuple[int, ...]
    made: tuple[bool, ...]


def match_documents(dataset: Dataset, split: str, searcher: Any) -> list[MatchDocument]:
    """The documents of ``split`` (see the module docstring); claims with no gold evidence
    have no speech and are left out. ``searcher`` retrieves perspectives (hybrid)."""
    claims = [c for c in dataset.split(split) if any(k.evidence for k in c.clusters)]
    runs = searcher.batch_search([c.text for c in claims], SEARCH_DEPTH)
    docs = []
    for claim, hits in zip(claims, runs):
        paragraphs = list(dict.fromkeys(e for k in claim.clusters for e in k.evidence))
        text = "\n\n".join(dataset.evidence[e].text for e in paragraphs)
        pids = [k.pids[0] for k in claim.clusters]
        made = [bool(k.evidence) for k in claim.clusters]
        wrong = [h.doc_id for h in hits if h.doc_id not in claim.gold_pids][:WRONG]
        pids += wrong
        made += [False] * len(wrong)
        docs.append(MatchDocument(claim.cid, claim.text, text, tuple(dataset.perspectives[p].text for p in pids),
                                  tuple(pids), tuple(made)))
    return docs


def score_decisions(docs: Sequence[MatchDocument], decisions: Sequence[Sequence[bool]]) -> dict[str, float]:
    """Accuracy averaged per document (the paper's metric), micro accuracy, and micro
    P/R/F1 of "made" over every (document, argument), all fractions::

        accuracy = mean over documents d of |{a : decided(d, a) = made(d, a)}| / |arguments(d)|
    """
    per_doc, tp, fp, fn, right, total = [], 0, 0, 0, 0, 0
    for doc, said in zip(docs, decisions):
        if len(said) != len(doc.made):
            raise ValueError(f"claim {doc.cid}: {len(said)} decisions for {len(doc.made)} arguments")
        hits = sum(bool(s) == g for s, g in zip(said, doc.made))
        per_doc.append(hits / len(doc.made))
        right, total = right + hits, total + len(doc.made)
        tp += sum(bool(s) and g for s, g in zip(said, doc.made))
        fp += sum(bool(s) and not g for s, g in zip(said, doc.made))
        fn += sum(g and not s for s, g in zip(said, doc.made))
    return {"accuracy": float(np.mean(per_doc)) if per_doc else 0.0, "accuracy_micro": right / max(1, total),
            **prf(tp, fp, fn), "documents": float(len(per_doc)), "arguments": float(total)}


@dataclass(frozen=True)
class CrossSettings:
    """The starting point: sentence-max with the equivalence cross-encoder reading each
    argument's ``depth`` nearest sentences by cosine, blended with the cosine by ``weight``."""

    depth: int
    weight: float
    threshold: float


@dataclass
class Scored:
    """One document read once: per argument, its best sentence cosine and the margins of
    :func:`perspectrum.text.matching.argument_scores`, and the cross-encoder's scores of its
    :data:`MAX_DEPTH` nearest sentences (with their cosines) for :class:`CrossSettings`."""

    top: np.ndarray
    sentence_margin: np.ndarray
    paragraph_margin: np.ndarray
    nearest_cosine: np.ndarray  # arguments × depth, best first
    model: np.ndarray  # arguments × depth


def score_documents(docs: Sequence[MatchDocument], scorers: Any, encoder: Any, show_progress: bool = False,
                    max_depth: int = MAX_DEPTH) -> list[Scored]:
    """Every document's :class:`Scored`, the cross-encoder read at ``max_depth`` (0: the
    cosine and the margins alone, for :class:`perspectrum.text.matching.MatchSettings`)."""
    out = []
    with progress("match documents", len(docs), enabled=show_progress) as advance:
        for doc in docs:
            found, sentence_cosine, paragraph_cosine = read_text(doc.text, doc.arguments, encoder)
            _, top, sentence_margin = margins(sentence_cosine)
            _, _, paragraph_margin = margins(paragraph_cosine)
            depth = min(max_depth, sentence_cosine.shape[1])
            nearest = np.argsort(-sentence_cosine, axis=1, kind="stable")[:, :depth]
            triples = [(doc.claim, argument, found[j].text) for a, argument in enumerate(doc.arguments)
                       for j in nearest[a]]
            model = (np.asarray(scorers.equivalence(triples), dtype=np.float64).reshape(nearest.shape) if triples
                     else np.zeros(nearest.shape))
            out.append(Scored(top, sentence_margin, paragraph_margin,
                              np.take_along_axis(sentence_cosine, nearest, axis=1), model))
            advance(1)
    return out


def decide(scored: Sequence[Scored], settings: MatchSettings | CrossSettings) -> list[list[bool]]:
    """What each setting answers, from stored scores: :func:`perspectrum.pipeline.match.match_arguments`'s
    rule for :class:`MatchSettings`, the cross-encoder sentence-max for :class:`CrossSettings`."""
    out = []
    for doc in scored:
        if isinstance(settings, CrossSettings):
            depth = min(settings.depth, doc.model.shape[1])
            score = blend(doc.model[:, :depth], doc.nearest_cosine[:, :depth], settings.weight).max(axis=1)
        else:
            score = settings.score(doc.top, doc.sentence_margin, doc.paragraph_margin)
        out.append([bool(v >= settings.threshold) for v in score])
    return out


def tune(docs: Sequence[MatchDocument], scored: Sequence[Scored],
         grid: Sequence[MatchSettings | CrossSettings]) -> tuple[MatchSettings | CrossSettings, dict[str, float]]:
    """The setting with the best per-document accuracy (first on ties) and its metrics."""
    setting, _ = best_of(list(grid), lambda s: score_decisions(docs, decide(scored, s))["accuracy"])
    return setting, score_decisions(docs, decide(scored, setting))


#: The systems compared, each with the grid dev chooses its setting from.
GRIDS: dict[str, list[MatchSettings | CrossSettings]] = {
    # ours, shipped: sentence-max with the margins over rival arguments
    "competitive_sentence_max": [MatchSettings(s, p, t) for s in MARGINS for p in MARGINS for t in THRESHOLDS],
    # the starting point the issue names: our equivalence cross-encoder, sentence-max
    "cross_encoder_sentence_max": [CrossSettings(d, w, t) for d in DEPTHS for w in WEIGHTS if w > 0
                                   for t in THRESHOLDS],
    # the baseline: the best sentence's MiniLM cosine alone
    "embedding_sentence_max": [MatchSettings(0.0, 0.0, t) for t in THRESHOLDS],
}


#: The figures of :func:`score_decisions` that count (kept whole by :func:`~perspectrum.eval.metrics.percent`).
COUNTS = ("documents", "arguments")


def perspective_searcher(pipe: Any) -> Any:
    """Hybrid search over the pipeline's perspective pool (where wrong candidates come from)."""
    from perspectrum.index.search import HybridSearcher

    return HybridSearcher(pipe.store.open(pipe.perspectives, "bm25"), pipe.store.open(pipe.perspectives, "dense"))


def _read(dataset: Dataset, split: str, pipe: Any, show_progress: bool) -> tuple[list[MatchDocument], list[Scored]]:
    docs = match_documents(dataset, split, perspective_searcher(pipe))
    return docs, score_documents(docs, pipe.scorers, pipe.store.encoder, show_progress)


def _counts(docs: Sequence[MatchDocument]) -> dict[str, int]:
    return {"documents": len(docs), "arguments": sum(len(d.made) for d in docs), "made": sum(sum(d.made) for d in docs),
            "words_median": int(np.median([len(d.text.split()) for d in docs])) if docs else 0}


def tune_match(dataset: Dataset, pipe: Any, tune_split: str = "dev", show_progress: bool = False) -> dict[str, Any]:
    """Choose every system's setting (:data:`GRIDS`) on ``tune_split`` and report its
    figures there, beside answering "yes" always. ``pipe`` is a
    :class:`perspectrum.pipeline.pipeline.Pipeline`; the settings chosen for
    ``competitive_sentence_max`` are :class:`perspectrum.text.matching.MatchSettings`'s defaults."""
    started = time.perf_counter()
    docs, scored = _read(dataset, tune_split, pipe, show_progress)
    systems: dict[str, dict[str, Any]] = {}
    for name, grid in GRIDS.items():
        setting, figures = tune(docs, scored, grid)
        systems[name] = {"setting": asdict(setting), tune_split: percent(figures, COUNTS)}
    systems["always_yes"] = {tune_split: percent(score_decisions(docs, [[True] * len(d.made) for d in docs]), COUNTS)}
    return {"system": pipe.system, "tuned_on": tune_split, "wrong_per_document": WRONG,
            "documents": {tune_split: _counts(docs)}, "systems": systems,
            "margin_over_embedding": round(systems["competitive_sentence_max"][tune_split]["accuracy"]
                                           - systems["embedding_sentence_max"][tune_split]["accuracy"], 2),
            "seconds": round(time.perf_counter() - started, 1)}


def evaluate_match(dataset: Dataset, pipe: Any, tuned: dict[str, Any], split: str = "test",
                   show_progress: bool = False) -> dict[str, Any]:
    """Score every system on ``split`` with the settings ``tuned`` (:func:`tune_match`'s
    record) chose on dev; ``split`` labels are read only here, to score.

    Returns:
        A JSON-ready dict (percent): per system its setting and ``split`` figures
        (per-document accuracy, micro accuracy and P/R/F1), and the margin of ours over
        the embedding baseline in accuracy points.
    """
    started = time.perf_counter()
    docs, scored = _read(dataset, split, pipe, show_progress)
    systems: dict[str, dict[str, Any]] = {}
    for name, record in tuned["systems"].items():
        if name == "always_yes":
            decisions = [[True] * len(d.made) for d in docs]
        else:
            kind = CrossSettings if "depth" in record["setting"] else MatchSettings
            decisions = decide(scored, kind(**record["setting"]))
        systems[name] = {**({"setting": record["setting"]} if "setting" in record else {}),
                         split: percent(score_decisions(docs, decisions), COUNTS)}
    return {"system": pipe.system, "split": split, "tuned_on": tuned["tuned_on"], "wrong_per_document": WRONG,
            "documents": {split: _counts(docs)}, "systems": systems,
            "margin_over_embedding": round(systems["competitive_sentence_max"][split]["accuracy"]
                                           - systems["embedding_sentence_max"][split]["accuracy"], 2),
            "seconds": round(time.perf_counter() - started, 1)}


def score_system(system: Any, dataset: Dataset, split: str, show_progress: bool = False) -> dict[str, float]:
    """Any system's ``match`` on ``split`` (the harness's scorer): the documents of
    :func:`match_documents`, answered in batches, scored by :func:`score_decisions`."""
    from perspectrum.eval.harness import BATCH_SIZE
    from perspectrum.eval.systems import reference_pipeline

    docs = match_documents(dataset, split, perspective_searcher(reference_pipeline(system, dataset)))
    decisions: list[list[bool]] = []
    with progress(f"match {split}", len(docs), enabled=show_progress) as advance:
        for start in range(0, len(docs), BATCH_SIZE):
            batch = docs[start:start + BATCH_SIZE]
            answers = system.match([d.text for d in batch], [d.claim for d in batch], [list(d.arguments) for d in batch])
            if not isinstance(answers, (list, tuple)) or len(answers) != len(batch):
                raise PerspectrumError(f"match must answer for each of the {len(batch)} texts it was given")
            for doc, answer in zip(batch, answers):
                if not isinstance(answer, (list, tuple)) or len(answer) != len(doc.arguments):
                    raise PerspectrumError(f"claim {doc.cid}: match must answer one true/false per argument "
                                           f"({len(doc.arguments)})")
                decisions.append([bool(a) for a in answer])
            advance(len(batch))
    return percent(score_decisions(docs, decisions), COUNTS)
