"""`map` on PERSPECTRUM's piles (:mod:`perspectrum.eval.map_quality`): coverage, purity, side accuracy, prevalence.

    python -m benchmarks.map_eval --models-dir MODELS [--split dev] [--lowers 0 0.1 0.2 0.3 0.4]
                                  [--joins chosen none 0.5] [--name NAME] [--units UNITS.json]

``--units`` keeps the mined units (mining is most of the time; the piles are fixed by the
seed): read when the file exists, written when it does not.

Each claim's gold evidence paragraphs plus as many distractors from claims of the same topics
are mapped for the claim; each pile is mined once and mapped with the clustering cut lowered by
each of ``--lowers``.

Rule, fixed before the dev run was read: the default lowering
(:data:`perspectrum.pipeline.map.LOWER`) is the one with the highest F1 of coverage and
purity on dev; test is then run once with it alone.

Writes ``eval/results/map_<name>_<split>.json``.
"""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

from benchmarks.pipeline_args import pipeline_parser, provenance
from perspectrum._io import write_json
from perspectrum.data import load_dataset
from perspectrum.eval.map_quality import evaluate_map, mine_piles, piles
from perspectrum.pipeline.map import JOIN
from perspectrum.text.mining import MinedUnit
from perspectrum.pipeline.pipeline import Pipeline


def main() -> None:
    parser = pipeline_parser(__doc__)
    parser.add_argument("--lowers", type=float, nargs="+", default=[0.0])
    parser.add_argument("--joins", nargs="+", default=["chosen"],
                        help="second-pass joins to map with: numbers, 'none' (no second pass) or 'chosen' (JOIN)")
    parser.add_argument("--name", default="trained")
    parser.add_argument("--units", type=Path, help="mined units kept here (read if present)")
    args = parser.parse_args()
    dataset = load_dataset()
    pipe = Pipeline.load(index_dir=args.index_dir, models_dir=args.models_dir)
    mined = None
    if args.units is not None and args.units.exists():
        mined = [[(d, MinedUnit(**u)) for d, u in pile] for pile in json.loads(args.units.read_text())]
    elif args.units is not None:
        started = time.perf_counter()
        mined = mine_piles(pipe, piles(dataset, args.split), show_progress=True)
        print(f"mined in {time.perf_counter() - started:.0f} s")
        write_json(args.units, [[(d, u.to_dict()) for d, u in pile] for pile in mined])
    joins = [JOIN if j == "chosen" else None if j == "none" else float(j) for j in args.joins]
    record = evaluate_map(dataset, pipe, args.split, args.lowers, show_progress=True, mined=mined, joins=joins)
    best = max(record["tried"], key=lambda row: row["f1"])
    record = {**provenance(f"python -m benchmarks.map_eval --split {args.split} --name {args.name} --lowers "
                           + " ".join(str(x) for x in args.lowers) + " --joins " + " ".join(args.joins)), **record}
    record.update({
                   "rule": "the lowering with the highest F1 of coverage and purity on dev",
                   "best_by_rule": best["lower"],
                   "hardware": f"{os.cpu_count()} CPU cores ({platform.machine()})"})
    path = write_json(args.out / f"map_{args.name}_{args.split}.json", record)
    print(path)
    for row in record["tried"]:
        print(row)


if __name__ == "__main__":
    main()
