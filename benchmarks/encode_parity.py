"""Cheaper evidence vectors for a first run: how fast, and how close to float32's?

    python -m benchmarks.encode_parity [--sample 300] [--json eval/results/encode_parity_base_dev.json]

What an index build adopts (``bfloat16``): each of the evidence and perspective pools encoded
whole in bfloat16 autocast, at the batch size the indexes use, against the float32 vectors
of the built indexes: speed, cosine, overlap@10 and @20 of the dev claims' nearest
documents, and the recall@20 of their gold evidence and perspectives both ways. Run it on
indexes built in float32 (``DenseParams(build_precision="float32")``), on a CPU with native
bfloat16. ``batch sizes``: a sample of paragraphs and of sentences in float32 at 16, 32 and 64.

A fresh machine spends most of its index time encoding the 8,092 evidence paragraphs (at
MiniLM's 256 tokens) and their 52,173 sentences. Three ways to spend less, each compared with
today's float paragraph vectors:

- ``int8``: MiniLM with its linear layers in int8 (torch dynamic quantisation), as the
  cross-encoders run;
- ``128 tokens``: paragraphs cut at 128 tokens instead of 256;
- ``mean of sentences``: no paragraph encoding at all, each paragraph's vector the normalised
  mean of its sentences' vectors (which the sentence index holds anyway).

For the first two, a seeded sample of paragraphs is encoded both ways (each timed twice,
interleaved; the figure is the faster run) and compared by cosine to the float vector and by
overlap@10 of the dev claims' nearest paragraphs within the sample. For the mean of
sentences, every paragraph: cosine, overlap@10 and @20 of the dev claims' nearest paragraphs
in the whole pool, and the recall@20 of the claims' gold evidence both ways. Needs the built
evidence and sentence dense indexes (``$PERSPECTRUM_INDEXES``). Reads dev only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from perspectrum import folders
from perspectrum._io import write_json
from perspectrum.data import Pool, load_dataset
from perspectrum.encoders import traced
from perspectrum.encoders.bi_encoder import Encoder, default_encoder_path, transformers_classes

ROOT = Path(__file__).resolve().parents[1]


def _stored(folder: Path) -> tuple[list[Any], np.ndarray]:
    """The ids and vectors of a built dense index."""
    import faiss

    index = faiss.read_index(str(folder / "index.faiss"))
    ids = [json.loads(line) for line in (folder / "docids.jsonl").read_text(encoding="utf-8").splitlines()]
    return ids, index.reconstruct_n(0, index.ntotal)


def _nearest(vectors: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    return np.argsort(-(queries @ vectors.T), axis=1)[:, :k]


def _overlap(a: np.ndarray, b: np.ndarray, k: int) -> float:
    return round(float(np.mean([len(set(x[:k]) & set(y[:k])) / k for x, y in zip(a, b)])), 3)


def _bfloat16(root: Path, dataset: Any, claims: list[Any], queries: np.ndarray) -> dict[str, Any]:
    """Each pool encoded whole in bfloat16 against its built (float32) index's vectors."""
    from perspectrum.config import DenseParams
    from perspectrum.encoders.bi_encoder import native_bfloat16

    encoder, batch = Encoder(), DenseParams().batch_size
    out: dict[str, Any] = {"native": native_bfloat16(), "batch_size": batch}
    gold = {"evidence": [{e for cluster in c.clusters for e in cluster.evidence} for c in claims],
            "perspectives": [set(c.gold_pids) for c in claims]}
    for name in ("evidence", "perspectives"):
        ids, stored = _stored(root / name / "dense")
        meta = json.loads((root / name / "dense" / "meta.json").read_text(encoding="utf-8"))
        if meta["settings"].get("precision", "float32") != "float32":
            raise SystemExit(f"the {name} index was not built in float32; build it with build_precision='float32'")
        documents = Pool.from_dataset(dataset, name)
        pool = dict(zip(documents.ids, documents.texts))
        texts = [pool[i] for i in ids]
        timed = {}
        for precision in ("float32", "bfloat16"):
            started = time.perf_counter()
            vectors = encoder.encode(texts, batch, precision=precision)
            timed[precision] = time.perf_counter() - started
        cosine = (vectors * stored).sum(1)
        near, cheap = _nearest(stored, queries, 20), _nearest(vectors, queries, 20)

        def recall(found: np.ndarray) -> float:
            hits = sum(len(g & {ids[i] for i in row}) for g, row in zip(gold[name], found))
            return round(100 * hits / sum(map(len, gold[name])), 2)

        out[name] = {"documents": len(ids), "seconds": {k: round(v, 1) for k, v in timed.items()},
                     "speed_up": round(timed["float32"] / timed["bfloat16"], 2),
                     "cosine_min": round(float(cosine.min()), 5), "cosine_median": round(float(np.median(cosine)), 5),
                     "overlap_at_10": _overlap(near, cheap, 10), "overlap_at_20": _overlap(near, cheap, 20),
                     "gold_recall_at_20": {"float32": recall(near), "bfloat16": recall(cheap)}}
    return out


def _batch_sizes(paragraphs: list[str], sentences: list[str]) -> dict[str, Any]:
    """Texts a second in float32 at three batch sizes, on seeded samples (the faster of two runs)."""
    encoder = Encoder()
    rng = np.random.default_rng(13)
    samples = {"paragraphs": [paragraphs[i] for i in rng.choice(len(paragraphs), 400, replace=False)],
               "sentences": [sentences[i] for i in rng.choice(len(sentences), 3000, replace=False)]}
    encoder.encode(samples["paragraphs"][:32])  # load and warm up
    out: dict[str, Any] = {}
    for name, sample in samples.items():
        rates = {}
        for size in (16, 32, 64):
            best = min(_seconds(lambda: encoder.encode(sample, size)) for _ in range(2))
            rates[str(size)] = round(len(sample) / best, 1)
        out[name] = {"texts": len(sample), "per_second": rates}
    return out


def _seconds(work: Any) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=300)
    parser.add_argument("--json", type=Path, default=ROOT / "eval" / "results" / "encode_parity_base_dev.json")
    args = parser.parse_args()
    import torch

    dataset = load_dataset()
    claims = dataset.split("dev")
    queries = Encoder().encode([c.text for c in claims])
    root = folders.index_dir(None)
    record: dict[str, Any] = {"command": "python -m benchmarks.encode_parity", "split": "dev",
                              "hardware": f"{os.cpu_count()} CPU cores ({platform.machine()})"}

    # int8 and 128 tokens, on a sample
    texts = list(Pool.from_dataset(dataset, "evidence").texts)
    sample = [texts[i] for i in np.random.default_rng(13).choice(len(texts), args.sample, replace=False)]
    path = default_encoder_path()
    (auto_model,) = transformers_classes("AutoModel")
    model = auto_model.from_pretrained(str(path), use_safetensors=True).eval()
    tokens = traced.Tokens.from_folder(path, 256, traced.token_types(json.loads((path / "config.json").read_text())))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        int8 = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)

    def encode(net: Any, cut: int) -> np.ndarray:
        order = np.argsort([-len(t) for t in sample], kind="stable")
        out = np.zeros((len(sample), 384), dtype=np.float32)
        for start in range(0, len(order), 32):
            rows = order[start:start + 32]
            batch = {k: v[:, :cut] for k, v in tokens([sample[i] for i in rows]).items()}
            with torch.inference_mode():
                hidden = net(**batch).last_hidden_state
                mask = batch["attention_mask"].unsqueeze(-1).float()
                out[rows] = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=1).numpy()
        return out

    ways = {"float32": (model, 256), "int8": (int8, 256), "128 tokens": (model, 128)}
    seconds: dict[str, list[float]] = defaultdict(list)
    vectors: dict[str, np.ndarray] = {}
    for _ in range(2):
        for name, (net, cut) in ways.items():
            started = time.perf_counter()
            vectors[name] = encode(net, cut)
            seconds[name].append(time.perf_counter() - started)
    base = vectors["float32"]
    near = _nearest(base, queries, 10)
    record["sample"] = {"paragraphs": args.sample, "seconds": {k: round(min(v), 1) for k, v in seconds.items()}}
    for name in ("int8", "128 tokens"):
        cosine = (vectors[name] * base).sum(1)
        record["sample"][name] = {
            "speed_up": round(min(seconds["float32"]) / min(seconds[name]), 2),
            "cosine_median": round(float(np.median(cosine)), 4), "cosine_p5": round(float(np.percentile(cosine, 5)), 4),
            "overlap_at_10": _overlap(near, _nearest(vectors[name], queries, 10), 10)}

    # the mean of sentences, over the whole pool
    paragraph_ids, paragraphs = _stored(root / "evidence" / "dense")
    sentence_ids, sentences = _stored(root / "sentences" / "dense")
    rows = defaultdict(list)
    for row, sid in enumerate(sentence_ids):
        rows[int(str(sid).split(":")[0])].append(row)
    mean = np.stack([sentences[rows[int(p)]].mean(axis=0) for p in paragraph_ids])
    mean /= np.linalg.norm(mean, axis=1, keepdims=True)
    cosine = (mean * paragraphs).sum(1)
    today, means = _nearest(paragraphs, queries, 20), _nearest(mean, queries, 20)

    def recall(found: np.ndarray) -> float:
        gold = [{e for cluster in c.clusters for e in cluster.evidence} for c in claims]
        hits = sum(len(g & {paragraph_ids[i] for i in row}) for g, row in zip(gold, found))
        return round(100 * hits / sum(map(len, gold)), 2)

    record["mean_of_sentences"] = {
        "paragraphs": len(paragraph_ids), "cosine_median": round(float(np.median(cosine)), 4),
        "cosine_p5": round(float(np.percentile(cosine, 5)), 4), "overlap_at_10": _overlap(today, means, 10),
        "overlap_at_20": _overlap(today, means, 20), "gold_recall_at_20": {"today": recall(today), "mean": recall(means)},
        "saves": "the whole evidence dense index build (336 s of a fresh machine's 31-minute first setup)"}
    record["bfloat16"] = _bfloat16(root, dataset, claims, queries)
    record["batch_sizes"] = _batch_sizes(texts, list(Pool.sentences_of(Pool.from_dataset(dataset, "evidence")).texts))
    write_json(args.json, record)
    print(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
