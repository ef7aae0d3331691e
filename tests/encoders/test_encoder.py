"""The bi-encoder: MiniLM through transformers must give sentence-transformers' vectors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from perspectrum.encoders.bi_encoder import Encoder, MeanPooled, default_encoder_path
from perspectrum.errors import PerspectrumError


def test_mean_pooled_matches_sentence_transformers(encoder) -> None:
    from sentence_transformers import SentenceTransformer

    texts = ["Animals should have legal rights", "Zoos", "word " * 400, "Tea is better than coffee."]
    reference = SentenceTransformer(str(default_encoder_path()), device="cpu").encode(
        texts, normalize_embeddings=True, convert_to_numpy=True)
    assert isinstance(encoder.model, MeanPooled)
    ours = encoder.encode(texts, batch_size=2)
    assert ours.shape == reference.shape and np.abs(ours - reference).max() < 1e-5


def test_pools_encoded_in_bfloat16_stay_next_to_float32_and_queries_stay_float32(encoder, monkeypatch) -> None:
    """An index build's bfloat16 vectors are float32's to a cosine of 0.999; "auto" follows
    the CPU; an unknown precision is a one-line error; plain encode calls are float32 exactly."""
    from perspectrum.encoders import bi_encoder

    texts = ["Animals should have legal rights", "Zoos keep endangered species alive. " * 20, "Tea is better."]
    exact = encoder.encode(texts, batch_size=2)
    cheap = encoder.encode(texts, batch_size=2, precision="bfloat16")
    assert np.abs(cheap - exact).max() > 0  # really another arithmetic
    assert ((cheap * exact).sum(1) > 0.999).all()
    assert np.abs(encoder.encode(texts, batch_size=2, precision="float32") - exact).max() == 0
    for native, expected in ((True, "bfloat16"), (False, "float32")):
        monkeypatch.setattr(bi_encoder, "native_bfloat16", lambda native=native: native)
        assert encoder.precision("auto") == expected
    assert encoder.precision("float32") == "float32" and encoder.precision("bfloat16") == "bfloat16"
    with pytest.raises(PerspectrumError, match="unknown build precision 'half'"):
        encoder.precision("half")


def test_other_layouts_are_not_taken_for_mean_pooling(tmp_path: Path) -> None:
    folder = tmp_path / "minilm"
    shutil.copytree(default_encoder_path(), folder)
    assert MeanPooled.fits(folder) == 256
    pooling = folder / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    pooling.write_text(json.dumps({**config, "pooling_mode_mean_tokens": False, "pooling_mode_cls_token": True}))
    assert MeanPooled.fits(folder) is None
    assert Encoder(folder).identity != Encoder(default_encoder_path()).identity


@pytest.mark.parametrize("meta", ["[]", '"model"', "42", "null"])
def test_a_model_meta_that_is_not_an_object_is_named_as_damaged(tmp_path: Path, meta: str) -> None:
    """Not "has no params.max_length: retrain the model": the file is what is damaged."""
    from perspectrum.encoders.cross_encoder import META_FILE, CrossEncoderModel
    from perspectrum.models.store import read_meta, update_meta

    folder = tmp_path / "relevance"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / META_FILE).write_text(meta)
    expected = f"{folder / META_FILE} is not a JSON object; reinstall or retrain the model"
    for load in (lambda: CrossEncoderModel.load(folder), lambda: read_meta(tmp_path, "relevance"),
                 lambda: update_meta(tmp_path, "relevance", {"quantize": False})):
        with pytest.raises(PerspectrumError) as caught:
            load()
        assert str(caught.value) == expected
    assert (folder / META_FILE).read_text() == meta  # nothing rewritten


def test_a_model_config_that_is_not_an_object_is_named_as_damaged(tmp_path: Path) -> None:
    from perspectrum import integrity
    from perspectrum.encoders.cross_encoder import META_FILE, CrossEncoderModel

    for name in ("tokenizer.json", "tokenizer_config.json"):
        (tmp_path / name).write_text("{}")
    (tmp_path / "config.json").write_text("[1]")
    files = integrity.record(tmp_path, skip=(META_FILE,))
    (tmp_path / META_FILE).write_text(json.dumps({"params": {"max_length": 64}, "files": files}))
    with pytest.raises(PerspectrumError, match=r"config.json is not a JSON object; reinstall or retrain the model$"):
        CrossEncoderModel.load(tmp_path)


def test_remembered_texts_are_answered_from_memory_and_the_rest_encoded(encoder) -> None:
    """What :func:`perspectrum.index.dense.lend_vectors` relies on: a remembered text is never
    encoded again, the others are, and the rows come back in the order asked."""
    from perspectrum.config import DenseParams
    from perspectrum.data import Pool
    from perspectrum.index.dense import DenseIndex, lend_vectors

    mine = Encoder(encoder.path)
    texts = ["Zoos keep animals for profit.", "Animals should have legal rights.", "Tea is better than coffee."]
    own = mine.encode(texts)
    marked = np.eye(2, own.shape[1], dtype=np.float32)
    mine.remember(texts[:2], marked)
    encoded: list[list[str]] = []
    model_encode = mine._encode
    mine._encode = lambda batch, *rest: (encoded.append(list(batch)), model_encode(batch, *rest))[1]
    mixed = mine.encode([texts[2], texts[0], "A new sentence.", texts[1]])
    assert encoded == [[texts[2], "A new sentence."]]
    assert (mixed[1] == marked[0]).all() and (mixed[3] == marked[1]).all()
    assert np.abs(mixed[0] - own[2]).max() < 1e-5
    assert np.abs(mixed[2] - encoder.encode(["A new sentence."])[0]).max() < 1e-5
    assert (mine.encode(texts[:2][::-1]) == marked[::-1]).all() and len(encoded) == 1  # all known: no model call
    with pytest.raises(ValueError):
        mine.remember(texts, marked)

    # an index lends the vectors it stores, and they are the model's own within float noise
    # (float32 builds) or bfloat16's (builds where the CPU has it: a cosine of 0.9999)
    lender = Encoder(encoder.path)
    pool = Pool("perspectives", [1, 2, 3], texts)
    index = DenseIndex.build(pool, lender, DenseParams(build_precision="float32"))
    assert lend_vectors(index, pool) and not lend_vectors(object(), pool)
    assert (lender.encode(texts) == index.vectors([1, 2, 3])).all()
    assert np.abs(lender.encode(texts) - own).max() < 1e-5
    cheap = DenseIndex.build(pool, Encoder(encoder.path), DenseParams(build_precision="bfloat16"))
    assert ((cheap.vectors([1, 2, 3]) * own).sum(axis=1) > 0.9999).all()
