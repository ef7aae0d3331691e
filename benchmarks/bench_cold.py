"""Compare the cold start of two checkouts, run in turn so drift in the machine's speed hits both.

    python -m benchmarks.bench_cold --runs 10 --json eval/results/cold_start.json \
        --side before /path/to/old/checkout /old/indexes /old/models /old/cache \
        --side after  .                      /new/indexes /new/models /new/cache

Each side is a checkout with its own indexes, models and traced-copy cache (each version
keeps its own formats). A run is a fresh process that imports perspectrum, loads the
pipeline and opens every index and model (``Pipeline.warm_up``), as
``python -m benchmarks.bench_discover`` measures it: the seconds the process reports for
that, and its whole wall time. Sides alternate run by run (A B A B …), one run of each
first to warm the file cache; the figures are medians, and the ratio is taken pair by pair.
"""

from __future__ import annotations

import argparse
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


def run(checkout: Path, env: dict[str, str]) -> tuple[float, float]:
    """(seconds the process reports for import and load, its whole wall seconds)."""
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", COLD], cwd=checkout, env=env, check=True, capture_output=True,
                         text=True).stdout.strip().splitlines()[-1]
    return float(out), time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", nargs=5, action="append", required=True,
                        metavar=("NAME", "CHECKOUT", "INDEXES", "MODELS", "CACHE"))
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", type=Path, required=True)
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
    for _ in range(args.runs):
        for name, checkout, env in sides:
            figures[name].append(run(checkout, env))
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
    print(result)
    print(f"wrote {write_json(args.json, result)}")


if __name__ == "__main__":
    main()
