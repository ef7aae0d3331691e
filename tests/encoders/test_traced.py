"""Traced copies: the same numbers as the transformers models, made once, loaded without
transformers, and never trusted when damaged, stale or wrong."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from perspectrum import integrity
from perspectrum.encoders import traced
from perspectrum.encoders.cross_encoder import META_FILE, CrossEncoderModel
from perspectrum.train.fine_tune import TrainParams
from perspectrum.encoders.bi_encoder import default_encoder_path, transformers_classes

ROOT = Path(__file__).resolve().parents[2]
PAIRS = [("Animals should have legal rights", "Animals feel pain and deserve protection."),
         ("Zoos", "word " * 200),
         ("Homework should be abolished [SEP] now", "Children lose play time to homework."),
         ("Tax fast food", "")]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    """A cross-encoder folder as training writes one: MiniLM with a fresh one-logit head."""
    AutoModel, AutoTokenizer = transformers_classes("AutoModelForSequenceClassification", "AutoTokenizer")
    folder = tmp_path_factory.mktemp("model")
    import torch

    torch.manual_seed(0)
    model = AutoModel.from_pretrained(str(default_encoder_path()), num_labels=1).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(default_encoder_path()))
    meta = {"task": "relevance", "params": TrainParams(max_length=48).to_dict()}
    CrossEncoderModel(model, tokenizer, meta, quantize=False).write(folder)
    return folder


def eager_scores(folder: Path) -> np.ndarray:
    """The pairs scored by the transformers model itself, in int8 as ``load`` runs it."""
    AutoModel, AutoTokenizer = transformers_classes("AutoModelForSequenceClassification", "AutoTokenizer")
    meta = json.loads((folder / META_FILE).read_text())
    return CrossEncoderModel(AutoModel.from_pretrained(str(folder)).eval(), AutoTokenizer.from_pretrained(str(folder)),
                             meta).score(PAIRS)


def recorded(folder: Path) -> dict[str, str]:
    """The sums the folder's perspectrum.json records (written on its first load)."""
    return json.loads((folder / META_FILE).read_text())["files"]


def copies() -> list[Path]:
    return sorted(traced.cache_dir().glob("*.pt"))


@pytest.fixture
def empty_cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("PERSPECTRUM_CACHE", str(tmp_path / "cache"))
    return traced.cache_dir()


def test_tokens_match_the_transformers_tokenizer() -> None:
    (AutoTokenizer,) = transformers_classes("AutoTokenizer")
    folder = default_encoder_path()
    reference = AutoTokenizer.from_pretrained(str(folder))
    tokens = traced.Tokens.from_folder(folder, 48, token_types=True)
    firsts, seconds = [a for a, _ in PAIRS], [b for _, b in PAIRS]
    ours = tokens(firsts, seconds)
    theirs = reference(firsts, seconds, truncation=True, max_length=48, padding=True, return_tensors="pt")
    assert ours["input_ids"].shape[1] == 48  # the long pair was truncated, the rest padded
    for name in ("input_ids", "attention_mask", "token_type_ids"):
        assert (ours[name] == theirs[name]).all(), name
    singles = tokens(firsts)
    theirs = reference(firsts, truncation=True, max_length=48, padding=True, return_tensors="pt")
    assert all((singles[name] == theirs[name]).all() for name in singles)


@pytest.mark.slow  # traces a model (seconds)
def test_copy_is_made_once_and_scores_like_the_model(model_dir, empty_cache) -> None:
    import torch

    first = CrossEncoderModel.load(model_dir)
    assert isinstance(first.model, torch.jit.ScriptModule) and len(copies()) == 1
    made = copies()[0].stat().st_mtime_ns
    again = CrossEncoderModel.load(model_dir)
    assert copies()[0].stat().st_mtime_ns == made  # read, not made again
    expected = eager_scores(model_dir)
    assert np.abs(first.score(PAIRS) - expected).max() < 1e-6
    assert np.abs(again.score(PAIRS) - expected).max() < 1e-6


@pytest.mark.slow  # traces a model (seconds)
def test_a_process_with_a_copy_never_imports_transformers(model_dir, empty_cache) -> None:
    expected = CrossEncoderModel.load(model_dir).score(PAIRS)
    code = ("import json, sys; from perspectrum.encoders.cross_encoder import CrossEncoderModel; "
            f"scores = CrossEncoderModel.load({str(model_dir)!r}).score({PAIRS!r}); "
            "print(json.dumps(['transformers' in sys.modules, scores.tolist()]))")
    env = {**os.environ, "PERSPECTRUM_CACHE": str(empty_cache.parent), "HF_HUB_OFFLINE": "1"}
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    imported, scores = json.loads(run.stdout)
    assert not imported and np.allclose(scores, expected, atol=1e-6)
    assert "Warning" not in run.stderr  # torch's int8 deprecation notice stays quiet
    assert "making traced copies" not in run.stderr  # the copy was there: nothing to announce


@pytest.mark.slow  # traces a model (seconds)
def test_damaged_copy_is_ignored_and_made_again(model_dir, empty_cache, capsys) -> None:
    expected = CrossEncoderModel.load(model_dir).score(PAIRS)
    copies()[0].write_bytes(b"not a TorchScript file")
    model = CrossEncoderModel.load(model_dir)
    assert np.abs(model.score(PAIRS) - expected).max() < 1e-6
    assert "damaged" in capsys.readouterr().err
    assert traced.load(model_dir, True, recorded(model_dir)) is not None  # the cache holds a good copy again


@pytest.mark.slow  # traces a model (seconds)
def test_changed_model_gets_a_new_copy_and_the_old_one_goes(model_dir, empty_cache, tmp_path) -> None:
    import shutil

    folder = tmp_path / "model"
    shutil.copytree(model_dir, folder)
    CrossEncoderModel.load(folder)
    old = copies()
    # retuned thresholds alone (perspectrum.json) keep the copy: the files it is made from did not change
    meta = json.loads((folder / META_FILE).read_text())
    (folder / META_FILE).write_text(json.dumps({**meta, "note": "retuned"}) + "\n")
    CrossEncoderModel.load(folder)
    assert copies() == old
    # a new model (other recorded sums) gets a new copy, and the old one goes with its sum file
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "note": "retrained"}))
    meta["files"] = integrity.record(folder, skip=(META_FILE, "README.md"))
    (folder / META_FILE).write_text(json.dumps(meta) + "\n")
    CrossEncoderModel.load(folder)
    assert len(old) == 1 and len(copies()) == 1 and copies() != old
    assert sorted(p.stem for p in traced.cache_dir().iterdir()) == [copies()[0].stem] * 2  # copy and its sum


@pytest.mark.slow  # traces a model (seconds)
def test_copy_that_disagrees_is_not_kept(model_dir, empty_cache, monkeypatch) -> None:
    import torch

    monkeypatch.setattr(traced, "TOLERANCE", -1.0)  # no copy can pass
    model = CrossEncoderModel.load(model_dir)
    assert not isinstance(model.model, torch.jit.ScriptModule) and copies() == []
    assert np.abs(model.score(PAIRS) - eager_scores(model_dir)).max() < 1e-6
