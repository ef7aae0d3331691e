"""Lending the perspective pool's stored vectors to the encoder: time per claim and answers, on dev.

    python -m benchmarks.lent_vectors --models-dir MODELS [--split dev] [--name NAME]

Loads two pipelines on the same models and indexes, one whose encoder is lent the
perspective index's vectors (:func:`perspectrum.index.dense.lend_vectors`, as every pipeline
now is) and one that encodes every text it meets, and runs each claim of the split through
both in turn, one at a time (the first claim once before, for one-off allocations), so the
two share the machine's state. Records p50/p95 per stage and in total for each, and how many
answers differ: perspectives, sides, phrasings, evidence, and the largest difference in any
shown P(support).

Writes ``eval/results/lent_vectors_<name>_<split>.json``.
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
from perspectrum.pipeline import pipeline as pipeline_module
from perspectrum.pipeline.pipeline import Pipeline


def _percentiles(values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(float(np.percentile(values, 50)) * 1000, 1),
            "p95_ms": round(float(np.percentile(values, 95)) * 1000, 1)}


def _answer(found: Any) -> list[tuple[Any, ...]]:
    return [(p.id, p.stance, tuple(ph.id for ph in p.phrasings), tuple(e.id for e in p.evidence))
            for p in found.perspectives]


def _pipeline(args: Any, lend: bool, first: str) -> Pipeline:
    pipe = Pipeline.load(index_dir=args.index_dir, models_dir=args.models_dir)
    lending = pipeline_module.lend_vectors
    if not lend:
        pipeline_module.lend_vectors = lambda index, pool: False
    try:
        pipe.warm_up()
    finally:
        pipeline_module.lend_vectors = lending
    pipe.discover(first)
    return pipe


def main() -> None:
    parser = pipeline_parser(__doc__)
    parser.add_argument("--name", default="", help="a word put in the file's name (e.g. trained)")
    args = parser.parse_args()
    claims = load_dataset().split(args.split)
    pipes = {"encoded": _pipeline(args, False, claims[0].text), "lent": _pipeline(args, True, claims[0].text)}
    stages: dict[str, dict[str, list[float]]] = {name: {} for name in pipes}
    differ, largest = 0, 0.0
    for claim in claims:
        answers = {}
        for name, pipe in pipes.items():
            started = time.perf_counter()
            found = pipe.discover(claim.text)
            seconds = time.perf_counter() - started
            for stage, value in {**found.timings, "total": seconds}.items():
                stages[name].setdefault(stage, []).append(value)
            answers[name] = found
        differ += _answer(answers["encoded"]) != _answer(answers["lent"])
        for a, b in zip(answers["encoded"].perspectives, answers["lent"].perspectives):
            largest = max(largest, abs(a.support_calibrated - b.support_calibrated))
    record = {
        "command": f"python -m benchmarks.lent_vectors --models-dir MODELS --split {args.split}"
                   + (f" --name {args.name}" if args.name else ""),
        "split": args.split, "claims": len(claims), "system": pipes["lent"].system,
        "hardware": f"{os.cpu_count()} CPU cores ({platform.machine()})",
        "latency": {name: {stage: _percentiles(v) for stage, v in values.items()} for name, values in stages.items()},
        "answers_that_differ": differ, "largest_support_difference": largest,
    }
    print(json.dumps(record), flush=True)
    name = f"lent_vectors_{args.name + '_' if args.name else ''}{args.split}"
    write_json(args.out / f"{name}.json", record)


if __name__ == "__main__":
    main()
