"""How fast can the stance model train, and what does each saving cost on dev?

    python eval/bench_stance_training.py VARIANT [VARIANT ...] [--json eval/results/stance_training.json]

`train all` must fit in 30 minutes on 2 cores (issue 13), and the MPNet stance model is
its largest step (2,451 s in the last `train all`, `eval/results/train_all.json`). Each
variant trains the stance model with the shipped recipe changed in the ways it names
(one epoch, lower layers frozen, batches of similar length, shorter inputs), tunes its
threshold on dev exactly as `perspectrum train stance` does, and records the minutes
and the dev accuracy and F1 beside the recipe. Nothing here reads test. Variants are
merged into the JSON by name, so they can be run one at a time; the shipped recipe's
own row is the stance entry of `train_all.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from perspectrum import config as folders  # noqa: E402
from perspectrum._io import write_json  # noqa: E402
from perspectrum.data import data_checksum, load_dataset  # noqa: E402
from perspectrum.index import IndexStore  # noqa: E402
from perspectrum.training import CONFIGS, train_task  # noqa: E402

#: Changes to the shipped stance recipe's training settings, by variant name.
VARIANTS: dict[str, dict[str, Any]] = {
    "one-epoch": {"epochs": 1},
    "length-batches": {"length_batches": True},
    "frozen-6": {"frozen_layers": 6},
    "one-epoch-length-batches": {"epochs": 1, "length_batches": True},
    "fast": {"epochs": 1, "frozen_layers": 6, "length_batches": True},
    "fast-frozen-4": {"epochs": 1, "frozen_layers": 4, "length_batches": True},
    "fast-frozen-8": {"epochs": 1, "frozen_layers": 8, "length_batches": True},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("variants", nargs="+", choices=sorted(VARIANTS))
    parser.add_argument("--json", type=Path, default=ROOT / "eval" / "results" / "stance_training.json")
    args = parser.parse_args()
    dataset = load_dataset()
    store = IndexStore(folders.index_dir(None))
    shipped = CONFIGS["stance"]
    models = folders.models_dir(None)
    record = json.loads(args.json.read_text(encoding="utf-8")) if args.json.is_file() else {
        "command": "python eval/bench_stance_training.py VARIANT ...", "split": "dev",
        "hardware": f"{os.cpu_count()} CPU cores ({platform.machine()})",
        "shipped": shipped.params.to_dict(), "variants": {}}
    for name in args.variants:
        with tempfile.TemporaryDirectory() as tmp:
            base = models / "base"
            if base.is_dir():  # the unpacked MPNet, so each variant does not unpack it again
                (Path(tmp) / "base").symlink_to(base.resolve())
            config = replace(shipped, params=replace(shipped.params, **VARIANTS[name]))
            meta = train_task("stance", dataset, store, tmp, show_progress=True,
                              data_checksum=data_checksum(), config=config)
        row = {"changes": VARIANTS[name], "train_seconds": meta["train_seconds"],
               "minutes": round(meta["train_seconds"] / 60, 1), "pairs_per_second": meta["runs"][0]["pairs_per_second"],
               "final_loss": meta["runs"][0]["final_loss"], "threshold": meta["thresholds"]["threshold"],
               "dev": meta["dev"]}
        record["variants"][name] = row
        print(name, json.dumps(row), flush=True)
        write_json(args.json, record)


if __name__ == "__main__":
    main()
