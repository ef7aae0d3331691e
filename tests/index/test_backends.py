"""The Lucene and Milvus backends: the same searcher surface as the embedded engines, built,
checked and reopened by the same store, and agreeing with them (on the real pools where
``PERSPECTRUM_DATA`` is set, as in CI)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from perspectrum.data import Pool, load_dataset
from perspectrum.errors import PerspectrumError
from perspectrum.eval.backends import ids, lucene_parity, milvus_parity
from perspectrum.index.bm25 import BM25Index
from perspectrum.index.dense import DenseIndex
from perspectrum.index.store import IndexStore

pytestmark = pytest.mark.jvm  # see scripts/test.sh

REAL = pytest.mark.skipif(not os.environ.get("PERSPECTRUM_DATA"), reason="PERSPECTRUM_DATA not set")


@pytest.fixture
def pool(dataset) -> Pool:
    return Pool.from_dataset(dataset, "perspectives")


# ------------------------------------------------------------------ Lucene
def test_lucene_store_builds_its_own_folder_and_matches_bm25s(tmp_path: Path, pool: Pool) -> None:
    store = IndexStore(tmp_path, backend="lucene")
    assert store.folder(pool, "bm25") == tmp_path / "perspectives" / "bm25-lucene"
    assert store.folder(pool, "dense") == tmp_path / "perspectives" / "dense"  # faiss serves dense
    built, _ = store.build(pool, "bm25")
    assert store.check(pool, "bm25") is None
    meta = json.loads((tmp_path / "perspectives" / "bm25-lucene" / "meta.json").read_text())
    assert meta["settings"]["engine"] == "lucene" and meta["count"] == len(pool)
    reopened = IndexStore(tmp_path, backend="lucene").open(pool, "bm25", build_missing=False)
    embedded = BM25Index.build(pool)
    for query in ("radioactive waste hazard", "cars pollute the air", "breeds programme"):
        expected = [h for h in embedded.search(query, 5) if h.score > 0]
        got = reopened.search(query, 5)
        assert [h.doc_id for h in got] == [h.doc_id for h in expected]
        assert [h.score for h in got] == pytest.approx([h.score for h in expected], rel=1e-5)
        assert built.search(query, 5) == got
    doc_ids = [9, 1, 9, 2]  # a repeated id gets its score in every column
    assert reopened.score(["nuclear waste", "xylophone"], doc_ids) == pytest.approx(
        embedded.score(["nuclear waste", "xylophone"], doc_ids), rel=1e-5)
    # the embedded index is another folder: building one never replaced the other
    assert IndexStore(tmp_path).check(pool, "bm25").startswith("no bm25 index")


def test_lucene_index_damaged_or_stale_is_reported(tmp_path: Path, pool: Pool) -> None:
    store = IndexStore(tmp_path, backend="lucene")
    store.build(pool, "bm25")
    folder = (tmp_path / "perspectives" / "bm25-lucene").resolve()
    segment = next(p for p in folder.iterdir() if p.name.startswith("segments_"))
    segment.write_bytes(segment.read_bytes()[:-4])
    assert "corrupt" in store.check(pool, "bm25")
    with pytest.raises(PerspectrumError, match="perspectrum index build"):
        store.open(pool, "bm25", build_missing=False)
    store.open(pool, "bm25")  # rebuilt
    changed = Pool(pool.name, pool.ids, (*pool.texts[:-1], "an edited last sentence"))
    assert "stale" in store.check(changed, "bm25")


def test_unknown_backend_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PerspectrumError, match="unknown backend 'solr'"):
        IndexStore(tmp_path, backend="solr")


# ------------------------------------------------------------------ Milvus
@pytest.mark.slow
def test_milvus_store_matches_faiss_and_notices_a_lost_collection(tmp_path: Path, pool: Pool, encoder) -> None:
    store = IndexStore(tmp_path, backend="milvus", encoder=encoder)  # the session's MiniLM, loaded once
    assert store.folder(pool, "dense") == tmp_path / "perspectives" / "dense-milvus"
    milvus, _ = store.build(pool, "dense")
    faiss = DenseIndex.build(pool, encoder)
    queries = ["radioactive waste is dangerous", "zoos protect animals", "cars pollute"]
    assert ids(milvus.batch_search(queries, 4)) == ids(faiss.batch_search(queries, 4))
    assert milvus.vectors([3, 1]) == pytest.approx(faiss.vectors([3, 1]), abs=1e-6)
    assert milvus.score(queries, [1, 2]) == pytest.approx(faiss.score(queries, [1, 2]), abs=1e-5)
    reopened = store.open(pool, "dense", build_missing=False)
    assert ids(reopened.batch_search(queries, 4)) == ids(faiss.batch_search(queries, 4))
    # a rebuild publishes a new collection; the one readers may still use survives it
    first = reopened.collection
    store.build(pool, "dense")
    from perspectrum.index.milvus import client

    assert first in client(store.milvus_uri).list_collections()
    client(store.milvus_uri).drop_collection(store.open(pool, "dense").collection)
    assert "is gone" in store.check(pool, "dense")
    assert store.open(pool, "dense").search("zoos", 1)  # rebuilt


# ------------------------------------------------------------------ parity on the real pools
@pytest.fixture(scope="module")
def real():
    return load_dataset()


@REAL
@pytest.mark.slow
def test_lucene_agrees_with_bm25s_on_the_real_pools(tmp_path: Path, real) -> None:
    """overlap@10 ≥ 0.99 on both pools, and T1/T4 (dev, fixed cut-offs) within 0.5 F1."""
    found = lucene_parity(real, tmp_path)
    assert min(found["overlap_at_10"].values()) >= 0.99, found
    for task in ("t1_f1", "t4_f1"):
        assert found[task], task
        for k, (bm25s, lucene) in found[task].items():
            assert abs(bm25s - lucene) <= 0.5, (task, k, bm25s, lucene)


@REAL
@pytest.mark.slow
def test_milvus_agrees_with_faiss_on_the_real_perspective_pool(tmp_path: Path, real, encoder) -> None:
    """overlap@10 ≥ 0.99 of exact search in milvus-lite against faiss, the 907 claims as queries."""
    found = milvus_parity(real, tmp_path, encoder)
    assert found["queries"] == len(real.claims) and found["overlap_at_10"] >= 0.99, found


@pytest.mark.slow
def test_milvus_update_encodes_only_new_texts_and_matches_a_fresh_build(tmp_path: Path, pool: Pool, encoder,
                                                                        monkeypatch) -> None:
    store = IndexStore(tmp_path, backend="milvus", encoder=encoder)
    store.build(pool, "dense")
    rows = [(i, t) for i, t in zip(pool.ids, pool.texts) if i not in (2, 5)] + [(99, "Zoos are prisons for animals")]
    new = Pool(pool.name, tuple(i for i, _ in rows), tuple(t for _, t in rows))
    encoded: list[str] = []
    original = encoder.encode

    def counting(texts, *args, **kwargs):
        encoded.extend(texts)
        return original(texts, *args, **kwargs)

    monkeypatch.setattr(encoder, "encode", counting)
    updated, _, how = store.update(pool, new, "dense")
    monkeypatch.undo()
    assert how == "updated" and encoded == ["Zoos are prisons for animals"]
    assert store.check(new, "dense") is None
    fresh = DenseIndex.build(new, encoder)
    queries = ["zoos and animals", "nuclear waste"]
    assert ids(updated.batch_search(queries, 5)) == ids(fresh.batch_search(queries, 5))
