"""Capping the work one claim can cause: latency per claim and quality on dev, by ``max_perspectives``.

    python -m benchmarks.latency_caps --models-dir MODELS [--split dev] [--caps 30 20 12] [--budgets B ...]
                                      [--name NAME]

For each cap (``PipelineConfig.max_perspectives``: at most this many perspectives kept per
claim, so at most this many stance pairs, clusters to expand and cards to evidence), runs
``discover`` on every claim of the split one at a time, as a user waits for it (the first
claim once before, for one-off allocations), with no scores shared between caps. Records
p50/p95 per stage and in total, what the slowest claims kept, and the split's T1–T5 and the
reader's figures of the same answers (:func:`perspectrum.eval.end_to_end.score`).

Rule, fixed before the runs were read: the lowest cap whose dev T1 F1 and found T5 stay within
0.5 points of the default cap's (30) is kept if it brings p95 per claim to 2.5 s or under.

``--budgets B ...`` also runs the first cap with each expand budget (``expand.budget``: at most
B cluster–neighbour pairs read by the equivalence model per claim, the closest first). Rule,
fixed before those runs: the largest budget whose p95 is 2.5 s or under and whose T1, found T5
and strict T5 each stay within 0.5 points of the run without a budget is kept; none, no budget.

Writes ``eval/results/latency_caps_<name>_<split>.json``.
"""

from __future__ import annotations

import json
import os
import platform
import time
from typing import Any

import numpy as np

from benchmarks.pipeline_args import pipeline_parser
from perspectrum._io import write_json
from perspectrum.data import load_dataset
from perspectrum.eval.end_to_end import score
from perspectrum.pipeline.pipeline import Pipeline, PipelineConfig


def _percentiles(values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(float(np.percentile(values, 50)) * 1000, 1),
            "p95_ms": round(float(np.percentile(values, 95)) * 1000, 1),
            "max_ms": round(float(np.max(values)) * 1000, 1)}


def run_cap(args: Any, claims: list[Any], cap: int, budget: int = 0) -> dict[str, Any]:
    overrides = {"expand": {"budget": budget}} if budget else {}
    pipe = Pipeline.load(index_dir=args.index_dir, models_dir=args.models_dir,
                         config=PipelineConfig(max_perspectives=cap, overrides=overrides))
    pipe.warm_up()
    pipe.discover(claims[0].text)
    stages: dict[str, list[float]] = {}
    results, slow = [], []
    for claim in claims:
        started = time.perf_counter()
        found = pipe.discover(claim.text)
        seconds = time.perf_counter() - started
        results.append(found)
        for stage, value in found.timings.items():
            stages.setdefault(stage, []).append(value)
        slow.append((seconds, claim.cid, len(found.perspectives), sum(len(p.phrasings) for p in found.perspectives)))
    s = score(claims, results)
    slow.sort(reverse=True)
    return {
        "max_perspectives": cap, **({"expand_budget": budget} if budget else {}), "system": pipe.system,
        "latency": {stage: _percentiles(values) for stage, values in stages.items()},
        "slowest": [{"seconds": round(t, 2), "claim_id": cid, "cards": cards, "phrasings": phrasings}
                    for t, cid, cards, phrasings in slow[:8]],
        "t1": round(s["t1"]["f1"] * 100, 2), "t2_accuracy": round(s["t2"]["accuracy"] * 100, 2),
        "t3": round(s["t3"]["f1"] * 100, 2), "t4": round(s["t4"]["f1"] * 100, 2),
        "t5_found": round(s["t5"] * 100, 2), "t5_strict": round(s["t5_all"] * 100, 2),
        "wrong_side": round(s["wrong_stance"] * 100, 2), "unclear_cards": round(s["unclear"] * 100, 2),
        "mixed_clusters": round(s["mixed"] * 100, 2), "both_sides": round(s["both_sides"] * 100, 2),
        "calibration_error": round(s["calibration_error"], 4),
    }


def main() -> None:
    parser = pipeline_parser(__doc__)
    parser.add_argument("--caps", type=int, nargs="+", default=[30, 20, 12])
    parser.add_argument("--budgets", type=int, nargs="*", default=[],
                        help="also run the first cap with each of these expand budgets (pairs read per claim)")
    parser.add_argument("--name", default="", help="a word put in the file's name (e.g. trained)")
    args = parser.parse_args()
    claims = load_dataset().split(args.split)
    record: dict[str, Any] = {
        "command": f"python -m benchmarks.latency_caps --models-dir MODELS --split {args.split} "
                   f"--caps {' '.join(map(str, args.caps))}"
                   + (f" --budgets {' '.join(map(str, args.budgets))}" if args.budgets else "")
                   + (f" --name {args.name}" if args.name else ""),
        "split": args.split, "claims": len(claims), "hardware": f"{os.cpu_count()} CPU cores ({platform.machine()})",
        "runs": [],
    }
    for cap, budget in [(cap, 0) for cap in args.caps] + [(args.caps[0], b) for b in args.budgets]:
        row = run_cap(args, claims, cap, budget)
        record["runs"].append(row)
        print(json.dumps({k: v for k, v in row.items() if k not in ("slowest",)} | {"total": row["latency"]["total"]}),
              flush=True)
    name = f"latency_caps_{args.name + '_' if args.name else ''}{args.split}"
    write_json(args.out / f"{name}.json", record)


if __name__ == "__main__":
    main()
