"""The evidence ranker: the sentence pool, its features, two-stage fit (in the train layer), and save/load.

Built on the ten-claim fixture; what matters is that features compare a paragraph
with every cluster of its claim, that fitting is deterministic, and that a saved
ranker scores exactly as the fitted one.
"""

from __future__ import annotations

import numpy as np
import pytest

from perspectrum.data import Pool, load_dataset, paragraph_of, sentence_id
from perspectrum.errors import PerspectrumError
from perspectrum.index.store import IndexStore
from perspectrum.models.evidence_ranker import (
    FEATURES,
    RANKER_FILE,
    WINDOW_FEATURES,
    Debate,
    EvidenceRanker,
    Featurizer,
    second_stage,
)
from perspectrum.train.fit_ranker import fit_forests, labels_for, window_labels
from perspectrum.text.sentences import sentences
from tests.conftest import write_dataset


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("ranker")


@pytest.fixture(scope="module")
def setup(root):
    """(dataset, featurizer, table of the train claims, labels, each candidate's window features)."""
    dataset = load_dataset(write_dataset(root / "data"), verify=False)
    featurizer = Featurizer.for_dataset(IndexStore(root / "indexes"), dataset)
    debates = {c.cid: Debate.of(dataset, c) for c in dataset.split("train")}
    table = featurizer.table(debates, depth=5)
    windows = featurizer.windows([(debates[key], i, d) for key, i, d in table.keys])
    return dataset, featurizer, table, labels_for(dataset, table), windows


def test_sentence_pool_splits_every_paragraph_and_ids_map_back(setup):
    dataset = setup[0]
    pool = Pool.from_dataset(dataset, "sentences")
    by_paragraph: dict[int, list[str]] = {}
    for doc_id, text in zip(pool.ids, pool.texts):
        by_paragraph.setdefault(paragraph_of(doc_id), []).append(text)
    assert set(by_paragraph) == set(dataset.evidence)
    for eid, texts in by_paragraph.items():
        assert tuple(texts) == sentences(dataset.evidence[eid].text)
    assert pool.ids[0] == sentence_id(1, 0) and paragraph_of(sentence_id(12, 3)) == 12
    assert len(by_paragraph[1]) == 2  # "Zoos run breeding programmes. Several species ..."


def test_every_cluster_gets_candidates_with_finite_features(setup):
    dataset, _, table, labels, _ = setup
    clusters = {(c.cid, i) for c in dataset.split("train") for i in range(len(c.clusters))}
    assert set(table.hits) == clusters
    assert {(k, i) for k, i, _ in table.keys} == clusters
    assert table.features.shape == (len(table.keys), len(FEATURES)) and np.isfinite(table.features).all()
    assert len(table.keys) == sum(len(h) for h in table.hits.values()) == 5 * len(clusters)
    assert labels.sum() == sum(min(len(cl.evidence), 5) for c in dataset.split("train") for cl in c.clusters)


def test_features_compare_a_paragraph_with_the_sibling_clusters(setup):
    """Paragraph 1 (breeding programmes) is zoo cluster 0's evidence and not cluster 1's (cruel cages)."""
    _, _, table, _, _ = setup
    row = {key: n for n, key in enumerate(table.keys)}
    comp = FEATURES.index("cos_comp")
    own, sibling = table.features[row[(1, 0, 1)]], table.features[row[(1, 1, 1)]]
    assert own[comp] > 0 > sibling[comp]
    assert own[comp] == pytest.approx(-sibling[comp])  # two clusters: one margin, opposite signs
    assert own[FEATURES.index("clusters")] == 2 and own[FEATURES.index("sent_cos")] >= own[FEATURES.index("cos")] - 0.5


def test_a_lone_cluster(setup, root):
    """A claim with one cluster has no sibling: each margin is the value itself."""
    dataset, _, _, _, _ = setup
    claim = dataset.split("train")[0]
    lone = {claim.cid: Debate(claim.text, Debate.of(dataset, claim).clusters[:1])}
    table = Featurizer(IndexStore(root / "indexes"), Pool.from_dataset(dataset, "evidence")).table(lone, depth=5)
    assert {(k, i) for k, i, _ in table.keys} == {(claim.cid, 0)} and len(table.keys) == 5
    for value, margin in (("cos", "cos_comp"), ("rrf", "rrf_comp"), ("bm25", "bm25_comp"), ("sent_cos", "sent_comp"),
                          ("first_cos", "first_comp"), ("persp_cos", "persp_comp")):
        assert np.array_equal(table.features[:, FEATURES.index(value)], table.features[:, FEATURES.index(margin)])


def test_second_stage_columns_by_hand():
    keys = [("c", 0, 7), ("c", 0, 8), ("c", 1, 7)]
    columns = second_stage(keys, np.array([0.9, 0.2, 0.6]))
    # p, p - best sibling score of the same paragraph, siblings, p - cluster best, cluster-mates above
    assert np.allclose(columns, [[0.9, 0.3, 1, 0.0, 0], [0.2, 0.2, 0, -0.7, 1], [0.6, -0.3, 1, 0.0, 0]])


def test_fit_is_deterministic_and_a_saved_ranker_scores_the_same(setup, tmp_path):
    _, _, table, labels, windows = setup
    ranker = fit_forests(table, labels, windows, seed=3)
    again = fit_forests(table, labels, windows, seed=3)
    scores = ranker.score(table)
    assert np.array_equal(scores, again.score(table))
    assert scores.shape == (len(labels),) and ((scores >= 0) & (scores <= 1)).all()
    assert scores[labels].mean() > scores[~labels].mean()  # it learned its own training data
    verified = ranker.verify(windows)
    assert [len(v) for v in verified] == [len(w) for w in windows]
    best = np.array([v.max() for v in verified])
    assert ((best >= 0) & (best <= 1)).all() and best[labels].mean() > best[~labels].mean()
    ranker.save(tmp_path)
    loaded = EvidenceRanker.load(tmp_path)
    assert np.array_equal(loaded.score(table), scores)
    again = loaded.verify(windows)
    assert len(again) == len(verified) and all(np.array_equal(a, b) for a, b in zip(again, verified))
    assert ranker.verify([]) == []


def test_window_features_have_a_row_per_window_of_the_paragraph(setup):
    dataset, featurizer, table, _, windows = setup
    assert len(windows) == len(table.keys)
    for (key, i, d), rows in zip(table.keys, windows):
        assert rows.shape == (1, len(WINDOW_FEATURES))  # fixture paragraphs have 2 sentences: one window
        assert np.isfinite(rows).all()


def test_the_verifier_learns_the_best_window_of_a_gold_paragraph_against_every_other_candidates():
    rows = [np.array([[0.2] + [0.0] * 9, [0.7] + [0.0] * 9, [0.5] + [0.0] * 9]), np.zeros((2, 10)), np.zeros((0, 10))]
    target, used = window_labels(rows, np.array([True, False, True]))
    assert target.tolist() == [False, True, False, False, False]  # the gold paragraph's closest window
    assert used.tolist() == [False, True, False, True, True]  # its other windows sit out


def test_ranker_refuses_what_it_cannot_learn_or_load(setup, tmp_path):
    _, _, table, labels, windows = setup
    with pytest.raises(PerspectrumError, match="both gold and non-gold"):
        fit_forests(table, np.zeros_like(labels), windows)
    with pytest.raises(PerspectrumError, match="no evidence ranker"):
        EvidenceRanker.load(tmp_path)
    (tmp_path / "ranker.joblib").write_bytes(b"an older version's pickle")
    with pytest.raises(PerspectrumError, match="no longer read"):
        EvidenceRanker.load(tmp_path)
    np.savez(tmp_path / RANKER_FILE, features=np.array(["other"]), second=np.array([]))
    with pytest.raises(PerspectrumError, match="other features"):
        EvidenceRanker.load(tmp_path)
    (tmp_path / RANKER_FILE).write_bytes(b"not a zip")
    with pytest.raises(PerspectrumError, match="cannot be read"):
        EvidenceRanker.load(tmp_path)
