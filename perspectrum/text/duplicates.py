"""Near-duplicate documents: the same text pasted twice, or a template filled in by many.

Public-consultation piles hold hundreds of copies of one campaign letter, each with its own
name and address. Counted as they come, one template outvotes every point people wrote in
their own words. :func:`near_duplicates` finds them by the share of three-word runs two
documents have in common (the cosine of their sets of word trigrams, hashed): at or above
:data:`NEAR_DUPLICATE`, the later document is a copy of the earlier one.
"""

from __future__ import annotations

from collections.abc import Mapping

#: Cosine of two documents' word-trigram sets at or above which the later is a copy: a letter
#: that changes a name, an address and a sentence of a page in five keeps about 0.8.
NEAR_DUPLICATE = 0.8
#: Rows compared at once: the similarity of a block of documents to all is held, never all pairs.
_BLOCK = 512


def near_duplicates(texts: Mapping[str, str], threshold: float = NEAR_DUPLICATE) -> dict[str, list[str]]:
    """Copies by the document they copy: ``{first id: [later ids]}`` for every group of documents
    whose word trigrams overlap at or above ``threshold`` (cosine; joined transitively), the
    first in ``texts``' order kept. Documents of fewer than three words are compared whole."""
    from scipy.cluster.hierarchy import DisjointSet
    from sklearn.feature_extraction.text import HashingVectorizer

    ids = list(texts)
    if len(ids) < 2:
        return {}
    vectorizer = HashingVectorizer(analyzer="word", ngram_range=(3, 3), lowercase=True, binary=True,
                                   norm="l2", alternate_sign=False, n_features=2 ** 22, token_pattern=r"(?u)\b\w+\b")
    short = [" ".join([t] * 3) if len(t.split()) < 3 else t for t in (" ".join(texts[i].split()) for i in ids)]
    matrix = vectorizer.transform(short).tocsr()
    copied = DisjointSet(range(len(ids)))
    for start in range(0, len(ids), _BLOCK):
        block = (matrix[start:start + _BLOCK] @ matrix.T).tocoo()
        for i, j, value in zip(block.row, block.col, block.data):
            a, b = start + int(i), int(j)
            if a < b and value >= threshold - 1e-9:
                copied.merge(a, b)
    groups = sorted((sorted(group) for group in copied.subsets() if len(group) > 1), key=lambda g: g[0])
    return {ids[group[0]]: [ids[n] for n in group[1:]] for group in groups}


def copies_of(groups: Mapping[str, list[str]]) -> set[str]:
    """Every id :func:`near_duplicates` found to be a copy (not the first of its group)."""
    return {doc for later in groups.values() for doc in later}


__all__ = ["NEAR_DUPLICATE", "copies_of", "near_duplicates"]
