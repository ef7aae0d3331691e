"""Choosing the pipeline's own settings on dev: the relevance floor, the stance margin of
stance-aware clustering, the clustering cut for retrieved perspectives, and how many
pool paraphrases expansion reads (each admitted only on its cluster's side).

Each model's cut-offs are tuned with the model (``perspectrum train``); these settings
belong to the pipeline as a whole, so they are chosen by running it end to end on dev
and scoring what it returns (:func:`perspectrum.eval.end_to_end.score`). Every run is
recorded, so the stored JSON is the ablation behind each default. Model scores are
cached across runs (:class:`CachingScorers`): runs that differ only in settings re-use
every model call, and the grid costs little more than one run.

The test split is never read here.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perspectrum._io import write_json
from perspectrum._progress import progress
from perspectrum.data import Dataset
from perspectrum.errors import PerspectrumError
from perspectrum.eval import offtopic
from perspectrum.eval.metrics import percent
from perspectrum.eval.end_to_end import score
from perspectrum.pipeline.pipeline import Pipeline, PipelineConfig
from perspectrum.pipeline.results import calibrated
from perspectrum.models.evidence_ranker import DEPTH, Debate, Key, WindowJob
from perspectrum.models.scorers import PIPELINE_FILE, Scorers
from perspectrum.pipeline.stages import ORDER
from perspectrum.pipeline.settings import defaults
from perspectrum.pipeline.stages.base import PIPELINE

#: Stance margins tried (0 = clusters split strictly by the stance model's side).
MARGINS = (0.0, 0.05, 0.1, 0.2)
#: Pool neighbours per cluster read by the expand stage (0 = off; on, with stance agreement).
NEIGHBOURS = (0, 5, 10)
#: Raises of the equivalence model's clustering cut tried end to end. That cut is tuned on
#: gold perspectives; retrieved ones bring near-paraphrases of the opposite stance, and
#: on dev a stricter cut mixed fewer clusters and raised strict T5 (``eval/results``).
RAISES = (0.0, 0.05, 0.1, 0.15, 0.2)
#: The settings this tune chooses (the stance calibration's ``scale`` and ``unclear`` included).
TUNED: dict[str, tuple[str, ...]] = {"relevance": ("floor",), "stance": ("margin", "scale", "unclear"),
                                     "cluster": ("threshold",), "expand": ("neighbours", "agree")}


def carried_settings() -> dict[str, dict[str, Any]]:
    """The pipeline settings chosen on dev by runs longer than the tune, as stored with the
    models that ship (their ``pipeline.json``): every stored setting this tune does not
    choose (:data:`TUNED`). For the models of ``train all`` they are that a one-sided answer
    takes the most relevant of its next 10 candidates shown on the other side, that a
    paragraph a cluster leaning the other way rates more than 0.15 above its own is dropped,
    and that one the ranker gives less than 0.1 is not shown (``eval/results``, the rules of
    ``benchmarks/other_side_reads.py`` and ``benchmarks/evidence_side.py``)."""
    import json

    from perspectrum.models.shipped import source

    path = source() / PIPELINE_FILE
    stored = json.loads(path.read_text(encoding="utf-8"))["settings"] if path.is_file() else {}
    carried = {stage: {k: v for k, v in values.items() if k not in TUNED.get(stage, ())}
               for stage, values in stored.items()}
    return {stage: values for stage, values in carried.items() if values}


#: Most of the returned clusters with 2+ gold perspectives that may mix gold stances on dev.
MAX_MIXED = 0.05
#: When no run keeps mixing under :data:`MAX_MIXED`, the least mixing among the runs this
#: close (points) to the best strict T5 wins: smaller differences are noise on dev's claims.
T5_SLACK = 0.5
#: Most of the real dev claims the floor may empty.
MAX_EMPTIED = 0.01
#: Letter-salad claims added to :data:`perspectrum.eval.offtopic.TUNE` when choosing the floor.
SALAD = 24
#: Most of dev's gold (claim, perspective) pairs the "side unclear" band may hold: the
#: widest band around calibrated 0.5 that holds no more is chosen.
MAX_UNCLEAR = 0.10
#: Half-widths of the "side unclear" band tried, around calibrated P(support) 0.5.
UNCLEAR_BANDS = tuple(round(0.01 * n, 2) for n in range(0, 31))
#: The most expected calibration error (10 bins) the fit on dev's gold pairs may leave over the
#: gold perspectives dev's answers show on a side; above it, the scale and the band are fitted
#: on what the answers show instead (:func:`shown_calibration`): a cluster's side is a vote of
#: its members and paraphrases, sharper or flatter than one pair's P(support).
MAX_SHOWN_ECE = 0.05
#: Scales tried when the calibration is refitted on what the answers show: 0.1 to 10, each
#: about 5 % above the last.
SCALES = tuple(round(0.1 * 100 ** (n / 100), 4) for n in range(101))


def calibrate(support: Sequence[float], threshold: float, scale: float) -> np.ndarray:
    """:func:`perspectrum.pipeline.results.calibrated` (the one formula the cards show) of each
    P(support)."""
    return np.array([calibrated(p, threshold, scale) for p in support], dtype=np.float64)


def _fit_scale(support: np.ndarray, labels: np.ndarray, threshold: float) -> float:
    """The temperature whose calibrated P(support) (:func:`calibrate`) is most likely on ``labels``."""
    from scipy.optimize import minimize_scalar

    def loss(scale: float) -> float:
        q = np.clip(calibrate(support, threshold, scale), 1e-9, 1 - 1e-9)
        return float(-np.mean(np.where(labels, np.log(q), np.log(1 - q))))

    return float(minimize_scalar(loss, bounds=(0.05, 20.0), method="bounded").x)


def stance_calibration(dataset: Dataset, pipe: Pipeline, split: str = "dev") -> dict[str, Any]:
    """Fit the shown confidence on ``split``'s gold (claim, perspective) pairs and choose the
    "side unclear" band: temperature scaling around the stance threshold (one number, so
    the side never moves; fitted by likelihood), then the widest band around calibrated 0.5
    holding at most :data:`MAX_UNCLEAR` of the pairs. Returns the settings and what they did
    on ``split`` (expected calibration error before and after, accuracy inside and outside
    the band)."""
    from perspectrum.eval.metrics import calibration_error

    if split == "test":
        raise PerspectrumError("the stance calibration is fitted on dev, never on test")
    pairs, gold = [], []
    for claim in dataset.split(split):
        for cluster in claim.clusters:
            for pid in cluster.pids:
                pairs.append((claim.text, dataset.perspectives[pid].text))
                gold.append(cluster.stance == "SUPPORT")
    threshold = float(pipe.settings["stance"]["threshold"])
    support = np.asarray(pipe.scorers.stance(pairs), dtype=np.float64)
    labels = np.asarray(gold, dtype=bool)
    scale = _fit_scale(support, labels, threshold)
    q = calibrate(support, threshold, scale)
    raw = calibrate(support, threshold, 1.0)
    right = (q >= 0.5) == labels
    share = {band: float(np.mean(np.abs(q - 0.5) < band)) for band in UNCLEAR_BANDS}
    unclear = max(band for band in UNCLEAR_BANDS if share[band] <= MAX_UNCLEAR)
    inside = np.abs(q - 0.5) < unclear
    return {
        "settings": {"scale": round(scale, 4), "unclear": unclear},
        "pairs": len(pairs), "threshold": threshold,
        "ece_before": round(calibration_error(np.maximum(raw, 1 - raw), right), 4),
        "ece_after": round(calibration_error(np.maximum(q, 1 - q), right), 4),
        "accuracy": round(float(right.mean()) * 100, 2),
        "unclear_share": round(float(inside.mean()) * 100, 2),
        "accuracy_inside_band": round(float(right[inside].mean()) * 100, 2) if inside.any() else None,
        "accuracy_outside_band": round(float(right[~inside].mean()) * 100, 2) if (~inside).any() else None,
        "rule": f"scale: likelihood on {split}'s gold pairs; unclear: the widest band holding at most "
                f"{MAX_UNCLEAR:.0%} of them",
    }


def shown_calibration(claims: Sequence[Any], results: Sequence[Any], threshold: float,
                      fitted: Mapping[str, float]) -> dict[str, Any]:
    """The calibration checked on what dev's answers show, and refitted there when it fails.

    ``results`` are the answers to ``claims`` (dev) with the settings ``fitted`` (``scale``
    and ``unclear``, from :func:`stance_calibration`). Over the gold perspectives the cards
    show on a side, the expected calibration error of the shown confidence is measured; if
    it exceeds :data:`MAX_SHOWN_ECE`, the scale is chosen again among :data:`SCALES`, each
    with the widest band holding at most :data:`MAX_UNCLEAR` of the cards, as the one whose
    shown confidence has the least error there. (Fitting the scale by likelihood over every
    returned perspective, as on the pairs, does not help: a wide band leaves shown only cards
    the vote made sure of, about equally right at 80 % and at 95 %, and the likelihood is
    dominated by the cards inside the band.) Returns the settings to keep and the errors.
    """
    from perspectrum.eval.metrics import calibration_error

    support, gold, card_p = [], [], []
    for claim, result in zip(claims, results):
        sides = {pid: k.stance == "SUPPORT" for k in reversed(claim.clusters) for pid in k.pids}
        for card in result.perspectives:
            card_p.append(card.support_probability)
            for phrasing in card.phrasings:
                if int(phrasing.id) in sides:
                    support.append(card.support_probability)
                    gold.append(sides[int(phrasing.id)])
    labels = np.asarray(gold, dtype=bool)

    def error(scale: float, band: float) -> float:
        q = calibrate(support, threshold, scale)
        outside = np.abs(q - 0.5) >= band
        return calibration_error(np.maximum(q, 1 - q)[outside], ((q >= 0.5) == labels)[outside])

    def widest_band(scale: float) -> float:
        distance = np.abs(calibrate(card_p, threshold, scale) - 0.5)
        return max(b for b in UNCLEAR_BANDS if float(np.mean(distance < b)) <= MAX_UNCLEAR) if card_p else 0.0

    def unclear_cards(scale: float, band: float) -> float:
        return float(np.mean(np.abs(calibrate(card_p, threshold, scale) - 0.5) < band)) if card_p else 0.0

    kept = {"scale": float(fitted["scale"]), "unclear": float(fitted["unclear"])}
    before = error(kept["scale"], kept["unclear"]) if support else 0.0
    record: dict[str, Any] = {
        "perspectives": len(support), "cards": len(card_p), "ece_pairs_fit": round(before, 4),
        "unclear_cards_pairs_fit": round(unclear_cards(kept["scale"], kept["unclear"]) * 100, 2),
        "rule": f"kept if its error over the shown gold perspectives is at most {MAX_SHOWN_ECE}; else the scale "
                f"({SCALES[0]} to {SCALES[-1]}) whose shown confidence has the least error there, each with the "
                f"widest band holding at most {MAX_UNCLEAR:.0%} of the cards",
    }
    if before > MAX_SHOWN_ECE and len(set(gold)) == 2:
        tried = [(error(scale, widest_band(scale)), scale, widest_band(scale)) for scale in SCALES]
        least, scale, band = min(tried)
        kept = {"scale": scale, "unclear": band}
        record |= {"refitted": True, "ece_shown_fit": round(least, 4),
                   "unclear_cards_shown_fit": round(unclear_cards(scale, band) * 100, 2)}
    else:
        record["refitted"] = False
    record["settings"] = kept
    return record


class CachingScorers:
    """A :class:`~perspectrum.models.scorers.Scorers` that remembers every score its inner one gave.

    Scores are keyed by their exact inputs, so a cached answer is the inner model's
    answer, bit for bit; only repeated work is saved.
    """

    def __init__(self, inner: Scorers) -> None:
        self.inner = inner
        self.kind = inner.kind
        self.settings = inner.settings
        self.sources = getattr(inner, "sources", {})
        self._scores: dict[str, dict[Any, float]] = {}
        self._evidence: dict[tuple[Debate, int], list[tuple[int, Any, float]]] = {}
        self._windows: dict[WindowJob, np.ndarray] = {}

    def _cached(self, name: str, items: Sequence[Any]) -> np.ndarray:
        cache = self._scores.setdefault(name, {})
        missing = [x for x in dict.fromkeys(items) if x not in cache]
        if missing:
            cache.update(zip(missing, map(float, getattr(self.inner, name)(missing))))
        return np.array([cache[x] for x in items], dtype=np.float64)

    def relevance(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        return self._cached("relevance", pairs)

    def stance(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        return self._cached("stance", pairs)

    def equivalence(self, triples: Sequence[tuple[str, str, str]]) -> np.ndarray:
        return self._cached("equivalence", triples)

    def windows(self, jobs: Sequence[WindowJob]) -> list[np.ndarray]:
        missing = [job for job in dict.fromkeys(jobs) if job not in self._windows]
        if missing:
            self._windows.update(zip(missing, self.inner.windows(missing)))
        return [self._windows[job] for job in jobs]

    def evidence(self, debates: Mapping[Any, Debate], depth: int = DEPTH) -> tuple[list[Key], np.ndarray]:
        missing = {key: d for key, d in debates.items() if (d, depth) not in self._evidence}
        if missing:
            keys, probs = self.inner.evidence(missing, depth)
            rows: dict[Any, list[tuple[int, Any, float]]] = {key: [] for key in missing}
            for (key, cluster, doc_id), p in zip(keys, probs):
                rows[key].append((cluster, doc_id, float(p)))
            for key, d in missing.items():
                self._evidence[(d, depth)] = rows[key]
        out_keys: list[Key] = []
        out_probs: list[float] = []
        for key, d in debates.items():
            for cluster, doc_id, p in self._evidence[(d, depth)]:
                out_keys.append((key, cluster, doc_id))
                out_probs.append(p)
        return out_keys, np.array(out_probs)


def choose_floor(real: Sequence[float], off: Sequence[float]) -> tuple[float, dict[str, float]]:
    """The floor on a claim's best blended relevance that best separates real claims from
    off-topic ones (mean of the two rates kept right), emptying at most
    :data:`MAX_EMPTIED` of the real ones; the lowest such floor on ties. Floors are tried
    halfway between neighbouring scores."""
    best, best_value = 0.0, -1.0
    values = sorted({*real, *off})
    # floors between neighbouring scores, so no claim sits exactly on one
    for floor in [0.0, *((a + b) / 2 for a, b in zip(values, values[1:]))]:
        emptied = float(np.mean([r < floor for r in real])) if real else 0.0
        if emptied > MAX_EMPTIED:
            break
        value = (1 - emptied + float(np.mean([o < floor for o in off]))) / 2 if off else 1 - emptied
        if value > best_value:
            best, best_value = floor, value
    return best, floor_rates(best, real, off)


def floor_rates(floor: float, real: Sequence[float], off: Sequence[float]) -> dict[str, float]:
    """How often ``floor`` empties a real claim and answers an off-topic one (fractions)."""
    return {"real_emptied": float(np.mean([r < floor for r in real])) if real else 0.0,
            "offtopic_answered": float(np.mean([o >= floor for o in off])) if off else 0.0}


def best_relevance(pipe: Pipeline, claims: Sequence[str]) -> list[float]:
    """Each claim's best blended relevance among its candidates (retrieve and relevance only)."""
    return [max((c.score for c in s.candidates), default=0.0) for s in pipe.run_stages(claims, until="relevance")]


def _metrics(scores: Mapping[str, Any]) -> dict[str, Any]:
    """The end-to-end numbers a run is chosen and reported by (percent)."""
    fractions = {"t1": scores["t1"]["f1"], "t2": scores["t2"]["f1"], "t2_all": scores["t2_all"]["f1"],
                 "t2_accuracy": scores["t2"]["accuracy"], "t3": scores["t3"]["f1"], "t4": scores["t4"]["f1"],
                 "t4_all": scores["t4_all"]["f1"], "t5": scores["t5"], "t5_all": scores["t5_all"],
                 "mixed": scores["mixed"], "wrong_stance": scores["wrong_stance"], "both_sides": scores["both_sides"],
                 "emptied": scores["emptied"], "coverage_pairs": scores["coverage"]["pairs"],
                 "coverage_clusters": scores["coverage"]["clusters"]}
    return percent({name: float(value) for name, value in fractions.items()})


def settings_folder(pipe: Pipeline) -> Path:
    """Where the pipeline settings of the loaded models are stored: beside the user's four models
    (the shipped ones carry their own, chosen when they were trained)."""
    if pipe.system == "trained":
        return pipe.models_dir
    raise PerspectrumError(f"cannot store pipeline settings for {pipe.system!r} models: tune chooses them for "
                           "your own four trained models (`perspectrum train all`); pass overrides instead")


def tune_pipeline(dataset: Dataset, pipe: Pipeline, split: str = "dev", show_progress: bool = False,
                  margins: Sequence[float] = MARGINS, neighbours: Sequence[int] = NEIGHBOURS,
                  raises: Sequence[float] = RAISES, chosen_before: Mapping[str, Mapping[str, Any]] | None = None
                  ) -> dict[str, Any]:
    """Choose the floor, then the stance margin, then the clustering cut and expansion
    together on ``split``; store them, with ``chosen_before`` (settings an earlier dev run
    chose for these models, ``{stage: {setting: value}}``) added as they are.

    Returns the whole record (every run's settings and scores), and writes the chosen
    settings to ``pipeline.json`` beside the models, where the pipeline reads them.
    """
    if split == "test":
        raise PerspectrumError("pipeline settings are chosen on dev, never on test")
    started = time.perf_counter()
    claims = dataset.split(split)
    cached = CachingScorers(pipe.scorers)
    texts = [c.text for c in claims]

    def run(overrides: dict[str, dict[str, Any]]) -> Pipeline:
        return pipe.with_config(PipelineConfig(**{**pipe.config.to_dict(), "overrides": overrides}), cached)

    # what the pipeline does before it is tuned: every setting chosen here at its default
    base = {stage.name: defaults(stage, PIPELINE) for stage in ORDER if defaults(stage, PIPELINE)}
    runs: list[dict[str, Any]] = []
    cut = pipe.scorers.settings["equivalence"]["threshold"]
    single = len(margins) == len(neighbours) == len(raises) == 1
    steps = 1 if single else 1 + len(margins) + len(raises) * len(neighbours) - 1
    with progress(f"tune the pipeline on {split}", steps, enabled=show_progress) as advance:
        off = [*offtopic.TUNE, *offtopic.letter_salad(SALAD)]
        probe = run(base)
        real_best, off_best = best_relevance(probe, texts), best_relevance(probe, off)
        floor, rates = choose_floor(real_best, off_best)
        advance(1)

        def trial(stance_margin: float, count: int, threshold: float = cut) -> dict[str, Any]:
            overrides = {"relevance": {"floor": floor}, "stance": {"margin": stance_margin},
                         "cluster": {"threshold": round(threshold, 4)},
                         "expand": {"neighbours": count, "agree": count > 0}}
            began = time.perf_counter()
            results = run(overrides).discover_many(texts)
            row = {"settings": overrides, **_metrics(score(claims, results)),
                   "seconds": round(time.perf_counter() - began, 1)}
            runs.append(row)
            advance(1)
            return row

        def pick(rows: list[dict[str, Any]]) -> dict[str, Any]:
            allowed = [r for r in rows if r["mixed"] <= MAX_MIXED * 100]
            if allowed:
                return max(allowed, key=lambda r: (r["t5_all"], r["t5"]))
            best = max(r["t5_all"] for r in rows)
            return min((r for r in rows if r["t5_all"] >= best - T5_SLACK),
                       key=lambda r: (r["mixed"], -r["t5_all"], -r["t5"]))

        if single:
            # nothing to choose but the floor (a fresh machine's short run): no end-to-end trial
            chosen = {"settings": {"relevance": {"floor": floor}, "stance": {"margin": margins[0]},
                                   "cluster": {"threshold": round(cut + raises[0], 4)},
                                   "expand": {"neighbours": neighbours[0], "agree": neighbours[0] > 0}}}
        else:
            margin_rows = [trial(m, 0) for m in margins]
            margin = pick(margin_rows)["settings"]["stance"]["margin"]
            rows = [r for r in margin_rows if r["settings"]["stance"]["margin"] == margin]
            rows += [trial(margin, n, cut + step) for step in raises for n in neighbours if (step, n) != (0.0, 0)]
            chosen = pick(rows)
    settings = chosen["settings"]
    for stage, values in (chosen_before if chosen_before is not None else carried_settings()).items():
        settings.setdefault(stage, {}).update(values)
    calibration = stance_calibration(dataset, pipe, split)
    settings["stance"].update(calibration["settings"])
    if not single:  # a fresh machine's short run has no end-to-end dev run to check it on
        shown = shown_calibration(claims, run(settings).discover_many(texts),
                                  float(pipe.settings["stance"]["threshold"]), calibration["settings"])
        calibration["shown"] = shown
        settings["stance"].update(shown["settings"])
    folder = settings_folder(pipe)
    held_out = best_relevance(probe, list(offtopic.HELD_OUT))
    record = {
        "system": pipe.system, "split": split, "tuned_on": split, "claims": len(claims),
        "settings": settings, "chosen": chosen,
        "rule": (f"floor: best separation of real and off-topic claims emptying at most {MAX_EMPTIED:.0%} of "
                 f"real ones; margin, then the clustering cut with expansion: best strict T5 with at most "
                 f"{MAX_MIXED:.0%} mixed clusters, else the least mixing within {T5_SLACK} of the best strict T5"),
        "floor": {"value": round(floor, 6), "tune": rates, "offtopic_tune": len(off),
                  "held_out": floor_rates(floor, [], held_out), "held_out_best": [round(v, 4) for v in held_out],
                  "real_best": [round(v, 4) for v in real_best], "offtopic_best": [round(v, 4) for v in off_best]},
        "calibration": calibration,
        "runs": runs,
        "seconds": round(time.perf_counter() - started, 1),
    }
    write_json(folder / PIPELINE_FILE, {"settings": settings, "tuned_on": split, "dev": chosen, "floor": record["floor"]["tune"],
                                        "calibration": calibration, "rule": record["rule"]})
    return record
