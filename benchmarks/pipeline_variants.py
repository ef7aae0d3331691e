"""Settings of the pipeline compared end to end on dev, the models' scores shared across runs.

    python -m benchmarks.pipeline_variants SET --models-dir MODELS [--split dev]

Runs ``discover`` over every claim of the split (dev: every choice is made there) with the
settings stored beside the models and with each variant of the named set, sharing the
models' scores across runs (:class:`perspectrum.train.tune_pipeline.CachingScorers`), so
a variant costs only the scores it newly asks for. Sets:

- ``side_vote``: who decides a cluster's side. ``stored`` (the stance margin's cannot-link
  rule keeps confidently opposite members apart; expansion admits a paraphrase only on its
  cluster's side); ``vote`` (the same clusters, each side decided by the weighted vote of
  all its members and every admitted paraphrase, the expand stage's ``vote``); ``meaning,
  then vote`` (clusters by meaning alone, stance margin 1, then the vote); each also with
  the "side unclear" band off.
- ``both_sides``: the stance stage's ``other_side`` (for a claim answered on one side only,
  the most relevant of the next N candidates shown on the other side) at N = 5, 10, 20, and
  at 10 and 20 with a higher relevance floor for what it reads (0.5, 0.6, 0.7).

Writes ``eval/results/<SET>_<split>.json``.
"""

from __future__ import annotations

import json
import time
from typing import Any

from benchmarks.pipeline_args import pipeline_parser
from perspectrum._io import write_json
from perspectrum.data import load_dataset
from perspectrum.eval.end_to_end import score
from perspectrum.pipeline.pipeline import Pipeline, PipelineConfig
from perspectrum.train.tune_pipeline import CachingScorers


#: Each set's variants: overrides of the stored settings, and whether each is also run with the unclear band off.
SETS: dict[str, tuple[dict[str, dict[str, dict[str, Any]]], bool]] = {
    "side_vote": ({
        "stored": {},
        "vote": {"expand": {"vote": True}},
        "meaning, then vote": {"stance": {"margin": 1.0}, "expand": {"vote": True}},
    }, True),
    "both_sides": ({
        "stored": {},
        **{f"other side, {n}": {"stance": {"other_side": n}} for n in (5, 10, 20)},
        **{f"other side, {n}, floor {f}": {"stance": {"other_side": n, "floor": f}}
           for n in (10, 20) for f in (0.5, 0.6, 0.7)},
    }, False),
}


def main() -> None:
    parser = pipeline_parser(__doc__)
    parser.add_argument("set", choices=sorted(SETS))
    args = parser.parse_args()
    dataset = load_dataset()
    claims = dataset.split(args.split)
    pipe = Pipeline.load(index_dir=args.index_dir, models_dir=args.models_dir)
    pipe.warm_up()
    cached = CachingScorers(pipe.scorers)
    rows = []
    variants, bands = SETS[args.set]
    for name, overrides in variants.items():
        for band in (None, 0.0) if bands else (None,):
            changes = {stage: dict(values) for stage, values in overrides.items()}
            if band is not None:
                changes.setdefault("stance", {})["unclear"] = band
            run = pipe.with_config(PipelineConfig(**{**pipe.config.to_dict(), "overrides": changes}), cached)
            started = time.perf_counter()
            results = []
            for start in range(0, len(claims), 16):
                results += run.discover_many([c.text for c in claims[start:start + 16]])
            s = score(claims, results)
            rows.append({
                "variant": name + ("" if band is None else ", no unclear band"), "overrides": changes,
                "t1": round(s["t1"]["f1"] * 100, 2), "t2_accuracy": round(s["t2"]["accuracy"] * 100, 2),
                "t3": round(s["t3"]["f1"] * 100, 2), "t4": round(s["t4"]["f1"] * 100, 2),
                "t5_found": round(s["t5"] * 100, 2), "t5_strict": round(s["t5_all"] * 100, 2),
                "wrong_side": round(s["wrong_stance"] * 100, 2), "unclear_cards": round(s["unclear"] * 100, 2),
                "mixed_clusters": round(s["mixed"] * 100, 2), "both_sides": round(s["both_sides"] * 100, 2),
                "opposite_evidence": round(s["opposite_evidence"] * 100, 2),
                "calibration_error": round(s["calibration_error"], 4),
                "seconds": round(time.perf_counter() - started, 1),
            })
            print(json.dumps(rows[-1]))
    write_json(args.out / f"{args.set}_{args.split}.json",
               {"command": f"python -m benchmarks.pipeline_variants {args.set} --models-dir MODELS --split {args.split}",
                "models": pipe.system, "split": args.split, "stored_settings": pipe.settings, "runs": rows})


if __name__ == "__main__":
    main()
