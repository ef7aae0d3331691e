"""A map of a pile of documents: the perspectives they take on a claim, each counted,
stanced and quoted.

`perspectrum map` (and :meth:`perspectrum.Pipeline.map`, which calls :func:`map_pile` with its
loaded models and settings) mines every document's argument units for the claim
(:mod:`perspectrum.pipeline.mine`), then groups equivalent units across documents into
perspectives the way ``discover`` clusters (:mod:`perspectrum.pipeline.stages.cluster`):

- each unit's most similar units (cosine of their vectors, :attr:`MapSettings.neighbours`
  of them) are read by the equivalence model, blended with the cosine;
- two units the stance model puts confidently on opposite sides are never joined;
- average linkage cuts at :attr:`MapSettings.threshold`: ``discover``'s clustering cut,
  which on map's own dev data grouped better than every lower cut tried (:data:`LOWER`).

Each perspective is named by its key point: its most central unit (highest mean
similarity to the others), preferring units of a readable length and never a question or a
unit that only frames the debate. Its prevalence is how many documents (and units) make it; its
side and confidence are the cluster's vote, calibrated as ``discover``'s cards are.
Perspectives are ordered by prevalence; those made by a single document (when more
than one was read) are kept apart as "also mentioned". At most :data:`MAX_MAP_UNITS` units are
grouped at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from perspectrum._progress import progress
from perspectrum.encoders.bi_encoder import Encoder
from perspectrum.errors import PerspectrumError
from perspectrum.models.rules import blend, cluster_support, groups, split_sides
from perspectrum.models.scorers import Scorers
from perspectrum.pipeline.mine import mine
from perspectrum.pipeline.results import side
from perspectrum.pipeline.stages import ClusterStage, Stance
from perspectrum.text.document import check_document
from perspectrum.text.mining import MinedUnit, MineSettings
from perspectrum.text.polarity import takes_no_side

#: Words a key point reads best in: shorter units rarely state a whole perspective, longer
#: ones carry more than one.
READABLE_WORDS = (6, 30)


@dataclass(frozen=True, kw_only=True)
class MapSettings:
    """How units are grouped into perspectives.

    Attributes:
        threshold: blended similarity at or above which two units make one perspective
            (average linkage cuts at distance 1 − threshold); ``None``: the pipeline's
            clustering cut lowered by :data:`LOWER` (0: the same cut), chosen on map's dev data.
        weight: of the equivalence model against the pair's cosine (``None``: the cluster stage's).
        neighbours: each unit's most similar units read by the equivalence model; other
            pairs keep their cosine share alone (0: cosine only).
        min_documents: a perspective fewer documents make is "also mentioned" (when at
            least that many documents were read).
    """

    threshold: float | None = None
    weight: float | None = None
    neighbours: int = 10
    min_documents: int = 2


#: Most units grouped at once: the similarity matrix is dense (units², 8 bytes each: 200 MB
#: at 5,000). Past it, the most plainly argued units are kept and the rest counted.
MAX_MAP_UNITS = 5000
#: How far below ``discover``'s clustering cut map joins units, by default: not at all. Chosen on
#: dev by the F1 of coverage and purity, which every lowering tried (0.1 to 0.5) lowered: joining
#: more merged units of different gold clusters (eval/results/map_lowers_trained_dev.json, docs/map.md).
LOWER = 0.0


@dataclass(frozen=True)
class Quote:
    """One unit of a perspective: ``text == documents[document][start:end]``."""

    document: str
    start: int
    end: int
    text: str
    support_probability: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class MappedPerspective:
    """A perspective the documents take: its key point, side, prevalence and quotes.

    Attributes:
        key_point: the unit that names it (its text; also ``quotes[0]``).
        side: ``"support"``, ``"undermine"`` or ``"unclear"`` (calibrated P(support) within
            the pipeline's unclear band of 0.5).
        confidence: calibrated probability of the side shown (of support when unclear).
        documents: how many documents make it; ``share``: of the documents read.
        quotes: every unit that makes it, key point first, then by document and offset.
    """

    key_point: str
    side: str
    confidence: float
    documents: int
    units: int
    share: float
    quotes: tuple[Quote, ...]

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["quotes"] = [q.to_dict() for q in self.quotes]
        return out


@dataclass
class PerspectiveMap:
    """What :meth:`perspectrum.Pipeline.map` answers: ``perspectives`` (made by at least
    ``min_documents`` documents, most prevalent first) and ``also_mentioned`` (the rest),
    with how many documents and units were read and what was skipped; ``encodings`` names the
    encoding of each document read from a file not in UTF-8 (by document id)."""

    claim: str
    documents: int
    units: int
    perspectives: list[MappedPerspective]
    also_mentioned: list[MappedPerspective]
    skipped: list[dict[str, str]] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    encodings: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = {"claim": self.claim, "documents": self.documents, "units": self.units,
               "skipped": list(self.skipped), "perspectives": [p.to_dict() for p in self.perspectives],
               "also_mentioned": [p.to_dict() for p in self.also_mentioned], "settings": dict(self.settings),
               "seconds": round(self.seconds, 2)}
        if self.encodings:  # only when a document was not UTF-8: a UTF-8 pile's answer is as it always was
            out["encodings"] = dict(self.encodings)
        return out


def similarities(claim: str, texts: Sequence[str], vectors: np.ndarray, sides: Sequence[int],
                 equivalence: Callable[[list[tuple[str, str, str]]], np.ndarray], weight: float,
                 threshold: float, neighbours: int) -> np.ndarray:
    """The blended similarity of every pair of units: (1 − weight) × cosine, plus weight ×
    the equivalence model's score for each unit's ``neighbours`` most similar units that
    could reach ``threshold``; 0 for confident opposites (never scored)."""
    n = len(texts)
    cosine = (vectors @ vectors.T).astype(np.float64)
    matrix = (1 - weight) * cosine
    if n > 1 and neighbours > 0:
        near = np.argsort(-cosine, axis=1, kind="stable")[:, 1:neighbours + 1]
        pairs = sorted({(min(i, int(j)), max(i, int(j))) for i in range(n) for j in near[i]})
        pairs = [(i, j) for i, j in pairs if sides[i] * sides[j] >= 0 and blend(1.0, cosine[i, j], weight) >= threshold]
        if pairs:
            scores = equivalence([(claim, texts[i], texts[j]) for i, j in pairs])
            for (i, j), score in zip(pairs, scores):
                matrix[i, j] = matrix[j, i] = matrix[i, j] + weight * float(score)
    opposite = np.outer(np.asarray(sides), np.asarray(sides)) < 0
    matrix[opposite] = 0.0
    np.fill_diagonal(matrix, 1.0)
    return matrix


def key_point(members: Sequence[int], texts: Sequence[str], matrix: np.ndarray) -> int:
    """The member that names a perspective: the most central (mean similarity to the
    others), among those of a readable length if any, never a question or one that only
    frames the debate unless all are; ties go to the earliest."""
    def rank(i: int) -> tuple[bool, bool, float, int]:
        words = len(texts[i].split())
        states = not takes_no_side(texts[i]) and not texts[i].rstrip().endswith("?")
        centre = float(np.mean([matrix[i, j] for j in members if j != i])) if len(members) > 1 else 1.0
        return (states, READABLE_WORDS[0] <= words <= READABLE_WORDS[1], centre, -i)

    return max(members, key=rank)


def build_map(claim: str, units: Sequence[tuple[str, MinedUnit]], encode: Callable[[list[str]], Any], documents: int,
              equivalence: Callable[[list[tuple[str, str, str]]], np.ndarray], stance: Stance,
              settings: MapSettings, weight: float, threshold: float) -> tuple[list[MappedPerspective],
                                                                               list[MappedPerspective]]:
    """The perspectives and the also-mentioned of ``units`` ((document id, unit) pairs, whose
    texts ``encode`` turns into unit vectors), read from ``documents`` documents. ``stance`` is the
    pipeline's stance stage: its ``threshold``, ``margin``, ``scale`` and ``unclear``."""
    if not units:
        return [], []
    texts = [u.text for _, u in units]
    supports = [u.support_probability for _, u in units]
    sides = [stance.leaning(p) for p in supports]
    vectors = np.asarray(encode(texts))
    matrix = similarities(claim, texts, vectors, sides, equivalence, weight, threshold, settings.neighbours)
    clusters = [part for g in groups(matrix, threshold) for part in split_sides(g, sides, matrix, threshold)]
    found = []
    for members in clusters:
        head = key_point(members, texts, matrix)
        q = stance.confidence(cluster_support([supports[i] for i in members], [sides[i] for i in members]))
        shown = side(q, stance.unclear)
        order = [head, *sorted((i for i in members if i != head), key=lambda i: (units[i][0], units[i][1].start))]
        quotes = tuple(Quote(units[i][0], units[i][1].start, units[i][1].end, texts[i], supports[i]) for i in order)
        made_by = len({units[i][0] for i in members})
        found.append(MappedPerspective(texts[head], shown, round(q if shown != "undermine" else 1 - q, 4), made_by,
                                       len(members), round(made_by / max(1, documents), 4), quotes))
    found.sort(key=lambda p: (-p.documents, -p.units, -p.confidence, p.key_point))
    least = settings.min_documents if documents >= settings.min_documents else 1
    return [p for p in found if p.documents >= least], [p for p in found if p.documents < least]


def check_documents(documents: Mapping[str, str] | Sequence[str]) -> dict[str, str]:
    """``documents`` as id → text, every text checked (a list of texts is numbered from 1);
    a one-line error for one text, none, or a text that cannot be read."""
    if isinstance(documents, (str, bytes)):
        raise PerspectrumError("map takes several documents: a mapping of ids to texts, or a list of texts")
    items = list(documents.items()) if isinstance(documents, Mapping) else [
        (str(n), text) for n, text in enumerate(documents, 1)]
    if not items:
        raise PerspectrumError("there are no documents to map")
    return {str(doc_id): check_document(text, what=f"document {doc_id}") for doc_id, text in items}


def map_pile(texts: Mapping[str, str], claim: str, scorers: Scorers, encoder: Encoder,
             stance: Stance, cluster: ClusterStage, settings: MapSettings | None = None,
             skipped: Sequence[Any] = (), mined: Mapping[str, Sequence[MinedUnit]] | None = None,
             on_mined: Callable[[str, list[MinedUnit]], None] | None = None,
             show_progress: bool = False) -> PerspectiveMap:
    """The map of ``texts`` (id → text, checked: :func:`check_documents`) for ``claim`` (checked).

    Every document not in ``mined`` (units already mined, by id: a resumed run's, or another
    machine's) is mined (:func:`perspectrum.pipeline.mine.mine`, the stance cut of ``stance``),
    and ``on_mined(id, units)`` called as its units are ready. Past :data:`MAX_MAP_UNITS` units,
    the most plainly argued are kept (in document order) and the rest counted. Units are grouped
    by :func:`build_map`, cut at ``settings``' threshold and weight, or, left ``None``, at the
    clustering stage's (``cluster``) lowered by :data:`LOWER`. ``stance`` holds the stance
    stage's ``threshold``, ``margin``, ``scale`` and ``unclear``; ``skipped`` (what a reader could
    not read, :class:`perspectrum.text.reading.Skipped`) is carried into the answer."""
    started = time.perf_counter()
    settings = settings or MapSettings()
    mined = mined or {}
    units: list[tuple[str, MinedUnit]] = []
    to_mine = [doc_id for doc_id in texts if doc_id not in mined]
    with progress("mining the documents", len(to_mine), enabled=show_progress and bool(to_mine)) as advance:
        for doc_id in texts:
            if doc_id in mined:
                found = list(mined[doc_id])
            else:
                found = mine(texts[doc_id], claim, scorers, encoder, stance.threshold, MineSettings())
                if on_mined is not None:
                    on_mined(doc_id, found)
                advance(1)
            units += [(doc_id, unit) for unit in found]
    left_out = max(0, len(units) - MAX_MAP_UNITS)
    if left_out:  # the most plainly argued units, in document order
        best = sorted(range(len(units)), key=lambda i: -units[i][1].score)[:MAX_MAP_UNITS]
        units = [units[i] for i in sorted(best)]
    weight = cluster.weight if settings.weight is None else settings.weight
    threshold = max(0.0, cluster.threshold - LOWER) if settings.threshold is None else settings.threshold
    shown, also = build_map(claim, units, encoder.encode, len(texts), scorers.equivalence, stance, settings, weight,
                            threshold)
    return PerspectiveMap(claim, len(texts), len(units), shown, also,
                          [s.to_dict() if hasattr(s, "to_dict") else dict(s) for s in skipped],
                          {"threshold": round(threshold, 4), "weight": weight, "neighbours": settings.neighbours,
                           "min_documents": settings.min_documents, "units_left_out": left_out},
                          time.perf_counter() - started)
