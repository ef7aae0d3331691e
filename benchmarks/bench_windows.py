"""Does the window verifier verify? Two checks of the 3-sentence window scores on dev.

    python -m benchmarks.bench_windows [--models-dir models] [--json FILE]

- separation: for every dev gold cluster with evidence, each paragraph of the cluster's
  candidates as the evidence ranker retrieves them (its hybrid top-20, what `discover`
  reads) gets its best window's score (windows every 2 sentences, as `discover` reads
  them); ROC AUC of that score, gold against non-gold, pooled over the clusters.
- highlight: on the hand-labelled dev pairs of ``eval/window_labels.json`` (see
  ``python -m benchmarks.window_sample``; 47 of the 50 have a sentence that states the cluster's point),
  the share whose best-scored window holds the sentence that states it most directly
  (strict) or any sentence that states it (lenient); beside each, the share for always the
  first window and for a window picked at random (expected), which a verifier must beat.

The window scorer is the one ``discover`` uses: the evidence ranker's window verifier
(:mod:`perspectrum.models.evidence_ranker`). Its baseline is the mean cosine of the window's
sentences to the cluster's first perspective (``eval/results/windows_cosine_trained_dev.json``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from perspectrum._io import write_json
from perspectrum.data import Dataset, load_dataset
from perspectrum.pipeline.pipeline import Pipeline
from perspectrum.models.evidence_ranker import Debate, Featurizer, WindowJob
from perspectrum.models.rules import EVIDENCE_STRIDE
from perspectrum.models.scorers import Scorers
from perspectrum.text.sentences import WINDOW, sentences, window_starts

ROOT = Path(__file__).resolve().parents[1]

LABELS = ROOT / "eval" / "window_labels.json"


def best_windows(scorers: Scorers, jobs: list[WindowJob]) -> list[tuple[int, float]]:
    """For each (debate, cluster index, paragraph id): the index and score of its best window."""
    return [(int(np.argmax(scores)), float(np.max(scores))) if len(scores) else (-1, -np.inf)
            for scores in scorers.windows(jobs)]


def highlight(dataset: Dataset, scorers: Scorers) -> dict[str, object]:
    """Share of hand-labelled pairs whose best window holds the sentence that states the point
    most directly (strict) or any sentence that states it (lenient), beside two blind choices."""
    labels = [p for p in json.loads(LABELS.read_text(encoding="utf-8"))["pairs"] if p["point"]]
    jobs, spans = [], []
    for pair in labels:
        claim = dataset.claims[pair["claim"]]
        count = len(sentences(dataset.evidence[pair["evidence"]].text))
        if count != pair["sentences"]:
            raise SystemExit(f"paragraph {pair['evidence']} now splits into {count} sentences, not "
                             f"{pair['sentences']}: the labels no longer fit; label again")
        jobs.append((Debate.of(dataset, claim), pair["cluster"], pair["evidence"]))
        spans.append([set(range(s, s + WINDOW)) for s in window_starts(count, WINDOW, EVIDENCE_STRIDE)])
    chosen = [index for index, _ in best_windows(scorers, jobs)]
    result: dict[str, object] = {"pairs": len(labels),
                                 "windows_per_pair": round(float(np.mean([len(s) for s in spans])), 2)}
    for name, wanted in (("strict", lambda pair: {pair["best"]}), ("lenient", lambda pair: set(pair["point"]))):
        hit = [[bool(window & wanted(pair)) for window in windows_] for windows_, pair in zip(spans, labels)]
        result[name] = {"right": _percent([h[i] for h, i in zip(hit, chosen)]),
                        "first_window": _percent([h[0] for h in hit]),
                        "random_window": _percent([float(np.mean(h)) for h in hit])}
    return result


def _percent(values: list[float]) -> float:
    return round(100 * float(np.mean(values)), 1)


def separation(dataset: Dataset, scorers: Scorers, store: object) -> dict[str, object]:
    """ROC AUC of the best-window score: gold paragraphs against non-gold ones, among each dev
    gold cluster's candidates as the evidence ranker retrieves them (its hybrid top-20, what
    ``discover`` reads), pooled over every dev cluster with gold evidence."""
    from sklearn.metrics import roc_auc_score

    dev = dataset.split("dev")
    table = Featurizer.for_dataset(store, dataset).table({c.cid: Debate.of(dataset, c) for c in dev})  # type: ignore[arg-type]
    debates = {c.cid: Debate.of(dataset, c) for c in dev}
    jobs, gold = [], []
    for cid, index, eid in table.keys:
        cluster = dataset.claims[cid].clusters[index]
        if not cluster.evidence:
            continue
        jobs.append((debates[cid], index, eid))
        gold.append(eid in cluster.evidence)
    scores = [score for _, score in best_windows(scorers, jobs)]
    return {"clusters": len({(cid, index) for cid, index, _ in table.keys
                             if dataset.claims[cid].clusters[index].evidence}),
            "paragraphs": len(jobs), "gold": int(sum(gold)), "auc": round(float(roc_auc_score(gold, scores)), 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models-dir", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    dataset = load_dataset()
    pipe = Pipeline.load(models_dir=args.models_dir, show_progress=True)
    scorers = pipe.scorers
    started = time.perf_counter()
    result: dict[str, object] = {"command": " ".join(["python -m benchmarks.bench_windows", *sys.argv[1:]]),
                                 "scorer": "verifier", "models": pipe.system, "split": "dev", "stride": EVIDENCE_STRIDE,
                                 "highlight": highlight(dataset, scorers)}  # type: ignore[arg-type]
    print("highlight:", result["highlight"], flush=True)
    result["separation"] = separation(dataset, scorers, pipe.store)  # type: ignore[arg-type]
    print("separation:", result["separation"], flush=True)
    result["seconds"] = round(time.perf_counter() - started, 1)
    out = args.json or ROOT / "eval" / "results" / "windows_verifier_trained_dev.json"
    print(f"wrote {write_json(out, result)}")


if __name__ == "__main__":
    main()
