"""How `map` groups mined units into perspectives, chosen on its dev piles without the judge.

    python -m benchmarks.map_grouping --models-dir MODELS --units UNITS.json [--split dev]
    python -m benchmarks.map_grouping --models-dir MODELS --units UNITS.json --grid joins --name NAME

The piles are :func:`perspectrum.eval.map_quality.piles`' (each dev claim's gold evidence
paragraphs and as many distractors); ``--units`` keeps their mined units (written when the file
is missing, read when it is there). Every setting of the grid (the first cut, the second pass's
join and adoption) maps every pile, and each map is read against the gold evidence alone
(:func:`perspectrum.eval.map_quality.document_counts`): the share of gold paragraphs a main-list
perspective quotes, main-list and also-mentioned perspectives per gold perspective, purity, the
side of every quoted gold paragraph under each side rule, cluster-level counts, and how many key
points break the key point rules (:func:`perspectrum.text.key_points.rules_broken`), also as the
chooser without the rules (the most central unit of a readable length that is no question and takes a
side) names the same groups.

Rule, fixed before the grid was read: the setting with the highest F1 of the quoted share and the
main list's purity, among those with at most 1.5 main-list and 3 also-mentioned perspectives per
gold perspective; the side rule with the highest strict per-document accuracy among those that
give a probability (mean of confident units, confidence-weighted, weighted with the key point's
disagreement shown unclear). Writes ``eval/results/map_grouping_shipped_<split>.json``.

``--grid joins`` tries only first cuts and joins (:data:`JOINS_GRID`, no adoption, no other
key point chooser) and merges the run, under ``NAME``, into ``map_grouping_recipes_<split>.json``:
the same yardstick for other models on the same units (an equivalence model trained on
unit-like text beside ``train all``'s).
"""

from __future__ import annotations

import json
import os
import platform
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

import perspectrum.pipeline.map as map_module
from benchmarks.pipeline_args import pipeline_parser, provenance
from perspectrum._io import write_json
from perspectrum.data import load_dataset
from perspectrum.eval.map_quality import document_counts, judge_free, mine_piles, piles
from perspectrum.eval.metrics import f1
from perspectrum.models.rules import cluster_support
from perspectrum.models.store import read_meta
from perspectrum.pipeline.map import MapSettings, build_map
from perspectrum.pipeline.pipeline import Pipeline
from perspectrum.pipeline.results import side
from perspectrum.pipeline.stages import ClusterStage, Stance
from perspectrum.text.key_points import RULES, rules_broken
from perspectrum.text.mining import MinedUnit
from perspectrum.text.polarity import takes_no_side

#: (first cut, join, adopt); None: that pass is off.
GRID = ([(0.76, join, adopt) for join in (None, 0.75, 0.65, 0.6, 0.55, 0.5, 0.45) for adopt in (None, 0.7, 0.6, 0.5)]
        + [(0.7, join, None) for join in (None, 0.65, 0.55)])
#: ``--grid joins``: first cuts around the shipped one (0.75) and joins, no adoption.
JOINS_GRID = [(cut, join, None) for cut in (0.81, 0.75, 0.7, 0.65) for join in (None, 0.65, 0.55, 0.45)]


def central_readable_key_point(members: Any, texts: Any, matrix: np.ndarray) -> int:
    """A key point chooser without the rules: most central among units of 6–30 words that
    are no question and take a side."""
    def rank(i: int) -> tuple[bool, bool, float, int]:
        words = len(texts[i].split())
        states = not takes_no_side(texts[i]) and not texts[i].rstrip().endswith("?")
        centre = float(np.mean([matrix[i, j] for j in members if j != i])) if len(members) > 1 else 1.0
        return (states, 6 <= words <= 30, centre, -i)
    return max(members, key=rank)


def group_support(supports: list[float], threshold: float) -> float:
    """A confidence-weighted vote: each unit's P(support) weighted by how far it lies from the
    stance cut ``threshold`` (the plain mean when all sit on it)."""
    weights = np.abs(np.asarray(supports, dtype=np.float64) - threshold)
    return float(np.average(supports, weights=weights)) if float(weights.sum()) > 0 else float(np.mean(supports))


def side_rules(supports: list[float], stance: Stance) -> dict[str, str]:
    """The side each rule gives a perspective whose units (key point first) have these P(support)."""
    mean = side(stance.confidence(cluster_support(supports, [stance.leaning(p) for p in supports])), stance.unclear)
    weighted = side(stance.confidence(group_support(supports, stance.threshold)), stance.unclear)
    disagree = ("unclear" if weighted != "unclear" and (supports[0] >= stance.threshold) != (weighted == "support")
                else weighted)
    return {"mean": mean, "weighted": weighted, "weighted_disagree": disagree}


def main() -> None:
    parser = pipeline_parser(__doc__)
    parser.add_argument("--units", type=Path, required=True, help="mined units kept here (read if present)")
    parser.add_argument("--grid", choices=("full", "joins"), default="full",
                        help="full: every setting and the rule's choice; joins: cuts and joins only (JOINS_GRID)")
    parser.add_argument("--name", default="", help="with --grid joins: the run's name in map_grouping_recipes_<split>.json")
    args = parser.parse_args()
    started = time.perf_counter()
    dataset = load_dataset()
    pipe = Pipeline.load(index_dir=args.index_dir, models_dir=args.models_dir)
    stance, cluster = pipe.stage(Stance), pipe.stage(ClusterStage)
    found = piles(dataset, args.split)
    if args.units.exists():
        mined = [[(d, MinedUnit(**u)) for d, u in pile] for pile in json.loads(args.units.read_text())]
    else:
        mined = mine_piles(pipe, found, show_progress=True)
        write_json(args.units, [[(d, u.to_dict()) for d, u in pile] for pile in mined])
    vectors: dict[str, np.ndarray] = {}

    def encode(texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in vectors]
        if missing:
            vectors.update(zip(missing, pipe.store.encoder.encode(missing)))
        return np.array([vectors[t] for t in texts])

    scored: dict[tuple[str, str, str], float] = {}

    def equivalence(triples: list[tuple[str, str, str]]) -> list[float]:
        missing = [t for t in dict.fromkeys(triples) if t not in scored]
        if missing:
            scored.update(zip(missing, (float(s) for s in pipe.scorers.equivalence(missing))))
        return [scored[t] for t in triples]

    def run(cut: float, join: float | None, adopt: float | None) -> dict[str, Any]:
        settings = replace(MapSettings(), threshold=cut, join=join, adopt=adopt)
        counts, pure, shown_pure, total, shown_total = [], 0, 0, 0, 0
        broken = {rule: 0 for rule in RULES}
        breaking = 0
        tally: dict[str, list[int]] = {}
        for pile, units in zip(found, mined):
            shown, also = build_map(pile.claim.text, units, encode, len(pile.documents), equivalence, stance,
                                    settings, cluster.weight, cut)
            every = [*shown, *also]
            counts.append(document_counts(pile, every))
            evidence = [{str(e) for e in c.evidence} for c in pile.claim.clusters if c.evidence]
            for p in every:
                is_pure = any(set(p.made_by) <= e for e in evidence)
                pure, total = pure + is_pure, total + 1
                if p.documents >= 2:
                    shown_pure, shown_total = shown_pure + is_pure, shown_total + 1
                rules = rules_broken(p.key_point)
                breaking += bool(rules)
                for rule in rules:
                    broken[rule] += 1
            for p in shown:
                given = side_rules([q.support_probability for q in p.quotes], stance)
                for doc in p.made_by:
                    gold = {pile.claim.clusters[k].stance for k in pile.citing.get(doc, ())}
                    if len(gold) != 1:
                        continue
                    truth = "support" if gold.pop() == "SUPPORT" else "undermine"
                    for name, shown_side in given.items():
                        row = tally.setdefault(name, [0, 0, 0, 0])
                        row[0] += 1
                        row[1] += shown_side == truth
                        row[2] += shown_side != "unclear"
                        row[3] += shown_side == truth and shown_side != "unclear"
        summed = {key: sum(c[key] for c in counts) for key in counts[0] if key != "cluster_counts"}
        figures = judge_free(counts, summed)
        out = {"cut": cut, "join": join, "adopt": adopt,
               **{key: round(value * 100, 2) if key in ("quoted_share", "doc_side_accuracy", "doc_side_on_a_side")
                  else round(value, 3) for key, value in figures.items()},
               "purity": round(100 * pure / max(1, total), 2),
               "purity_shown": round(100 * shown_pure / max(1, shown_total), 2),
               "perspectives": total, "shown": shown_total,
               "key_points_breaking": breaking, "key_point_rules_broken": broken,
               "side_rules": {name: {"strict": round(100 * row[1] / max(1, row[0]), 2),
                                     "on_a_side": round(100 * row[3] / max(1, row[2]), 2), "documents": row[0]}
                              for name, row in tally.items()}}
        out["f1_quoted_purity_shown"] = round(100 * f1(out["quoted_share"] / 100, out["purity_shown"] / 100), 2)
        return out

    tried = []
    for cut, join, adopt in GRID if args.grid == "full" else JOINS_GRID:
        tried.append(run(cut, join, adopt))
        print(json.dumps({k: v for k, v in tried[-1].items() if k not in ("side_rules", "key_point_rules_broken")}),
              flush=True)
    allowed = [row for row in tried if row["per_gold_shown"] <= 1.5 and row["per_gold_also"] <= 3]
    best = max(allowed, key=lambda row: row["f1_quoted_purity_shown"])
    best_side = max(best["side_rules"], key=lambda name: best["side_rules"][name]["strict"])
    command = (f"python -m benchmarks.map_grouping --split {args.split} --units UNITS.json"
               + (f" --grid joins --name {args.name}" if args.grid == "joins" else ""))
    record = {**provenance(command), "system": pipe.system, "split": args.split,
              "documents": sum(len(p.documents) for p in found), "units": sum(len(u) for u in mined),
              "claims": len(found),
              "rule": "highest F1 of quoted_share and purity_shown with per_gold_shown <= 1.5 and per_gold_also <= 3; "
                      "side: highest strict per-document accuracy",
              "chosen": {"cut": best["cut"], "join": best["join"], "adopt": best["adopt"], "side": best_side},
              "unit_stance_accuracy": unit_accuracy(found, mined, stance.threshold)}
    if args.grid == "joins":
        path = args.out / f"map_grouping_recipes_{args.split}.json"
        stored = json.loads(path.read_text()) if path.is_file() else {
            **provenance("python -m benchmarks.map_grouping --units UNITS.json --grid joins --models-dir MODELS "
                         "--name NAME"), "split": args.split, "rule": record["rule"], "runs": {}}
        keep = ("system", "documents", "units", "claims", "chosen", "unit_stance_accuracy")
        stored["runs"][args.name or pipe.system] = {
            "command": command, **{key: record[key] for key in keep},
            "equivalence": {key: read_meta(pipe.scorers.homes["equivalence"], "equivalence").get(key)
                            for key in ("config", "examples", "thresholds", "dev")},
            "tried": tried, "seconds": round(time.perf_counter() - started, 1),
            "hardware": f"{os.cpu_count()} CPU cores ({platform.machine()})"}
        print(write_json(path, stored))
        print(record["chosen"])
        return
    chooser = map_module.key_point
    map_module.key_point = central_readable_key_point
    try:
        central = run(0.76, None, None)
    finally:
        map_module.key_point = chooser
    record = {**record,
              "central_readable_key_point_chooser": {key: central[key] for key in
                                             ("perspectives", "key_points_breaking", "key_point_rules_broken")},
              "tried": tried, "seconds": round(time.perf_counter() - started, 1),
              "hardware": f"{os.cpu_count()} CPU cores ({platform.machine()})"}
    print(write_json(args.out / f"map_grouping_shipped_{args.split}.json", record))
    print(record["chosen"])


def unit_accuracy(found: Any, mined: Any, threshold: float) -> dict[str, float]:
    """The stance model's own accuracy on the units mined from gold paragraphs (each against the
    stance of the cluster its paragraph is evidence for): the ceiling any vote of units works under."""
    right = total = 0
    for pile, units in zip(found, mined):
        for doc, unit in units:
            gold = {pile.claim.clusters[k].stance for k in pile.citing.get(doc, ())}
            if len(gold) == 1:
                total += 1
                right += (unit.support_probability >= threshold) == (gold.pop() == "SUPPORT")
    return {"accuracy": round(100 * right / max(1, total), 2), "units": total}


if __name__ == "__main__":
    main()
