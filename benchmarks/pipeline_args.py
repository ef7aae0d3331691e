"""The command line every end-to-end pipeline benchmark shares: which models, indexes, split
and output folder (``benchmarks.calibration``, ``evidence_side``, ``pipeline_variants``)."""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def pipeline_parser(doc: str | None) -> argparse.ArgumentParser:
    """A parser described by ``doc``'s first line, with ``--models-dir`` (required),
    ``--index-dir``, ``--split`` (dev or test, dev by default) and ``--out`` (eval/results)."""
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument("--models-dir", type=Path, required=True)
    parser.add_argument("--index-dir", type=Path)
    parser.add_argument("--split", choices=("dev", "test"), default="dev")
    parser.add_argument("--out", type=Path, default=ROOT / "eval" / "results")
    return parser


def provenance(command: str) -> dict[str, Any]:
    """What every stored result says of where it came from: its ``command``, the ``commit`` the
    working tree was at, the ``machine`` and the ``date``."""
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    return {"command": command, "commit": commit or "not recorded",
            "machine": f"{os.cpu_count()} CPU cores ({platform.machine()})", "date": time.strftime("%Y-%m-%d")}
