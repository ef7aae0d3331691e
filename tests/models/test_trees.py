"""Trees as arrays: the same probabilities as scikit-learn's classifier, and a damaged file refused.

The forest is fitted on synthetic data with missing values (so the NaN rule is
exercised) and more than one tree depth; the check is equality with
``predict_proba`` on rows the trees were not fitted on.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier

from perspectrum.errors import PerspectrumError
from perspectrum.models import trees
from perspectrum.models.trees import Forest


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(3)
    rows = rng.normal(size=(600, 5))
    rows[rng.random(rows.shape) < 0.1] = np.nan
    labels = (np.nan_to_num(rows[:, 0]) + np.nan_to_num(rows[:, 1]) * np.nan_to_num(rows[:, 2]) > 0.2)
    classifier = HistGradientBoostingClassifier(max_iter=40, random_state=0).fit(rows, labels)
    held = rng.normal(size=(300, 5))
    held[rng.random(held.shape) < 0.1] = np.nan
    return classifier, rows, held


def test_forest_scores_as_the_classifier_does(fitted):
    classifier, rows, held = fitted
    forest = Forest.of(classifier, rows)
    assert forest.feature.shape[0] == 40 and (~forest.leaf[:, 1:]).any()  # 40 trees, deeper than one split
    assert np.abs(forest.predict_proba(held) - classifier.predict_proba(held)[:, 1]).max() <= 1e-12
    with pytest.raises(ValueError, match="5 features"):
        forest.predict_proba(held[:, :4])


def test_forest_round_trips_and_refuses_damage(fitted):
    classifier, rows, held = fitted
    forest = Forest.of(classifier, rows)
    arrays = forest.arrays("a.")
    again = Forest.from_arrays(arrays, "a.")
    assert np.array_equal(again.predict_proba(held), forest.predict_proba(held))
    with pytest.raises(PerspectrumError, match="missing or malformed"):
        Forest.from_arrays(arrays, "b.")
    for name, change in (("a.left", lambda a: a + a.shape[1]),  # a child beyond the table
                         ("a.right", lambda a: np.zeros_like(a)),  # a split pointing back to the root
                         ("a.feature", lambda a: a + 5),  # a column the rows do not have
                         ("a.value", lambda a: a * np.nan),
                         ("a.leaf", lambda a: a.astype(np.float64))):
        with pytest.raises(PerspectrumError, match="damaged"):
            Forest.from_arrays({**arrays, name: change(arrays[name])}, "a.")


def test_forest_scores_in_blocks_as_in_one(fitted, monkeypatch):
    """Many rows are walked a block at a time (bounded memory) with the very same scores."""
    classifier, rows, held = fitted
    forest = Forest.of(classifier, rows)
    whole = forest.predict_proba(held)
    monkeypatch.setattr(trees, "WALKS", 40 * 7)  # blocks of 7 rows: 300 rows in 43 blocks, the last one short
    assert np.array_equal(forest.predict_proba(held), whole)
    assert forest.predict_proba(held[:0]).shape == (0,)
