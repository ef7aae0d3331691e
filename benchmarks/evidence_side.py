"""Evidence that argues for its card: how often the top paragraph argues the other side, by ``evidence.rival``.

    python -m benchmarks.evidence_side --models-dir MODELS --split dev     # sweeps, chooses, stores
    python -m benchmarks.evidence_side --models-dir MODELS --split test    # measures what is stored

Runs ``discover --explain`` on every claim of the split with the rival rule off (each
kept paragraph's trace says how far the best cluster leaning the other way rated it above
its own cluster), then replays the rule at each value of the grid on those traces: a
paragraph is dropped where its rival gap exceeds the value. For each: T4 (found), T5
found and strict, the share of cards on a side whose top paragraph is gold evidence only
of the claim's clusters on the other side, and the share of cards on a side left with any
evidence. On dev it chooses the value (the rule below, fixed before the sweep was read)
and stores it in the models' ``pipeline.json``; on test it reads the stored value. Then,
at the chosen value, the same for ``evidence.floor`` (paragraphs the ranker gives less than
the floor are not shown, even the one ``min_keep`` keeps).

Rules: for ``rival``, the value with the fewest opposite-side top paragraphs among those
that keep dev T5 found and T4 within 0.5 points of the rule switched off; 1.0 (off) if
none lowers it. For ``floor``, the highest floor that keeps dev T5 found and T4 within 0.5
points of no floor.

Writes ``eval/results/evidence_side_<split>.json``.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any

from benchmarks.pipeline_args import pipeline_parser
from perspectrum._io import write_json
from perspectrum.data import load_dataset
from perspectrum.eval.end_to_end import score
from perspectrum.models.scorers import PIPELINE_FILE
from perspectrum.pipeline.pipeline import Pipeline, PipelineConfig
from perspectrum.pipeline.results import calibrated
from perspectrum.train.tune_pipeline import settings_folder

GRID = (1.0, 0.5, 0.3, 0.2, 0.15, 0.1, 0.05, 0.0, -0.05, -0.1, -0.2)
#: Confidence of the window's opposite reading at which its paragraph is dropped (1: never).
AGAINST = (1.0, 0.9, 0.8, 0.7, 0.6, 0.5)
#: Floors on the ranker's P(evidence) below which a paragraph is not shown.
FLOORS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5)
#: How far T4 and T5 found may fall (points) for a value to be chosen.
TOLERANCE = 0.5


def replay(results: list[Any], rival: float, against: float = 1.0,
           window_support: dict[tuple[str, str], float] | None = None, floor: float = 0.0) -> list[Any]:
    """The results as the rule at ``rival`` would have left them (traces from a run with it
    off), and with ``against``: a paragraph whose window the stance model reads on the
    other side of its card, at least this sure (calibrated), dropped too; and one the
    ranker gives less than ``floor``."""
    out = []
    window_support = window_support or {}
    for result in results:
        gaps = {(str(e["perspective"]), str(e["id"])): e["rival"] for e in result.trace["evidence"]}
        cards = []
        for card in result.perspectives:
            def keeps(hit: Any) -> bool:
                gap = gaps.get((str(card.id), str(hit.id)))
                if hit.probability < floor or gap is not None and gap > rival:
                    return False
                q = window_support.get((str(card.id), str(hit.id)))
                if q is None or card.stance == "unclear":
                    return True
                return not ((q >= 0.5) != card.leans_support and max(q, 1.0 - q) >= against)
            cards.append(replace(card, evidence=tuple(h for h in card.evidence if keeps(h))))
        out.append(replace(result, perspectives=tuple(cards)))
    return out


def window_stances(pipe: Pipeline, results: list[Any]) -> dict[tuple[str, str], float]:
    """Calibrated P(support) of each verified window, read by the stance model against the claim."""
    keys, pairs = [], []
    for result in results:
        for card in result.perspectives:
            for hit in card.evidence:
                if hit.window:
                    keys.append((str(card.id), str(hit.id)))
                    pairs.append((result.claim, hit.window))
    stance = pipe.settings["stance"]
    scores = pipe.scorers.stance(pairs) if pairs else []
    return {k: calibrated(float(p), stance["threshold"], stance["scale"]) for k, p in zip(keys, scores)}


def row(claims: list[Any], results: list[Any], rival: float, against: float = 1.0,
        floor: float = 0.0) -> dict[str, Any]:
    s = score(claims, results)
    sided = [c for r in results for c in r.perspectives if c.stance != "unclear"]
    return {"rival": rival, "against": against, "floor": floor, "t4": round(s["t4"]["f1"] * 100, 2), "t4_all": round(s["t4_all"]["f1"] * 100, 2),
            "t5_found": round(s["t5"] * 100, 2), "t5_strict": round(s["t5_all"] * 100, 2),
            "opposite_evidence": round(s["opposite_evidence"] * 100, 2), "evidenced_cards": s["evidenced_cards"],
            "cards_on_a_side_with_evidence": round(100 * sum(bool(c.evidence) for c in sided) / max(1, len(sided)), 2)}


def main() -> None:
    parser = pipeline_parser(__doc__)
    args = parser.parse_args()
    dataset = load_dataset()
    claims = dataset.split(args.split)
    stored = Pipeline.load(index_dir=args.index_dir, models_dir=args.models_dir).settings["evidence"]
    pipe = Pipeline.load(index_dir=args.index_dir, models_dir=args.models_dir,
                         config=PipelineConfig(overrides={"evidence": {"rival": 1.0, "floor": 0.0}}))
    pipe.warm_up()
    started = time.perf_counter()
    results: list[Any] = []
    for start in range(0, len(claims), 16):
        results += pipe.discover_many([c.text for c in claims[start:start + 16]], explain=True)
    seconds = round(time.perf_counter() - started, 1)
    record: dict[str, Any] = {"command": f"python -m benchmarks.evidence_side --models-dir MODELS --split {args.split}",
                              "models": pipe.system, "split": args.split, "seconds": seconds, "tolerance": TOLERANCE}
    if args.split == "dev":
        rows = [row(claims, replay(results, r), r) for r in GRID]
        off = rows[0]
        fine = [r for r in rows if r["t4"] >= off["t4"] - TOLERANCE and r["t5_found"] >= off["t5_found"] - TOLERANCE]
        chosen = min(fine, key=lambda r: (r["opposite_evidence"], -r["rival"]))["rival"]
        floors = [row(claims, replay(results, chosen, floor=f), chosen, floor=f) for f in FLOORS]
        base = floors[0]
        floor = max(r["floor"] for r in floors
                    if r["t4"] >= base["t4"] - TOLERANCE and r["t5_found"] >= base["t5_found"] - TOLERANCE)
        path = settings_folder(pipe) / PIPELINE_FILE
        saved = json.loads(path.read_text(encoding="utf-8"))
        saved["settings"].setdefault("evidence", {}).update({"rival": chosen, "floor": floor})
        write_json(path, saved)
        started = time.perf_counter()
        support = window_stances(pipe, results)
        record["window_stance_seconds"] = round(time.perf_counter() - started, 1)
        record["windows_read"] = len(support)
        windows = [row(claims, replay(results, chosen, a, support), chosen, a) for a in AGAINST]
        record |= {"grid": rows, "chosen": chosen, "window_grid": windows, "floor_grid": floors,
                   "chosen_floor": floor, "before": off,
                   "after": next(r for r in floors if r["floor"] == floor)}
    else:
        record |= {"before": row(claims, results, 1.0),
                   "after": row(claims, replay(results, stored["rival"], floor=stored["floor"]), stored["rival"],
                                floor=stored["floor"])}
    write_json(args.out / f"evidence_side_{args.split}.json", record)
    chosen_now = {"rival": record.get("chosen", stored["rival"]), "floor": record.get("chosen_floor", stored["floor"])}
    print(json.dumps({k: record[k] for k in ("before", "after")} | {"chosen": chosen_now}, indent=1))


if __name__ == "__main__":
    main()
