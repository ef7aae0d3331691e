"""Benchmark `discover`: latency per stage and end to end, cold start, memory, throughput.

    python -m benchmarks.bench_discover [--split test] [--batch-size 16] [--cold-runs 5]
                                        [--json eval/results/bench_discover_shipped_test.json]

- cold start: a fresh Python process imports perspectrum, loads the pipeline and opens
  every index and model (``Pipeline.warm_up``), with indexes and models already built
  (median of ``--cold-runs``); and the wall time of a whole ``perspectrum discover --json`` command.
- latency: ``discover(claim)`` for every claim of the split, one at a time, all stages
  on; p50/p95 per stage and in total.
- throughput: ``discover_many`` over the same claims in batches.
- peak memory: the largest resident set of this process and of the cold-start child.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.bench_batch import cpu_model
from perspectrum._io import write_json
from perspectrum._progress import progress
from perspectrum.data import load_dataset
from perspectrum.pipeline.pipeline import Pipeline

ROOT = Path(__file__).resolve().parents[1]

COLD = ("import time; t = time.perf_counter(); from perspectrum import Pipeline; "
        "p = Pipeline.load(); p.warm_up(); print(time.perf_counter() - t)")


def _percentiles(values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(float(np.percentile(values, 50)) * 1000, 1),
            "p95_ms": round(float(np.percentile(values, 95)) * 1000, 1),
            "mean_ms": round(float(np.mean(values)) * 1000, 1)}


def cold_start(claim: str, runs: int) -> dict[str, object]:
    """Seconds for a fresh process to be ready (median of ``runs``: one start after heavy
    disk work can be a second slower), and for a whole `discover` command."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    ready, process = [], []
    for _ in range(runs):
        started = time.perf_counter()
        ready.append(float(subprocess.run([sys.executable, "-c", COLD], cwd=ROOT, env=env, check=True,
                                          capture_output=True, text=True).stdout.strip().splitlines()[-1]))
        process.append(time.perf_counter() - started)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "perspectrum", "discover", claim, "--json"], cwd=ROOT, env=env,
                   check=True, capture_output=True)
    command = time.perf_counter() - started
    child_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"runs": runs, "import_and_load_s": round(float(np.median(ready)), 2),
            "import_and_load_each_s": [round(r, 2) for r in ready], "process_s": round(float(np.median(process)), 2),
            "discover_command_s": round(command, 2), "child_peak_mb": round(child_mb)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="test")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--cold-runs", type=int, default=5, help="fresh processes timed for the cold start")
    parser.add_argument("--json", type=Path, default=ROOT / "eval" / "results" / "bench_discover_shipped_test.json")
    args = parser.parse_args()
    os.chdir(ROOT)
    claims = [c.text for c in load_dataset().split(args.split)]
    result: dict[str, object] = {"command": " ".join(["python -m benchmarks.bench_discover", *sys.argv[1:]]),
                                 "split": args.split, "claims": len(claims),
                                 "hardware": f"{os.cpu_count()} CPU cores ({platform.machine()}, {cpu_model()})"}
    result["cold_start"] = cold_start(claims[0], args.cold_runs)
    print("cold start:", result["cold_start"], flush=True)

    pipe = Pipeline.load()
    pipe.warm_up()
    pipe.discover(claims[0])  # first call pays one-off allocations; not a user's steady state
    stages: dict[str, list[float]] = {}
    with progress(f"discover × {len(claims)}", len(claims)) as advance:
        for claim in claims:
            found = pipe.discover(claim)
            for stage, seconds in found.timings.items():
                stages.setdefault(stage, []).append(seconds)
            advance(1)
    result["system"] = pipe.system
    result["latency"] = {stage: _percentiles(values) for stage, values in stages.items()}
    print("latency:", result["latency"], flush=True)

    started = time.perf_counter()
    pipe.discover_many(claims, batch_size=args.batch_size)
    seconds = time.perf_counter() - started
    result["discover_many"] = {"batch_size": args.batch_size, "seconds": round(seconds, 1),
                               "claims_per_second": round(len(claims) / seconds, 2)}
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    result["config"] = pipe.config.to_dict()
    print("discover_many:", result["discover_many"], "peak MB:", result["peak_rss_mb"], flush=True)
    print(f"wrote {write_json(args.json, result)}")


if __name__ == "__main__":
    main()
