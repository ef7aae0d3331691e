"""Every dev check of a stance model, side by side: gold pairs, claim forms, negations, evidence text.

    python -m benchmarks.stance_checks --models-dir MODELS --name NAME [--split dev]

Scores the stance model in ``MODELS/stance`` at its own stored setting on the split's claims:

- the gold (claim, perspective) pairs with each claim as stated, as a question, as a debate
  motion and negated (labels flipped), and by the form the claims are stated in, each with its
  gap below the rest (:func:`perspectrum.eval.stance_forms.forms_check`);
- the sentences and 3-sentence windows (every :data:`perspectrum.models.rules.EVIDENCE_STRIDE`
  sentences, as ``discover`` reads them) of each gold cluster's first evidence paragraph against
  the cluster's side (:func:`evidence_checks`): text like what ``mine`` and ``map`` read. Each
  gold cluster's evidence backs it, so such a pair carries a side for free.

Rows are merged into ``eval/results/stance_checks_recipes_<split>.json`` by ``NAME``. Dev unless told.
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
from perspectrum.eval.stance_forms import forms_check
from perspectrum.eval.trained import stance_predict
from perspectrum.models.inputs import claim_perspective_input
from perspectrum.models.rules import EVIDENCE_STRIDE
from perspectrum.models.store import load_task, read_meta
from perspectrum.text.sentences import sentences, windows

ROOT = Path(__file__).resolve().parents[1]


def evidence_checks(members: list[Any], dataset: Any, claims: list[Any], setting: dict[str, Any],
                    paragraphs: int = 1) -> dict[str, Any]:
    """Accuracy on the sentences and windows of each cluster's first ``paragraphs`` evidence
    paragraphs against the cluster's side, at the model's ``setting``. Not every evidence
    sentence argues its cluster's side (some only set the scene), so these are floors for a
    stance reader, comparable across models, not targets."""
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
    return row


def checks(members: list[Any], dataset: Any, claims: list[Any], setting: dict[str, Any]) -> dict[str, Any]:
    """The claim-form checks and the evidence checks of one model, in one row."""
    row: dict[str, Any] = forms_check(members, dataset, claims, setting, show_progress=True)
    row["evidence"] = evidence_checks(members, dataset, claims, setting)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models-dir", type=Path, required=True)
    parser.add_argument("--name", required=True, help="the row's name in the JSON")
    parser.add_argument("--split", choices=("dev", "test"), default="dev")
    args = parser.parse_args()
    out = ROOT / "eval" / "results" / f"stance_checks_recipes_{args.split}.json"
    dataset = load_dataset()
    meta = read_meta(args.models_dir, "stance")
    started = time.perf_counter()
    row: dict[str, Any] = {"split": args.split, "config": meta.get("config"), "thresholds": meta["thresholds"],
                           "dev_when_trained": meta.get("dev"),
                           **checks(load_task(args.models_dir, "stance"), dataset, dataset.split(args.split),
                                    meta["thresholds"])}
    row["seconds"] = round(time.perf_counter() - started, 1)
    record = json.loads(out.read_text(encoding="utf-8")) if out.is_file() else {
        "command": f"python -m benchmarks.stance_checks --models-dir MODELS --name NAME --split {args.split}",
        "hardware": f"{os.cpu_count()} CPU cores ({platform.machine()}, {cpu_model()})", "rows": {}}
    record["rows"][args.name] = row
    write_json(out, record)
    summary = {"stated": row["stated"]["accuracy"], "worst_gap": row["worst_gap"],
               **{k: v["accuracy"] for k, v in row["rewritten"].items()},
               **{k: v["accuracy"] for k, v in row["evidence"].items()}}
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
