"""A map of a pile of documents: the perspectives they take on a claim, each counted,
stanced and quoted.

`perspectrum map` (and :meth:`perspectrum.Pipeline.map`, which calls :func:`map_pile` with its
loaded models and settings) collapses near-copies (:mod:`perspectrum.text.duplicates`), mines
every other document's argument units for the claim (:mod:`perspectrum.pipeline.mine`), then
groups equivalent units across documents into perspectives the way ``discover`` clusters
(:mod:`perspectrum.pipeline.stages.cluster`):

- each unit's most similar units (cosine of their vectors, :attr:`MapSettings.neighbours`
  of them) are read by the equivalence model, blended with the cosine;
- two units the stance model puts confidently on opposite sides are never joined;
- average linkage cuts at :attr:`MapSettings.threshold`: ``discover``'s clustering cut lowered
  by :data:`LOWER`;
- a second pass (:func:`second_pass`) joins groups whose key points the equivalence model
  matches at :data:`JOIN`: units that make one point in different words, cut apart by the
  first pass, become one perspective.

Each perspective is named by its key point: the most central unit among those that read as a
key point (:func:`perspectrum.text.key_points.rules_broken`: 6–25 words, no question, heading,
Markdown, framing or dangling pronoun). Its prevalence is how many documents (and units) make
it, a document that makes it twice counted once, with their ids; its side and confidence are
the cluster's vote, calibrated as ``discover``'s cards are. Perspectives are
ordered by prevalence; those made by a single document (when more than one was read) are kept
apart as "also mentioned". At most :data:`MAX_MAP_UNITS` units are grouped at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from perspectrum._memory import give_back_memory
from perspectrum._progress import progress
from perspectrum.encoders.bi_encoder import Encoder
from perspectrum.errors import PerspectrumError
from perspectrum.models.rules import blend, cluster_support, groups, split_sides
from perspectrum.models.scorers import Scorers
from perspectrum.pipeline.mine import mine_many
from perspectrum.pipeline.results import side
from perspectrum.pipeline.stages import ClusterStage, Stance
from perspectrum.text.document import check_document
from perspectrum.text.duplicates import copies_of, near_duplicates
from perspectrum.text.mining import MinedUnit, MineSettings
from perspectrum.text.key_points import rules_broken

#: Groups each group's key point is compared with in the second pass (the nearest by cosine).
NEAR_GROUPS = 5
#: The second pass's join (:attr:`MapSettings.join`), chosen on map's dev piles with the first cut
#: (:data:`LOWER`): of the cuts, joins and adoptions tried, the highest F1 of the share of gold
#: paragraphs a main-list perspective quotes and the purity of the main list, with at most 1.5
#: main-list and 3 also-mentioned perspectives per gold perspective
#: (``eval/results/map_grouping_shipped_dev.json``). Adopting thin groups lowered it beside every join.
JOIN = 0.55


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
        join: blended similarity of two groups' key points at or above which they become one
            perspective (``None``: groups are not joined); see :func:`second_pass`.
        adopt: blended similarity of a thin group's unit to a fuller perspective's key point at
            or above which the thin group joins it (``None``: never).
    """

    threshold: float | None = None
    weight: float | None = None
    neighbours: int = 10
    min_documents: int = 2
    join: float | None = JOIN
    adopt: float | None = None


#: Documents mined together: one call of each model for the batch (its texts sorted by length pad
#: less), and what a stopped run loses at most.
MINE_BATCH = 16
#: The encoder's arithmetic for mining a pile (:meth:`perspectrum.encoders.bi_encoder.Encoder.precision`).
#: bfloat16 kept `mine`'s dev figures (``eval/results/mine_parity_shipped_dev.json``) and encodes faster,
#: but the process's memory grew with every call in it (level in float32): a pile of any size must not
#: grow without bound, so float32.
MINE_PRECISION = "float32"
#: Most units grouped at once: the similarity matrix is dense (units², 8 bytes each: 200 MB
#: at 5,000). Past it, the most plainly argued units are kept and the rest counted.
MAX_MAP_UNITS = 5000
#: How far below ``discover``'s clustering cut (0.81 for the shipped models) map's first pass cuts:
#: chosen on map's dev piles with the second pass (:data:`JOIN`), by the rule given there.
LOWER = 0.06


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
        documents: how many documents make it (a document that makes it twice counts once);
            ``share``: of the documents read; ``made_by``: their ids, in the quotes' order.
        quotes: every unit that makes it, key point first, then by document and offset.
    """

    key_point: str
    side: str
    confidence: float
    documents: int
    units: int
    share: float
    quotes: tuple[Quote, ...]
    made_by: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["quotes"] = [q.to_dict() for q in self.quotes]
        out["made_by"] = list(self.made_by)
        return out


@dataclass
class PerspectiveMap:
    """What :meth:`perspectrum.Pipeline.map` answers: ``perspectives`` (made by at least
    ``min_documents`` documents, most prevalent first) and ``also_mentioned`` (the rest),
    with how many documents and units were read and what was skipped; ``encodings`` names the
    encoding of each document read from a file not in UTF-8 (by document id). ``duplicates``
    holds the near-copies found (:func:`perspectrum.text.duplicates.near_duplicates`: the first
    document's id → its copies' ids): a copy is read but not mined, so it never counts twice."""

    claim: str
    documents: int
    units: int
    perspectives: list[MappedPerspective]
    also_mentioned: list[MappedPerspective]
    skipped: list[dict[str, str]] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    encodings: dict[str, str] = field(default_factory=dict)
    duplicates: dict[str, list[str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = {"claim": self.claim, "documents": self.documents, "units": self.units,
               "skipped": list(self.skipped), "duplicates": {k: list(v) for k, v in self.duplicates.items()},
               "perspectives": [p.to_dict() for p in self.perspectives],
               "also_mentioned": [p.to_dict() for p in self.also_mentioned], "settings": dict(self.settings),
               "seconds": round(self.seconds, 2)}
        if self.encodings:  # only when a document was not UTF-8: a UTF-8 pile's answer is as it always was
            out["encodings"] = dict(self.encodings)
        return out


#: Rows of the unit-by-unit matrix sorted at once for their nearest units.
_ROWS = 512


def similarities(claim: str, texts: Sequence[str], vectors: np.ndarray, sides: Sequence[int],
                 equivalence: Callable[[list[tuple[str, str, str]]], np.ndarray], weight: float,
                 threshold: float, neighbours: int) -> np.ndarray:
    """The blended similarity of every pair of units: (1 − weight) × cosine, plus weight ×
    the equivalence model's score for each unit's ``neighbours`` most similar units that
    could reach ``threshold``; 0 for confident opposites (never scored)."""
    n = len(texts)
    cosine = (vectors @ vectors.T).astype(np.float64)
    pairs: list[tuple[int, int]] = []
    if n > 1 and neighbours > 0:
        near = np.concatenate([np.argsort(-cosine[start:start + _ROWS], axis=1, kind="stable")[:, 1:neighbours + 1]
                               for start in range(0, n, _ROWS)])  # a block of rows at a time: n² once, not thrice
        pairs = sorted({(min(i, int(j)), max(i, int(j))) for i in range(n) for j in near[i]})
        pairs = [(i, j) for i, j in pairs if sides[i] * sides[j] >= 0 and blend(1.0, cosine[i, j], weight) >= threshold]
    matrix = cosine
    matrix *= 1 - weight  # in place: the cosine itself is not needed past here
    if pairs:
        scores = equivalence([(claim, texts[i], texts[j]) for i, j in pairs])
        for (i, j), score in zip(pairs, scores):
            matrix[i, j] = matrix[j, i] = matrix[i, j] + weight * float(score)
    held = np.asarray(sides)
    for a, b in ((held > 0, held < 0), (held < 0, held > 0)):  # confident opposites
        matrix[np.ix_(a, b)] = 0.0
    np.fill_diagonal(matrix, 1.0)
    return matrix


def key_point(members: Sequence[int], texts: Sequence[str], matrix: np.ndarray) -> int:
    """The member that names a perspective: among those breaking the fewest key point rules
    (:func:`perspectrum.text.key_points.rules_broken`: 6–25 words, no question, heading,
    Markdown, framing or dangling pronoun), the most central (mean similarity to the others);
    ties go to the earliest."""
    def rank(i: int) -> tuple[int, float, int]:
        centre = float(np.mean([matrix[i, j] for j in members if j != i])) if len(members) > 1 else 1.0
        return (-len(rules_broken(texts[i])), centre, -i)

    return max(members, key=rank)


def _joined(pairs: Sequence[tuple[float, int, int]], clusters: list[list[int]], leaning: Sequence[int]
            ) -> list[list[int]]:
    """``clusters`` after joining each pair (score, a, b) of cluster indices, best first, when
    the two groups they now belong to do not lean to opposite sides; in the order of each
    group's first cluster."""
    from scipy.cluster.hierarchy import DisjointSet

    joined = DisjointSet(range(len(clusters)))
    side = {k: leaning[k] for k in range(len(clusters))}  # by each group's root
    for _, a, b in sorted(pairs, key=lambda t: (-t[0], t[1], t[2])):
        ra, rb = joined[a], joined[b]
        if ra == rb or side[ra] * side[rb] < 0:
            continue
        held = side[ra] or side[rb]
        joined.merge(a, b)
        side[joined[a]] = held
    return [[i for k in sorted(group) for i in clusters[k]] for group in sorted(joined.subsets(), key=min)]


def second_pass(claim: str, clusters: list[list[int]], units: Sequence[tuple[str, MinedUnit]],
                texts: Sequence[str], vectors: np.ndarray, matrix: np.ndarray, sides: Sequence[int],
                equivalence: Callable[[list[tuple[str, str, str]]], np.ndarray], weight: float,
                settings: MapSettings, least: int) -> list[list[int]]:
    """The groups after the second pass: two groups whose key points the equivalence model
    (blended with their cosine) scores at or above ``settings.join`` become one; then each group
    made by fewer than ``least`` documents whose key point or any unit scores at or above
    ``settings.adopt`` against a fuller group's key point joins the best such group. Groups
    leaning to opposite sides never join."""
    def leaning(members: list[int]) -> int:
        held = [sides[i] for i in members]
        votes = held.count(1) - held.count(-1)
        return (votes > 0) - (votes < 0)

    def documents(members: list[int]) -> int:
        return len({units[i][0] for i in members})

    def scored(asks: list[tuple[int, int, int, int]]) -> list[tuple[float, int, int]]:
        """(group a, group b, unit of a, unit of b) → (the units' blended score, a, b)."""
        if not asks:
            return []
        read = equivalence([(claim, texts[i], texts[j]) for _, _, i, j in asks])
        return [(blend(float(score), float(vectors[i] @ vectors[j]), weight), a, b)
                for (a, b, i, j), score in zip(asks, read)]

    if settings.join is not None and len(clusters) > 1:
        heads = [key_point(c, texts, matrix) for c in clusters]
        head_vectors = vectors[heads]
        cosine = head_vectors @ head_vectors.T
        np.fill_diagonal(cosine, -2.0)
        asks = sorted({(min(a, int(b)), max(a, int(b))) for a in range(len(clusters))
                       for b in np.argsort(-cosine[a], kind="stable")[:NEAR_GROUPS]})
        asks4 = [(a, b, heads[a], heads[b]) for a, b in asks
                 if blend(1.0, float(cosine[a, b]), weight) >= settings.join]
        found = [t for t in scored(asks4) if t[0] >= settings.join]
        clusters = _joined(found, [list(c) for c in clusters], [leaning(c) for c in clusters])
    if settings.adopt is not None and len(clusters) > 1:
        full = [k for k, c in enumerate(clusters) if documents(c) >= least]
        thin = [k for k, c in enumerate(clusters) if documents(c) < least]
        if full and thin:
            heads = {k: key_point(clusters[k], texts, matrix) for k in full}
            head_vectors = vectors[[heads[k] for k in full]]
            asks4 = []
            for k in thin:
                for i in clusters[k]:
                    near = np.argsort(-(head_vectors @ vectors[i]), kind="stable")[:NEAR_GROUPS]
                    asks4 += [(full[int(n)], k, heads[full[int(n)]], i) for n in near
                              if blend(1.0, float(head_vectors[int(n)] @ vectors[i]), weight) >= settings.adopt]
            best: dict[int, tuple[float, int]] = {}
            for score, a, b in scored(asks4):
                if score >= settings.adopt and (b not in best or (score, -a) > (best[b][0], -best[b][1])):
                    best[b] = (score, a)
            moved = [(score, a, b) for b, (score, a) in best.items()
                     if leaning(clusters[a]) * leaning(clusters[b]) >= 0]
            for _, a, b in sorted(moved, key=lambda t: t[2]):
                clusters[a] = clusters[a] + clusters[b]
                clusters[b] = []
            clusters = [c for c in clusters if c]
    return clusters


def build_map(claim: str, units: Sequence[tuple[str, MinedUnit]], encode: Callable[[list[str]], Any], documents: int,
              equivalence: Callable[[list[tuple[str, str, str]]], np.ndarray], stance: Stance,
              settings: MapSettings, weight: float, threshold: float) -> tuple[list[MappedPerspective],
                                                                               list[MappedPerspective]]:
    """The perspectives and the also-mentioned of ``units`` ((document id, unit) pairs, whose
    texts ``encode`` turns into unit vectors), read from ``documents`` documents. ``stance`` is the
    pipeline's stance stage: its ``threshold``, ``margin``, ``scale`` and ``unclear``.

    Units are cut into groups (average linkage at ``threshold``, never confident opposites in one),
    the groups joined by :func:`second_pass`, and each named by its :func:`key_point`. A group's
    side is its confident units' mean P(support) (:func:`perspectrum.models.rules.cluster_support`),
    calibrated: on dev it was as right as a confidence-weighted vote and righter than one that the
    key point can overrule (``eval/results/map_grouping_shipped_dev.json``)."""
    if not units:
        return [], []
    texts = [u.text for _, u in units]
    supports = [u.support_probability for _, u in units]
    sides = [stance.leaning(p) for p in supports]
    vectors = np.asarray(encode(texts))
    matrix = similarities(claim, texts, vectors, sides, equivalence, weight, threshold, settings.neighbours)
    clusters = [part for g in groups(matrix, threshold) for part in split_sides(g, sides, matrix, threshold)]
    least = settings.min_documents if documents >= settings.min_documents else 1
    clusters = second_pass(claim, clusters, units, texts, vectors, matrix, sides, equivalence, weight, settings,
                           least)
    found = []
    for members in clusters:
        head = key_point(members, texts, matrix)
        q = stance.confidence(cluster_support([supports[i] for i in members], [sides[i] for i in members]))
        shown = side(q, stance.unclear)
        order = [head, *sorted((i for i in members if i != head), key=lambda i: (units[i][0], units[i][1].start))]
        quotes = tuple(Quote(units[i][0], units[i][1].start, units[i][1].end, texts[i], supports[i]) for i in order)
        made_by = tuple(dict.fromkeys(q.document for q in quotes))
        found.append(MappedPerspective(texts[head], shown, round(q if shown != "undermine" else 1 - q, 4), len(made_by),
                                       len(members), round(len(made_by) / max(1, documents), 4), quotes, made_by))
    found.sort(key=lambda p: (-p.documents, -p.units, -p.confidence, p.key_point))
    return [p for p in found if p.documents >= least], [p for p in found if p.documents < least]


def mined_in_batches(texts: Sequence[str], claim: str, scorers: Scorers, encoder: Encoder,
                     stance_threshold: float) -> Iterator[list[list[MinedUnit]]]:
    """The units of ``texts``, :data:`MINE_BATCH` texts' at a time, in order, as ``map`` mines a
    pile (:func:`perspectrum.pipeline.mine.mine_many`, the encoder in :data:`MINE_PRECISION`)."""
    for start in range(0, len(texts), MINE_BATCH):
        yield mine_many(list(texts[start:start + MINE_BATCH]), claim, scorers, encoder, stance_threshold,
                        MineSettings(), MINE_PRECISION)


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

    Near-copies (:func:`perspectrum.text.duplicates.near_duplicates`) are collapsed into the first
    of their group and reported: a copy is not mined, and shares are of the distinct documents.
    Every other document not in ``mined`` (units already mined, by id: a resumed run's, or another
    machine's) is mined (:func:`perspectrum.pipeline.mine.mine_many`, :data:`MINE_BATCH` documents at
    a time, the encoder in :data:`MINE_PRECISION`, the stance cut of ``stance``), and
    ``on_mined(id, units)`` called for each as its batch is ready. Past :data:`MAX_MAP_UNITS` units,
    the most plainly argued are kept (in document order) and the rest counted. Units are grouped
    by :func:`build_map`, cut at ``settings``' threshold and weight, or, left ``None``, at the
    clustering stage's (``cluster``) lowered by :data:`LOWER`. ``stance`` holds the stance
    stage's ``threshold``, ``margin``, ``scale`` and ``unclear``; ``skipped`` (what a reader could
    not read, :class:`perspectrum.text.reading.Skipped`) is carried into the answer."""
    started = time.perf_counter()
    settings = settings or MapSettings()
    mined = dict(mined or {})
    duplicates = near_duplicates(texts)
    copies = copies_of(duplicates)
    distinct = [doc_id for doc_id in texts if doc_id not in copies]
    to_mine = [doc_id for doc_id in distinct if doc_id not in mined]
    with progress("mining the documents", len(to_mine), enabled=show_progress and bool(to_mine)) as advance:
        ids = iter(to_mine)
        for found in mined_in_batches([texts[doc_id] for doc_id in to_mine], claim, scorers, encoder, stance.threshold):
            for doc_units, doc_id in zip(found, ids):  # found first: zip never takes an id past the batch
                mined[doc_id] = doc_units
                if on_mined is not None:
                    on_mined(doc_id, doc_units)
                advance(1)
            give_back_memory()  # what mining freed goes back, at most once a second
    units: list[tuple[str, MinedUnit]] = [(doc_id, unit) for doc_id in distinct for unit in mined[doc_id]]
    left_out = max(0, len(units) - MAX_MAP_UNITS)
    if left_out:  # the most plainly argued units, in document order
        best = sorted(range(len(units)), key=lambda i: -units[i][1].score)[:MAX_MAP_UNITS]
        units = [units[i] for i in sorted(best)]
    weight = cluster.weight if settings.weight is None else settings.weight
    threshold = max(0.0, cluster.threshold - LOWER) if settings.threshold is None else settings.threshold
    shown, also = build_map(claim, units, encoder.encode, len(distinct), scorers.equivalence, stance, settings,
                            weight, threshold)
    return PerspectiveMap(claim, len(texts), len(units), shown, also,
                          [s.to_dict() if hasattr(s, "to_dict") else dict(s) for s in skipped],
                          {"threshold": round(threshold, 4), "weight": weight, "neighbours": settings.neighbours,
                           "min_documents": settings.min_documents, "join": settings.join, "adopt": settings.adopt,
                           "units_left_out": left_out},
                          time.perf_counter() - started, duplicates=duplicates)
