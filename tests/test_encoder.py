"""The bi-encoder: MiniLM through transformers must give sentence-transformers' vectors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from perspectrum.encoders.bi_encoder import Encoder, MeanPooled, default_encoder_path


def test_mean_pooled_matches_sentence_transformers(encoder) -> None:
    from sentence_transformers import SentenceTransformer

    texts = ["Animals should have legal rights", "Zoos", "word " * 400, "Tea is better than coffee."]
    reference = SentenceTransformer(str(default_encoder_path()), device="cpu").encode(
        texts, normalize_embeddings=True, convert_to_numpy=True)
    assert isinstance(encoder.model, MeanPooled)
    ours = encoder.encode(texts, batch_size=2)
    assert ours.shape == reference.shape and np.abs(ours - reference).max() < 1e-5


def test_other_layouts_are_not_taken_for_mean_pooling(tmp_path: Path) -> None:
    folder = tmp_path / "minilm"
    shutil.copytree(default_encoder_path(), folder)
    assert MeanPooled.fits(folder) == 256
    pooling = folder / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    pooling.write_text(json.dumps({**config, "pooling_mode_mean_tokens": False, "pooling_mode_cls_token": True}))
    assert MeanPooled.fits(folder) is None
    assert Encoder(folder).identity != Encoder(default_encoder_path()).identity
