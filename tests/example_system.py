"""A third-party system for perspectrum's harness: word overlap, nothing learned but word counts.

Run it with::

    perspectrum evaluate --system tests.example_system:WordOverlap --split test [--oracle stance]

It is written as someone outside the project would write one: it imports nothing from
perspectrum, reads only what ``prepare`` hands it (the two pools, and the train and dev
claims with their labels), and answers the five chain tasks in batches with plain lists.
Words are lower-cased, stripped of a few suffixes and of stop words, and compared with
the Jaccard index.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

STOP = frozenset("a an and are as at be by for from has have in is it its of on or that the their they this "
                 "to was were will with would should could can do does not no more than".split())


def words(text: str) -> frozenset[str]:
    """Content words, crudely stemmed so that "taxes" meets "tax" and "schools" meets "school"."""
    out = set()
    for word in re.findall(r"[a-z]+", text.lower()):
        if word in STOP:
            continue
        for suffix in ("ing", "es", "ed", "s"):
            if word.endswith(suffix) and len(word) - len(suffix) >= 3:
                word = word[: -len(suffix)]
                break
        out.add(word)
    return frozenset(out)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


class WordOverlap:
    """Retrieve and keep by overlap with the claim, stance from word counts of the training
    perspectives, clusters by overlap with a cluster's first member, evidence by overlap
    with the claim and the cluster."""

    name = "word-overlap"
    tasks = frozenset({"retrieve", "relevance", "stance", "equivalence", "evidence"})

    def __init__(self, depth: int = 20, keep: int = 5, same: float = 0.25, paragraphs: int = 2) -> None:
        self.depth, self.keep, self.same, self.paragraphs = depth, keep, same, paragraphs

    def prepare(self, data: Any) -> None:
        self.perspective_words = {pid: words(p.text) for pid, p in data.perspectives.items()}
        self.paragraph_words = {eid: words(e.text) for eid, e in data.evidence.items()}
        counts: dict[str, Counter[str]] = {"SUPPORT": Counter(), "UNDERMINE": Counter()}
        for claim in data.claims.values():  # every labelled claim handed over: never the evaluated split
            for cluster in claim.clusters:
                for pid in cluster.pids:
                    counts[cluster.stance].update(self.perspective_words[pid])
        support, undermine = counts["SUPPORT"], counts["UNDERMINE"]
        total_s, total_u = sum(support.values()) + 1, sum(undermine.values()) + 1
        #: log-odds of "supports" per word, add-one smoothed
        self.lean = {w: math.log((support[w] + 1) / total_s) - math.log((undermine[w] + 1) / total_u)
                     for w in support.keys() | undermine.keys()}

    def _best(self, query: frozenset[str], pool: dict[int, frozenset[str]], ids: Any, k: int) -> list[int]:
        scored = sorted(((jaccard(query, pool[i]), i) for i in ids), key=lambda pair: (-pair[0], pair[1]))
        return [i for score, i in scored[:k] if score > 0]

    def retrieve(self, claims: list[str]) -> list[list[int]]:
        pool = self.perspective_words
        return [self._best(words(claim), pool, pool, self.depth) for claim in claims]

    def relevance(self, claims: list[str], candidates: list[list[int]]) -> list[list[int]]:
        pool = self.perspective_words
        return [self._best(words(claim), pool, ids, self.keep) for claim, ids in zip(claims, candidates)]

    def stance(self, claims: list[str], perspectives: list[list[int]]) -> list[list[float]]:
        return [[1 / (1 + math.exp(-sum(self.lean.get(w, 0.0) for w in self.perspective_words[pid]))) for pid in ids]
                for ids in perspectives]

    def equivalence(self, claims: list[str], perspectives: list[list[int]]) -> list[list[list[int]]]:
        out = []
        for ids in perspectives:
            clusters: list[list[int]] = []
            for pid in ids:
                home = next((k for k in clusters if jaccard(self.perspective_words[k[0]], self.perspective_words[pid])
                             >= self.same), None)
                if home is None:
                    clusters.append([pid])
                else:
                    home.append(pid)
            out.append(clusters)
        return out

    def evidence(self, claims: list[str], clusters: list[list[list[int]]]) -> list[list[list[int]]]:
        out = []
        for claim, groups in zip(claims, clusters):
            about = words(claim)
            out.append([self._best(about | frozenset().union(*(self.perspective_words[p] for p in cluster)),
                                   self.paragraph_words, self.paragraph_words, self.paragraphs) for cluster in groups])
        return out


class WordOverlapText(WordOverlap):
    """:class:`WordOverlap` that also reads raw text: a sentence sharing a word with the claim
    is a unit (its stance from the same word counts), and an argument is made when some
    sentence holds at least half its words."""

    name = "word-overlap-text"
    tasks = WordOverlap.tasks | {"mine", "match"}
    made_at = 0.5

    @staticmethod
    def sentences(text: str) -> list[tuple[int, int]]:
        return [m.span() for m in re.finditer(r"[^.!?\s][^.!?]*[.!?]*", text)]

    def mine(self, texts: list[str], claims: list[str]) -> list[list[tuple[int, int, str, float]]]:
        out = []
        for text, claim in zip(texts, claims):
            about, units = words(claim), []
            for start, end in self.sentences(text):
                said = words(text[start:end])
                if said & about:
                    lean = sum(self.lean.get(w, 0.0) for w in said)
                    units.append((start, end, "support" if lean >= 0 else "undermine", jaccard(said, about)))
            out.append(units)
        return out

    def match(self, texts: list[str], claims: list[str], arguments: list[list[str]]) -> list[list[bool]]:
        out = []
        for text, listed in zip(texts, arguments):
            said = [words(text[a:b]) for a, b in self.sentences(text)]
            out.append([any(len(words(arg) & s) >= self.made_at * max(1, len(words(arg))) for s in said)
                        for arg in listed])
        return out
