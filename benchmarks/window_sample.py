"""The hand-labelled sample behind the window verifier's highlight check.

    python -m benchmarks.window_sample  # print the 50 pairs to label, with numbered sentences

A seeded sample of 50 dev (gold cluster, gold paragraph) pairs whose paragraph has more
than 3 sentences (with 3 or fewer there is one window, and the highlight cannot be wrong).
For each, a person reads the cluster's perspectives and the paragraph's sentences (split as
:func:`perspectrum.text.sentences.sentences` splits them) and writes down the sentences that state the
cluster's point, or none. ``eval/window_labels.json`` keeps only ids and sentence numbers:
never the data's text (the dataset is CC BY-SA and not part of the project).
"""

from __future__ import annotations

import random
from pathlib import Path

from perspectrum.data import Dataset, load_dataset
from perspectrum.text.sentences import WINDOW, sentences

ROOT = Path(__file__).resolve().parents[1]

SEED = 2026
SIZE = 50
LABELS = ROOT / "eval" / "window_labels.json"


def sample(dataset: Dataset, size: int = SIZE, seed: int = SEED) -> list[dict[str, int]]:
    """``size`` dev (claim, cluster, paragraph) triples, paragraphs longer than one window."""
    pairs = [{"claim": claim.cid, "cluster": i, "evidence": eid}
             for claim in dataset.split("dev") for i, cluster in enumerate(claim.clusters)
             for eid in cluster.evidence if len(sentences(dataset.evidence[eid].text)) > WINDOW]
    return random.Random(seed).sample(pairs, size)


def main() -> None:
    dataset = load_dataset()
    claims = {c.cid: c for c in dataset.split("dev")}
    for n, pair in enumerate(sample(dataset)):
        claim = claims[pair["claim"]]
        cluster = claim.clusters[pair["cluster"]]
        print(f"=== {n} claim {claim.cid} cluster {pair['cluster']} evidence {pair['evidence']}: {claim.text}")
        for pid in cluster.pids:
            print(f"  P: {dataset.perspectives[pid].text}")
        for s, sentence in enumerate(sentences(dataset.evidence[pair["evidence"]].text)):
            print(f"  [{s}] {sentence}")


if __name__ == "__main__":
    main()
