"""The decision rules the pipeline applies to model scores, in one place.

Evaluation tunes these rules' parameters on dev and the pipeline applies them, so both
must rank, cut and cluster the same way: they import them from here, and nothing here
knows about labels or metrics.

- :func:`ranked`: blend a model score with a prior and sort, best first, with one
  tie-break (the id) so every ranking is reproducible;
- :func:`above` / :func:`keep`: cut a ranking by an absolute floor, then by a fraction of
  the best and a cap;
- :func:`latin_script`: whether a claim is written in the alphabet the models read;
- :func:`average_linkage` / :func:`groups`: cluster a similarity matrix;
- :func:`split_sides` / :func:`cluster_support`: keep a cluster on one side, and the side it takes;
- :data:`EVIDENCE_STRIDE`: how windows step through a paragraph.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

#: Window stride when scoring evidence: every sentence is still covered, ~40 % fewer pairs.
EVIDENCE_STRIDE = 2


def blend(model: float, prior: float, weight: float) -> float:
    """weight × model + (1 − weight) × prior (1 = the model alone, 0 = the prior alone)."""
    return weight * model + (1 - weight) * prior


def _id_order(item: Any) -> tuple[int, Any]:
    """Integer ids sort by value, other ids by their text (a pool's ids are all one kind)."""
    return (0, item) if isinstance(item, (int, np.integer)) else (1, str(item))


def ranked(scores: Iterable[tuple[Any, float]]) -> list[tuple[float, Any]]:
    """``(score, id)`` pairs best first; equal scores in id order."""
    return sorted(((float(s), item) for item, s in scores), key=lambda pair: (-pair[0], _id_order(pair[1])))


def above(ranking: Sequence[tuple[float, Any]], floor: float) -> list[tuple[float, Any]]:
    """The ranking without what scores under an absolute ``floor`` (at or below 0: all of it).

    It comes before :func:`keep`, so nothing under it is kept, not even for ``min_keep``,
    and an off-topic query can keep nothing.
    """
    return [pair for pair in ranking if pair[0] >= floor] if floor > 0 else list(ranking)


def keep(ranking: Sequence[tuple[float, Any]], setting: Mapping[str, Any]) -> list[Any]:
    """The ids a cut-off setting keeps from a ranking (best first, as :func:`ranked` gives).

    With ``relative`` the floor is ``threshold`` × the best score (claims differ in how
    many perspectives they have; a fixed floor cannot follow that), else ``threshold``
    itself. At most ``k`` are kept, and at least the top ``min_keep``.
    """
    if not ranking:
        return []
    cut = setting["threshold"] * ranking[0][0] if setting["relative"] else setting["threshold"]
    chosen = [item for score, item in ranking[:setting["k"]] if score >= cut]
    return chosen if len(chosen) >= setting["min_keep"] else [item for _, item in ranking[:setting["min_keep"]]]


def latin_script(text: str) -> bool:
    """Whether at least half of ``text``'s letters are Latin.

    The models were fine-tuned on English and MiniLM's vocabulary spells most other
    scripts one character per piece, so a claim in Chinese or Cyrillic can reach a
    relevance score above the floor without the models having read it; such a claim
    gets no answer rather than one matched on character shapes. (Claims in other
    Latin-script languages are left to the relevance floor.)
    """
    letters = [ch for ch in text if ch.isalpha()]
    latin = sum(unicodedata.name(ch, "").startswith("LATIN") for ch in letters)
    return bool(letters) and 2 * latin >= len(letters)


def average_linkage(matrix: np.ndarray, threshold: float) -> np.ndarray:
    """Cluster labels of a similarity matrix (n ≥ 2): average linkage cut at distance
    1 − ``threshold``. Evaluation and the pipeline cluster the same way.

    SciPy builds the tree (the one scikit-learn's ``AgglomerativeClustering`` builds for
    a precomputed matrix: it calls the same function), and the cut is scikit-learn's:
    every merge at distance ≥ 1 − ``threshold`` is undone. Importing scikit-learn for
    this would cost a ``discover`` process ~1 s.
    """
    from scipy.cluster.hierarchy import linkage

    n = len(matrix)
    merges = linkage((1.0 - matrix)[np.triu_indices(n, k=1)], method="average")
    # average linkage never merges below an earlier merge, so the merges kept are a prefix
    kept = int(np.count_nonzero(merges[:, 2] < 1.0 - threshold))
    parent = list(range(2 * n - 1))

    def root(node: int) -> int:
        while parent[node] != node:
            node = parent[node]
        return node

    for step, (a, b) in enumerate(merges[:kept, :2].astype(int)):
        parent[root(a)] = parent[root(b)] = n + step
    return np.array([root(i) for i in range(n)])


def groups(matrix: np.ndarray, threshold: float) -> list[list[int]]:
    """Average-linkage clusters of a similarity matrix as lists of row indices, in row order."""
    n = len(matrix)
    if n < 2:
        return [[i] for i in range(n)]
    out: dict[int, list[int]] = {}
    for i, label in enumerate(average_linkage(matrix, threshold)):
        out.setdefault(int(label), []).append(i)
    return sorted(out.values(), key=lambda g: g[0])


def split_sides(members: list[int], sides: Sequence[int], matrix: np.ndarray, threshold: float) -> list[list[int]]:
    """``members`` (indices into ``sides`` and ``matrix``) as one cluster if no two are
    confident opposites (``sides`` +1 and −1; 0 is unsure), else its majority side, and
    the others clustered again among themselves.

    Average linkage can merge two groups whose other pairs are similar enough to outweigh
    the zero similarity of confident opposites; this keeps every cluster on one side.
    """
    held = [sides[i] for i in members]
    if not (1 in held and -1 in held):
        return [members]
    votes = held.count(1) - held.count(-1)
    keep_side = (1 if votes > 0 else -1) if votes else next(s for s in held if s)
    staying = [i for i in members if sides[i] != -keep_side]
    leaving = [i for i in members if sides[i] == -keep_side]
    sub = matrix[np.ix_(leaving, leaving)]
    return [staying, *([leaving[j] for j in g] for g in groups(sub, threshold))]


def cluster_support(supports: Sequence[float | None], sides: Sequence[int]) -> float:
    """A cluster's P(support): the mean over its confident members (side ≠ 0), or over all
    of them when none is confident; 0.5 when nothing was read."""
    confident = [p for p, s in zip(supports, sides) if s and p is not None]
    values = confident or [p for p in supports if p is not None]
    return float(np.mean(values)) if values else 0.5
