"""Benchmark: cold build time of each index, and the wall time of a reusing second run.

Run from the repository root with PERSPECTRUM_DATA set::

    python -m benchmarks.bench_index --json eval/results/index_build_base_nosplit.json

Builds into a fresh temporary folder (your ``indexes/`` is left alone), then times
``perspectrum index build`` as a user runs it, a second time, over that folder.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from perspectrum._io import write_json
from perspectrum.data import POOL_NAMES, Pool, load_dataset
from perspectrum.index.store import IndexStore, KINDS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=Path("eval/results/index_build_base_nosplit.json"))
    args = parser.parse_args()
    dataset = load_dataset()
    with tempfile.TemporaryDirectory() as root:
        store = IndexStore(root)
        builds = {}
        for pool_name in POOL_NAMES:
            pool = Pool.from_dataset(dataset, pool_name)
            for kind in KINDS:
                _, seconds = store.build(pool, kind, show_progress=True)
                builds[f"{pool_name}/{kind}"] = {"documents": len(pool), "seconds": round(seconds, 1)}
                print(f"{pool_name}/{kind}: {seconds:.1f} s", flush=True)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "perspectrum", "index", "build", "--index-dir", root],
                       check=True, capture_output=True)
        reuse = time.perf_counter() - start
    result = {
        "command": "python -m benchmarks.bench_index",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "cold_build": builds,
        "cold_build_total_seconds": round(sum(b["seconds"] for b in builds.values()), 1),
        "second_run_seconds": round(reuse, 2),
    }
    print(f"total cold build {result['cold_build_total_seconds']} s, second run {reuse:.2f} s")
    write_json(args.json, result)


if __name__ == "__main__":
    main()
