"""The command line every end-to-end pipeline benchmark shares: which models, indexes, split
and output folder (``benchmarks.calibration``, ``evidence_side``, ``pipeline_variants``)."""

from __future__ import annotations

import argparse
from pathlib import Path

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
