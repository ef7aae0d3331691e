"""Does training stance on evidence windows help it read text that is not a perspective? A MiniLM trial on dev.

    python -m benchmarks.stance_evidence [--evidence 0 0.5] [--epochs 2]

Trains the stance recipe on MiniLM (6x cheaper than MPNet on a CPU, so a lead is measured
before the shipped model's 40 minutes are spent on it) once per ``--evidence`` share: 0 is
the gold perspective pairs alone; 0.5 adds half as many windows of the train clusters'
evidence paragraphs, each with its cluster's target
(:func:`perspectrum.train.examples.evidence_examples`). Each model's thresholds are tuned on
dev as ``train`` tunes them; then :func:`benchmarks.stance_checks.evidence_checks` and the polarity check score dev's
gold perspective pairs and the sentences and windows of each dev cluster's first evidence
paragraph. Writes ``eval/results/stance_evidence_recipes_dev.json``. Dev only.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks.bench_batch import cpu_model
from benchmarks.stance_checks import evidence_checks
from perspectrum import folders
from perspectrum._io import write_json
from perspectrum.data import load_dataset
from perspectrum.encoders.base_models import MINILM
from perspectrum.index.store import IndexStore
from perspectrum.eval.trained import polarity_check
from perspectrum.models.store import load_task
from perspectrum.train.tasks import CONFIGS, train_task

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evidence", type=float, nargs="+", default=[0.0, 0.5])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--json", type=Path, default=ROOT / "eval" / "results" / "stance_evidence_recipes_dev.json")
    args = parser.parse_args()
    dataset = load_dataset()
    store = IndexStore(folders.index_dir(None))
    base = CONFIGS["stance"]
    record: dict[str, Any] = {
        "command": "python -m benchmarks.stance_evidence " + " ".join(
            ["--evidence", *map(str, args.evidence), "--epochs", str(args.epochs)]),
        "hardware": f"{os.cpu_count()} CPU cores ({platform.machine()}, {cpu_model()})",
        "split": "dev", "base": MINILM, "runs": {}}
    for share in args.evidence:
        config = replace(base, base=MINILM, quantize=False, evidence=share,
                         params=replace(base.params, epochs=args.epochs, learning_rate=3e-5))
        with tempfile.TemporaryDirectory() as models:
            started = time.perf_counter()
            meta = train_task("stance", dataset, store, models, config=config, show_progress=True)
            seconds = time.perf_counter() - started
            members, claims = load_task(models, "stance"), dataset.split("dev")
            row = evidence_checks(members, dataset, claims, meta["thresholds"])
            row["perspectives"] = polarity_check(members, dataset, claims, meta["thresholds"])["overall"]
        record["runs"][f"evidence {share:g}"] = {
            "examples": meta["examples"], "params": meta["params"], "thresholds": meta["thresholds"],
            "dev_tuned": meta["dev"], "train_seconds": round(seconds, 1), **row}
        write_json(args.json, record)
        print(share, {k: row[k]["accuracy"] for k in ("perspectives", "sentences", "windows")}, flush=True)


if __name__ == "__main__":
    main()
