"""Which pool sentences only frame the debate, and is any of them a gold perspective?

    python -m benchmarks.framing [--json eval/results/framing_pool_base_nosplit.json]

Runs :func:`perspectrum.text.polarity.takes_no_side` over every sentence of PERSPECTRUM's
perspective pool and lists the matches (by id) with the gold clusters (claim, split, stance) each
belongs to, if any: a framing rule that caught a gold perspective would hide a real side.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from perspectrum._io import write_json
from perspectrum.data import load_dataset
from perspectrum.text.polarity import takes_no_side

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=ROOT / "eval" / "results" / "framing_pool_base_nosplit.json")
    args = parser.parse_args()
    dataset = load_dataset()
    gold: dict[int, list[dict[str, object]]] = {}
    for split in ("train", "dev", "test"):
        for claim in dataset.split(split):
            for cluster in claim.clusters:
                for pid in cluster.pids:
                    gold.setdefault(pid, []).append({"claim": claim.cid, "split": split, "stance": cluster.stance})
    matches = [{"id": pid, "gold": gold.get(pid, [])}  # ids only: the data is never committed
               for pid, p in dataset.perspectives.items() if takes_no_side(p.text)]
    record = {"command": "python -m benchmarks.framing", "pool": len(dataset.perspectives),
              "framing": len(matches), "gold_among_them": sum(bool(m["gold"]) for m in matches), "matches": matches}
    write_json(args.json, record)
    print(json.dumps({k: record[k] for k in ("pool", "framing", "gold_among_them")}))


if __name__ == "__main__":
    main()
