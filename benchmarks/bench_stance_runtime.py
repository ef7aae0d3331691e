"""Benchmark ways to run the stance model on a CPU: does any make `discover` cheaper?

    python -m benchmarks.bench_stance_runtime [--model models/stance] [--claims 24]
                                              [--json eval/results/bench_stance_runtime_trained_dev.json]

Stance is read for every kept perspective of a claim (up to 30), so the stance model's
forward pass on one claim's pairs is what `discover` pays for it. This times that pass,
one dev claim at a time (its gold perspectives, at most 30, sorted by length as
`CrossEncoderModel.score` sorts them), for each way to run the same weights:

- torch float, eager (transformers) and as the TorchScript copy the runtime uses;
- ONNX Runtime float (needs `pip install -e ".[bench]"`): the kept library the issue
  names, which in float gives the model's own scores, so tuned thresholds stay valid;
- int8 dynamic quantisation: torch per-tensor (the MiniLM models' setting) and
  per-channel, and ONNX Runtime per-channel.

For each it reports the median milliseconds per claim, pairs per second, the largest
difference in P(support) from the float model, and, for a trained model, how many
pairs change side at its dev-tuned threshold and the accuracy against the gold stance. Without a trained stance model it times
MPNet-base with a new head (same arithmetic, meaningless scores: no side agreement).
"""

from __future__ import annotations

import argparse
import copy
import os
import platform
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from perspectrum._io import write_json
from perspectrum.encoders.cross_encoder import META_FILE
from perspectrum.data import load_dataset

ROOT = Path(__file__).resolve().parents[1]

#: Most perspectives the pipeline keeps for one claim (PipelineConfig.max_perspectives).
PER_CLAIM = 30


def claim_batches(count: int, tokenizer: Any, max_length: int) -> tuple[list[dict[str, Any]], np.ndarray]:
    """Tokenised (claim, perspective) batches of ``count`` dev claims, one batch per claim,
    and whether each pair's gold cluster supports its claim (in batch order)."""
    dataset = load_dataset()
    batches, gold = [], []
    for claim in dataset.split("dev")[:count]:
        pairs = sorted([(dataset.perspectives[p].text, c.stance == "SUPPORT") for c in claim.clusters
                        for p in c.pids][:PER_CLAIM], key=lambda pair: len(pair[0]))
        gold += [support for _, support in pairs]
        batches.append(dict(tokenizer([claim.text] * len(pairs), [text for text, _ in pairs], truncation=True,
                                      max_length=max_length, padding=True, return_tensors="pt")))
    return batches, np.array(gold)


def timed(run: Callable[[dict[str, Any]], np.ndarray],
          batches: list[dict[str, Any]]) -> tuple[list[float], np.ndarray]:
    """Seconds per batch (after one warm-up call) and the logits of every batch."""
    run(batches[0])
    seconds, outputs = [], []
    for batch in batches:
        started = time.perf_counter()
        outputs.append(run(batch))
        seconds.append(time.perf_counter() - started)
    return seconds, np.concatenate(outputs)


def positional(model: Any, names: list[str]) -> Any:
    """``model`` as a module that takes its input tensors by position and returns the logits:
    the form tracing and ONNX export record."""
    import torch

    class Positional(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            return self.model(**dict(zip(names, inputs))).logits

    return Positional().eval()


def onnx_session(model: Any, names: list[str], example: dict[str, Any], folder: Path, quantize: bool) -> Any:
    """An ONNX Runtime session of ``model`` (exported by torch's TorchScript-based exporter)."""
    import onnxruntime
    import torch

    path = folder / "model.onnx"
    axes = {name: {0: "batch", 1: "tokens"} for name in names} | {"logits": {0: "batch"}}
    torch.onnx.export(positional(model, names), tuple(example[n] for n in names), str(path), input_names=names,
                      output_names=["logits"], dynamic_axes=axes, opset_version=17, dynamo=False)
    if quantize:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        quantize_dynamic(str(path), str(folder / "int8.onnx"), per_channel=True, weight_type=QuantType.QInt8)
        path = folder / "int8.onnx"
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = torch.get_num_threads()
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=ROOT / "models" / "stance")
    parser.add_argument("--claims", type=int, default=48)
    parser.add_argument("--json", type=Path, default=ROOT / "eval" / "results" / "bench_stance_runtime_trained_dev.json")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    warnings.simplefilter("ignore")
    import torch
    from torch.ao.quantization import default_dynamic_qconfig, per_channel_dynamic_qconfig, quantize_dynamic
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging

    logging.set_verbosity_error()
    trained = (args.model / META_FILE).is_file()
    folder = args.model if trained else ROOT / "models" / "base" / "all-mpnet-base-v2"
    if not (folder / "config.json").is_file():
        raise SystemExit(f"no stance model in {args.model} and no MPNet base in {folder}: "
                         "run `perspectrum train stance` first")
    meta = __import__("json").loads((folder / META_FILE).read_text()) if trained else {}
    threshold = meta.get("thresholds", {}).get("threshold")
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModelForSequenceClassification.from_pretrained(str(folder), num_labels=1).eval()
    names = ["input_ids", "attention_mask", *(["token_type_ids"] if getattr(model.config, "type_vocab_size", 0) > 1
                                             else [])]
    batches, gold = claim_batches(args.claims, tokenizer, int(meta.get("params", {}).get("max_length", 64)))

    def torch_run(module: Any) -> Callable[[dict[str, Any]], np.ndarray]:
        def run(batch: dict[str, Any]) -> np.ndarray:
            with torch.inference_mode():
                return module(**{n: batch[n] for n in names}).logits[:, 0].numpy()
        return run

    with torch.inference_mode():
        traced = torch.jit.trace(positional(model, names), tuple(batches[0][n] for n in names), check_trace=False)
    runs: dict[str, Callable[[dict[str, Any]], np.ndarray]] = {
        "torch float (eager)": torch_run(model),
        "TorchScript float (the runtime's copy)": lambda b: traced(*(b[n] for n in names))[:, 0].detach().numpy(),
        "torch int8 per-tensor": torch_run(quantize_dynamic(copy.deepcopy(model), {torch.nn.Linear: default_dynamic_qconfig},
                                                            dtype=torch.qint8)),
        "torch int8 per-channel": torch_run(quantize_dynamic(copy.deepcopy(model),
                                                             {torch.nn.Linear: per_channel_dynamic_qconfig},
                                                             dtype=torch.qint8)),
    }
    scratch = tempfile.TemporaryDirectory()
    try:
        for label, quantize in (("ONNX Runtime float", False), ("ONNX Runtime int8 per-channel", True)):
            sub = Path(scratch.name) / label.split()[-1]
            sub.mkdir()
            session = onnx_session(model, names, batches[0], sub, quantize)
            runs[label] = lambda b, s=session: s.run(None, {n: b[n].numpy() for n in names})[0][:, 0]
    except ImportError as exc:
        print(f"ONNX Runtime variants skipped ({exc.name} is not installed: pip install -e '.[bench]')")

    pairs = sum(len(b["input_ids"]) for b in batches)
    result: dict[str, Any] = {"model": str(folder.relative_to(ROOT)) if folder.is_relative_to(ROOT) else str(folder),
                              "trained": trained, "threshold": threshold, "claims": len(batches), "pairs": pairs,
                              "hardware": f"{os.cpu_count()} CPU cores ({platform.machine()}, {platform.processor()})",
                              "torch_threads": torch.get_num_threads(), "variants": {}}
    reference: np.ndarray | None = None
    for label, run in runs.items():
        seconds, logits = timed(run, batches)
        support = 1 / (1 + np.exp(-logits.astype(np.float64)))
        reference = support if reference is None else reference
        row = {"ms_per_claim_p50": round(float(np.median(seconds)) * 1000, 1),
               "pairs_per_second": round(pairs / sum(seconds), 1),
               "max_probability_difference": round(float(np.abs(support - reference).max()), 6)}
        if threshold is not None:
            row["side_changes"] = int(((support >= threshold) != (reference >= threshold)).sum())
            row["gold_accuracy"] = round(float(((support >= threshold) == gold).mean()) * 100, 1)
        result["variants"][label] = row
        print(f"{label:40s} {row}", flush=True)
    scratch.cleanup()
    write_json(args.json, result)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
