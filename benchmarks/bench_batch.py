"""Benchmark `discover-batch`: the local engine against Ray with 1 and 2 workers per stage.

    python -m benchmarks.bench_batch [--limit 200] [--split test] [--batch-size 16]
                                     [--json eval/results/bench_batch_trained_test.json]

Over the first ``--limit`` claims of a split (read from ``$PERSPECTRUM_DATA`` or
``--data-dir``), each engine writes a fresh results file in a temporary folder:

- ``local``: :meth:`Pipeline.discover_many` in this process (torch's default threads);
- ``ray_1``: Ray Data, one single-threaded actor per step of :data:`perspectrum.batch.ray_engine.STEPS`,
  every Ray process confined to one core: one worker's worth of CPU;
- ``ray_2``: two actors per step on both cores;
- ``ray_1_two_cores``: one actor per step on both cores (the stages' pipelining alone).

Seconds are each call's whole wall time, as a user waits for it: loading the pipeline and,
for ray, starting the actors and loading a pipeline in each are included (a few seconds that
a longer run spreads thinner). Each ray run starts its own local Ray cluster (from a
process confined to its cores, which Ray's processes inherit), with a logical CPU per
actor; its start-up is reported apart. The results files are compared (timings aside), so
a speed-up never hides a different answer.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from perspectrum._io import write_json
from perspectrum.batch.discover_run import STEPS, discover_batch
from perspectrum.data import load_dataset
from perspectrum.pipeline.pipeline import Pipeline

ROOT = Path(__file__).resolve().parents[1]

#: (name, engine, workers per step, cores: None for all) of each timed run, in running order.
RUNS = (("local", "local", 1, None), ("ray_1", "ray", 1, 1), ("ray_2", "ray", 2, None),
        ("ray_1_two_cores", "ray", 1, None))


def cpu_model() -> str:
    """The CPU's name as the kernel reports it (``platform.processor()`` is often empty on Linux)."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def untimed(path: Path) -> dict[Any, Any]:
    """A results file by claim id, each result without its timings."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return {row["id"]: {k: v for k, v in row["result"].items() if k != "timings"} for row in rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=200, help="the split's first N claims")
    parser.add_argument("--split", default="test")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--data-dir", type=Path, help="[default: $PERSPECTRUM_DATA]")
    parser.add_argument("--index-dir", type=Path, help="[default: $PERSPECTRUM_INDEXES or ./indexes]")
    parser.add_argument("--models-dir", type=Path, help="[default: $PERSPECTRUM_MODELS or ./models]")
    parser.add_argument("--no-verify", action="store_true", help="skip the data's checksums (test fixtures)")
    parser.add_argument("--json", type=Path, default=ROOT / "eval" / "results" / "bench_batch_trained_test.json")
    args = parser.parse_args()
    if args.limit < 1 or args.batch_size < 1:
        parser.error("--limit and --batch-size must be at least 1")
    folders = [None if p is None else p.expanduser().resolve() for p in (args.data_dir, args.index_dir,
                                                                         args.models_dir)]
    claims = {c.cid: c.text for c in load_dataset(folders[0], verify=not args.no_verify).split(args.split)[:args.limit]}
    if not claims:
        parser.error(f"the {args.split} split has no claims")
    factory = functools.partial(Pipeline.load, *folders, verify=not args.no_verify)
    factory().settings  # noqa: B018 - indexes built and models trained before anything is timed

    import ray
    import torch

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    every_core = sorted(os.sched_getaffinity(0))
    result: dict[str, Any] = {
        "command": " ".join(["python -m benchmarks.bench_batch", *sys.argv[1:]]),
        "split": args.split, "claims": len(claims), "batch_size": args.batch_size,
        "machine": {"cores": os.cpu_count(), "cpu_model": cpu_model(), "arch": platform.machine(),
                    "torch_threads_local": torch.get_num_threads()},
        "steps": {name: list(stages) for name, stages in STEPS.items()},
        "runs": {}}
    with tempfile.TemporaryDirectory() as tmp:
        answers = {}
        for name, engine, workers, cores in RUNS:
            allowed = set(every_core[:cores] if cores else every_core)
            os.sched_setaffinity(0, allowed)  # Ray's processes, started below, inherit it
            row: dict[str, Any] = {"engine": engine, "workers_per_step": workers, "cores": len(allowed)}
            try:
                if engine == "ray":
                    started = time.perf_counter()
                    ray.init(address="local", num_cpus=len(STEPS) * workers, include_dashboard=False,
                             logging_level="warning")
                    row["ray_start_s"] = round(time.perf_counter() - started, 2)
                out = Path(tmp) / f"{name}.jsonl"
                summary = discover_batch(factory, claims, out, engine=engine, workers=workers,
                                         batch_size=args.batch_size)
            finally:
                ray.shutdown()
                os.sched_setaffinity(0, set(every_core))
            row.update(seconds=round(summary.seconds, 2), claims_per_second=round(summary.claims_per_second, 3))
            result["runs"][name] = row
            answers[name] = untimed(out)
            print(f"{name}: {row}", flush=True)
    result["identical"] = all(answers[name] == answers["local"] for name in answers)
    runs = result["runs"]
    result["speedup_ray_2_over_1"] = round(runs["ray_1"]["seconds"] / runs["ray_2"]["seconds"], 2)
    result["speedup_ray_2_over_local"] = round(runs["local"]["seconds"] / runs["ray_2"]["seconds"], 2)
    print(f"identical answers: {result['identical']}; ray 2 over 1: ×{result['speedup_ray_2_over_1']}")
    print(f"wrote {write_json(args.json, result)}")


if __name__ == "__main__":
    main()
