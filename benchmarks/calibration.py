"""The shown stance confidence, calibrated on dev, and the "side unclear" band: before and after.

    python -m benchmarks.calibration --models-dir MODELS --split dev    # fits, stores, measures
    python -m benchmarks.calibration --models-dir MODELS --split test   # measures what is stored

On dev it runs ``discover`` on every claim with the settings stored beside the models
(before), fits the temperature scaling and chooses the band on dev's gold pairs
(:func:`perspectrum.train.tune_pipeline.stance_calibration`), checks that fit on what dev's
answers show and refits there where it fails (:func:`~perspectrum.train.tune_pipeline.shown_calibration`,
the same two steps as ``perspectrum tune``), stores the result in the models'
``pipeline.json``, and runs dev again (after). On test it only measures what is stored.
Figures are over the returned gold perspectives (a perspective in a card shown as "side
unclear" is left out of the wrong-side share and the calibration error, and counted in
the unclear share of cards); "before" also gives the calibration error of the confidence
the previous version showed (P(support) rescaled linearly around the threshold).

Writes ``eval/results/calibration_<name>_<split>.json`` and ``calibration_<name>_<split>.png`` (a
reliability diagram).
"""

from __future__ import annotations

import json
import time
from typing import Any

from benchmarks.pipeline_args import pipeline_parser
from perspectrum._io import write_json
from perspectrum.data import load_dataset
from perspectrum.eval.metrics import calibration_bins, calibration_error
from perspectrum.eval.end_to_end import score
from perspectrum.eval.report import plot_reliability
from perspectrum.models.scorers import PIPELINE_FILE
from perspectrum.pipeline.pipeline import Pipeline, PipelineConfig
from perspectrum.train.tune_pipeline import CachingScorers, settings_folder, shown_calibration, stance_calibration



def linear(p: float, threshold: float) -> float:
    """The confidence the previous version showed: P(support) rescaled linearly, 0.5 at the threshold."""
    if p >= threshold:
        return 0.5 + 0.5 * (p - threshold) / max(1e-9, 1.0 - threshold)
    return 0.5 + 0.5 * (threshold - p) / max(1e-9, threshold)


def measure(pipe: Pipeline, dataset: Any, split: str) -> tuple[dict[str, Any], list[dict[str, float]], list[Any]]:
    claims = dataset.split(split)
    started = time.perf_counter()
    results = []
    for start in range(0, len(claims), 16):
        results += pipe.discover_many([c.text for c in claims[start:start + 16]])
    scores = score(claims, results)
    threshold = pipe.settings["stance"]["threshold"]
    old_conf, old_right = [], []
    for claim, result in zip(claims, results):
        gold = {pid: k.stance == "SUPPORT" for k in reversed(claim.clusters) for pid in k.pids}
        for card in result.perspectives:
            says = card.support_probability >= threshold
            for phrasing in card.phrasings:
                if int(phrasing.id) in gold:
                    old_conf.append(linear(card.support_probability, threshold))
                    old_right.append(gold[int(phrasing.id)] == says)
    row = {
        "settings": {"stance": dict(pipe.settings["stance"])},
        "t1": round(scores["t1"]["f1"] * 100, 2), "t2": round(scores["t2"]["f1"] * 100, 2),
        "t2_accuracy": round(scores["t2"]["accuracy"] * 100, 2), "t4": round(scores["t4"]["f1"] * 100, 2),
        "t5_found": round(scores["t5"] * 100, 2), "t5_strict": round(scores["t5_all"] * 100, 2),
        "wrong_side": round(scores["wrong_stance"] * 100, 2), "of_perspectives": scores["shown"],
        "unclear_cards": round(scores["unclear"] * 100, 2), "of_cards": scores["cards"],
        "mixed_clusters": round(scores["mixed"] * 100, 2), "both_sides": round(scores["both_sides"] * 100, 2),
        "opposite_evidence": round(scores["opposite_evidence"] * 100, 2),
        "calibration_error": round(scores["calibration_error"], 4),
        "calibration_error_linear_rescale": round(calibration_error(old_conf, old_right), 4),
        "calibration_bins": scores["calibration_bins"],
        "seconds": round(time.perf_counter() - started, 1),
    }
    return row, calibration_bins(old_conf, old_right), results


def main() -> None:
    parser = pipeline_parser(__doc__)
    parser.add_argument("--name", default="", help="a word put in the files' names (e.g. trained)")
    args = parser.parse_args()
    dataset = load_dataset()
    pipe = Pipeline.load(index_dir=args.index_dir, models_dir=args.models_dir)
    pipe.warm_up()
    record: dict[str, Any] = {"command": f"python -m benchmarks.calibration --models-dir MODELS --split {args.split}",
                              "models": pipe.system, "split": args.split}
    if args.split == "dev":
        cached = CachingScorers(pipe.scorers)

        def run(stance: dict[str, Any]) -> Pipeline:
            return pipe.with_config(PipelineConfig(**{**pipe.config.to_dict(), "overrides": {"stance": stance}}),
                                    cached)

        before, linear_bins, results = measure(run({}), dataset, "dev")
        calibration = stance_calibration(dataset, run({}), "dev")
        stored_stance = {k: pipe.settings["stance"].get(k) for k in calibration["settings"]}
        if stored_stance != calibration["settings"]:  # answers with the pairs' fit, to check it on
            results = measure(run(calibration["settings"]), dataset, "dev")[2]
        threshold = float(pipe.settings["stance"]["threshold"])
        calibration["shown"] = shown_calibration(dataset.split("dev"), results, threshold, calibration["settings"])
        chosen = calibration["shown"]["settings"]
        path = settings_folder(pipe) / PIPELINE_FILE
        stored = json.loads(path.read_text(encoding="utf-8"))
        stored["settings"].setdefault("stance", {}).update(chosen)
        stored["calibration"] = calibration
        write_json(path, stored)
        reloaded = Pipeline.load(index_dir=args.index_dir, models_dir=args.models_dir).settings["stance"]
        assert {k: reloaded[k] for k in chosen} == chosen, "the stored calibration did not load back"
        after, _, _ = measure(run(chosen), dataset, "dev")
        record |= {"before": before, "calibration": calibration, "after": after}
        panels = {"before (linear rescale)": linear_bins, "after (calibrated on dev)": after["calibration_bins"]}
    else:
        record["after"], _, _ = measure(pipe, dataset, args.split)
        panels = {f"{args.split}, calibrated on dev": record["after"]["calibration_bins"]}
    name = f"calibration_{args.name + '_' if args.name else ''}{args.split}"
    write_json(args.out / f"{name}.json", record)
    plot_reliability(panels, args.out / f"{name}.png")
    summary = {k: v for k, v in record.get("after", {}).items() if k != "calibration_bins"}
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
