"""Stance on text that is not a perspective: evidence sentences and windows, read against their cluster's side.

    python -m benchmarks.stance_off_pool --models-dir MODELS --name NAME [--split dev] [--paragraphs 1]

PERSPECTRUM's perspectives are short argument sentences; ``mine`` and ``map`` read sentences
and windows of longer text. Each gold cluster's evidence paragraphs back that cluster, whose
side of the claim is known, so a (claim, evidence sentence) or (claim, 3-sentence window)
pair carries a support/undermine label for free. This scores, for every cluster of the
split's claims, its first ``--paragraphs`` evidence paragraphs: each sentence, and each window
(every :data:`perspectrum.models.rules.EVIDENCE_STRIDE` sentences, as ``discover`` reads
them), with the stance model in ``MODELS/stance`` at its own stored setting, and reports the
accuracy of each beside the gold perspective pairs' (:func:`perspectrum.eval.trained.polarity_check`'s
``overall``). Not every evidence sentence argues its cluster's side (some only set the scene),
so these accuracies are a floor for a stance reader, comparable across models, not a target.
Rows are merged into ``eval/results/stance_off_pool_<split>.json`` by ``NAME``. Dev unless told.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.bench_batch import cpu_model
from perspectrum._io import write_json
from perspectrum.data import load_dataset
from perspectrum.eval.trained import polarity_check, stance_predict
from perspectrum.models.inputs import claim_perspective_input
from perspectrum.models.rules import EVIDENCE_STRIDE
from perspectrum.models.store import load_task, read_meta
from perspectrum.text.sentences import sentences, windows

ROOT = Path(__file__).resolve().parents[1]


def off_pool(members: list[Any], dataset: Any, claims: list[Any], setting: dict[str, Any],
             paragraphs: int = 1) -> dict[str, Any]:
    """Accuracy on the evidence sentences and windows of each cluster's first ``paragraphs``
    evidence paragraphs, and on the gold perspective pairs, at the model's ``setting``."""
    items: dict[str, list[tuple[int, str, bool]]] = {"sentences": [], "windows": []}
    for claim in claims:
        for cluster in claim.clusters:
            support = cluster.stance == "SUPPORT"
            for eid in cluster.evidence[:paragraphs]:
                text = dataset.evidence[eid].text
                items["sentences"] += [(claim.cid, s, support) for s in sentences(text)]
                items["windows"] += [(claim.cid, w, support) for w in windows(text, stride=EVIDENCE_STRIDE)]
    text_of = {c.cid: c.text for c in claims}
    row: dict[str, Any] = {}
    for kind, rows in items.items():
        pairs = [claim_perspective_input(text_of[cid], text) for cid, text, _ in rows]
        scores = np.mean([member.score(pairs, show_progress=True) for member in members], axis=0)
        said = stance_predict({(cid, n): float(s) for n, ((cid, _, _), s) in enumerate(zip(rows, scores))}, setting)
        right = [said[(cid, n)] == gold for n, (cid, _, gold) in enumerate(rows)]
        row[kind] = {"pairs": len(rows), "accuracy": round(100 * float(np.mean(right)), 2),
                     "support_share": round(100 * float(np.mean([gold for _, _, gold in rows])), 2),
                     "said_support_share": round(100 * float(np.mean([said[(cid, n)] for n, (cid, _, _)
                                                                     in enumerate(rows)])), 2)}
    row["perspectives"] = polarity_check(members, dataset, claims, setting)["overall"]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models-dir", type=Path, required=True)
    parser.add_argument("--name", required=True, help="the row's name in the JSON")
    parser.add_argument("--split", choices=("dev", "test"), default="dev")
    parser.add_argument("--paragraphs", type=int, default=1, help="evidence paragraphs read per cluster")
    args = parser.parse_args()
    out = ROOT / "eval" / "results" / f"stance_off_pool_{args.split}.json"
    dataset = load_dataset()
    meta = read_meta(args.models_dir, "stance")
    started = time.perf_counter()
    row: dict[str, Any] = {"split": args.split, "paragraphs_per_cluster": args.paragraphs,
                           "thresholds": meta["thresholds"], "dev_when_trained": meta.get("dev"),
                           **off_pool(load_task(args.models_dir, "stance"), dataset, dataset.split(args.split),
                                      meta["thresholds"], args.paragraphs)}
    row["seconds"] = round(time.perf_counter() - started, 1)
    record = json.loads(out.read_text(encoding="utf-8")) if out.is_file() else {
        "command": f"python -m benchmarks.stance_off_pool --models-dir MODELS --name NAME --split {args.split}",
        "hardware": f"{os.cpu_count()} CPU cores ({platform.machine()}, {cpu_model()})", "rows": {}}
    record["rows"][args.name] = row
    write_json(out, record)
    print(json.dumps(row, indent=1))


if __name__ == "__main__":
    main()
