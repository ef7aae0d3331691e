"""`map` on PERSPECTRUM's piles (:mod:`perspectrum.eval.map_quality`): coverage, purity, side accuracy, prevalence.

    python -m benchmarks.map_eval --models-dir MODELS [--split dev] [--settings chosen 0:none 0.1:0.6]
                                  [--name NAME] [--units UNITS.json]

``--units`` keeps the mined units (mining is most of the time; the piles are fixed by the
seed): read when the file exists, written when it does not.

Each claim's gold evidence paragraphs plus as many distractors from claims of the same topics
are mapped for the claim; each pile is mined once (as ``map`` mines) and mapped at each setting:
how far ``discover``'s clustering cut is lowered, and the second pass's join. The defaults
(:data:`perspectrum.pipeline.map.LOWER`, :data:`perspectrum.pipeline.map.JOIN`) are chosen on
dev without the judge (``benchmarks.map_grouping``); this scores them, beside the previous
grouping (``0:none``) on dev, and alone on test, read once.

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
from perspectrum.pipeline.map import JOIN, LOWER
from perspectrum.text.mining import MinedUnit
from perspectrum.pipeline.pipeline import Pipeline


def main() -> None:
    parser = pipeline_parser(__doc__)
    parser.add_argument("--settings", nargs="+", default=["chosen"],
                        help="LOWER:JOIN pairs to map with (JOIN a number or 'none' for no second pass), or 'chosen' "
                             "for the defaults (LOWER, JOIN)")
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
    settings = [(LOWER, JOIN) if s == "chosen" else (float(s.split(":")[0]),
                                                     None if s.split(":")[1] == "none" else float(s.split(":")[1]))
                for s in args.settings]
    record = evaluate_map(dataset, pipe, args.split, settings, show_progress=True, mined=mined)
    record = {**provenance(f"python -m benchmarks.map_eval --split {args.split} --name {args.name} --settings "
                           + " ".join(args.settings)), **record,
              "hardware": f"{os.cpu_count()} CPU cores ({platform.machine()})"}
    path = write_json(args.out / f"map_{args.name}_{args.split}.json", record)
    print(path)
    for row in record["tried"]:
        print(row)


if __name__ == "__main__":
    main()
