"""Gradient-boosted trees as plain arrays: fitted by scikit-learn, read without it.

Why: ``discover`` scores evidence with scikit-learn's ``HistGradientBoostingClassifier``,
and importing scikit-learn (which imports ``scipy.stats``) costs ~1.1 s of a ~4.6 s
cold start on 2 cores; unpickling the fitted model also runs whatever code a pickle
names. A fitted binary classifier is a baseline and a list of trees, and each tree is a
table of nodes (feature, threshold, where missing values go, children, leaf value), so
:class:`Forest` keeps those tables as NumPy arrays in an ``.npz`` read with
``allow_pickle=False``: loading one runs no code, and scoring follows the same rule as
scikit-learn's predictor (``x <= threshold`` goes left, NaN goes where the split sent
missing values) and adds the leaves in the same order, so the scores are the
classifier's own. :meth:`Forest.of` checks that on the rows it was fitted on before the
arrays are used.

ONNX (``skl2onnx`` + ONNX Runtime) would do the same job with two more run-time
packages, and its tree operator keeps thresholds in float32, which can send a row to
the other side of a split.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from perspectrum.errors import PerspectrumError

#: Largest difference allowed between a forest's probabilities and its classifier's
#: (they are computed the same way; this absorbs only the last bits of ``exp``).
TOLERANCE = 1e-9
#: The node tables a forest keeps, each (trees × nodes), padded with leaves.
FIELDS = ("feature", "threshold", "missing_left", "left", "right", "leaf", "value")
#: Most (row, tree) walks scored at once: each walk holds a few int64 and float64 entries,
#: so a block stays near 40 MB; scoring every window of the training claims at once reached
#: 5 GB on a first setup.
WALKS = 1 << 20


@dataclass(frozen=True)
class Forest:
    """A binary gradient-boosted classifier: P(positive) = sigmoid(baseline + Σ leaf values).

    Attributes:
        baseline: the raw score before any tree.
        feature, threshold, missing_left, left, right, leaf, value: (trees × nodes)
            node tables; node 0 is each tree's root, and a node's children come after it
            (as scikit-learn numbers them), so every walk reaches a leaf.
        features: how many input columns the trees read.
    """

    baseline: float
    feature: np.ndarray
    threshold: np.ndarray
    missing_left: np.ndarray
    left: np.ndarray
    right: np.ndarray
    leaf: np.ndarray
    value: np.ndarray
    features: int

    @classmethod
    def of(cls, classifier: object, rows: np.ndarray) -> Forest:
        """The arrays of a fitted binary ``HistGradientBoostingClassifier`` without
        categorical splits, checked against its own ``predict_proba`` on ``rows``."""
        iterations = classifier._predictors  # type: ignore[attr-defined]
        if any(len(trees) != 1 for trees in iterations):  # one tree per iteration: binary
            raise ValueError("only binary classifiers without categorical splits become a Forest")
        nodes = [trees[0].nodes for trees in iterations]
        if any(n["is_categorical"].any() for n in nodes):
            raise ValueError("only binary classifiers without categorical splits become a Forest")
        width = max(len(n) for n in nodes)

        def table(field: str, dtype: type, pad: object) -> np.ndarray:
            out = np.full((len(nodes), width), pad, dtype=dtype)
            for t, n in enumerate(nodes):
                out[t, :len(n)] = n[field]
            return out

        forest = cls(
            baseline=float(np.asarray(classifier._baseline_prediction).ravel()[0]),  # type: ignore[attr-defined]
            feature=table("feature_idx", np.int64, 0), threshold=table("num_threshold", np.float64, 0.0),
            missing_left=table("missing_go_to_left", bool, False), left=table("left", np.int64, 0),
            right=table("right", np.int64, 0), leaf=table("is_leaf", bool, True),
            value=table("value", np.float64, 0.0),
            features=int(classifier.n_features_in_))  # type: ignore[attr-defined]
        expected = classifier.predict_proba(rows)[:, 1]  # type: ignore[attr-defined]
        if len(rows) and np.abs(forest.predict_proba(rows) - expected).max() > TOLERANCE:
            raise ValueError("the tree arrays do not reproduce the classifier's scores")
        return forest

    def predict_proba(self, rows: np.ndarray) -> np.ndarray:
        """P(positive) for each row of ``rows`` (rows × :attr:`features`, float64).

        Rows are walked a block at a time (:data:`WALKS` walks at most), so memory stays
        bounded however many rows come: each row's score depends on that row alone.
        """
        rows = np.asarray(rows, dtype=np.float64)
        if rows.ndim != 2 or rows.shape[1] != self.features:
            raise ValueError(f"expected rows of {self.features} features, got shape {rows.shape}")
        block = max(1, WALKS // self.feature.shape[0])
        if len(rows) <= block:
            return self._walk(rows)
        return np.concatenate([self._walk(rows[start:start + block]) for start in range(0, len(rows), block)])

    def _walk(self, rows: np.ndarray) -> np.ndarray:
        """:meth:`predict_proba` for one block of checked rows."""
        trees, width = self.feature.shape
        # every (row, tree) walk as one entry of flat arrays; node ids are global (tree × width + node)
        offset = np.arange(trees) * width
        at = np.tile(offset, len(rows))
        cell = np.repeat(np.arange(len(rows)) * self.features, trees)  # where each walk's row starts in rows.flat
        feature, threshold = self.feature.ravel(), self.threshold.ravel()
        left, right = (self.left + offset[:, None]).ravel(), (self.right + offset[:, None]).ravel()
        leaf, flat = self.leaf.ravel(), rows.ravel()
        missing = np.isnan(flat).any()
        walking = np.flatnonzero(~leaf[at])
        while walking.size:  # each step moves the walks not yet at a leaf one level down
            node = at[walking]
            x = flat[cell[walking] + feature[node]]
            go_left = x <= threshold[node]
            if missing:
                go_left = np.where(np.isnan(x), self.missing_left.ravel()[node], go_left)
            at[walking] = np.where(go_left, left[node], right[node])
            walking = walking[~leaf[at[walking]]]
        values = self.value.ravel()[at].reshape(len(rows), trees)
        # the baseline, then each tree in turn: the order (and so the rounding) of scikit-learn's sum
        raw = np.cumsum(np.hstack([np.full((len(rows), 1), self.baseline), values]), axis=1)[:, -1]
        return 1.0 / (1.0 + np.exp(-raw))

    def arrays(self, prefix: str) -> dict[str, np.ndarray]:
        """The forest as named arrays (for ``np.savez``), every name starting with ``prefix``."""
        out = {f"{prefix}{name}": getattr(self, name) for name in FIELDS}
        out[f"{prefix}scalars"] = np.array([self.baseline, self.features], dtype=np.float64)
        return out

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], prefix: str) -> Forest:
        """The forest :meth:`arrays` wrote, checked so a damaged file is an error, not
        a wrong score or an out-of-range read."""
        try:
            tables = {name: np.asarray(arrays[f"{prefix}{name}"]) for name in FIELDS}
            baseline, features = (float(v) for v in np.asarray(arrays[f"{prefix}scalars"], dtype=np.float64))
        except (KeyError, ValueError, TypeError):
            raise PerspectrumError(f"the trees '{prefix}' are missing or malformed") from None
        shape = tables["feature"].shape
        width = shape[1] if len(shape) == 2 else 0
        sound = (
            len(shape) == 2 and width > 0 and all(t.shape == shape for t in tables.values())
            and features == int(features) and features > 0
            and np.isfinite(baseline) and np.isfinite(tables["value"]).all()
            and all(np.issubdtype(tables[n].dtype, np.integer) for n in ("feature", "left", "right"))
            and all(tables[n].dtype == bool for n in ("missing_left", "leaf"))
            and all(np.issubdtype(tables[n].dtype, np.floating) for n in ("threshold", "value"))
            and ((tables["feature"] >= 0) & (tables["feature"] < features)).all()
            and all(((tables[n] >= 0) & (tables[n] < width)).all() for n in ("left", "right"))
            # a split's children come after it: no walk can loop
            and all(((tables[n] > np.arange(width)) | tables["leaf"]).all() for n in ("left", "right"))
        )
        if not sound:
            raise PerspectrumError(f"the trees '{prefix}' are damaged (shapes, indices or values out of range)")
        return cls(baseline=baseline, features=int(features),
                   **{name: tables[name] for name in FIELDS})
