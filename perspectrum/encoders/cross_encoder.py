"""Cross-encoders: a fine-tuned Hugging Face folder, loaded and scoring pairs fast.

A cross-encoder reads both texts in one pass (``[CLS] a [SEP] b [SEP]``) and puts one
logit on top. :mod:`perspectrum.train.fine_tune` trains them; this module only reads and
runs them (traced, quantised), so the runtime never imports the trainer.
"""

from __future__ import annotations

import json
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perspectrum import integrity
from perspectrum.encoders import traced
from perspectrum._progress import progress
from perspectrum.encoders.bi_encoder import transformers_classes
from perspectrum.encoders.device import CPU, Device, choose
from perspectrum.errors import PerspectrumError

#: The file beside the Hugging Face weights that holds what perspectrum needs to use
#: the model: task, input length, tuned thresholds, training facts and metrics.
META_FILE = "perspectrum.json"
#: The files of a model folder read at every start (the weights are read only to make
#: or replace the traced copy).
READ = ("config.json", "tokenizer.json", "tokenizer_config.json")
#: BERT's separator, written literally: the tokenizer maps it to the special token,
#: which is how three texts (claim, p1, p2) share one two-segment input.
SEP = "[SEP]"

Pair = tuple[str, str]
#: What a person can do about a model folder whose files are damaged.
REMEDY = "reinstall or retrain the model"


def json_object(path: Path) -> dict[str, Any]:
    """A model folder's JSON file (``perspectrum.json``, ``config.json``) as the object it
    must be, or a one-line error that names the file and says it is damaged: without this
    check a ``[]`` there read as a model with no ``params.max_length``, which sent a person
    to retrain a model whose only fault was one file."""
    from perspectrum.data import json_problem

    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise PerspectrumError(f"{path} is not valid JSON ({json_problem(exc)}); {REMEDY}") from None
    except UnicodeDecodeError:
        raise PerspectrumError(f"{path} is not UTF-8 text; {REMEDY}") from None
    except OSError as exc:
        raise PerspectrumError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not isinstance(value, dict):
        raise PerspectrumError(f"{path} is not a JSON object; {REMEDY}")
    return value


class CrossEncoderModel:
    """A fine-tuned cross-encoder and its ``perspectrum.json``, ready to score pairs.

    Scoring sorts pairs by length so each batch pads little, and by default runs the
    linear layers in int8 (``torch`` dynamic quantisation): ~2.4x faster on a CPU.
    Thresholds are tuned on dev with the same setting, so they stay valid for it.
    A model opened with :meth:`load` runs as its cached TorchScript copy where one can
    be made (:mod:`perspectrum.encoders.traced`: same numbers, no transformers import).
    Safe to share between threads: one lock guards the forward pass.

    Args:
        model: the transformers model (float); ``None`` when ``copy`` is given.
        tokenizer: its transformers tokenizer (``None`` with ``copy``); kept for :meth:`write`.
        meta: the model's ``perspectrum.json``.
        quantize: run the linear layers in int8 (on the CPU only).
        copy: a traced copy to run instead, with ``tokens`` (required with it) to feed it.
        device: where it runs: on a GPU (:mod:`perspectrum.encoders.device`), a half-precision
            copy of the float model, never int8 or traced.
    """

    def __init__(self, model: Any, tokenizer: Any, meta: dict[str, Any], quantize: bool = True,
                 copy: Any = None, tokens: traced.Tokens | None = None, device: Device = CPU) -> None:
        self.meta = meta
        self.tokenizer = tokenizer
        self._float_model = model
        self.device = device
        if copy is not None:
            if tokens is None:
                raise ValueError("a traced copy needs the tokens that feed it")
            self.model, self.tokens = copy, tokens
        else:
            import torch

            if device.gpu:
                import copy as copying

                model = copying.deepcopy(model).half().to(device.name).eval()
            elif quantize:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
            self.model = model
            self.tokens = traced.Tokens.of(tokenizer, self.max_length, traced.token_types(model.config.to_dict()))
        self._logits = traced.forward(copy, self.model, "logits", device.name)
        self._lock = threading.Lock()

    @classmethod
    def load(cls, folder: str | Path, quantize: bool = True, device: Device | None = None) -> CrossEncoderModel:
        """Open a folder written by :meth:`save`; a missing or broken one is a one-line error.

        ``quantize`` is honoured only where the model's meta allows it (``"quantize":
        false`` marks a model whose accuracy int8 would cost). The first load makes the
        traced copy that later loads use (on the CPU; a GPU, ``device`` or else
        :func:`~perspectrum.encoders.device.choose`'s, runs the float model in half precision). Every file read is first checked against the
        SHA-256 recorded in ``perspectrum.json`` when the folder was written (see
        :mod:`perspectrum.integrity`); weights are read only as ``safetensors``, never
        from a pickled ``pytorch_model.bin``.
        """
        folder = Path(folder)
        meta_path = folder / META_FILE
        if not meta_path.is_file() or not (folder / "config.json").is_file():
            raise PerspectrumError(f"no trained model in {folder} (train it with `perspectrum train`)")
        meta = json_object(meta_path)
        files = integrity.sealed(folder, meta, META_FILE, READ)
        integrity.check(folder, files, READ)  # read at every start; the weights (below) only without a copy
        config = json_object(folder / "config.json")
        try:
            max_length = int(meta["params"]["max_length"])
        except (KeyError, TypeError, ValueError, OverflowError):
            raise PerspectrumError(f"{meta_path} has no params.max_length: retrain the model") from None
        quantize = quantize and meta.get("quantize", True)
        device = device or choose()
        copy = None if device.gpu else traced.load(folder, quantize, files)
        if copy is not None:
            tokens = traced.Tokens.from_folder(folder, max_length, traced.token_types(config))
            return cls(None, None, meta, quantize, copy=copy, tokens=tokens)
        integrity.check(folder, files)
        AutoModelForSequenceClassification, AutoTokenizer = transformers_classes(
            "AutoModelForSequenceClassification", "AutoTokenizer")
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(folder))
            model = AutoModelForSequenceClassification.from_pretrained(str(folder), use_safetensors=True).eval()
        except (OSError, ValueError) as exc:
            raise PerspectrumError(f"cannot load the model in {folder}: {exc}".splitlines()[0]) from None
        loaded = cls(model, tokenizer, meta, quantize, device=device)
        if device.gpu:
            return loaded
        copy = traced.trace(folder, quantize, files, loaded.model, loaded.tokens, "logits", pairs=True)
        if copy is None:
            return loaded
        return cls(model, tokenizer, meta, quantize, copy=copy, tokens=loaded.tokens)

    @property
    def max_length(self) -> int:
        return int(self.meta["params"]["max_length"])

    def score(self, pairs: Sequence[Pair], batch_size: int = 64, show_progress: bool = False,
              description: str = "scoring") -> np.ndarray:
        """P(positive) for each pair, in input order (float32); on a GPU, ``batch_size`` at
        least the device's (on the CPU it stays as given: int8 scales each batch's activations)."""
        import torch

        if self.device.gpu:
            batch_size = max(batch_size, self.device.batch_size)
        out = np.zeros(len(pairs), dtype=np.float32)
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        with progress(description, len(pairs), enabled=show_progress) as advance:
            for start in range(0, len(order), batch_size):
                batch = order[start:start + batch_size]
                encoded = self.tokens([pairs[i][0] for i in batch], [pairs[i][1] for i in batch])
                with self._lock, torch.inference_mode():
                    logits = self._logits(encoded)[:, 0].float()
                out[batch] = torch.sigmoid(logits).cpu().numpy()
                advance(len(batch))
        return out

    def write(self, folder: Path) -> None:
        """Write the float weights, tokenizer and ``perspectrum.json`` into ``folder``.

        Callers write into a temporary folder and swap it in (see ``models.save_task``).
        """
        if self._float_model is None:
            raise PerspectrumError("a model opened from its traced copy cannot be written; load its folder")
        self._float_model.save_pretrained(str(folder))
        self.tokenizer.save_pretrained(str(folder))
        (folder / META_FILE).write_text(json.dumps(self.meta, indent=2) + "\n", encoding="utf-8")
