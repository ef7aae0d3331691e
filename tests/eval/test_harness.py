"""The harness: any system of the protocol scored with our splits, metrics and report, on its
own input and on gold input; our IR and pipeline systems as implementations of it; and the
one-line errors a third party meets (exit 2 for a malformed value, 1 for everything else).

The classes below are third-party systems too: the CLI loads them as ``tests.eval.test_harness:Name``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from perspectrum.cli.app import app
from perspectrum.data import Dataset, load_dataset
from perspectrum.eval.harness import CHAIN, TASKS, SpecError, evaluate_system, gold_input, oracle_stages, run_chain
from perspectrum.eval.ir import evaluate_ir, t4_queries
from perspectrum.eval.systems import IRSystem, PipelineSystem, centred, evidence_query
from perspectrum.index.store import IndexStore
from perspectrum.pipeline.pipeline import Pipeline
from tests.conftest import CLAIMS
from tests.example_system import WordOverlap
from tests.eval.test_ir import _swap_labels

runner = CliRunner()
EXAMPLE = "tests.example_system:WordOverlap"
#: The fixture's gold (claim, perspective) pairs and clusters on the test split.
TEST_PAIRS = sum(len(pids) for _, split, clusters in CLAIMS.values() if split == "test" for pids, _, _ in clusters)
TEST_CLUSTERS = sum(len(clusters) for _, split, clusters in CLAIMS.values() if split == "test")


class Narrow(WordOverlap):
    """Keeps one perspective per claim, so its own-input stance and clusters miss gold ones."""

    def __init__(self) -> None:
        super().__init__(keep=1)


class NoTasks:
    name = "no-tasks"

    def prepare(self, data: Any) -> None: ...


class Forgetful(WordOverlap):
    """Declares evidence, but its evidence is not a method."""

    evidence = None  # type: ignore[assignment]


class StanceOnly:
    """Every perspective supports every claim; it keeps nothing, so it needs stance oracled."""

    name = "stance-only"
    tasks = frozenset({"stance"})

    def prepare(self, data: Any) -> None: ...

    def stance(self, claims: list[str], perspectives: list[list[int]]) -> list[list[float]]:
        return [[1] * len(ids) for ids in perspectives]


class Broken(WordOverlap):
    def retrieve(self, claims: list[str]) -> list[list[int]]:
        return [[1 // 0]]


class Liar(WordOverlap):
    """Keeps a perspective it was not given."""

    def relevance(self, claims: list[str], candidates: list[list[int]]) -> list[list[int]]:
        return [[32] for _ in claims]


class Spy:
    """Records which claims ``prepare`` was handed."""

    name = "spy"
    tasks = frozenset({"relevance"})

    def prepare(self, data: Dataset) -> None:
        self.seen = {claim.split for claim in data.claims.values()}
        self.topics = set(data.topics)

    def relevance(self, claims: list[str], candidates: list[list[int]]) -> list[list[int]]:
        return candidates


def evaluate(*args: str, exit_code: int = 0) -> Any:
    result = runner.invoke(app, ["evaluate", *args], env={"COLUMNS": "200"})
    assert result.exit_code == exit_code, result.output
    return result


def one_line(*args: str, exit_code: int = 1) -> str:
    result = evaluate(*args, exit_code=exit_code)
    lines = result.stderr.strip().splitlines()  # progress bars may come before the error
    errors = [line for line in lines if line.startswith("error: ")]
    assert errors == lines[-1:] and "Traceback" not in result.output, result.output
    return errors[0]


def test_example_system_end_to_end_with_and_without_an_oracle(data_dir: Path, tmp_path: Path) -> None:
    common = ["--split", "test", "--data-dir", str(data_dir), "--no-verify"]
    out = tmp_path / "own.json"
    result = evaluate("--system", EXAMPLE, *common, "--json", str(out))
    assert "word-overlap on test through the harness" in result.output and "gold input" not in result.output
    own = json.loads(out.read_text())
    assert (own["system"], own["spec"], own["split"], own["claims"], own["oracle"]) == (
        "word-overlap", EXAMPLE, "test", 2, [])
    assert own["declared"] == list(CHAIN) and own["unscored"] == {}
    assert set(own["tasks"]) == {"retrieve", "t1", "t2", "t2_all", "t3", "t4", "t4_all"}
    assert all(scores["gold"] is None and scores["own"] for scores in own["tasks"].values())
    assert own["inputs"] == {"own": {"retrieve": "claims", "relevance": "retrieve", "stance": "relevance",
                                     "equivalence": "relevance", "evidence": "equivalence"}, "gold": None}
    tasks = own["tasks"]
    assert own["t5_all"]["own"] == pytest.approx(
        tasks["t1"]["own"]["f1"] * tasks["t2_all"]["own"]["f1"] * tasks["t4_all"]["own"]["f1"] / 1e4, abs=0.01)
    assert tasks["t2_all"]["own"]["pairs"] == TEST_PAIRS and tasks["t4_all"]["own"]["clusters"] == TEST_CLUSTERS

    # gold clusters for evidence: every gold cluster is matched, and nothing upstream is asked again
    out = tmp_path / "evidence.json"
    evaluate("--system", EXAMPLE, *common, "--oracle", "evidence", "--json", str(out))
    gold = json.loads(out.read_text())
    assert gold["oracle"] == ["evidence"] and gold["inputs"]["gold"]["evidence"] == "gold"
    assert own["coverage"]["own"]["evidence"] < 100 == gold["coverage"]["gold"]["evidence"]
    assert gold["tasks"]["t4"]["gold"]["clusters"] == TEST_CLUSTERS > gold["tasks"]["t4"]["own"]["clusters"]
    assert gold["tasks"]["t4_all"]["gold"]["f1"] != gold["tasks"]["t4_all"]["own"]["f1"]
    for key in ("t1", "t2", "t3"):
        assert gold["tasks"][key]["gold"] == gold["tasks"][key]["own"] == own["tasks"][key]["own"]
    assert {k: v for k, v in gold["stage_seconds"]["gold"].items() if k != "evidence"} == {
        k: v for k, v in gold["stage_seconds"]["own"].items() if k != "evidence"}

    # a system that keeps one perspective: gold perspectives for stance and equivalence reach them all
    out = tmp_path / "narrow.json"
    result = evaluate("--system", "tests.eval.test_harness:Narrow", *common, "--oracle", "stance,equivalence",
                      "--json", str(out))
    assert "own input" in result.output and "gold input" in result.output
    narrow = json.loads(out.read_text())
    assert narrow["oracle"] == ["stance", "equivalence"]
    assert narrow["coverage"]["own"]["stance"] < 100 == narrow["coverage"]["gold"]["stance"]
    assert narrow["coverage"]["gold"]["equivalence"] == 100
    t2 = narrow["tasks"]["t2"]
    assert t2["own"]["pairs"] < TEST_PAIRS == t2["gold"]["pairs"] == narrow["tasks"]["t2_all"]["gold"]["pairs"]
    assert narrow["tasks"]["t3"]["own"] != narrow["tasks"]["t3"]["gold"]
    assert narrow["inputs"]["gold"]["evidence"] == "equivalence"  # downstream of gold clusters, asked again
    assert narrow["tasks"]["t1"]["gold"] == narrow["tasks"]["t1"]["own"]  # relevance was not oracled


def test_gold_input_is_complete_and_its_order_says_nothing(dataset: Dataset) -> None:
    claims = dataset.split("train")
    retrieved = [[31, 32, 1], [32], [], [7, 31], [], []]
    relevance = gold_input("relevance", claims, retrieved)
    for claim, given, own in zip(claims, relevance, retrieved):
        assert set(given) == claim.gold_pids | set(own) and len(given) == len(set(given))
        assert [p for p in given if p in own] == own  # the system's own ranking is kept
    assert relevance == gold_input("relevance", claims, retrieved)  # seeded, so runs compare
    assert gold_input("relevance", claims, None)[0] != [] and set(gold_input("relevance", claims, None)[0]) == {1, 2, 3}
    stance = gold_input("stance", claims, None)
    assert [sorted(ids) for ids in stance] == [sorted(c.gold_pids) for c in claims]
    assert any(ids != sorted(ids) for ids in stance)  # not id order, which can group a cluster's paraphrases
    assert gold_input("evidence", claims, None)[0] == [[1, 2], [3]]
    assert oracle_stages(["evidence,stance", "relevance"]) == ("relevance", "stance", "evidence")
    with pytest.raises(SpecError, match="reads the claim alone"):
        oracle_stages(["retrieve"])


def test_prepare_never_sees_the_split_under_evaluation(dataset: Dataset) -> None:
    for split, seen in (("test", {"train", "dev"}), ("dev", {"train"}), ("train", {"dev"})):
        spy = Spy()
        result = evaluate_system(spy, dataset, split, oracle=["relevance"])
        assert spy.seen == seen and all(dataset.claims[cid].split in seen for cid in spy.topics)
        assert result["tasks"]["t1"]["own"] is None and result["tasks"]["t1"]["gold"]["recall"] == 100.0


def test_bad_systems_and_stages_fail_in_one_line(data_dir: Path) -> None:
    common = ["--split", "test", "--data-dir", str(data_dir), "--no-verify"]
    assert "package.module:Class" in one_line("--system", "wordoverlap", *common, exit_code=2)
    one_line("--system", "tests.example_system:", *common, exit_code=2)
    one_line("--system", "tests/example_system.py:WordOverlap", *common, exit_code=2)
    assert "no module named 'tests.nowhere'" in one_line("--system", "tests.nowhere:X", *common)
    assert "has no attribute 'Missing'" in one_line("--system", "tests.example_system:Missing", *common)
    assert "has no tasks" in one_line("--system", "tests.eval.test_harness:NoTasks", *common)
    assert "has no evidence method" in one_line("--system", "tests.eval.test_harness:Forgetful", *common)
    line = one_line("--system", "tests.eval.test_harness:StanceOnly", *common)
    assert "answers stance but does not answer relevance" in line and "--oracle stance" in line
    assert "retrieve failed: ZeroDivisionError" in one_line("--system", "tests.eval.test_harness:Broken", *common)
    assert "not among its candidates" in one_line("--system", "tests.eval.test_harness:Liar", *common)
    assert "unknown oracle stage 'stnace'" in one_line("--system", EXAMPLE, "--oracle", "stnace", *common,
                                                       exit_code=2)
    one_line("--system", EXAMPLE, "--oracle", "retrieve", *common, exit_code=2)
    assert "--plot" in one_line("--system", EXAMPLE, "--plot", "x.png", *common)
    # a system answering one later task is scored on gold input alone
    result = evaluate("--system", "tests.eval.test_harness:StanceOnly", "--oracle", "stance", *common)
    assert "stance-only" in result.output and "T2 stance" in result.output and "T1" not in result.output


def test_pipeline_system_is_the_pipeline_task_by_task(trained_dir, tmp_path: Path) -> None:
    data, indexes, models = trained_dir
    dataset = load_dataset(data, verify=False)
    pipe = Pipeline.load(data, indexes, models, verify=False)
    system = PipelineSystem(pipe)
    system.prepare(dataset)
    claims = dataset.split("dev")
    own = run_chain(system, dataset, claims)
    texts = [c.text for c in claims]
    states = pipe.run_stages(texts, until="evidence")
    assert own.outputs["retrieve"] == [[c.id for c in s.candidates] for s in states]
    assert own.outputs["relevance"] == [[m.id for m in s.kept if not m.added] for s in states]
    assert own.outputs["equivalence"] == [[[s.kept[i].id for i in g.members] for g in s.groups] for s in states]
    assert own.outputs["evidence"] == [[[hit.id for hit in g.evidence] for g in s.groups] for s in states]
    threshold = pipe.settings["stance"]["threshold"]
    support = [{m.id: m.support for m in s.kept} for s in states]
    assert [[p >= 0.5 for p in scores] for scores in own.outputs["stance"]] == [
        [support[n][pid] >= threshold for pid in ids] for n, ids in enumerate(own.inputs["stance"])]

    out = tmp_path / "trained.json"
    common = ["--split", "dev", "--data-dir", str(data), "--no-verify", "--index-dir", str(indexes),
              "--models-dir", str(models)]
    evaluate("--system", "trained", "--oracle", "stance,equivalence,evidence", *common, "--json", str(out))
    result = json.loads(out.read_text())
    assert result["system"] == "trained" and result["settings"]["stance"]["threshold"] == threshold
    assert result["coverage"]["gold"]["stance"] == result["coverage"]["gold"]["evidence"] == 100
    assert result["tasks"]["t2"]["gold"]["pairs"] == sum(len(c.gold_pids) for c in claims)
    assert result["t5"]["gold"] is not None and result["t5_all"]["own"] is not None


def test_centred_stance_keeps_the_pipeline_decision() -> None:
    for threshold in (0.2, 0.5, 0.83):
        for p in (0.0, 0.1, 0.199, 0.2, 0.5, 0.83, 0.9, 1.0):
            assert (centred(p, threshold) >= 0.5) == (p >= threshold) and 0 <= centred(p, threshold) <= 1
    assert centred(0.3, 0.6) < centred(0.4, 0.6) and centred(1.0, 1.0) == 1.0


def test_ir_system_tunes_on_dev_alone_and_matches_the_ir_baseline(dataset: Dataset, tmp_path: Path,
                                                                  encoder) -> None:
    store = IndexStore(tmp_path / "idx")
    store._encoder = encoder
    baseline = evaluate_ir(dataset, store, split="test", tune_split="dev")["methods"]["bm25"]
    result = evaluate_system(IRSystem(store, method="bm25"), dataset, "test", oracle=["evidence"])
    assert result["system"] == "ir (bm25)" and result["settings"]["tuned_on"] == "dev"
    # its relevance is the baseline's T1, and on gold clusters its evidence is the baseline's T4
    assert result["settings"]["t1"]["k"] == baseline["t1"]["k"]
    assert {k: result["tasks"]["t1"]["own"][k] for k in ("precision", "recall", "f1")} == {
        k: baseline["t1"][k] for k in ("precision", "recall", "f1")}
    assert (result["settings"]["t4"]["query"], result["settings"]["t4"]["dev_f1"]) == (
        baseline["t4"]["query"], baseline["t4"]["dev_f1"])
    assert result["tasks"]["t4_all"]["gold"]["f1"] == baseline["t4"]["f1"]
    assert result["tasks"]["t2"]["own"]["recall"] == 100.0  # always "support" (a missed pair is not)
    claim = dataset.claims[9]
    queries = t4_queries(dataset, [claim], "perspective")
    assert queries[(9, 0)] == evidence_query(claim.text, [dataset.perspectives[25].text], "perspective")

    relabelled = evaluate_system(IRSystem(store, method="bm25"), _swap_labels(dataset, "test"), "test")
    assert relabelled["settings"] == result["settings"]
    assert relabelled["tasks"]["t1"]["own"] != result["tasks"]["t1"]["own"]  # test labels do move the scores
    dev_changed = evaluate_system(IRSystem(store, method="bm25"), _swap_labels(dataset, "dev"), "test")
    assert dev_changed["settings"] != result["settings"]  # dev labels do move them: the check above can fail


def test_mine_and_match_are_scored_for_any_system_that_declares_them(trained_dir, tmp_path: Path) -> None:
    data, indexes, models = trained_dir
    dataset = load_dataset(data, verify=False)
    out = tmp_path / "text.json"
    env = {"PERSPECTRUM_INDEXES": str(indexes), "PERSPECTRUM_MODELS": str(models)}  # our judge, our indexes
    result = runner.invoke(app, ["evaluate", "--system", "tests.example_system:WordOverlapText", "--split", "test",
                                 "--data-dir", str(data), "--no-verify", "--json", str(out)], env=env)
    assert result.exit_code == 0, result.output
    tasks = json.loads(out.read_text())["tasks"]
    claims = dataset.split("test")
    mine, match = tasks["mine"]["own"], tasks["match"]["own"]
    assert mine["documents"] == len({(c.cid, e) for c in claims for k in c.clusters for e in k.evidence})
    assert mine["clusters"] == sum(bool(k.evidence) for c in claims for k in c.clusters)
    assert 0 <= mine["cluster_hit_share"] <= 100 and 0 <= mine["unit_precision"] <= 100 and mine["units"] > 0
    assert match["documents"] == sum(any(k.evidence for k in c.clusters) for c in claims)
    assert 0 <= match["accuracy"] <= 100 and match["arguments"] >= sum(len(c.clusters) for c in claims)
    assert tasks["mine"]["gold"] is None and tasks["match"]["gold"] is None
    # ours, through the same scorers: the pipeline's own mine and match
    system = PipelineSystem(Pipeline.load(data, indexes, models, verify=False), tasks=TASKS)
    ours = evaluate_system(system, dataset, "test")["tasks"]
    assert ours["mine"]["own"]["documents"] == mine["documents"] and ours["match"]["own"]["documents"] == match["documents"]
    assert ours["match"]["own"]["arguments"] == match["arguments"]  # the same documents and candidates for every system
