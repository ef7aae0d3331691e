"""The evidence sentences' vectors: encoded when first read, kept on disk, filled on request."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from perspectrum.data import Pool
from perspectrum.index import sentence_vectors as kept_module
from perspectrum.index.sentence_vectors import SentenceVectors
from perspectrum.index.store import IndexStore

PARAGRAPHS = Pool("evidence", (1, 2, "own-3"), (
    "Zoos breed endangered species. They return some to the wild. Visitors learn about them.",
    "Wind turbines kill birds. Offshore farms kill fewer.",
    "A paragraph of one sentence about taxes",
))


@pytest.fixture
def store(tmp_path: Path, encoder) -> IndexStore:
    return IndexStore(tmp_path / "indexes", encoder=encoder)


def same(a: np.ndarray, b: np.ndarray) -> bool:
    """The same vectors up to the noise of being batched with other texts (bfloat16's, where
    the CPU encodes pools in it)."""
    return a.shape == b.shape and bool(((a * b).sum(axis=1) > 0.9999).all())


def parts(folder: Path) -> list[Path]:
    return sorted(folder.glob("part-*.npz"))


def test_vectors_are_encoded_once_kept_on_disk_and_read_back_in_a_new_process(store, encoder, monkeypatch) -> None:
    vectors = SentenceVectors(store, PARAGRAPHS)
    assert vectors.missing() == 3
    first = vectors.of([2, "own-3"])
    expected = encoder.encode(list(vectors.split["2"]), precision=store.dense.build_precision)
    assert first[0].shape == (2, encoder.dimension) and same(first[0], expected)
    assert len(parts(vectors.folder)) == 1 and vectors.missing() == 1

    calls = []
    monkeypatch.setattr(encoder, "encode", lambda texts, *a, **k: calls.append(list(texts)) or np.ones((len(texts), 384)))
    again = SentenceVectors(store, PARAGRAPHS)  # as a new process would: read from disk
    assert np.array_equal(again.of([2])[0], first[0]) and calls == []
    again.of([1])
    assert calls == [list(vectors.split["1"])]  # only the paragraph not kept


def test_fill_encodes_the_rest_and_gives_every_vector_in_pool_order(store, monkeypatch) -> None:
    monkeypatch.setattr(kept_module, "FILL_CHUNK", 2)  # a part per paragraph or so
    vectors = SentenceVectors(store, PARAGRAPHS)
    vectors.of([1])
    assert vectors.all_vectors() is None  # not all kept yet
    assert vectors.fill() == 3 and vectors.missing() == 0
    assert len(parts(vectors.folder)) == 1  # the parts merged into one
    everything = SentenceVectors(store, PARAGRAPHS).all_vectors()
    pool = store.sentences(PARAGRAPHS)
    assert everything is not None and len(everything) == len(pool) == 6
    assert same(everything, store.encoder.encode(list(pool.texts), precision=store.dense.build_precision))
    assert vectors.fill() == 0  # nothing left


def test_a_damaged_part_is_deleted_and_its_paragraphs_encoded_again(store, capsys) -> None:
    vectors = SentenceVectors(store, PARAGRAPHS)
    good = vectors.of([1])[0]
    (part,) = parts(vectors.folder)
    raw = bytearray(part.read_bytes())
    raw[-40] ^= 0xFF
    part.write_bytes(bytes(raw))
    again = SentenceVectors(store, PARAGRAPHS)
    assert again.missing() == 3 and not part.exists()
    assert "is damaged: deleting it" in capsys.readouterr().err
    assert same(again.of([1])[0], good)


def test_a_folder_that_cannot_be_written_costs_only_the_keeping(store, capsys, monkeypatch) -> None:
    from perspectrum.errors import PerspectrumError

    def refuse(path, write):
        raise PerspectrumError(f"cannot write {path}")

    monkeypatch.setattr(kept_module, "atomic_write", refuse)
    vectors = SentenceVectors(store, PARAGRAPHS)
    assert len(vectors.of([1, 2])) == 2 and len(vectors.of([1])[0]) == 3
    assert capsys.readouterr().err.count("cannot keep sentence vectors") == 1
    assert not parts(vectors.folder)


def test_a_changed_paragraph_is_a_new_entry_and_the_others_are_kept(store, encoder, monkeypatch) -> None:
    SentenceVectors(store, PARAGRAPHS).fill()
    edited = Pool("evidence", PARAGRAPHS.ids, (PARAGRAPHS.texts[0], "Wind turbines are quiet.", PARAGRAPHS.texts[2]))
    calls = []
    real = encoder.encode
    monkeypatch.setattr(encoder, "encode", lambda texts, *a, **k: calls.append(list(texts)) or real(texts, *a, **k))
    vectors = SentenceVectors(store, edited)
    assert vectors.missing() == 1
    vectors.of([1, 2, "own-3"])
    assert calls == [["Wind turbines are quiet."]]


def test_the_sentences_dense_index_is_built_from_the_kept_vectors(tmp_path, encoder, monkeypatch) -> None:
    """`setup --full` and `index build --pool sentences --kind dense`: encode what is not kept
    (and keep it), then index the kept vectors without encoding them again."""
    from perspectrum.encoders.bi_encoder import Encoder
    from perspectrum.index.sentence_vectors import build_sentence_index

    mine = Encoder(encoder.path)  # it will remember the pool's vectors: not the session's encoder
    store = IndexStore(tmp_path / "indexes", encoder=mine)
    SentenceVectors(store, PARAGRAPHS).of([1])
    calls = []
    real = mine._encode
    monkeypatch.setattr(mine, "_encode", lambda texts, *a: calls.append(len(texts)) or real(texts, *a))
    encoded, _ = build_sentence_index(store, PARAGRAPHS)
    pool = store.sentences(PARAGRAPHS)
    assert encoded == 3 and calls == [3]  # paragraphs 2 and own-3, once
    assert store.check(pool, "dense") is None and SentenceVectors(store, PARAGRAPHS).missing() == 0
    index = store.open(pool, "dense")
    assert np.array_equal(index.vectors(list(pool.ids)), SentenceVectors(store, PARAGRAPHS).all_vectors())


def test_an_interrupted_fill_keeps_what_it_wrote_and_the_next_finishes_it(store, encoder, monkeypatch) -> None:
    """What the quickstart promises of `setup --full`: interrupted, it keeps what is done."""
    monkeypatch.setattr(kept_module, "FILL_CHUNK", 2)
    real = encoder.encode
    calls = []

    def interrupted(texts, *args, **kwargs):
        calls.append(len(texts))
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(texts, *args, **kwargs)

    monkeypatch.setattr(encoder, "encode", interrupted)
    with pytest.raises(KeyboardInterrupt):
        SentenceVectors(store, PARAGRAPHS).fill()
    monkeypatch.setattr(encoder, "encode", real)
    resumed = SentenceVectors(store, PARAGRAPHS)
    assert resumed.missing() == 2  # the first part (paragraph 1) was kept
    assert resumed.fill() == 3 and resumed.missing() == 0
    pool = store.sentences(PARAGRAPHS)
    assert same(resumed.all_vectors(), real(list(pool.texts), precision=store.dense.build_precision))
