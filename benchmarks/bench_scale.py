"""Scaling study: every search engine perspectrum ships, on pools of 10k, 100k and 1M sentences.

Run from the repository root with PERSPECTRUM_DATA set (nothing else running: it times)::

    python -m benchmarks.bench_scale --json eval/results/bench_scale_base_nosplit.json --plot eval/results/bench_scale_base_nosplit.png

The pools are PERSPECTRUM's 11,112 perspectives (the first 10k for the smallest) plus
generated sentences: the first half of one real sentence joined to the second half of
another, with, as its vector, the normalised sum of the two halves' sentences' MiniLM
vectors. Encoding a million sentences would take about 48 minutes on 2 cores; the
engines' costs do not depend on where the vectors came from, but recall does, and sums
of real vectors keep the real pool's clusters where random vectors would have none.

For each size and engine: build seconds (through :class:`perspectrum.index.store.IndexStore`,
as ``perspectrum index build`` runs it, files written included), index bytes (what the
engine holds in memory or maps: its files on disk; Milvus's in its own server process),
query latency p50/p95 (one query at a time, k=100, query vectors given), and, for the
approximate structures, recall@100 against exact search. At the middle size it also
times an update (1 % of the pool removed, 1 % added) against the full build. Results are
written after each size, so an interrupted run keeps what it measured.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perspectrum._io import atomic_write, write_json
from perspectrum.config import DenseParams
from perspectrum.data import Pool, load_dataset
from perspectrum.encoders.bi_encoder import Encoder
from perspectrum.eval.backends import Precomputed, ids
from perspectrum.index.store import IndexStore

SIZES = (10_000, 100_000, 1_000_000)
QUERIES = 200
K = 100
SEED = 13
#: The search-time knob of each approximate structure, swept after its default is measured.
SWEEPS = {"faiss-hnsw": ("efSearch", (128, 256, 512, 1024)), "faiss-ivf": ("nprobe", (16, 32, 64, 128))}
#: (label, backend, kind, dense settings); ANN structures are forced at every size to compare them.
ENGINES = (
    ("bm25s", "embedded", "bm25", None),
    ("lucene", "lucene", "bm25", None),
    ("faiss-flat", "embedded", "dense", DenseParams(structure="flat")),
    ("faiss-hnsw", "embedded", "dense", DenseParams(structure="hnsw")),
    ("faiss-ivf", "embedded", "dense", DenseParams(structure="ivf")),
    ("milvus-flat", "milvus", "dense", None),
)


def generated_pool(real: Pool, vectors: np.ndarray, size: int, seed: int = SEED) -> tuple[Pool, np.ndarray]:
    """``size`` sentences: the real ones first, then half-and-half mixtures (see the module)."""
    if size <= len(real):
        return Pool(real.name, real.ids[:size], real.texts[:size]), vectors[:size]
    rng = np.random.default_rng(seed)
    extra = size - len(real)
    a, b = rng.integers(0, len(real), extra), rng.integers(0, len(real), extra)
    words = [t.split() for t in real.texts]
    texts = [" ".join(words[i][: max(1, len(words[i]) // 2)] + words[j][len(words[j]) // 2:]) for i, j in zip(a, b)]
    mixed = vectors[a] + vectors[b]
    mixed /= np.linalg.norm(mixed, axis=1, keepdims=True)
    ids_ = tuple(real.ids) + tuple(f"g{n}" for n in range(extra))
    return Pool(real.name, ids_, tuple(real.texts) + tuple(texts)), np.vstack([vectors, mixed]).astype(np.float32)


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.resolve().rglob("*") if p.is_file())


def timed(calls: Sequence[Callable[[], Any]]) -> dict[str, float]:
    times = []
    for call in calls:
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    return {"p50_ms": round(float(np.percentile(times, 50)), 3), "p95_ms": round(float(np.percentile(times, 95)), 3)}


def measure(size: int, pool: Pool, vectors: np.ndarray, queries: list[str], query_vectors: np.ndarray,
            root: Path, encoder: Precomputed, skip: set[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    exact: list[list[Any]] | None = None
    for label, backend, kind, dense in ENGINES:
        if label in skip:
            continue
        store = IndexStore(root / label, backend=backend, dense=dense or DenseParams(), encoder=encoder)
        index, seconds = store.build(pool, kind)
        row: dict[str, Any] = {"build_seconds": round(seconds, 2)}
        if label.startswith("milvus"):
            row["index_bytes"] = folder_bytes(Path(store.milvus_uri))
            row["note"] = "milvus-lite's data folder; the vectors live in its server process"
        else:
            row["index_bytes"] = folder_bytes(store.folder(pool, kind))
        if kind == "bm25":
            row["latency"] = timed([lambda q=q: index.search(q, K) for q in queries])
        else:
            row["latency"] = timed([lambda v=v: index.search_vectors(v[None, :], K) for v in query_vectors])
            found = ids(index.search_vectors(query_vectors, K))
            if label == "faiss-flat":
                exact = found
            elif exact is not None:
                row["recall_at_100"] = recall(found, exact)
                if label in SWEEPS:
                    row["sweep"] = sweep(label, index, query_vectors, exact)
        out[label] = row
        print(f"{size:>9,} {label:<12} build {seconds:8.1f} s  p50 {row['latency']['p50_ms']:8.2f} ms  "
              f"p95 {row['latency']['p95_ms']:8.2f} ms  recall {row.get('recall_at_100', '-')}", flush=True)
    return out


def recall(found: list[list[Any]], exact: list[list[Any]]) -> float:
    return round(float(np.mean([len(set(f) & set(e)) / len(e) for f, e in zip(found, exact)])), 4)


def sweep(label: str, index: Any, query_vectors: np.ndarray, exact: list[list[Any]]) -> dict[str, Any]:
    """Recall@100 and latency of an approximate index at each value of its search knob
    (the built index is reused; the knob only changes how much of it a query visits)."""
    knob, values = SWEEPS[label]
    target = index.faiss_index.hnsw if label == "faiss-hnsw" else index.faiss_index
    before = getattr(target, knob)
    out = {}
    for value in values:
        setattr(target, knob, value)
        latency = timed([lambda v=v: index.search_vectors(v[None, :], K) for v in query_vectors])
        out[str(value)] = {"recall_at_100": recall(ids(index.search_vectors(query_vectors, K)), exact), **latency}
        print(f"          {label} {knob}={value}: recall {out[str(value)]['recall_at_100']}  "
              f"p50 {latency['p50_ms']} ms", flush=True)
    setattr(target, knob, before)
    return {"knob": knob, "values": out}


def updates(pool: Pool, root: Path, encoder: Precomputed, share: float = 0.01) -> dict[str, Any]:
    """Seconds to remove ``share`` of the pool and add as many new sentences, per engine,
    through :meth:`IndexStore.update` (the indexes ``measure`` built under ``root``)."""
    n = int(len(pool) * share)
    rows = list(zip(pool.ids, pool.texts))
    kept = rows[n:]
    added = [(f"new{i}", text) for i, (_, text) in enumerate(rows[:n])]  # the removed texts, new ids
    new = Pool(pool.name, tuple(i for i, _ in kept + added), tuple(t for _, t in kept + added))
    out = {}
    for label, backend, kind, dense in ENGINES:
        if label in ("faiss-ivf", "milvus-flat") or not (root / label).exists():
            continue
        store = IndexStore(root / label, backend=backend, dense=dense or DenseParams(), encoder=encoder)
        _, seconds, how = store.update(pool, new, kind)
        out[label] = {"seconds": round(seconds, 2), "how": how, "removed": n, "added": n}
        print(f"update {label:<12} {how:<10} {seconds:8.1f} s", flush=True)
    return out


def plot(result: dict[str, Any], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [int(s) for s in result["sizes"]]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.4))
    for label, *_ in ENGINES:
        xs = [s for s in sizes if label in result["sizes"][str(s)]]
        if not xs:
            continue
        rows = [result["sizes"][str(s)][label] for s in xs]
        axes[0].plot(xs, [r["build_seconds"] for r in rows], marker="o", label=label)
        axes[1].plot(xs, [r["latency"]["p50_ms"] for r in rows], marker="o", label=label)
        axes[2].plot(xs, [r["index_bytes"] / 2**20 for r in rows], marker="o", label=label)
    for ax, title in zip(axes, ("build seconds", "query latency p50, ms (k=100)", "index size, MiB")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("pool size (sentences)")
        ax.set_title(title)
        ax.grid(alpha=0.3, which="both")
    axes[0].legend(fontsize=8)
    fig.suptitle(f"perspectrum search engines by pool size ({result['machine']['cpus']} CPU cores)")
    fig.tight_layout()
    atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=110, format="png"))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=Path("eval/results/bench_scale_base_nosplit.json"))
    parser.add_argument("--plot", type=Path, default=Path("eval/results/bench_scale_base_nosplit.png"))
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--skip", nargs="*", default=[], help="engine labels to leave out at the largest size")
    args = parser.parse_args()
    dataset = load_dataset()
    real = Pool.from_dataset(dataset, "perspectives")
    claims = [c.text for c in list(dataset.claims.values())[:QUERIES]]
    encoder = Encoder()
    started = time.perf_counter()
    real_vectors = encoder.encode(list(real.texts), 64)
    query_vectors = encoder.encode(claims, 64)
    result: dict[str, Any] = {
        "command": "python -m benchmarks.bench_scale",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "cpu": platform.processor()},
        "settings": {"k": K, "queries": QUERIES, "dense": DenseParams().__dict__},
        "encode_seconds": round(time.perf_counter() - started, 1),
        "sizes": {},
    }
    for size in args.sizes:
        pool, vectors = generated_pool(real, real_vectors, size)
        given = Precomputed(encoder.identity, [*pool.texts, *claims], np.vstack([vectors, query_vectors]))
        with tempfile.TemporaryDirectory() as root:
            skip = set(args.skip) if size == max(args.sizes) else set()
            result["sizes"][str(size)] = measure(size, pool, vectors, claims, query_vectors, Path(root), given, skip)
            if size == 100_000:
                result["update_at_100k"] = updates(pool, Path(root), given)
        write_json(args.json, result)
        plot(result, args.plot)
    result["seconds"] = round(time.perf_counter() - started, 1)
    write_json(args.json, result)


if __name__ == "__main__":
    main()
