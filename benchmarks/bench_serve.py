"""Load-test `perspectrum serve` on loopback, bounded: a fixed number of requests, a time limit.

    python -m benchmarks.bench_serve [--requests 200] [--concurrency 8] [--workers 2] [--split dev] [--distinct N]
                                     [--time-limit 1800] [--json eval/results/bench_serve_trained_dev.json]

1. starts a real `perspectrum serve --port 0` (the models and indexes `discover` would use)
   and waits for ``/health``;
2. **sequential**: every distinct claim of the split once, one request at a time: the
   answer each claim must get, and the one-at-a-time rate;
3. **concurrent**: ``--requests`` ``POST /discover`` (the split's claims in a seeded
   shuffle, repeated as needed) from ``--concurrency`` clients at once; requests/s,
   p50/p95/p99 latency, errors (anything but 200), and how many answers differ from the
   sequential one for the same claim (``timings`` aside);
4. stops the server, then times ``Pipeline.discover_many`` (batches of 16) in this process
   over the same requests, on the same machine, for the throughput it is compared with.

It stops by itself: requests not started by ``--time-limit`` are not sent (and counted).
Timing only: no quality figure is computed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from benchmarks.serve_memory import start_server as serve
from perspectrum._io import write_json
from perspectrum.data import load_dataset
from perspectrum.pipeline.pipeline import Pipeline

ROOT = Path(__file__).resolve().parents[1]


def _latency(values: list[float]) -> dict[str, float]:
    return {f"p{q}_ms": round(float(np.percentile(values, q)) * 1000, 1) for q in (50, 95, 99)} | \
        {"mean_ms": round(float(np.mean(values)) * 1000, 1)}


def _answer(body: dict[str, Any]) -> dict[str, Any]:
    """What must not depend on load: the answer without its timings."""
    return {k: v for k, v in body.items() if k != "timings"}


def start_server(workers: int, queue: int) -> tuple[subprocess.Popen, str, float]:
    """`perspectrum serve` on a free loopback port: the process, its base URL and the seconds to ready."""
    started = time.perf_counter()
    process, base = serve(["--workers", str(workers), "--queue", str(queue)])
    return process, base, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2, help="the server's --workers")
    parser.add_argument("--queue", type=int, default=16, help="the server's --queue")
    parser.add_argument("--split", default="dev", help="whose claims are asked (timing only)")
    parser.add_argument("--distinct", type=int, default=None, help="ask only the split's first N claims")
    parser.add_argument("--time-limit", type=float, default=1800, help="seconds; later requests are not sent")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=ROOT / "eval" / "results" / "bench_serve_trained_dev.json")
    args = parser.parse_args()
    os.chdir(ROOT)
    began = time.monotonic()
    claims = [c.text for c in load_dataset().split(args.split)][:args.distinct]
    asked = (claims * (args.requests // len(claims) + 1))[:args.requests]
    random.Random(args.seed).shuffle(asked)
    result: dict[str, Any] = {
        "command": " ".join(["python -m benchmarks.bench_serve", *sys.argv[1:]]), "split": args.split,
        "distinct_claims": len(claims), "requests": args.requests, "concurrency": args.concurrency,
        "server": {"workers": args.workers, "queue": args.queue},
        "hardware": f"{os.cpu_count()} CPU cores ({platform.machine()}, {platform.processor() or 'cpu'})"}

    process, base, ready = start_server(args.workers, args.queue)
    result["server"]["ready_s"] = round(ready, 2)
    print(f"server ready at {base} in {ready:.1f} s", flush=True)
    try:
        with httpx.Client(base_url=base, timeout=600) as client:
            client.post("/discover", json={"claim": claims[0]})  # first call pays one-off allocations
            expected: dict[str, dict[str, Any]] = {}
            seconds: list[float] = []
            started = time.perf_counter()
            for claim in claims:
                sent = time.perf_counter()
                answer = client.post("/discover", json={"claim": claim})
                seconds.append(time.perf_counter() - sent)
                answer.raise_for_status()
                expected[claim] = _answer(answer.json())
            wall = time.perf_counter() - started
            result["sequential"] = {"requests": len(claims), "seconds": round(wall, 1),
                                    "requests_per_second": round(len(claims) / wall, 3), "latency": _latency(seconds)}
            print("sequential:", result["sequential"], flush=True)

        limits = httpx.Limits(max_connections=args.concurrency, max_keepalive_connections=args.concurrency)
        outcomes: list[dict[str, Any]] = []
        lock = threading.Lock()
        with httpx.Client(base_url=base, timeout=600, limits=limits) as client:
            def ask(claim: str) -> None:
                if time.monotonic() - began > args.time_limit:
                    outcome: dict[str, Any] = {"status": "not sent (time limit)"}
                else:
                    sent = time.perf_counter()
                    try:
                        answer = client.post("/discover", json={"claim": claim})
                        outcome = {"status": answer.status_code, "seconds": time.perf_counter() - sent,
                                   "same": answer.status_code == 200 and _answer(answer.json()) == expected[claim]}
                    except httpx.HTTPError as exc:
                        outcome = {"status": f"{type(exc).__name__}: {exc}"}
                with lock:
                    outcomes.append(outcome)

            started = time.perf_counter()
            with ThreadPoolExecutor(args.concurrency) as pool:
                list(pool.map(ask, asked))
            wall = time.perf_counter() - started
            metrics = client.get("/metrics").text
        answered = [o for o in outcomes if o["status"] == 200]
        rejected = [line for line in metrics.splitlines() if line.startswith("perspectrum_rejected_total")]
        result["concurrent"] = {
            "requests": len(outcomes), "answered": len(answered), "seconds": round(wall, 1),
            "requests_per_second": round(len(answered) / wall, 3),
            "latency": _latency([o["seconds"] for o in answered]) if answered else None,
            "errors": len(outcomes) - len(answered),
            "error_kinds": sorted({str(o["status"]) for o in outcomes if o["status"] != 200}),
            "differ_from_sequential": sum(1 for o in answered if not o["same"]),
            "rejected_503": float(rejected[0].split()[-1]) if rejected else None}
        print("concurrent:", result["concurrent"], flush=True)
    finally:
        process.terminate()
        process.wait(30)
    result["server"]["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)

    pipe = Pipeline.load()
    pipe.warm_up()
    pipe.discover(claims[0])
    started = time.perf_counter()
    pipe.discover_many(asked, batch_size=16)
    wall = time.perf_counter() - started
    result["discover_many"] = {"claims": len(asked), "batch_size": 16, "seconds": round(wall, 1),
                               "claims_per_second": round(len(asked) / wall, 3)}
    result["system"] = pipe.system
    result["ratio_concurrent_to_discover_many"] = round(
        result["concurrent"]["requests_per_second"] / result["discover_many"]["claims_per_second"], 3)
    print("discover_many:", result["discover_many"], flush=True)
    print(f"wrote {write_json(args.json, result)}")
    print(json.dumps({k: result[k] for k in ("sequential", "concurrent", "discover_many")}, indent=1))


if __name__ == "__main__":
    main()
