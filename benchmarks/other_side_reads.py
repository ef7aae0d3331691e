"""The other-side search read lazily: the same answers for fewer stance pairs?

    python -m benchmarks.other_side_reads --models-dir MODELS [--split dev]

Runs ``discover`` over every claim of the split (batches of 16) twice: reading all of a
one-sided claim's next ``other_side`` candidates at once (the chunk as large as the
setting), and three at a time, stopping at the first shown on the other side (the stage as
it is). Counts the stance model's pairs and compares the two runs' results, timings left out.
Writes ``eval/results/other_side_reads_<split>.json``.
"""

from __future__ import annotations

import json
import time

import perspectrum.pipeline.stages.stance as stance_stage
from benchmarks.pipeline_args import pipeline_parser
from perspectrum._io import write_json
from perspectrum.data import load_dataset
from perspectrum.pipeline.pipeline import Pipeline


def main() -> None:
    args = pipeline_parser(__doc__).parse_args()
    pipe = Pipeline.load(index_dir=args.index_dir, models_dir=args.models_dir)
    pipe.warm_up()
    scorers, counted = pipe.scorers, [0]
    inner = scorers.stance

    def stance(pairs):
        counted[0] += len(pairs)
        return inner(pairs)

    scorers.stance = stance
    claims = [c.text for c in load_dataset().split(args.split)]
    runs = {}
    for chunk in (int(pipe.settings["stance"]["other_side"]) or 1, stance_stage.OTHER_SIDE_CHUNK):
        stance_stage.OTHER_SIDE_CHUNK, counted[0] = chunk, 0
        started = time.perf_counter()
        results = []
        for start in range(0, len(claims), 16):
            results += [r.to_dict() for r in pipe.discover_many(claims[start:start + 16])]
        for r in results:
            r.pop("timings", None)
        runs[chunk] = {"stance_pairs": counted[0], "seconds": round(time.perf_counter() - started, 1),
                       "results": results}
    (all_at_once, lazy) = runs.values()
    record = {"command": f"python -m benchmarks.other_side_reads --models-dir MODELS --split {args.split}",
              "models": pipe.system, "split": args.split, "claims": len(claims),
              "other_side": pipe.settings["stance"]["other_side"],
              "stance_pairs": {"all at once": all_at_once["stance_pairs"], "three at a time": lazy["stance_pairs"]},
              "seconds": {"all at once": all_at_once["seconds"], "three at a time": lazy["seconds"]},
              "identical_results": sum(a == b for a, b in zip(all_at_once["results"], lazy["results"]))}
    write_json(args.out / f"other_side_reads_{args.split}.json", record)
    print(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
