"""How fast can a task's model train, and what does each saving cost on dev?

    python -m benchmarks.bench_training TASK VARIANT [VARIANT ...] [--json eval/results/TASK_training_recipes_dev.json]

`train all` must fit in 30 minutes on 2 cores (issue 13); the last one took 103 minutes
of training (`eval/results/train_all_shipped_train.json`), the MPNet stance model 41 of them. Each
variant trains TASK's model with the shipped recipe changed in the ways it names (one
epoch, lower layers frozen, batches of similar length), tunes its thresholds on dev
exactly as `perspectrum train TASK` does, and records the minutes and the dev metrics
beside the recipe. Nothing here reads test. Variants are merged into the JSON by name, so
they can be run one at a time; the shipped recipe's own row is TASK's entry of
`train_all_shipped_train.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from perspectrum import folders
from perspectrum._io import write_json
from perspectrum.data import data_checksum, load_dataset
from perspectrum.index.store import IndexStore
from perspectrum.encoders.base_models import MINILM
from perspectrum.train.tasks import CONFIGS, TaskConfig, train_task

ROOT = Path(__file__).resolve().parents[1]

#: Changes to the shipped recipe's training settings, by variant name.
VARIANTS: dict[str, dict[str, Any]] = {
    "one-epoch": {"epochs": 1},
    "length-batches": {"length_batches": True},
    "frozen-6": {"frozen_layers": 6},
    "one-epoch-length-batches": {"epochs": 1, "length_batches": True},
    "fast": {"epochs": 1, "frozen_layers": 6, "length_batches": True},
    "fast-frozen-4": {"epochs": 1, "frozen_layers": 4, "length_batches": True},
    "fast-frozen-8": {"epochs": 1, "frozen_layers": 8, "length_batches": True},
    "fast-70": {"epochs": 1, "frozen_layers": 6, "length_batches": True, "max_examples": 4_900, "dev_share": 0.5},
    # the same budget of 4,900 pairs drawn from the gold pairs and all their counterfactuals (issue 34, item 2)
    "fast-70-counterfactual": {"epochs": 1, "frozen_layers": 6, "length_batches": True, "max_examples": 4_900,
                               "dev_share": 0.5, "counterfactual": 1.0},
    # a quarter as many counterfactuals as gold pairs, the cap raised so as many gold pairs are read as in fast-70
    "fast-70-counterfactual-25": {"epochs": 1, "frozen_layers": 6, "length_batches": True, "max_examples": 6_125,
                                  "dev_share": 0.5, "counterfactual": 0.25},
    # MiniLM in place of MPNet (issue 35: a cheaper first stance model), scored in int8 as MiniLM's models are
    "minilm-fast-70": {"epochs": 1, "length_batches": True, "max_examples": 4_900, "dev_share": 0.5,
                       "base": MINILM, "quantize": True},
    "minilm-2-epochs": {"length_batches": True, "base": MINILM, "quantize": True},
    # equivalence: half as many pairs again of evidence sentences, text like the units map groups
    "units-0.5": {"units": 0.5},
}
#: Variant keys that change the task's recipe (:class:`TaskConfig`) rather than its training settings.
RECIPE_KEYS = {f.name for f in fields(TaskConfig)} - {"params"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", choices=sorted(CONFIGS))
    parser.add_argument("variants", nargs="+", choices=sorted(VARIANTS))
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--keep", type=Path, default=None,
                        help="keep each variant's model under KEEP/VARIANT (to run other checks on it)")
    args = parser.parse_args()
    out = args.json or ROOT / "eval" / "results" / f"{args.task}_training_recipes_dev.json"
    dataset = load_dataset()
    store = IndexStore(folders.index_dir(None))
    shipped = CONFIGS[args.task]
    models = folders.models_dir(None)
    record = json.loads(out.read_text(encoding="utf-8")) if out.is_file() else {
        "command": f"python -m benchmarks.bench_training {args.task} VARIANT ...", "split": "dev",
        "hardware": f"{os.cpu_count()} CPU cores ({platform.machine()})",
        "shipped": shipped.params.to_dict(), "variants": {}}
    for name in args.variants:
        with tempfile.TemporaryDirectory() as scratch:
            tmp = str(args.keep / name) if args.keep else scratch
            Path(tmp).mkdir(parents=True, exist_ok=True)
            base = models / "base"
            if base.is_dir() and not (Path(tmp) / "base").exists():  # the unpacked MPNet, so each variant does not unpack it again
                (Path(tmp) / "base").symlink_to(base.resolve())
            changes = VARIANTS[name]
            config = replace(shipped, params=replace(shipped.params, **{k: v for k, v in changes.items()
                                                                        if k not in RECIPE_KEYS}),
                             **{k: v for k, v in changes.items() if k in RECIPE_KEYS})
            meta = train_task(args.task, dataset, store, tmp, show_progress=True,
                              data_checksum=data_checksum(), config=config)
        row = {"changes": VARIANTS[name], "train_seconds": meta["train_seconds"],
               "minutes": round(meta["train_seconds"] / 60, 1), "pairs_per_second": meta["runs"][0]["pairs_per_second"],
               "final_loss": meta["runs"][0]["final_loss"], "examples": meta["examples"]["examples"],
               "dev_claims": meta["dev_claims"], "thresholds": meta["thresholds"], "dev": meta["dev"]}
        record["variants"][name] = row
        print(name, json.dumps(row), flush=True)
        write_json(out, record)


if __name__ == "__main__":
    main()
