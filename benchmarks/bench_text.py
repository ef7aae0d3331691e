"""How long `match` and `mine` take on a 10,000-word text (the issue's bar: match under 10 s
on 2 cores), warm (a loaded pipeline, as a server or a script holds it) and as a whole
command (models loaded from disk first).

    python -m benchmarks.bench_text  # → eval/results/bench_text_trained_nosplit.json

The text is dev evidence paragraphs joined until it holds 10,000 words (a transcript-sized
document; paragraphs, not one block), written to a temporary file for the command runs.
The arguments are 16: the first perspective of every gold cluster of the claims whose
paragraphs were used, then other dev perspectives, so some are made and some are not.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from perspectrum._io import write_json
from perspectrum.data import load_dataset
from perspectrum.pipeline.pipeline import Pipeline

WORDS = 10_000
ARGUMENTS = 16
RUNS = 5
RESULTS = Path(__file__).resolve().parents[1] / "eval" / "results" / "bench_text_trained_nosplit.json"


def _document() -> tuple[str, str, list[str]]:
    """(text, claim, arguments) built from dev claims, in id order."""
    dataset = load_dataset(verify=False)
    claims = dataset.split("dev")
    paragraphs, arguments, words = [], [], 0
    for claim in claims:
        for eid in dict.fromkeys(e for k in claim.clusters for e in k.evidence):
            if words >= WORDS:
                break
            text = dataset.evidence[eid].text
            paragraphs.append(text)
            words += len(text.split())
        arguments += [dataset.perspectives[k.pids[0]].text for k in claim.clusters]
        if words >= WORDS:
            break
    text = "\n\n".join(paragraphs)
    return " ".join(text.split(" ")[:WORDS]), claims[0].text, arguments[:ARGUMENTS]


def _median_seconds(run: Callable[[], object]) -> tuple[float, list[float]]:
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return round(statistics.median(times), 3), [round(t, 3) for t in times]


def main() -> None:
    text, claim, arguments = _document()
    pipe = Pipeline.load(verify=False)
    pipe.warm_up()
    pipe.match(text[:2000], claim, arguments)  # first-call costs (tokenizer, caches) out of the timing
    match_median, match_runs = _median_seconds(lambda: pipe.match(text, claim, arguments))
    mine_median, mine_runs = _median_seconds(lambda: pipe.mine(text, claim))
    with tempfile.TemporaryDirectory() as folder:
        doc, listed = Path(folder) / "speech.txt", Path(folder) / "arguments.txt"
        doc.write_text(text, encoding="utf-8")
        listed.write_text("\n".join(arguments), encoding="utf-8")
        command = [sys.executable, "-m", "perspectrum", "match", str(doc), "--claim", claim,
                   "--arguments", str(listed), "--json", "--no-verify"]
        command_median, command_runs = _median_seconds(
            lambda: subprocess.run(command, check=True, capture_output=True))
    result = {
        "words": len(text.split()), "characters": len(text), "arguments": len(arguments), "runs": RUNS,
        "match_warm_seconds": {"median": match_median, "runs": match_runs},
        "mine_warm_seconds": {"median": mine_median, "runs": mine_runs},
        "match_command_seconds": {"median": command_median, "runs": command_runs,
                                  "command": "perspectrum match FILE --claim … --arguments ARGS --json --no-verify"},
        "system": pipe.system, "machine": f"{platform.machine()}, {os.cpu_count()} cores",
    }
    print(result)
    print(f"wrote {write_json(RESULTS, result)}")


if __name__ == "__main__":
    main()
