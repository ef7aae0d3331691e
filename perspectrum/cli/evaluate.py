"""``perspectrum evaluate``: score a system with T1–T5."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from perspectrum.cli.common import (BackendChoice, BackendOpt, DataDir, DeviceOpt, IndexDir, JsonOut, MilvusUri,
                                    ModelsDir, NoVerify, app, console, error_exit, load_pipeline, models_folder,
                                    open_store, save_json, say)
from perspectrum.errors import PerspectrumError


class System(str, Enum):
    """The built-in systems of `evaluate --system`; any other is named package.module:Class."""

    ir = "ir"
    trained = "trained"
    pipeline = "pipeline"


class Split(str, Enum):
    train = "train"
    dev = "dev"
    test = "test"


@app.command("evaluate")
def evaluate(
    system: Annotated[str, typer.Option(
        metavar="NAME|package.module:Class",
        help="ir, trained, pipeline, or any system of the harness's protocol (perspectrum.eval.harness), "
             "imported from the current folder or the Python path.")] = System.ir.value,
    split: Annotated[Split, typer.Option(help="Split to score; thresholds are always tuned on dev.")] = Split.test,
    oracle: Annotated[Optional[list[str]], typer.Option(
        "--oracle", metavar="STAGE", help="Give STAGE gold input (relevance, stance, equivalence, evidence; repeat "
        "or comma-separate): each task is reported on the system's own input and on gold input.")] = None,
    harness: Annotated[bool, typer.Option("--harness", help="Score ir, trained or pipeline through the harness, "
                                          "as any system is, instead of their detailed reports.")] = False,
    json_path: JsonOut = None,
    plot: Annotated[Optional[Path], typer.Option(help="Write curves as PNG here (IR: recall@k; trained: PR).")] = None,
    data_dir: DataDir = None,
    index_dir: IndexDir = None,
    models_dir: ModelsDir = None,
    device: DeviceOpt = None,
    no_verify: NoVerify = False,
    backend: BackendOpt = BackendChoice.embedded,
    milvus_uri: MilvusUri = None,
) -> None:
    """Score a system with T1–T5: ours beside the paper's numbers, or any system through the harness.

    ir, trained and pipeline give their detailed reports; a package.module:Class system,
    --oracle or --harness go through the harness, which scores every system alike.
    """
    # the report is the harness's for a loaded system, --oracle or --harness; else the ir, trained or pipeline one
    from perspectrum.data import load_dataset
    from perspectrum.eval.harness import SpecError, evaluate_system, load_system, oracle_stages

    backend, split, verify = BackendChoice(backend).value, Split(split).value, not no_verify
    builtin = system in {s.value for s in System}
    if backend != BackendChoice.embedded.value and (system not in (System.ir.value, System.pipeline.value)
                                                    or oracle or harness):
        raise error_exit(PerspectrumError("--backend applies to the ir and pipeline reports (not the harness)"), 2)
    try:
        gold_stages = oracle_stages(oracle or ())
        chosen = None if builtin else load_system(system)
    except SpecError as exc:
        raise error_exit(exc, 2) from None
    dataset = load_dataset(data_dir, verify=verify)
    if chosen is not None or gold_stages or harness:
        from perspectrum.eval.report import harness_summary, harness_table
        from perspectrum.eval.systems import builtin_system

        if plot:
            raise PerspectrumError("--plot draws the ir and trained systems' curves; the harness has none")
        if chosen is None:
            chosen = builtin_system(system, data_dir, index_dir, models_dir, verify=verify)
        result = evaluate_system(chosen, dataset, split, gold_stages, spec=system, show_progress=True)
        console.print(harness_table(result))
        for line in harness_summary(result):
            say(line)
        draw: Any = None  # the harness has no curves
    elif system == System.pipeline.value:
        from perspectrum.eval.end_to_end import evaluate_pipeline
        from perspectrum.eval.report import pipeline_summary, pipeline_table

        if plot:
            raise PerspectrumError("--plot draws the ir and trained systems' curves; the pipeline has none")
        pipe = load_pipeline(data_dir, index_dir, models_dir, verify, backend=backend, milvus_uri=milvus_uri)
        result = evaluate_pipeline(dataset, pipe, split=split, show_progress=True)
        console.print(pipeline_table(result))
        for line in pipeline_summary(result):
            console.print(line)
        stages = ", ".join(f"{k} {v / result['claims'] * 1000:.0f}" for k, v in result["stage_seconds"].items())
        console.print(f"ms per claim (batches of {result['batch_size']}): {stages}")
        draw = None  # the pipeline has no curves
    elif system == System.trained.value:
        from perspectrum.eval.report import plot_pr_curves, trained_table
        from perspectrum.eval.trained import evaluate_trained

        from perspectrum.models.scorers import models_present
        from perspectrum.models.shipped import SETUP, current, unpacked

        models = models_folder(models_dir)
        if not models_present(models):  # the shipped models, as unpacked (their cards stay as shipped)
            if current(models) is not None:
                raise PerspectrumError(f"{current(models)}: {SETUP}")
            models = unpacked(models)
        result = evaluate_trained(dataset, open_store(index_dir), models, split=split, show_progress=True,
                                  record=models == models_folder(models_dir))
        console.print(trained_table(result))
        for key, scores in result["tasks"].items():
            console.print(f"{key} setting (tuned on dev): {json.dumps(scores['setting'])}")
        rates = ", ".join(f"{task} {rate:.0f}" for task, rate in result["pairs_per_second"].items())
        console.print(f"pairs/s on this machine: {rates}")
        draw = plot_pr_curves
    else:
        from perspectrum.eval.ir import evaluate_ir
        from perspectrum.eval.report import ir_table, ir_tuning, plot_recall_curves

        result = evaluate_ir(dataset, open_store(index_dir, backend, milvus_uri), split=split, show_progress=True)
        console.print(ir_table(result))
        for line in ir_tuning(result):
            console.print(f"tuned on {result['tuned_on']}: {line}")
        for pool, methods in result["latency"].items():
            line = ", ".join(f"{m} {v['p50_ms']:.1f}/{v['p95_ms']:.1f}" for m, v in methods.items())
            console.print(f"latency p50/p95 ms per query ({pool}, k=100): {line}")
        draw = plot_recall_curves
    console.print(f"finished in {result['seconds']:.0f} s")
    save_json(json_path, result)
    if plot and draw is not None:
        say(f"wrote {draw(result, plot)}")
