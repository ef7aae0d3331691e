"""Train one variant of the stance recipe and keep it, to be measured on dev before it ships.

    python -m benchmarks.stance_recipe --name NAME --into MODELS [--counterfactual 0.5]
        [--evidence 0] [--forms 0] [--epochs 2] [--seed 13]

Trains ``train all``'s stance recipe (:data:`perspectrum.train.tasks.CONFIGS`) with the
changes given, tunes its thresholds on dev as ``train`` does, and saves it as
``MODELS/stance`` (copy the other tasks' models beside it to run the whole pipeline with it).
The run's settings, time and dev accuracy are merged into
``eval/results/stance_recipes_dev.json`` under ``NAME``; ``python -m benchmarks.stance_checks``
then adds the dev checks off the perspective pool. Dev only: test is read once, for the model
that ships.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks.bench_batch import cpu_model
from perspectrum import folders
from perspectrum._io import write_json
from perspectrum.data import data_checksum, load_dataset
from perspectrum.index.store import IndexStore
from perspectrum.train.tasks import CONFIGS, train_task

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "eval" / "results" / "stance_recipes_dev.json"


def read_runs(path: Path) -> dict[str, Any]:
    """The stored runs at ``path`` (this benchmark's and ``stance_soup``'s), or an empty record."""
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    return {"command": "python -m benchmarks.stance_recipe --name NAME --into MODELS [changes]", "split": "dev",
            "runs": {}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", required=True, help="the run's name in the JSON")
    parser.add_argument("--into", type=Path, required=True, help="models folder the stance model is saved in")
    parser.add_argument("--counterfactual", type=float, default=0.0)
    parser.add_argument("--evidence", type=float, default=0.0)
    parser.add_argument("--forms", type=float, default=0.0)
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--json", type=Path, default=OUT)
    args = parser.parse_args()
    base = CONFIGS["stance"]
    params = base.params if args.epochs is None else replace(base.params, epochs=args.epochs)
    changes = {"counterfactual": args.counterfactual, "forms": args.forms, "evidence": args.evidence}
    config = replace(base, params=params, **changes)
    dataset = load_dataset()
    store = IndexStore(folders.index_dir(None))
    started = time.perf_counter()
    meta = train_task("stance", dataset, store, args.into, seed=args.seed, show_progress=True,
                      data_checksum=data_checksum(None), config=config)
    seconds = time.perf_counter() - started
    record = read_runs(args.json)
    record["runs"][args.name] = {
        "command": "python -m benchmarks.stance_recipe " + shlex.join(sys.argv[1:]).replace(str(args.into), "MODELS"),
        "hardware": f"{os.cpu_count()} CPU cores ({platform.machine()}, {cpu_model()})",
        "changes": {k: v for k, v in {**changes, "epochs": args.epochs, "seed": args.seed}.items() if v is not None},
        "examples": meta["examples"], "params": meta["params"], "thresholds": meta["thresholds"],
        "dev": meta["dev"], "train_seconds": round(seconds, 1)}
    write_json(args.json, record)
    print(json.dumps(record["runs"][args.name]["dev"]), flush=True)


if __name__ == "__main__":
    main()
