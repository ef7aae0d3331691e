"""How small can each trained model ship, and what does each form cost on dev?

    python -m benchmarks.small_forms --models-dir M [--tasks relevance stance equivalence]
        [--json eval/results/small_forms_shipped_dev.json]

M holds the models of `perspectrum train all`. Each candidate form stores a model's change
from its base encoder (:mod:`perspectrum.train.pack`): every weight matrix's change in int8
per row, or its leading singular directions (rank R, the factors in int8), the word
embeddings apart. Each form is packed, added back to its base, and scored on dev at the
full model's dev-chosen thresholds, beside the full model's own dev metrics (its card).
The smallest form within 0.5 point of the full model on the task's key metric ships
(``FORMS`` in perspectrum/train/pack.py). Nothing here reads test.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

from perspectrum import folders
from perspectrum._io import write_json
from perspectrum.data import load_dataset
from perspectrum.index.store import IndexStore
from perspectrum.models.store import read_meta
from perspectrum.train.pack import FORMS, KEY, TOLERANCE, pack_task

ROOT = Path(__file__).resolve().parents[1]

#: The forms tried per task (``FORMS`` in perspectrum/train/pack.py names the one that ships).
CANDIDATES: dict[str, list[tuple[tuple[str, str], ...]]] = {
    "relevance": [(("", "int8"),), (("word_embeddings", "rank:16"), ("", "int8")),
                  (("word_embeddings", "base"), ("", "int8")), (("word_embeddings", "rank:16"), ("", "rank:64"))],
    "equivalence": [(("", "int8"),), (("word_embeddings", "rank:16"), ("", "int8")),
                    (("word_embeddings", "base"), ("", "int8")), (("word_embeddings", "rank:16"), ("", "rank:64"))],
    "stance": [(("word_embeddings", "rank:16"), ("", "rank:32")), (("word_embeddings", "rank:16"), ("", "rank:64")),
               (("word_embeddings", "rank:16"), ("", "rank:128")), (("word_embeddings", "rank:16"), ("", "rank:96"))],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models-dir", type=Path, required=True)
    parser.add_argument("--tasks", nargs="+", default=list(FORMS), choices=list(FORMS))
    parser.add_argument("--json", type=Path, default=ROOT / "eval" / "results" / "small_forms_shipped_dev.json")
    parser.add_argument("--no-verify", action="store_true", help="data other than the release's (tests' fixtures)")
    args = parser.parse_args()
    dataset = load_dataset(verify=not args.no_verify)
    store = IndexStore(folders.index_dir(None))
    out = args.json
    record = json.loads(out.read_text(encoding="utf-8")) if out.is_file() else {
        "command": "python -m benchmarks.small_forms --models-dir M (forms already in the file are kept)", "split": "dev", "tolerance": TOLERANCE,
        "hardware": f"{os.cpu_count()} CPU cores ({platform.machine()})", "tasks": {}}
    for task in args.tasks:
        meta = read_meta(args.models_dir, task)
        rows = record["tasks"].get(task, {}).get("forms", [])  # forms measured already are kept, not rerun
        done = [row["form"] for row in rows]
        for forms in CANDIDATES[task]:
            if [list(f) for f in forms] in done:
                continue
            began = time.perf_counter()
            with tempfile.TemporaryDirectory() as tmp:
                packed = pack_task(args.models_dir, task, Path(tmp) / task, forms, dev=(dataset, store),
                                   tolerance=None)["shipped"]
            row = {"form": packed["form"], "megabytes": round(packed["delta_bytes"] / 1e6, 2),
                   "change_lost": packed["change_lost"], "dev": packed["dev"],
                   "lost": round(meta["dev"][KEY[task]] - packed["dev"][KEY[task]], 2),
                   "seconds": round(time.perf_counter() - began, 1)}
            rows.append(row)
            print(task, json.dumps(row), flush=True)
        record["tasks"][task] = {"base_model": meta["base_model"], "key": KEY[task], "full_dev": meta["dev"],
                                 "shipped_form": [list(f) for f in FORMS[task]], "forms": rows}
        write_json(out, record)


if __name__ == "__main__":
    main()
