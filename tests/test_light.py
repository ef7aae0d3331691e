"""The light heads on the ten-claim fixture: training, the five scorers, determinism,
save/load, and that dev (never test) decides the cut-offs.

Heads are trained once per module (a few seconds); tests that need a second training
say why.
"""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np
import pytest

from perspectrum.data import Dataset, Pool, load_dataset
from perspectrum.errors import PerspectrumError
from perspectrum.index.store import IndexStore
from perspectrum.models.light_heads import HEADS_FILE, META_FILE, LightScorers, StaleHeads
from perspectrum.train.light_heads import train_light
from perspectrum.models.evidence_ranker import Debate
from perspectrum.models.settings import MODEL, MODELS, SETTINGS, chosen_by
from tests.conftest import write_dataset

ZOO = "Zoos should be banned"
PAIRS = [(ZOO, "Keeping animals in cages in zoos is cruel"), (ZOO, "Tea is better than coffee"),
         ("Fast food should be taxed", "A tax on fast food would reduce obesity"),
         (ZOO, "Keeping animals in cages in zoos is cruel")]
TRIPLES = [("Fast food should be taxed", "Taxing fast food hurts poor families most",
            "Fast food taxes fall hardest on low income households"),
           ("Fast food should be taxed", "Taxing fast food hurts poor families most",
            "A tax on fast food would reduce obesity")]
#: Zoo claim 1: cluster 0 (breeding programmes) with its own gold paragraph 1, and with
#: paragraph 2 (cruel cages), cluster 1's.
WINDOWS = [(1, 0, 1), (1, 0, 2)]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """(dataset, store, heads trained with seed 13, the folder they were saved to)."""
    root = tmp_path_factory.mktemp("light")
    dataset = load_dataset(write_dataset(root / "data"), verify=False)
    store = IndexStore(root / "indexes")
    return dataset, store, train_light(dataset, store, root / "heads"), root / "heads"


def _debates(dataset: Dataset) -> dict[int, Debate]:
    return {c.cid: Debate.of(dataset, c) for c in dataset.split("test")}


def _windows(scorers: LightScorers, dataset: Dataset) -> np.ndarray:
    """The best window's score of each of :data:`WINDOWS`."""
    jobs = [(Debate.of(dataset, dataset.claims[cid]), cluster, eid) for cid, cluster, eid in WINDOWS]
    scores = scorers.windows(jobs)
    assert [len(s) for s in scores] == [1, 1]  # two-sentence paragraphs: one window each
    return np.array([s.max() for s in scores])


def _all_scores(scorers: LightScorers, dataset: Dataset) -> list[np.ndarray]:
    keys, evidence = scorers.evidence(_debates(dataset))
    return [scorers.relevance(PAIRS), scorers.stance(PAIRS), scorers.equivalence(TRIPLES), evidence,
            _windows(scorers, dataset), np.array(keys)]


def _meta(folder) -> dict:
    return json.loads((folder / META_FILE).read_text(encoding="utf-8"))


def test_training_saves_heads_and_settings_in_the_documented_schema(setup):
    _, store, scorers, folder = setup
    assert scorers.kind == "light"
    assert {model: set(s) for model, s in scorers.settings.items()} == {s.model: set(chosen_by(s, MODEL))
                                                                         for s in SETTINGS if s.model}
    assert 0 < scorers.settings["stance"]["threshold"] < 1 and scorers.settings["relevance"]["k"] >= 1
    meta = _meta(folder)
    assert (folder / HEADS_FILE).is_file()
    assert meta["kind"] == "light" and meta["seed"] == 13 and meta["settings"] == scorers.settings
    assert meta["encoder"] == store.encoder.identity and meta["seconds"] > 0
    assert set(meta["dev"]) == set(MODELS) and all(0 <= m["f1"] <= 100 for m in meta["dev"].values())


def test_every_scorer_gives_one_probability_per_input(setup):
    dataset, _, scorers, _ = setup
    relevance, stance, equivalence = scorers.relevance(PAIRS), scorers.stance(PAIRS), scorers.equivalence(TRIPLES)
    keys, evidence = scorers.evidence(_debates(dataset))
    windows = _windows(scorers, dataset)
    for scores, n in ((relevance, 4), (stance, 4), (equivalence, 2), (evidence, len(keys)), (windows, 2)):
        assert scores.shape == (n,) and ((scores >= 0) & (scores <= 1)).all()
    assert relevance[0] == relevance[3]  # a repeated pair scores the same
    assert relevance[0] > relevance[1]  # the zoo perspective, not the tea one, is relevant to zoos
    assert windows[0] > windows[1]
    # every cluster of every test claim gets candidates, keyed (debate key, cluster, paragraph)
    clusters = {(c.cid, i) for c in dataset.split("test") for i in range(len(c.clusters))}
    assert {(k, i) for k, i, _ in keys} == clusters and all(d in dataset.evidence for _, _, d in keys)


def test_empty_inputs_give_empty_arrays(setup):
    _, _, scorers, _ = setup
    keys, evidence = scorers.evidence({})
    assert keys == [] and evidence.shape == (0,)
    for scores in (scorers.relevance([]), scorers.stance([]), scorers.equivalence([])):
        assert scores.shape == (0,)
    assert scorers.windows([]) == []


def test_evidence_is_the_same_from_several_threads(setup):
    dataset, store, scorers, folder = setup
    fresh = LightScorers.load(folder, store, Pool.from_dataset(dataset, "evidence"))  # indexes not opened yet
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: fresh.evidence(_debates(dataset)), range(4)))
    expected = scorers.evidence(_debates(dataset))
    for keys, scores in results:
        assert keys == expected[0] and np.array_equal(scores, expected[1])


def test_same_seed_trains_identical_heads(setup, tmp_path):
    dataset, store, scorers, folder = setup
    again = train_light(dataset, store, tmp_path / "again", seed=13)
    assert again.settings == scorers.settings
    for first, second in zip(_all_scores(scorers, dataset), _all_scores(again, dataset)):
        assert np.array_equal(first, second)
    assert _meta(tmp_path / "again")["dev"] == _meta(folder)["dev"]


def test_saved_heads_load_and_score_identically(setup):
    dataset, store, scorers, folder = setup
    loaded = LightScorers.load(folder, store, Pool.from_dataset(dataset, "evidence"))
    assert loaded.kind == "light" and loaded.settings == scorers.settings
    for first, second in zip(_all_scores(scorers, dataset), _all_scores(loaded, dataset)):
        assert np.array_equal(first, second)


def test_missing_or_corrupt_heads_are_one_clear_error(setup, tmp_path):
    dataset, store, _, folder = setup
    evidence = Pool.from_dataset(dataset, "evidence")
    with pytest.raises(PerspectrumError, match="no light heads"):
        LightScorers.load(tmp_path / "nowhere", store, evidence)
    broken = shutil.copytree(folder, tmp_path / "broken")
    (broken / HEADS_FILE).write_bytes(b"not an array file")
    with pytest.raises(StaleHeads, match="damaged"):  # the pipeline fits them again
        LightScorers.load(broken, store, evidence)
    truncated = shutil.copytree(folder, tmp_path / "truncated")
    (truncated / META_FILE).write_text('{"kind": "light", "settings": {', encoding="utf-8")
    with pytest.raises(StaleHeads, match="damaged"):
        LightScorers.load(truncated, store, evidence)
    missing = shutil.copytree(folder, tmp_path / "missing")
    (missing / HEADS_FILE).unlink()
    with pytest.raises(StaleHeads, match="damaged"):
        LightScorers.load(missing, store, evidence)


def _relabel(dataset: Dataset, split: str) -> Dataset:
    """The dataset with every ``split`` claim's stances flipped and evidence moved to its other cluster."""
    claims = dict(dataset.claims)
    for claim in dataset.split(split):
        clusters = claim.clusters
        claims[claim.cid] = replace(claim, clusters=tuple(
            replace(k, stance="UNDERMINE" if k.stance == "SUPPORT" else "SUPPORT",
                    evidence=clusters[(i + 1) % len(clusters)].evidence) for i, k in enumerate(clusters)))
    return replace(dataset, claims=claims)


def test_tuning_reads_dev_and_never_test(setup, tmp_path):
    dataset, store, scorers, folder = setup
    relabelled = train_light(_relabel(dataset, "test"), store, tmp_path / "test_changed")
    assert relabelled.settings == scorers.settings
    assert _meta(tmp_path / "test_changed")["dev"] == _meta(folder)["dev"]
    for first, second in zip(_all_scores(scorers, dataset), _all_scores(relabelled, dataset)):
        assert np.array_equal(first, second)
    # the same change to dev labels does move the dev figures, so the check above can fail
    train_light(_relabel(dataset, "dev"), store, tmp_path / "dev_changed")
    assert _meta(tmp_path / "dev_changed")["dev"] != _meta(folder)["dev"]


def _edited(folder, target, edit) -> tuple:
    """A copy of the heads in ``target`` with ``edit`` applied to its light.json's settings."""
    copy = shutil.copytree(folder, target)
    meta = _meta(copy)
    edit(meta)
    (copy / META_FILE).write_text(json.dumps(meta), encoding="utf-8")
    return copy, copy / META_FILE


#: Hand edits of light.json's stored settings, and what the one-line error says of each.
EDITS = [
    (lambda m: m["settings"]["stance"].update(threshold="high"),
     "setting stance.threshold must be a finite number, not 'high'"),
    (lambda m: m["settings"]["relevance"].update(threshold=float("nan")),
     "setting relevance.threshold must be a finite number, not nan"),
    (lambda m: m["settings"]["relevance"].update(k=2.5), "setting relevance.k must be a whole number, not 2.5"),
    (lambda m: m["settings"]["evidence"].update(relative="yes"),
     "setting evidence.relative must be true or false, not 'yes'"),
    (lambda m: m["settings"]["equivalence"].update(weight=None),
     "setting equivalence.weight must be a finite number, not None"),
    (lambda m: m["settings"]["stance"].pop("threshold"), "settings.stance has no threshold"),
    (lambda m: m["settings"].update(stance=[0.3]), "settings.stance must be a JSON object, not [0.3]"),
    (lambda m: m["settings"].pop("evidence"), "settings has no evidence"),
    (lambda m: m.update(settings="tuned"), "settings must be a JSON object, not 'tuned'"),
]


@pytest.mark.parametrize("edit, problem", EDITS)
def test_a_hand_edited_setting_is_one_line_naming_the_file_and_key_not_stale(setup, tmp_path, edit, problem):
    """Not StaleHeads (which the pipeline turns into a refit): the edit is the person's to correct."""
    dataset, store, _, folder = setup
    edited, meta_path = _edited(folder, tmp_path / "light", edit)
    with pytest.raises(PerspectrumError) as caught:
        LightScorers.load(edited, store, Pool.from_dataset(dataset, "evidence"))
    assert not isinstance(caught.value, StaleHeads)
    assert str(caught.value) == (f"{meta_path}: {problem}; correct it, or delete {edited} and run "
                                 "`perspectrum setup` to fit the light heads again")


def test_discover_with_a_hand_edited_setting_prints_that_line_and_refits_nothing(setup, tmp_path):
    from perspectrum.cli.app import app
    from typer.testing import CliRunner

    dataset, store, _, folder = setup
    for kind in ("bm25", "dense"):  # the perspectives' indexes, which discover opens before the heads
        store.open(Pool.from_dataset(dataset, "perspectives"), kind)
    light, meta_path = _edited(folder, tmp_path / "models" / "light", EDITS[0][0])
    before = {path.name: path.read_bytes() for path in light.iterdir()}
    result = CliRunner().invoke(app, ["discover", "Zoos should be banned", "--data-dir", str(folder.parent / "data"),
                                      "--no-verify", "--index-dir", str(store.root),
                                      "--models-dir", str(tmp_path / "models")])
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr == (f"error: {meta_path}: {EDITS[0][1]}; correct it, or delete {light} and run "
                             "`perspectrum setup` to fit the light heads again\n")
    assert {path.name: path.read_bytes() for path in light.iterdir()} == before  # no heads fitted again
    assert [p.name for p in (tmp_path / "models").iterdir() if p.suffix != ".lock"] == ["light"]  # no new version
