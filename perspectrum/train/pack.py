"""Pack trained models small, for shipping inside the package (``perspectrum models pack``).

Each fine-tuned cross-encoder of ``models/`` is stored as its difference from the base
encoder pip installs (:mod:`perspectrum.models.deltas`), in the form :data:`FORMS` names
for it: every weight matrix's change in int8 per row, or its leading singular directions
(a low-rank change, the factors in int8 per row), per weight by name. The forms were chosen
on dev (``python -m benchmarks.small_forms``, ``eval/results/small_forms_shipped_dev.json``): the
smallest whose dev metric, at the full model's dev-chosen thresholds, stays within
:data:`TOLERANCE` points of the full model's. The evidence ranker (arrays, a few MB) and
``pipeline.json`` are copied as they are. Every packed model records the scores it gives a
few fixed pairs, which unpacking checks (:func:`perspectrum.models.shipped.unpack`).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from perspectrum import integrity
from perspectrum._io import atomic_folder
from perspectrum._progress import say
from perspectrum.encoders.base_models import base_folder
from perspectrum.data import Dataset
from perspectrum.encoders.cross_encoder import META_FILE, CrossEncoderModel
from perspectrum.eval import trained
from perspectrum.eval.metrics import percent
from perspectrum.index.store import IndexStore
from perspectrum.errors import PerspectrumError
from perspectrum.integrity import CARD
from perspectrum.models.deltas import BASE_WEIGHTS, FORMAT, base_weights
from perspectrum.models.scorers import CROSS_ENCODED, PIPELINE_FILE
from perspectrum.models.shipped import DELTA_FILE, MANIFEST, NOT_KEPT, pieces, check_pairs, compose, shipped_card
from perspectrum.models.store import read_meta, seal

#: How each model's change is stored: (part of a weight's name, form), the first match
#: wins; a form is "int8" (the whole change, int8 per row), "rank:R" (its R leading
#: singular directions) or "base" (no change kept). Chosen on dev (module docstring).
FORMS: dict[str, tuple[tuple[str, str], ...]] = {
    "relevance": (("word_embeddings", "base"), ("", "int8")),
    "stance": (("word_embeddings", "rank:16"), ("", "rank:96")),
    "equivalence": (("word_embeddings", "rank:16"), ("", "int8")),
}
#: Dev metric points a small form may lose against its full model, on its task's key metric.
TOLERANCE = 0.5
#: Each task's key dev metric, as its model's card stores it.
KEY = {"relevance": "f1", "stance": "accuracy", "equivalence": "f1"}


def _quantize(matrix: Any) -> tuple[Any, Any]:
    """int8 rows and their float32 scales (symmetric: the row's largest change maps to 127)."""
    import torch

    scale = matrix.abs().amax(dim=1).clamp_min(1e-12) / 127.0
    q = torch.round(matrix / scale.unsqueeze(1)).clamp_(-127, 127).to(torch.int8)
    return q, scale.float()


def _form(name: str, forms: Sequence[tuple[str, str]]) -> str:
    return next(form for part, form in forms if part in name)


def base_name(name: str, base: Mapping[str, Any]) -> str | None:
    """The base weight a fine-tuned weight starts from: the same name, or the name without the
    task model's prefix (``bert.``, ``mpnet.``); ``None`` for a weight the base lacks (the head)."""
    if name in base:
        return name
    rest = name.split(".", 1)[-1]
    return rest if rest in base else None


def small_form(tuned: Mapping[str, Any], base: Mapping[str, Any],
               forms: Sequence[tuple[str, str]]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The tensors and the (weight, base weight) list of ``tuned``'s difference from ``base``."""
    import torch

    tensors: dict[str, Any] = {}
    names = []
    for name, weight in tuned.items():
        origin = base_name(name, base)
        names.append((name, origin or ""))
        if origin is None or weight.ndim != 2 or not weight.is_floating_point():
            tensors[f"full/{name}"] = weight.float() if weight.is_floating_point() else weight
            continue
        change = weight.float() - base[origin].float()
        form = _form(name, forms)
        if form == "int8":
            tensors[f"int8/{name}"], tensors[f"int8/{name}/scale"] = _quantize(change)
        elif form.startswith("rank:"):
            rank = min(int(form.split(":")[1]), *change.shape)
            u, s, vh = torch.linalg.svd(change, full_matrices=False)
            a, b = u[:, :rank] * s[:rank], vh[:rank]
            tensors[f"lowrank/{name}/a"], tensors[f"lowrank/{name}/a/scale"] = _quantize(a)
            tensors[f"lowrank/{name}/b"], tensors[f"lowrank/{name}/b/scale"] = _quantize(b)
        elif form != "base":
            raise ValueError(f"unknown form {form!r}")
    return {k: v.contiguous() for k, v in tensors.items()}, names


def write_delta(path: Path, tensors: Mapping[str, Any], names: Sequence[tuple[str, str]]) -> None:
    from safetensors.torch import save_file

    save_file(dict(tensors), str(path), metadata={"format": FORMAT, "names": json.dumps(list(names))})


def change_error(tuned: Mapping[str, Any], base: Mapping[str, Any], rebuilt: Mapping[str, Any]) -> float:
    """How much of the fine-tune's change the small form loses: ‖rebuilt − tuned‖ / ‖tuned − base‖
    over every weight matrix the base has."""
    lost = kept = 0.0
    for name, weight in tuned.items():
        origin = base_name(name, base)
        if origin is None or weight.ndim != 2:
            continue
        lost += float(((rebuilt[name] - weight.float()) ** 2).sum())
        kept += float(((weight.float() - base[origin].float()) ** 2).sum())
    return (lost / kept) ** 0.5 if kept else 0.0


def dev_metrics(task: str, model: Any, folder: Path, meta: Mapping[str, Any], dataset: Dataset,
                store: IndexStore) -> dict[str, float]:
    """A composed model's dev metrics (percent) at the thresholds its full model chose on dev."""
    from perspectrum.encoders.bi_encoder import transformers_classes

    (AutoTokenizer,) = transformers_classes("AutoTokenizer")
    member = CrossEncoderModel(model, AutoTokenizer.from_pretrained(str(folder)), dict(meta),
                               quantize=bool(meta.get("quantize", True)))
    claims = dataset.split("dev")
    scores = trained.score_split(task, [member], dataset, claims, store, show_progress=True)
    return percent(trained.metric(task, claims, scores, meta["thresholds"]))


def pack_task(models_dir: Path, task: str, into: Path, forms: Sequence[tuple[str, str]] | None = None,
              dev: tuple[Dataset, IndexStore] | None = None, tolerance: float | None = TOLERANCE) -> dict[str, Any]:
    """Write ``models_dir/task`` in its small form into the new folder ``into``; returns its meta.

    With ``dev`` (the dataset and its indexes), the small form is scored on dev at the full
    model's thresholds, recorded in the meta, and refused if it loses more than ``tolerance``
    points of its task's key metric (``None``: recorded only, for measuring forms)."""
    from safetensors.torch import load_file

    source = Path(models_dir) / task
    meta = read_meta(models_dir, task)
    if meta.get("members"):
        raise PerspectrumError(f"{source} is an ensemble; only single models are packed")
    integrity.check(source, integrity.recorded(meta.get("files"), source / META_FILE))
    forms = tuple(forms or FORMS[task])
    base = base_weights(base_folder(meta["base_model"], models_dir))
    tuned = load_file(str(source / BASE_WEIGHTS))
    tensors, names = small_form(tuned, base, forms)
    into.mkdir(parents=True)
    write_delta(into / DELTA_FILE, tensors, names)
    for path in sorted(source.iterdir()):
        if path.is_file() and path.name not in NOT_KEPT:
            shutil.copy2(path, into / path.name)
    model = compose(into, meta, base)
    packed = {key: value for key, value in meta.items() if key != "files"}
    packed["shipped"] = {
        "form": [list(f) for f in forms],
        "delta_bytes": (into / DELTA_FILE).stat().st_size,
        "change_lost": round(change_error(tuned, base, model.state_dict()), 4),
        "full_dev": meta.get("dev"),
        "check": check_pairs(model, into, meta),
    }
    if dev is not None:
        packed["shipped"]["dev"] = dev_metrics(task, model, into, meta, *dev)
        lost = meta["dev"][KEY[task]] - packed["shipped"]["dev"][KEY[task]]
        if tolerance is not None and lost > tolerance:
            raise PerspectrumError(f"{task} packed as {list(forms)} loses {lost:.2f} points of dev {KEY[task]} "
                                   f"(at most {tolerance}): choose a larger form")
    seal(into, packed)
    (into / CARD).write_text(shipped_card(packed), encoding="utf-8")
    return packed


def pack(models_dir: str | Path, into: str | Path, dev: tuple[Dataset, IndexStore] | None = None) -> dict[str, Any]:
    """Pack the four trained models of ``models_dir`` and its ``pipeline.json`` into ``into``
    (the layout :func:`perspectrum.models.shipped.unpack` reads), whole or not at all, each
    small form checked on ``dev`` when given (:func:`pack_task`); returns each cross-encoder's
    ``shipped`` record."""
    models_dir, into = Path(models_dir), Path(into)
    if not (models_dir / PIPELINE_FILE).is_file():
        raise PerspectrumError(f"{models_dir} has no {PIPELINE_FILE}: run `perspectrum tune` first")
    out: dict[str, Any] = {}

    def write(tmp: Path) -> None:
        for task in CROSS_ENCODED:
            say(f"packing {task}")
            out[task] = pack_task(models_dir, task, tmp / task, dev=dev)["shipped"]
        evidence = models_dir / "evidence"
        integrity.check(evidence, integrity.recorded(read_meta(models_dir, "evidence").get("files"),
                                                     evidence / META_FILE))
        shutil.copytree(evidence, tmp / "evidence")
        shutil.copy2(models_dir / PIPELINE_FILE, tmp / PIPELINE_FILE)
        sums = {piece: integrity.sha256_file(tmp / piece) for piece in pieces()}
        (tmp / MANIFEST).write_text(json.dumps({"files": sums}, indent=2) + "\n", encoding="utf-8")

    atomic_folder(into, write)
    return out
