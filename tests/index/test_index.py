"""Index build, reuse, staleness and corruption on the fixture pools."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from perspectrum.config import BM25Params
from perspectrum.data import Pool
from perspectrum.errors import PerspectrumError
from perspectrum.index.bm25 import BM25Index
from perspectrum.index.dense import DenseIndex
from perspectrum.index.store import IndexStore


@pytest.fixture
def pool(dataset) -> Pool:
    return Pool.from_dataset(dataset, "perspectives")


def test_bm25_ranks_the_matching_sentence_first(pool: Pool) -> None:
    index = BM25Index.build(pool)
    hits = index.search("radioactive waste hazard", 3)
    assert hits[0].doc_id == 9
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    # stemming: "breeds"/"breeding" and "programme"/"programmes" meet on the Porter stem
    assert index.search("breeds programme", 2)[0].doc_id in (1, 2)


def test_bm25_query_with_no_known_word_scores_zero(pool: Pool) -> None:
    index = BM25Index.build(pool)
    assert index.score(["the of and", "xylophone"], [1, 2]).tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert index.search("", 2)[0].score == 0.0


def test_bm25_score_matches_search(pool: Pool) -> None:
    index = BM25Index.build(pool)
    hits = index.search("nuclear waste", 5)
    scores = index.score(["nuclear waste"], [h.doc_id for h in hits])[0]
    assert scores == pytest.approx([h.score for h in hits])


def test_store_builds_then_reuses(tmp_path: Path, pool: Pool) -> None:
    store = IndexStore(tmp_path / "idx")
    assert "no bm25 index" in store.check(pool, "bm25")
    built, _ = store.build(pool, "bm25")
    assert store.check(pool, "bm25") is None
    meta = json.loads((tmp_path / "idx" / "perspectives" / "bm25" / "meta.json").read_text())
    assert meta["count"] == len(pool) and meta["settings"]["k1"] == 0.9
    assert (tmp_path / "idx" / "perspectives" / "bm25" / "docids.jsonl").read_text().splitlines()[:2] == ["1", "2"]
    loaded = store.open(pool, "bm25", build_missing=False)
    assert loaded.search("cars pollute", 3) == built.search("cars pollute", 3)
    # beside the index: the link, the one version it points at, and the writers' lock; nothing temporary
    store.build(pool, "bm25")
    names = sorted(p.name for p in (tmp_path / "idx" / "perspectives").iterdir())
    assert names[0] == ".bm25.lock" and names[1].startswith(".bm25.v-") and names[2:] == ["bm25"]
    assert (tmp_path / "idx" / "perspectives" / "bm25").resolve().name == names[1]


def test_changed_pool_makes_the_index_stale(tmp_path: Path, pool: Pool) -> None:
    store = IndexStore(tmp_path)
    store.build(pool, "bm25")
    changed = Pool(pool.name, pool.ids, pool.texts[:-1] + ("Tea is better than cocoa",))
    assert "stale" in store.check(changed, "bm25")
    with pytest.raises(PerspectrumError, match=r"stale.*perspectrum index build"):
        store.open(changed, "bm25", build_missing=False)
    rebuilt = store.open(changed, "bm25", build_missing=True)
    assert rebuilt.search("cocoa", 1)[0].doc_id == pool.ids[-1]
    assert store.check(changed, "bm25") is None


def test_changed_settings_make_the_index_stale(tmp_path: Path, pool: Pool) -> None:
    IndexStore(tmp_path).build(pool, "bm25")
    assert "stale" in IndexStore(tmp_path, bm25=BM25Params(k1=1.2)).check(pool, "bm25")


def test_corrupt_and_half_written_indexes_are_detected(tmp_path: Path, pool: Pool) -> None:
    store = IndexStore(tmp_path)
    store.build(pool, "bm25")
    folder = tmp_path / "perspectives" / "bm25"
    vocab = folder / "vocab.index.json"
    vocab.write_text(vocab.read_text()[:10])
    problem = store.check(pool, "bm25")
    assert "corrupt" in problem and "vocab.index.json" in problem
    (folder / "meta.json").unlink()
    assert "incomplete" in store.check(pool, "bm25")
    store.open(pool, "bm25", build_missing=True)
    assert store.check(pool, "bm25") is None


def test_unknown_kind_is_refused(tmp_path: Path, pool: Pool) -> None:
    with pytest.raises(PerspectrumError, match="unknown index kind"):
        IndexStore(tmp_path).check(pool, "splade")


def test_dense_index_round_trip(tmp_path: Path, pool: Pool, encoder) -> None:
    store = IndexStore(tmp_path)
    store._encoder = encoder
    built, _ = store.build(pool, "dense")
    assert built.embeddings.shape == (len(pool), 384)
    assert np.linalg.norm(built.embeddings, axis=1) == pytest.approx(1.0, abs=1e-5)
    loaded = store.open(pool, "dense", build_missing=False)
    assert isinstance(loaded, DenseIndex)
    # a paraphrase with few shared words still finds its sentence
    hits = loaded.search("kids get less time to play because of homework", 2)
    assert {h.doc_id for h in hits} <= {4, 5} and hits[0].score > 0.5
    scores = loaded.score(["kids get less time to play because of homework"], [h.doc_id for h in hits])[0]
    assert scores == pytest.approx([h.score for h in hits], abs=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("structure", ["hnsw", "ivf"])
def test_approximate_structures_build_reopen_and_find_the_exact_neighbours(tmp_path: Path, pool: Pool, encoder,
                                                                            structure: str) -> None:
    """On a pool this small an approximate index must find what exact search finds; it has
    its own key (an exact index of the same pool is stale for it) and keeps its knobs."""
    from perspectrum.config import DenseParams

    exact = IndexStore(tmp_path / "exact", encoder=encoder).build(pool, "dense")[0]
    store = IndexStore(tmp_path / "ann", dense=DenseParams(structure=structure), encoder=encoder)
    built = store.build(pool, "dense")[0]
    meta = json.loads((tmp_path / "ann" / "perspectives" / "dense" / "meta.json").read_text())
    assert meta["settings"]["structure"] == structure
    assert store.key(pool, "dense") != IndexStore(tmp_path / "exact", encoder=encoder).key(pool, "dense")
    reopened = store.open(pool, "dense", build_missing=False)
    queries = ["radioactive waste", "zoos and animals", "cars pollute the air"]
    for index in (built, reopened):
        assert [[h.doc_id for h in run] for run in index.batch_search(queries, 3)] == \
               [[h.doc_id for h in run] for run in exact.batch_search(queries, 3)]
        assert index.vectors([3, 1]) == pytest.approx(exact.vectors([3, 1]), abs=1e-6)


def test_auto_structure_is_exact_below_the_threshold_and_hnsw_above() -> None:
    from perspectrum.config import DenseParams

    params = DenseParams(exact_below=1000)
    assert (params.structure_for(999), params.structure_for(1000)) == ("flat", "hnsw")
    assert params.structure_settings(999) == {}  # exact indexes keep the keys they always had
    with pytest.raises(PerspectrumError, match="unknown dense index structure 'lsh'"):
        DenseParams(structure="lsh").structure_for(10)


def test_a_relative_index_folder_keeps_its_live_version(tmp_path: Path, pool: Pool, monkeypatch) -> None:
    """The tidy-up after a swap compares resolved paths: given a relative folder (as the
    default ``indexes`` is), it once removed the version it had just swapped in."""
    monkeypatch.chdir(tmp_path)
    store = IndexStore(Path("indexes"))
    store.build(pool, "bm25")
    store.build(pool, "bm25")
    assert store.check(pool, "bm25") is None
    assert store.open(pool, "bm25", build_missing=False).search("radioactive waste hazard", 1)[0].doc_id == 9
