"""``perspectrum train``: build a task's pairs, fine-tune, tune thresholds on dev, save.

One call of :func:`train_task` does the whole job for one task, so every model on
disk carries thresholds chosen on dev and the facts needed to reproduce it.
"""

from __future__ import annotations

import os
import platform
import random
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from perspectrum.encoders.base_models import MINILM, MPNET, base_folder
from perspectrum.encoders.cross_encoder import CrossEncoderModel
from perspectrum.encoders.device import choose
from perspectrum.train.fine_tune import TrainParams, fine_tune
from perspectrum.data import Claim, Dataset
from perspectrum.eval import trained
from perspectrum.eval.metrics import percent
from perspectrum.train.examples import (counterfactual_examples, equivalence_examples, evidence_examples, Examples,
                                        forms_examples, relevance_examples, stance_examples,
                                        unit_equivalence_examples)
from perspectrum.index.store import IndexStore
from perspectrum.models.store import load_task, read_meta, save_ranker, save_task, update_meta
from perspectrum.models.evidence_ranker import EvidenceRanker, Featurizer
from perspectrum.train.fit_ranker import fit_ranker
from perspectrum.models.scorers import PIPELINE_FILE
from perspectrum.models.scorers import MODELS
from perspectrum.index.search import Hit

@dataclass(frozen=True)
class TaskConfig:
    """How one task's model is trained.

    Attributes:
        params: fine-tuning settings (the seed is overridden by ``train_task``'s).
        negatives_per_positive: retrieved or cross-cluster negatives per positive.
        max_examples: cap on training pairs (a seeded sample), to bound CPU time.
        members: ensemble size; member i uses seed + i.
        soft_labels: stance only — train towards the annotators' vote share.
        base: the model fine-tuned from (see :mod:`perspectrum.encoders.base_models`).
        quantize: score in int8; MPNet loses its accuracy to it (dev stance 86 % → 67 %).
        dev_share: share of the dev claims (a seeded sample) scored to tune the thresholds;
            a recipe may read fewer to keep its training short.
        counterfactual: stance only — pairs under the claims' opposites, labels flipped
            (:func:`~perspectrum.train.examples.counterfactual_examples`), added per gold pair
            (a seeded sample; 1: all of them) before the ``max_examples`` sample.
        forms: stance only — pairs under the claims as a question or a debate motion, labels
            kept (:func:`~perspectrum.train.examples.forms_examples`), this many per pair drawn
            so far (gold and counterfactual; a seeded sample), before the ``max_examples`` sample.
        evidence: stance only — windows of the gold clusters' evidence paragraphs with the
            cluster's target (:func:`~perspectrum.train.examples.evidence_examples`), this many
            per pair drawn so far (a seeded sample), before the ``max_examples`` sample.
        units: equivalence only — pairs of evidence sentences, two of one gold cluster's
            paragraphs positive, one of another cluster's negative
            (:func:`~perspectrum.train.examples.unit_equivalence_examples`), this many per
            perspective pair (a seeded draw), before the ``max_examples`` sample.
    """

    params: TrainParams
    negatives_per_positive: float = 0.0
    max_examples: int | None = None
    members: int = 1
    soft_labels: bool = True
    base: str = MINILM
    quantize: bool = True
    dev_share: float = 1.0
    counterfactual: float = 0.0
    forms: float = 0.0
    evidence: float = 0.0
    units: float = 0.0


#: Batches of similar length (``length_batches``) cut padding: on dev, relevance trained in 382 s
#: against 976 s (F1 58.30 against 58.43), equivalence in 450 s against 1,148 s (T3 F1 63.56
#: against 62.85), stance in 1,804 s against 2,451 s (accuracy 87.8 % against 87.2 %)
#: (eval/results/*_training.json, variant "length-batches").
CONFIGS: dict[str, TaskConfig] = {
    "relevance": TaskConfig(TrainParams(epochs=1, max_length=64, length_batches=True), negatives_per_positive=2.0),
    # MPNet-base, one run: dev accuracy 86.4 % against 72.2 % for three MiniLM runs. Half as many
    # pairs again under the claims' negations: dev 86.58 % → 87.45 %, negated claims 69.6 % → 83.4 %;
    # then 0.3 as many again under the claims as questions or motions: dev 87.45 % → 88.27 %
    # (eval/results/stance_recipes_dev.json, stance_checks_recipes_dev.json).
    "stance": TaskConfig(TrainParams(epochs=2, max_length=64, learning_rate=2e-5, length_batches=True), base=MPNET,
                         quantize=False, counterfactual=0.5, forms=0.3),
    "equivalence": TaskConfig(TrainParams(epochs=1, max_length=96, length_batches=True), negatives_per_positive=1.0),
}

#: ``--quick``: a slice small enough for tests, same code path.
QUICK_CLAIMS = 4
QUICK_EXAMPLES = 48


def quick(config: TaskConfig) -> TaskConfig:
    """The same recipe on a tiny slice: one epoch, few pairs, one member, MiniLM."""
    return replace(config, params=replace(config.params, epochs=1, batch_size=8),
                   max_examples=QUICK_EXAMPLES, members=1, base=MINILM)


def _claims(dataset: Dataset, split: str, is_quick: bool) -> list[Claim]:
    """The split's claims, or its first ``QUICK_CLAIMS`` in quick mode."""
    claims = dataset.split(split)
    return claims[:QUICK_CLAIMS] if is_quick else claims


def _ids(runs: dict[Any, list[Hit]]) -> dict[Any, list[int]]:
    return {key: [hit.doc_id for hit in hits] for key, hits in runs.items()}


def build_examples(task: str, dataset: Dataset, claims: list[Claim], store: IndexStore, config: TaskConfig,
                   seed: int) -> tuple[Examples, str]:
    """The task's training pairs (capped by ``config.max_examples``) and how they were made."""
    ratio = config.negatives_per_positive
    if task == "relevance":
        hits = trained.relevance_candidates(store, dataset, claims)
        examples = relevance_examples(dataset, claims, _ids(hits), ratio, seed)
        how = (f"gold perspectives positive; {ratio:g} negatives per positive drawn from the claim's "
               f"dense top-{trained.RELEVANCE_DEPTH} that are not gold")
    elif task == "stance":
        examples = stance_examples(dataset, claims, soft=config.soft_labels)
        how = "every gold (claim, perspective); target = annotators' support share on the gold side"
        if config.counterfactual:
            opposite = counterfactual_examples(dataset, claims, soft=config.soft_labels)
            opposite = opposite.sample(round(config.counterfactual * len(examples)), seed + 1)
            examples = examples + opposite
            how += f"; {len(opposite):,} more under the claims' negations, targets flipped"
        if config.forms:
            restated = forms_examples(dataset, claims, soft=config.soft_labels)
            restated = restated.sample(round(config.forms * len(examples)), seed + 3)
            examples = examples + restated
            how += f"; {len(restated):,} more under the claims as questions or motions, targets kept"
        if config.evidence:
            backing = evidence_examples(dataset, claims, soft=config.soft_labels)
            backing = backing.sample(round(config.evidence * len(examples)), seed + 2)
            examples = examples + backing
            how += f"; {len(backing):,} windows of the clusters' evidence, the cluster's target"
    elif task == "equivalence":
        examples = equivalence_examples(dataset, claims, ratio, seed)
        how = f"pairs within a gold cluster positive; {ratio:g} cross-cluster pairs per positive"
        if config.units:
            said = unit_equivalence_examples(dataset, claims, round(config.units * len(examples)), seed + 4)
            examples = examples + said
            how += (f"; {len(said):,} pairs of evidence sentences, one cluster's positive, "
                    "another cluster's of the claim negative")
    else:
        raise ValueError(f"unknown task {task!r}")
    sampled = examples.sample(config.max_examples, seed)
    if len(sampled) < len(examples):
        how += f"; a seeded sample of {len(sampled):,} of the {len(examples):,} built"
    return sampled, how


#: The evidence cut `discover` uses: the ranker's probability alone, no window blend.
RANKER_ONLY = {"weight": 0.0, "aggregate": "max"}


def _tune_on_dev(task: str, members: list[CrossEncoderModel], dataset: Dataset, store: IndexStore,
                 is_quick: bool, show_progress: bool, ranker: EvidenceRanker | None = None,
                 share: float = 1.0, seed: int = 13) -> dict[str, Any]:
    """Score dev (the quick slice for quick models; a seeded ``share`` of its claims), choose
    the cut-offs, and say so.

    Returns the meta entries this sets: thresholds, dev metrics, dev pairs/s, and no
    test metrics (any earlier ones belonged to other thresholds).
    """
    dev_claims = _claims(dataset, "dev", is_quick)
    if share < 1.0:
        keep = set(random.Random(seed).sample(range(len(dev_claims)), max(1, round(share * len(dev_claims)))))
        dev_claims = [c for n, c in enumerate(dev_claims) if n in keep]
    timing: dict[str, float] = {}
    scores = trained.score_split(task, members, dataset, dev_claims, store, show_progress, timing, ranker)
    setting, dev_metrics = trained.tune(task, dev_claims, scores)
    changes = {"thresholds": setting, "dev": percent(dev_metrics), "dev_pairs_per_second": timing, "test": None,
               "dev_claims": len(dev_claims)}
    if task == "evidence":
        # `discover` cuts on the ranker alone and runs windows only on what it keeps
        ranker_only, ranker_metrics = trained.tune(task, dev_claims, scores, only=RANKER_ONLY)
        changes["ranker_thresholds"] = {**ranker_only, "dev_f1": round(ranker_metrics["f1"] * 100, 2)}
    return changes


def train_task(
    task: str,
    dataset: Dataset,
    store: IndexStore,
    models_dir: str | Path,
    seed: int = 13,
    is_quick: bool = False,
    show_progress: bool = False,
    data_checksum: str = "unknown",
    config: TaskConfig | None = None,
) -> dict[str, Any]:
    """Train ``task``'s model(s), tune its thresholds on dev, save ``models_dir/task``.

    ``config`` replaces the task's recipe in :data:`CONFIGS` (benchmarks of other recipes);
    evidence has none (:func:`train_evidence`).

    Returns:
        The saved meta: examples, training stats, thresholds, dev metrics.
    """
    if task not in MODELS:
        raise ValueError(f"unknown task {task!r}")
    if task == "evidence":
        if config is not None:
            raise ValueError("the evidence ranker has no fine-tuning recipe")
        return train_evidence(dataset, store, models_dir, seed, is_quick, show_progress, data_checksum)
    config = config or CONFIGS[task]
    config = quick(config) if is_quick else config
    train_claims = _claims(dataset, "train", is_quick)
    started = time.perf_counter()
    examples, how = build_examples(task, dataset, train_claims, store, config, seed)
    build_seconds = time.perf_counter() - started
    base = base_folder(config.base, models_dir)
    members, runs = [], []
    for i in range(config.members):
        params = replace(config.params, seed=seed + i)
        label = f"train {task}" + (f" {i + 1}/{config.members}" if config.members > 1 else "")
        model, tokenizer, stats = fine_tune(examples.pairs, examples.targets, params, base,
                                            show_progress=show_progress, description=label)
        member_meta = {"task": task, "params": params.to_dict(), "quantize": config.quantize}
        members.append(CrossEncoderModel(model, tokenizer, member_meta, config.quantize, device=choose()))
        runs.append(stats)
    train_seconds = time.perf_counter() - started
    meta = {
        "task": task,
        "base_model": config.base,
        "quantize": config.quantize,
        "data_checksum": data_checksum,
        "quick": is_quick,
        "params": members[0].meta["params"],
        "seeds": [seed + i for i in range(config.members)],
        "config": {"negatives_per_positive": config.negatives_per_positive,
                   "max_examples": config.max_examples, "soft_labels": config.soft_labels,
                   "counterfactual": config.counterfactual, "forms": config.forms,
                   "evidence": config.evidence, "units": config.units},
        "examples": {"examples": len(examples), "positives": examples.positives, "how": how,
                     "build_seconds": round(build_seconds, 1)},
        "runs": runs,
        "train_seconds": round(train_seconds, 1),
        "hardware": f"{os.cpu_count()} CPU cores ({platform.machine()})",
        "tuned_on": "dev",
        **_tune_on_dev(task, members, dataset, store, is_quick, show_progress, share=config.dev_share, seed=seed),
    }
    save_task(Path(models_dir) / task, members, meta)
    _forget_pipeline_settings(models_dir)
    return meta


def train_evidence(dataset: Dataset, store: IndexStore, models_dir: str | Path, seed: int = 13,
                   is_quick: bool = False, show_progress: bool = False,
                   data_checksum: str = "unknown") -> dict[str, Any]:
    """Fit the evidence ranker and its window verifier on train, tune the cut on dev, and
    save ``models_dir/evidence`` (``ranker.npz``, ``perspectrum.json``, a card).

    No cross-encoder: the window cross-encoder of earlier versions took 22 of the 78 minutes
    of ``train all`` for +0.3 dev T4 F1, and its windows were close to arbitrary (training
    loss 0.688, chance 0.693). The verifier's best window now stands in its place, both in
    the gold-input blend tuned here and as ``discover``'s highlight.
    """
    started = time.perf_counter()
    featurizer = Featurizer.for_dataset(store, dataset, show_progress)
    ranker, ranker_meta = fit_ranker(featurizer, dataset, _claims(dataset, "train", is_quick), seed)
    meta = {
        "task": "evidence",
        "kind": "ranker",
        "encoder": store.encoder.identity,
        "data_checksum": data_checksum,
        "quick": is_quick,
        "seeds": [seed],
        "examples": {"examples": ranker_meta["candidates"], "positives": ranker_meta["positives"],
                     "how": f"each training cluster's hybrid top-{ranker_meta['depth']} paragraphs (label: that "
                            "cluster's gold evidence) and their 3-sentence windows"},
        "ranker": ranker_meta,
        "train_seconds": round(time.perf_counter() - started, 1),
        "hardware": f"{os.cpu_count()} CPU cores ({platform.machine()})",
        "tuned_on": "dev",
        **_tune_on_dev("evidence", [], dataset, store, is_quick, show_progress, ranker, seed=seed),
    }
    save_ranker(Path(models_dir) / "evidence", ranker, meta)
    _forget_pipeline_settings(models_dir)
    return meta


def retune_task(task: str, dataset: Dataset, store: IndexStore, models_dir: str | Path,
                show_progress: bool = False) -> dict[str, Any]:
    """Keep a trained model's weights; re-score dev and choose its thresholds again.

    For when the cut-off search changes (it takes minutes, retraining takes many).
    Evidence fits its ranker again (two minutes, deterministic for the model's seed): its
    fit is its whole training. The old test metrics no longer match the new thresholds
    and are cleared.
    """
    meta = read_meta(models_dir, task)
    if task == "evidence":
        return train_evidence(dataset, store, models_dir, meta["seeds"][0], bool(meta.get("quick")), show_progress,
                              meta.get("data_checksum", "unknown"))
    members = load_task(models_dir, task)
    changes = _tune_on_dev(task, members, dataset, store, bool(meta.get("quick")), show_progress)
    _forget_pipeline_settings(models_dir)
    return update_meta(models_dir, task, changes)


def _forget_pipeline_settings(models_dir: str | Path) -> None:
    """Drop ``pipeline.json``: it was chosen for the models this call has just replaced
    (``perspectrum tune``, or ``train all``, chooses it again)."""
    (Path(models_dir) / PIPELINE_FILE).unlink(missing_ok=True)
