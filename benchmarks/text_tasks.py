"""Tune and score `mine` and `match` on PERSPECTRUM (dev-tuned; the split named scored once).

    python -m benchmarks.text_tasks mine --split dev   # tune on dev → eval/results/mine_<system>_dev.json
    python -m benchmarks.text_tasks mine --split test  # score test with dev's choice → eval/results/mine_<system>_test.json

<system> is the models that answer (``shipped``, or ``trained`` where your own trained models
take precedence). Scoring test reads dev's choice from the same system's dev file, else from
``trained``'s (the settings were tuned on ``train all``'s full models).

What each measures is in :mod:`perspectrum.eval.mine_quality` and :mod:`perspectrum.eval.match_quality`.
The settings dev chooses are the defaults of :class:`perspectrum.text.mining.MineSettings` and
:class:`perspectrum.text.matching.MatchSettings`; scoring test refuses to run while they differ.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from benchmarks.pipeline_args import provenance
from perspectrum._io import write_json
from perspectrum.data import load_dataset
from perspectrum.eval.match_quality import evaluate_match, tune_match
from perspectrum.eval.mine_quality import evaluate_mine, tune_mine
from perspectrum.text.matching import MatchSettings
from perspectrum.text.mining import MineSettings
from perspectrum.pipeline.pipeline import Pipeline

RESULTS = Path(__file__).resolve().parents[1] / "eval" / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", choices=("mine", "match"))
    parser.add_argument("--split", choices=("dev", "test"), default="dev",
                        help="dev: tune, writing <task>_<system>_dev.json; test: score with the settings dev chose")
    args = parser.parse_args()
    dataset = load_dataset(verify=False)
    pipe = Pipeline.load(verify=False, show_progress=True)
    pipe.warm_up()
    system = pipe.system
    dev_path = RESULTS / f"{args.task}_{system}_dev.json"
    if not dev_path.exists():
        dev_path = RESULTS / f"{args.task}_trained_dev.json"
    if args.split == "dev":
        result = (tune_mine if args.task == "mine" else tune_match)(dataset, pipe, show_progress=True)
    else:
        tuned = json.loads(dev_path.read_text())
        chosen = tuned["setting"] if args.task == "mine" else tuned["systems"]["competitive_sentence_max"]["setting"]
        default = asdict(MineSettings() if args.task == "mine" else MatchSettings())
        if chosen != default:
            sys.exit(f"the code's defaults {default} are not what dev chose ({chosen}, {dev_path}): "
                     "make them so before scoring test")
        result = (evaluate_mine(dataset, pipe, show_progress=True) if args.task == "mine"
                  else evaluate_match(dataset, pipe, tuned, show_progress=True))
    command = f"python -m benchmarks.text_tasks {args.task} --split {args.split}"
    path = write_json(RESULTS / f"{args.task}_{system}_{args.split}.json", {**provenance(command), **result})
    print(json.dumps({k: v for k, v in result.items() if k != "tried"}, indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
