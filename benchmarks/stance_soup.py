"""Average the weights of stance models fine-tuned from one base (a "model soup"), tune it on dev.

    python -m benchmarks.stance_soup --name NAME --into MODELS A B [C ...]

Each of ``A``, ``B``, … is a models folder holding a ``stance`` model fine-tuned from the same
base. Their weights are averaged, one model, no slower to run than each; its thresholds are
chosen on dev as ``train`` chooses them (:func:`perspectrum.train.tasks.retune_task`), and it is
saved as ``MODELS/stance``. The run is merged into ``eval/results/stance_recipes_dev.json``
under ``NAME``. Dev only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.bench_batch import cpu_model
from benchmarks.stance_recipe import OUT, read_runs
from perspectrum import folders
from perspectrum import integrity
from perspectrum._io import write_json
from perspectrum.data import load_dataset
from perspectrum.encoders.bi_encoder import transformers_classes
from perspectrum.encoders.cross_encoder import META_FILE, CrossEncoderModel
from perspectrum.errors import PerspectrumError
from perspectrum.index.store import IndexStore
from perspectrum.models.store import read_meta, save_task
from perspectrum.train.tasks import retune_task


def soup(folders_in: list[Path], metas: list[dict[str, Any]]) -> tuple[object, object]:
    """The float model whose every weight is the mean of the models' in ``folders_in`` (whose
    ``stance`` metas are ``metas``), and the first one's tokenizer. Each folder's files are
    checked against their recorded sums first."""
    import torch

    for folder, meta in zip(folders_in, metas):
        integrity.check(folder / "stance", integrity.sealed(folder / "stance", meta, META_FILE))
    auto_model, auto_tokenizer = transformers_classes("AutoModelForSequenceClassification", "AutoTokenizer")
    models = [auto_model.from_pretrained(str(folder / "stance"), use_safetensors=True).eval() for folder in folders_in]
    states = [m.state_dict() for m in models]
    if any(set(s) != set(states[0]) for s in states):
        raise PerspectrumError("the models do not share one architecture: they cannot be averaged")
    averaged = {name: (torch.stack([s[name].float() for s in states]).mean(0).to(states[0][name].dtype)
                       if states[0][name].is_floating_point() else states[0][name]) for name in states[0]}
    models[0].load_state_dict(averaged)
    return models[0], auto_tokenizer.from_pretrained(str(folders_in[0] / "stance"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", required=True, help="the run's name in the JSON")
    parser.add_argument("--into", type=Path, required=True, help="models folder the averaged model is saved in")
    parser.add_argument("models", type=Path, nargs="+", help="models folders, each with a stance model")
    parser.add_argument("--json", type=Path, default=OUT)
    args = parser.parse_args()
    if len(args.models) < 2:
        sys.exit("a soup needs at least two models")
    metas = [read_meta(folder, "stance") for folder in args.models]
    if len({meta.get("base_model") for meta in metas}) != 1:
        sys.exit("the models were fine-tuned from different bases: they cannot be averaged")
    started = time.perf_counter()
    model, tokenizer = soup(args.models, metas)
    meta = {**metas[0], "soup": [{"config": m.get("config"), "seeds": m.get("seeds"), "dev": m.get("dev")}
                                 for m in metas], "test": None}
    member = CrossEncoderModel(model, tokenizer, {k: meta[k] for k in ("task", "params", "quantize")}, quantize=False)
    save_task(args.into / "stance", [member], meta)
    dataset = load_dataset()
    tuned = retune_task("stance", dataset, IndexStore(folders.index_dir(None)), args.into, show_progress=True)
    record = read_runs(args.json)
    record["runs"][args.name] = {
        "command": "python -m benchmarks.stance_soup --name NAME --into MODELS " + " ".join(
            f"MODELS_{i + 1}" for i in range(len(args.models))),
        "hardware": f"{os.cpu_count()} CPU cores ({platform.machine()}, {cpu_model()})",
        "soup_of": meta["soup"], "thresholds": tuned["thresholds"], "dev": tuned["dev"],
        "seconds": round(time.perf_counter() - started, 1)}
    write_json(args.json, record)
    print(json.dumps(tuned["dev"]), flush=True)


if __name__ == "__main__":
    main()
