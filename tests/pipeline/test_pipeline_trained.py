"""The pipeline with fine-tuned scorers: tiny ``--quick`` cross-encoders and ranker on the
ten-claim fixture, trained once per run with `perspectrum train all --quick` (the
``trained_dir`` fixture), which also chooses the pipeline's own settings on dev
(`pipeline.json`).

What the models score is not the point; that the fine-tuned path runs end to end, is
scored end to end, and reads its settings from dev alone, is.
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from perspectrum import Pipeline, PipelineConfig
from perspectrum.cli.app import app
from perspectrum.data import CLAIMS_FILE, load_dataset
from perspectrum.train.tune_pipeline import carried_settings, tune_pipeline
from perspectrum.models.scorers import PIPELINE_FILE
from tests.conftest import write_dataset

runner = CliRunner()


def test_train_all_chooses_the_pipeline_settings_on_dev(trained_dir) -> None:
    _, _, models = trained_dir
    stored = json.loads((models / PIPELINE_FILE).read_text())
    assert stored["tuned_on"] == "dev" and set(stored["settings"]) == {"relevance", "stance", "cluster", "expand",
                                                                       "evidence"}
    for stage, values in carried_settings().items():  # the longer dev runs' choices, added as they are
        assert values.items() <= stored["settings"][stage].items()
    shown = stored["calibration"]["shown"]  # the calibration was checked on what dev's answers show
    assert {k: stored["settings"]["stance"][k] for k in ("scale", "unclear")} == shown["settings"]
    assert stored["settings"]["cluster"]["threshold"] >= json.loads(
        (models / "equivalence" / "perspectrum.json").read_text())["thresholds"]["threshold"]
    summary = json.loads((models.parent / "train.json").read_text())
    runs = summary["pipeline"]["runs"]
    assert len(runs) >= 4 and all({"t5", "t5_all", "mixed", "wrong_stance"} <= set(r) for r in runs)


def test_fine_tuned_pipeline_answers_with_its_stored_settings(trained_dir) -> None:
    data, indexes, models = trained_dir
    pipe = Pipeline.load(data, indexes, models, verify=False)
    assert pipe.system == "trained"
    stored = json.loads((models / PIPELINE_FILE).read_text())["settings"]
    assert pipe.settings["relevance"]["floor"] == stored["relevance"]["floor"]
    assert pipe.settings["stance"]["margin"] == stored["stance"]["margin"]
    result = pipe.discover("Animals should have legal rights", explain=True)
    assert result.system == "trained" and set(result.timings) >= {"stance", "cluster", "expand", "evidence"}
    threshold, margin = pipe.settings["stance"]["threshold"], pipe.settings["stance"]["margin"]
    for found in result.perspectives:
        for phrasing in found.phrasings:
            p = phrasing.support_probability
            if p is not None and abs(p - threshold) >= margin:  # a confident member is on its cluster's side
                assert (p >= threshold) == (found.stance == "support")
    hits = [hit for found in result.perspectives for hit in found.evidence[:1]]
    assert hits and all(hit.window and 0.0 <= hit.window_score <= 1.0 for hit in hits)
    # the stance model read the members (the ranker's windows are above)
    assert any(phrasing.support_probability is not None for found in result.perspectives for phrasing in found.phrasings)
    agreeing = pipe.with_config(PipelineConfig(overrides={"expand": {"neighbours": 5, "agree": True}}))
    agreed = agreeing.discover("Animals should have legal rights").perspectives
    assert agreed
    for found in agreed:
        for phrasing in found.phrasings:  # every member, added or not, was read and sits on its side
            assert phrasing.support_probability is not None
    nothing = pipe.with_config(PipelineConfig(overrides={"relevance": {"floor": 2.0}})).discover("Tea or coffee")
    assert nothing.perspectives == () and "relevance floor" in nothing.notice


def test_evaluate_pipeline_end_to_end_on_the_fixture(trained_dir, tmp_path: Path) -> None:
    data, indexes, models = trained_dir
    out = tmp_path / "pipeline.json"
    result = runner.invoke(app, ["evaluate", "--system", "pipeline", "--split", "dev", "--data-dir", str(data),
                                 "--no-verify", "--index-dir", str(indexes), "--models-dir", str(models),
                                 "--json", str(out)], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    assert "T5 strict" in result.output and "stance purity" in result.output
    scores = json.loads(out.read_text())
    assert scores["models"] == "trained" and scores["claims"] == 2
    assert scores["t5_all"] <= scores["t5"] and 0 <= scores["purity"]["mixed_clusters"] <= 100
    assert set(scores["coverage"]) == {"pairs", "clusters"}


def test_test_labels_cannot_move_the_pipeline_settings(trained_dir, tmp_path: Path) -> None:
    data, indexes, models = trained_dir
    dataset = load_dataset(data, verify=False)
    grid = {"margins": (0.0, 0.1), "neighbours": (0,)}
    baseline = tune_pipeline(dataset, Pipeline.load(data, indexes, models, verify=False), **grid)
    claims = json.loads((data / CLAIMS_FILE).read_text())
    for claim in claims:
        if claim["cId"] in (9, 10):  # the test split: flip every stance, drop every evidence id
            for cluster in claim["perspectives"]:
                cluster["stance_label_3"] = "SUPPORT" if cluster["stance_label_3"] == "UNDERMINE" else "UNDERMINE"
                cluster["evidence"] = []
    (data / CLAIMS_FILE).write_text(json.dumps(claims))
    try:
        again = tune_pipeline(load_dataset(data, verify=False), Pipeline.load(data, indexes, models, verify=False),
                              **grid)
    finally:
        write_dataset(data)
    assert again["settings"] == baseline["settings"] and again["runs"] == [
        {**r, "seconds": a["seconds"]} for r, a in zip(baseline["runs"], again["runs"])]
