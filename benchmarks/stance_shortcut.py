"""The shortcut gap: how much of stance accuracy comes from reading the claim at all? A MiniLM trial on dev.

    python -m benchmarks.stance_shortcut [--epochs 2]

A stance model can score well on PERSPECTRUM by reading only the perspective ("… is cruel"
undermines most claims it is paired with). This trains the stance recipe on MiniLM twice, on
the same gold pairs in the same order with the same seed: once on (claim, perspective), once
with every claim blanked, and scores each on dev's gold pairs the way it was trained, at 0.5
and at the threshold dev likes best for it. The gap between the two is what reading the claim
is worth; a small gap means the model leans on the perspective alone. MiniLM, a sixth of
MPNet's cost on a CPU, so both fit in minutes. Writes ``eval/results/stance_shortcut_recipes_dev.json``.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.bench_batch import cpu_model
from perspectrum._io import write_json
from perspectrum.data import load_dataset
from perspectrum.encoders.base_models import MINILM, base_folder
from perspectrum.encoders.cross_encoder import CrossEncoderModel
from perspectrum.eval.ir import best_of
from perspectrum.eval.stance_forms import GRID
from perspectrum.train.examples import stance_examples
from perspectrum.train.fine_tune import fine_tune
from perspectrum.train.tasks import CONFIGS

ROOT = Path(__file__).resolve().parents[1]


def _accuracy(scores: np.ndarray, gold: np.ndarray, threshold: float) -> float:
    return round(100 * float(np.mean((scores >= threshold) == gold)), 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--json", type=Path, default=ROOT / "eval" / "results" / "stance_shortcut_recipes_dev.json")
    args = parser.parse_args()
    dataset = load_dataset()
    params = replace(CONFIGS["stance"].params, epochs=args.epochs, learning_rate=3e-5)
    train = stance_examples(dataset, dataset.split("train"))
    dev = stance_examples(dataset, dataset.split("dev"), soft=False)
    gold = np.array(dev.targets) >= 0.5
    record: dict[str, Any] = {
        "command": f"python -m benchmarks.stance_shortcut --epochs {args.epochs}",
        "hardware": f"{os.cpu_count()} CPU cores ({platform.machine()}, {cpu_model()})",
        "split": "dev", "base": MINILM, "params": params.to_dict(), "train_pairs": len(train), "dev_pairs": len(dev),
        "dev_support_share": round(100 * float(gold.mean()), 2), "runs": {}}
    for name, blank in (("claim and perspective", False), ("perspective only", True)):
        def seen(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
            return [("", b) if blank else (a, b) for a, b in pairs]

        started = time.perf_counter()
        model, tokenizer, stats = fine_tune(seen(train.pairs), train.targets, params,
                                            base_folder(MINILM, ROOT), show_progress=True, description=name)
        member = CrossEncoderModel(model, tokenizer, {"params": params.to_dict()}, quantize=False)
        scores = member.score(seen(dev.pairs), show_progress=True)
        best, at_best = best_of(GRID, lambda t: _accuracy(scores, gold, t))
        record["runs"][name] = {"accuracy_at_half": _accuracy(scores, gold, 0.5), "best_threshold": best,
                                "accuracy_at_best": at_best,
                                "train_seconds": round(stats["seconds"], 1),
                                "seconds": round(time.perf_counter() - started, 1)}
        write_json(args.json, record)
        print(name, record["runs"][name], flush=True)
    runs = record["runs"]
    record["gap"] = round(runs["claim and perspective"]["accuracy_at_best"] - runs["perspective only"]["accuracy_at_best"], 2)
    write_json(args.json, record)
    print("gap", record["gap"])


if __name__ == "__main__":
    main()
