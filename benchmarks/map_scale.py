"""`perspectrum map` at scale: a pile of long documents through the command, timed, with its peak memory.

    python -m benchmarks.map_scale --models-dir MODELS [--documents 1000] [--words 1000] [--name NAME]
                                   [--limit 0] [--engine ray --workers 2]

The pile is built at run time from PERSPECTRUM's evidence pool (never stored in the project):
the claim is the dev claim with the most gold evidence paragraphs; every other document
holds one or two of them, and every document is filled with paragraphs of the claim's topics,
drawn with a fixed seed, to ``--words`` words (paragraphs repeat across documents: the topics
hold far fewer than a million words). The command is ``perspectrum map FOLDER --claim … --json --units FILE`` in a child
process, so its peak resident set (``ru_maxrss`` of the child) is the command's own.

``--engine ray --workers N`` mines on N single-threaded Ray actors (the peak then counts
the command alone, not its actors). ``--limit S`` stops the child after S seconds (0: never). Running the same command again
resumes from the units file (the run records each attempt's seconds and how many documents
were mined when it stopped), so a long run can be measured in parts.

Writes ``eval/results/map_scale_<name>.json``: documents, words, seconds (each attempt and
their sum), peak memory, units, perspectives, hardware.
"""

from __future__ import annotations

import json
import os
import platform
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.pipeline_args import ROOT, pipeline_parser, provenance
from perspectrum._io import write_json
from perspectrum.data import load_dataset

SEED = 29


def build_pile(folder: Path, documents: int, words: int, seed: int = SEED) -> tuple[str, int]:
    """Write ``documents`` texts of about ``words`` words into ``folder``; the claim and the words written."""
    dataset = load_dataset()
    topic_of: dict[int, str] = {}
    for claim in dataset.claims.values():
        for cluster in claim.clusters:
            for eid in cluster.evidence:
                if claim.topics:
                    topic_of.setdefault(eid, claim.topics[0])
    by_topic: dict[str, list[int]] = {}
    for eid, topic in sorted(topic_of.items()):
        by_topic.setdefault(topic, []).append(eid)
    chosen = max(dataset.split("dev"), key=lambda c: (len({e for k in c.clusters for e in k.evidence}), -c.cid))
    gold = sorted({e for k in chosen.clusters for e in k.evidence})
    near = sorted({e for t in chosen.topics for e in by_topic.get(t, ())} - set(gold))
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    total = 0
    for n in range(documents):
        # half the documents argue the claim: one or two of its evidence paragraphs among its topics' others;
        # the rest are its topics' paragraphs alone
        parts = [dataset.evidence[e].text for e in rng.sample(gold, rng.choice((1, 2)))] if n % 2 == 0 else []
        count = sum(len(t.split()) for t in parts)
        while count < words:
            text = dataset.evidence[rng.choice(near)].text
            parts.append(text)
            count += len(text.split())
        rng.shuffle(parts)
        (folder / f"doc{n:05d}.txt").write_text("\n\n".join(parts), encoding="utf-8")
        total += count
    return chosen.text, total


def main() -> None:
    parser = pipeline_parser(__doc__)
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--words", type=int, default=1000)
    parser.add_argument("--name", default="1000")
    parser.add_argument("--work", type=Path, default=Path("/tmp/perspectrum-map-scale"))
    parser.add_argument("--limit", type=float, default=0.0)
    parser.add_argument("--engine", choices=("local", "ray"), default="local")
    parser.add_argument("--workers", type=int)
    args = parser.parse_args()
    pile, units = args.work / "pile", args.work / "units.jsonl"
    record_path = args.out / f"map_scale_{args.name}.json"
    record = json.loads(record_path.read_text()) if record_path.exists() and units.exists() else None
    if record is None:
        claim, words = build_pile(pile, args.documents, args.words)
        record = {"documents": args.documents, "words": words, "claim": claim, "attempts": []}
    command = [sys.executable, "-m", "perspectrum", "map", str(pile), "--claim", record["claim"], "--json", "--units",
               str(units), "--models-dir", str(args.models_dir)]
    if args.index_dir is not None:
        command += ["--index-dir", str(args.index_dir)]
    if args.engine == "ray":
        command += ["--engine", "ray", "--workers", str(args.workers or 1)]
    started = time.perf_counter()
    with open(args.work / "map.json", "w") as out, open(args.work / "map.err", "w") as err:
        child = subprocess.Popen(command, stdout=out, stderr=err, cwd=ROOT)
        try:
            code = child.wait(timeout=args.limit or None)
        except subprocess.TimeoutExpired:
            child.terminate()
            code = child.wait()
    seconds = time.perf_counter() - started
    mined = max(0, len(units.read_text(encoding="utf-8").splitlines()) - 1) if units.exists() else 0
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    record["attempts"].append({"seconds": round(seconds, 1), "exit": code, "mined_when_stopped": mined,
                               "peak_rss_mb": round(peak_mb), "engine": args.engine, "workers": args.workers})
    record.update({**provenance("python -m benchmarks.map_scale " + " ".join(sys.argv[1:])),
                   "seconds": round(sum(a["seconds"] for a in record["attempts"]), 1),
                   "peak_rss_mb": max(a["peak_rss_mb"] for a in record["attempts"]),
                   "hardware": f"{os.cpu_count()} CPU cores ({platform.machine()})"})
    if code == 0:
        answer = json.loads((args.work / "map.json").read_text())
        record.update({"units": answer["units"], "perspectives": len(answer["perspectives"]),
                       "also_mentioned": len(answer["also_mentioned"]), "units_left_out":
                       answer["settings"]["units_left_out"], "map_seconds_last_attempt": answer["seconds"]})
    print(write_json(record_path, record))
    print(json.dumps({k: v for k, v in record.items() if k != "claim"}, indent=1))


if __name__ == "__main__":
    main()
