"""Time sentence splitting of long paragraphs: pysbd in one pass against the capped pieces.

    python -m benchmarks.bench_split [--json eval/results/bench_split_base_nosplit.json]

Two kinds of long paragraph, each cut to 25, 100 and 200 thousand characters: what a
user's pool holding a whole document as one record looks like. "distinct" is
PERSPECTRUM's evidence paragraphs joined in id order (blank line between); "repeated" is
its first paragraph over and over (boilerplate, a pasted page twice): pysbd looks each
sentence it finds up in the text, and repeated sentences make that grow with the square
of the length. For each: seconds for pysbd over the whole text (what
``perspectrum.text.sentences.sentences`` did before :data:`~perspectrum.text.sentences.MAX_SPLIT_CHARS`) and
for ``sentences`` as it is now, and the sentences each finds.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

from perspectrum.text import sentences as text
from perspectrum._io import write_json
from perspectrum.data import load_dataset

ROOT = Path(__file__).resolve().parents[1]

LENGTHS = (25_000, 100_000, 200_000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=ROOT / "eval" / "results" / "bench_split_base_nosplit.json")
    args = parser.parse_args()
    dataset = load_dataset()
    ordered = [dataset.evidence[eid].text for eid in sorted(dataset.evidence)]
    copies = max(LENGTHS) // len(ordered[0]) + 1
    kinds = {"distinct": "\n\n".join(ordered), "repeated": " ".join([ordered[0]] * copies)}
    rows = []
    for (kind, source), length in ((k, n) for k in kinds.items() for n in LENGTHS):
        paragraph = source[:length]
        started = time.perf_counter()
        one_pass = [s.strip() for s in text._segmenter().segment(paragraph) if s.strip()]  # type: ignore[attr-defined]
        whole = time.perf_counter() - started
        started = time.perf_counter()
        pieces = text.sentences(paragraph)
        capped = time.perf_counter() - started
        rows.append({"text": kind, "characters": length, "one_pass_s": round(whole, 2),
                     "one_pass_sentences": len(one_pass), "pieces_s": round(capped, 2), "pieces_sentences": len(pieces),
                     "same_sentences": list(pieces) == one_pass})
        print(rows[-1], flush=True)
    result = {"command": " ".join(["python -m benchmarks.bench_split", *sys.argv[1:]]),
              "hardware": f"{os.cpu_count()} CPU cores ({platform.machine()})",
              "max_split_chars": text.MAX_SPLIT_CHARS, "lengths": rows}
    print(f"wrote {write_json(args.json, result)}")


if __name__ == "__main__":
    main()
