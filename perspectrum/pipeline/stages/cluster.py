"""Stage 4: equivalence clusters that never join perspectives of confidently opposite stance.

Every pair of a claim's kept perspectives is scored by the equivalence model
(claim-conditioned) and blended with its cosine; average linkage cuts at the dev-tuned
threshold. Two rules keep clusters honest about stance:

- *cannot-link*: a pair the stance model puts confidently on opposite sides has
  similarity 0 and is never scored (it also saves the model call);
- *split*: average linkage can still merge two groups whose other pairs are similar
  enough to outweigh a zero, so a cluster holding both confident leanings (+1 and −1) keeps its
  majority side and the others are clustered again among themselves.

A cluster's P(support) is the mean over its confident members (all members when none
is confident), so its stance is the stance of every confident member.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import ClassVar

import numpy as np

from perspectrum.models.rules import blend, cluster_support, groups, split_sides
from perspectrum.pipeline.stages.base import MODEL, PIPELINE, ClaimState, Context, Group, Stage, setting


@dataclass(frozen=True, kw_only=True)
class ClusterStage(Stage):
    """Stance-aware average-linkage clusters (see the module docstring;. Not :class:`perspectrum.data.Cluster`,
    a gold cluster of the dataset.

    Settings (declared here, once; who chooses each: :func:`~perspectrum.pipeline.stages.base.setting`).

    Attributes:
        weight: of the equivalence model against the pair's cosine.
        threshold: blended similarity at or above which two perspectives are one
            (clusters are cut at distance 1 − threshold): the equivalence model's own,
            tuned on gold perspectives, unless ``perspectrum tune`` found a stricter one
            better for retrieved perspectives.
    """

    name: ClassVar[str] = "cluster"
    model: ClassVar[str | None] = "equivalence"
    weight: float = setting(chosen=MODEL)
    threshold: float = setting(chosen=(MODEL, PIPELINE))

    def run(self, states: list[ClaimState], context: Context) -> None:
        cosines = []
        for state in states:
            vectors = context.dense.vectors([m.id for m in state.kept]) if state.kept else np.zeros((0, 1))
            cosines.append((vectors @ vectors.T).astype(np.float64))
        matrices = [(1 - self.weight) * cosine for cosine in cosines]
        text = context.perspective_text
        triples, where = [], []
        for n, state in enumerate(states):
            kept = state.kept
            for i, j in combinations(range(len(kept)), 2):
                if kept[i].leaning * kept[j].leaning < 0:  # confident opposites: cannot-link
                    matrices[n][i, j] = matrices[n][j, i] = 0.0
                    continue
                # a pair the model could not lift to the threshold even at 1.0 is not
                # worth a forward pass: it keeps model score 0 (what such pairs score anyway)
                if blend(1.0, cosines[n][i, j], self.weight) < self.threshold:
                    continue
                triples.append((state.claim, text[kept[i].id], text[kept[j].id]))
                where.append((n, i, j))
        scores = context.scorers.equivalence(triples)
        for (n, i, j), score in zip(where, scores):
            value = matrices[n][i, j] + self.weight * float(score)
            matrices[n][i, j] = matrices[n][j, i] = value
            states[n].pairs.append({"a": states[n].kept[i].id, "b": states[n].kept[j].id,
                                    "model": round(float(score), 4), "similarity": round(value, 4)})
        for state, matrix in zip(states, matrices):
            np.fill_diagonal(matrix, 1.0)
            kept = state.kept
            leanings = [m.leaning for m in kept]
            split = [part for g in groups(matrix, self.threshold) for part in split_sides(g, leanings, matrix,
                                                                                          self.threshold)]
            # kept is most relevant first, so each cluster's first index is its representative
            state.groups = [Group(sorted(g), cluster_support([kept[i].support for i in g], [leanings[i] for i in g]))
                            for g in sorted(split, key=min)]
