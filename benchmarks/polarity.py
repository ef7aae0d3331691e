"""Does the stance model read what a claim proposes? Dev accuracy on restrictive and negated claims.

    python -m benchmarks.polarity --models-dir MODELS --name NAME [--split dev]

Scores every gold pair of the split's claims with the stance model in ``MODELS/stance`` at
its own stored setting, then the same perspectives against each claim's negation
(:func:`perspectrum.text.polarity.negate`, labels flipped), and reports accuracy overall,
on the claims that ban, abolish, limit or end something, and on the negated claims
(:func:`perspectrum.eval.trained.polarity_check`). Rows are merged into
``eval/results/stance_polarity_recipes_dev.json`` by ``NAME``. Dev only unless told otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from pathlib import Path

from perspectrum._io import write_json
from perspectrum.data import load_dataset
from perspectrum.eval.trained import polarity_check
from perspectrum.models.store import load_task, read_meta

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "eval" / "results" / "stance_polarity_recipes_dev.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models-dir", type=Path, required=True)
    parser.add_argument("--name", required=True, help="the row's name in the JSON")
    parser.add_argument("--split", choices=("dev", "test"), default="dev")
    parser.add_argument("--json", type=Path, default=OUT)
    args = parser.parse_args()
    dataset = load_dataset()
    meta = read_meta(args.models_dir, "stance")
    members = load_task(args.models_dir, "stance")
    row = {"split": args.split, "base_model": meta.get("base_model"), "config": meta.get("config"),
           "thresholds": meta["thresholds"], "dev_when_trained": meta.get("dev"),
           **polarity_check(members, dataset, dataset.split(args.split), meta["thresholds"], show_progress=True)}
    record = json.loads(args.json.read_text(encoding="utf-8")) if args.json.is_file() else {
        "command": "python -m benchmarks.polarity --models-dir MODELS --name NAME",
        "hardware": f"{os.cpu_count()} CPU cores ({platform.machine()})", "rows": {}}
    record["rows"][args.name] = row
    write_json(args.json, record)
    print(json.dumps({k: v for k, v in row.items() if k != "examples"}, indent=1))


if __name__ == "__main__":
    main()
