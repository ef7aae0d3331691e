"""Compare the cold start of two checkouts, run in turn so drift in the machine's speed hits both.

    python -m benchmarks.bench_cold --runs 10 --json eval/results/cold_start_trained_nosplit.json \
        --side before /path/to/old/checkout /old/indexes /old/models /old/cache \
        --side after  .                      /new/indexes /new/models /new/cache

Each side is a checkout with its own indexes, models and traced-copy cache (each version
keeps its own formats). A run is a fresh process that imports perspectrum, loads the
pipeline and opens every index and model (``Pipeline.warm_up``), as
``python -m benchmarks.bench_discover`` measures it: the seconds the process reports for
that, and its whole wall time. Sides alternate run by run (A B A B …), one run of each
first to warm the file cache; the figures are medians, and the ratio is taken pair by pair.
With ``--claims N`` each run also answers the first N dev claims, one at a time, and the
p50 and p95 of those answers are given per side (over every run's answers).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.bench_discover import COLD  # the same measure as there
from perspectrum._io import write_json

ROOT = Path(__file__).resolve().parents[1]


#: With ``--claims N``: the same process then answers the first N dev claims one at a time,
#: every stage on, and prints each answer's seconds (public API only, so any version runs it).
LATENCY = ("\nimport json\nfrom perspectrum.data import load_dataset\nclaims = [c.text for c in "
           "load_dataset(verify=False).split('dev')[:{n}]]\nseconds = []\nfor claim in claims:\n"
           "    t = time.perf_counter(); p.discover(claim); seconds.append(time.perf_counter() - t)\n"
           "print(json.dumps(seconds))")


def run(checkout: Path, env: dict[str, str], claims: int = 0) -> tuple[float, float, list[float]]:
    """(seconds the process reports for import and load, its whole wall seconds, and with
    ``claims`` each dev claim's answer in seconds)."""
    code = COLD + (LATENCY.format(n=claims) if claims else "")
    started = time.perf_counter()
    lines = subprocess.run([sys.executable, "-c", code], cwd=checkout, env=env, check=True, capture_output=True,
                           text=True).stdout.strip().splitlines()
    wall = time.perf_counter() - started
    if claims:
        return float(lines[-2]), wall, json.loads(lines[-1])
    return float(lines[-1]), wall, []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", nargs=5, action="append", required=True,
                        metavar=("NAME", "CHECKOUT", "INDEXES", "MODELS", "CACHE"))
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--claims", type=int, default=0,
                        help="also time discover on the first N dev claims in each run (p50 and p95 per side)")
    args = parser.parse_args()
    if len(args.side) != 2:
        parser.error("give exactly two --side")
    sides = []
    for name, checkout, indexes, models, cache in args.side:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "PERSPECTRUM_INDEXES": indexes, "PERSPECTRUM_MODELS": models,
               "PERSPECTRUM_CACHE": cache}
        sides.append((name, Path(checkout).resolve(), env))
    for _, checkout, env in sides:  # warm the file cache; not counted
        run(checkout, env)
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name, _, _ in sides}
    latency: dict[str, list[float]] = {name: [] for name, _, _ in sides}
    for _ in range(args.runs):
        for name, checkout, env in sides:
            ready, wall, seconds = run(checkout, env, args.claims)
            figures[name].append((ready, wall))
            latency[name] += seconds
    (a, _, _), (b, _, _) = sides
    result: dict[str, object] = {
        "command": " ".join(["python -m benchmarks.bench_cold", *sys.argv[1:]]),
        "hardware": f"{os.cpu_count()} CPU cores ({platform.machine()})", "runs": args.runs,
        **{name: {"import_and_load_s": round(float(np.median([r for r, _ in runs])), 3),
                  "process_s": round(float(np.median([w for _, w in runs])), 3),
                  "import_and_load_each_s": [round(r, 3) for r, _ in runs]} for name, runs in figures.items()},
        f"{b}/{a}": {"import_and_load": round(float(np.median([y[0] / x[0] for x, y in zip(figures[a], figures[b])])), 4),
                     "process": round(float(np.median([y[1] / x[1] for x, y in zip(figures[a], figures[b])])), 4)},
    }
    if args.claims:
        result["latency"] = {name: {"claims_timed": len(values), "p50_s": round(float(np.median(values)), 3),
                                    "p95_s": round(float(np.percentile(values, 95)), 3)}
                             for name, values in latency.items()}
        result["latency"][f"{b}/{a} p50"] = round(float(np.median(latency[b]) / np.median(latency[a])), 4)
    print(result)
    print(f"wrote {write_json(args.json, result)}")


if __name__ == "__main__":
    main()
