"""``perspectrum train`` (the models) and ``perspectrum tune`` (the pipeline's settings on dev)."""

from __future__ import annotations

import json
from enum import Enum
from typing import Annotated

import typer
from rich.table import Table

from perspectrum._progress import literal
from perspectrum.cli.common import (DataDir, DeviceOpt, IndexDir, JsonOut, ModelsDir, NoVerify, app, console,
                                    load_pipeline, metric, models_folder, open_store, save_json)


class TaskChoice(str, Enum):
    relevance = "relevance"
    stance = "stance"
    equivalence = "equivalence"
    evidence = "evidence"
    all = "all"


@app.command("train")
def train(
    task: Annotated[TaskChoice, typer.Argument(help="Which cross-encoder to train (all: the four in turn).")],
    seed: Annotated[int, typer.Option(help="Seed for the head, example order and sampling.")] = 13,
    quick: Annotated[bool, typer.Option("--quick", help="Train on a tiny slice (tests, smoke runs).")] = False,
    tune_only: Annotated[bool, typer.Option("--tune-only", help="Keep the trained weights; re-choose the "
                                            "thresholds on dev (evidence, a ranker with no weights to keep, is fitted again).")] = False,
    json_path: JsonOut = None,
    data_dir: DataDir = None,
    index_dir: IndexDir = None,
    models_dir: ModelsDir = None,
    device: DeviceOpt = None,
    no_verify: NoVerify = False,
) -> None:
    """Fine-tune the cross-encoders and fit the evidence ranker, tune their cut-offs on dev, save models/<task>/."""
    from perspectrum.data import data_checksum, load_dataset
    from perspectrum.models.scorers import MODELS as TASKS
    from perspectrum.train.tasks import retune_task, train_task

    verify = not no_verify
    dataset = load_dataset(data_dir, verify=verify)
    checksum = data_checksum(data_dir)
    target = models_folder(models_dir)
    table = Table(title=literal(f"trained models in {target}" + (" (quick)" if quick else ""), "table.title"))
    for column in ("task", "examples", "train s", "dev metric", "thresholds (dev)"):
        table.add_column(column, overflow="fold")
    summary = {}
    for name in TASKS if task == TaskChoice.all else (TaskChoice(task).value,):
        if tune_only:
            meta = retune_task(name, dataset, open_store(index_dir), target, show_progress=True)
        else:
            meta = train_task(name, dataset, open_store(index_dir), target, seed=seed, is_quick=quick,
                              show_progress=True, data_checksum=checksum)
        summary[name] = meta
        table.add_row(name, f"{meta['examples']['examples']:,}", f"{meta['train_seconds']:.0f}", metric(meta["dev"]),
                      json.dumps(meta["thresholds"]))
    console.print(table)
    if task == TaskChoice.all:  # then the pipeline's settings, tuned on dev
        from perspectrum.train.tune_pipeline import tune_pipeline

        record = tune_pipeline(dataset, load_pipeline(data_dir, index_dir, target, verify), show_progress=True)
        summary["pipeline"] = record
        console.print(f"pipeline settings chosen on dev: {json.dumps(record['settings'])}")
    save_json(json_path, summary)


@app.command("tune")
def tune(
    json_path: JsonOut = None,
    data_dir: DataDir = None,
    index_dir: IndexDir = None,
    models_dir: ModelsDir = None,
    device: DeviceOpt = None,
    no_verify: NoVerify = False,
) -> None:
    """Choose the pipeline's relevance floor, stance margin, clustering cut and expansion on dev; store them beside the models.

    Runs `discover` end to end over the dev claims (and off-topic claims for the
    floor) once per setting tried; model scores are computed once and reused.
    """
    from perspectrum.data import load_dataset
    from perspectrum.train.tune_pipeline import tune_pipeline

    dataset = load_dataset(data_dir, verify=not no_verify)
    record = tune_pipeline(dataset, load_pipeline(data_dir, index_dir, models_dir, not no_verify), show_progress=True)
    table = Table(title=f"pipeline settings tried on dev ({record['system']} models), %")
    columns = ("floor", "margin", "cut", "neighbours", "T1", "T2 found", "T3", "T4 found", "T4 all", "T5 found",
               "T5 strict", "mixed", "wrong stance", "s")
    for column in columns:
        table.add_column(column, justify="right")
    for row in record["runs"]:
        chosen = "→ " if row is record["chosen"] or row == record["chosen"] else ""
        settings = row["settings"]
        table.add_row(chosen + f"{settings['relevance']['floor']:.3f}", str(settings["stance"]["margin"]),
                      str(settings["cluster"]["threshold"]), str(settings["expand"]["neighbours"]),
                      *(f"{row[k]:.1f}" for k in ("t1", "t2", "t3", "t4", "t4_all", "t5", "t5_all", "mixed",
                                                   "wrong_stance")), f"{row['seconds']:.0f}")
    console.print(table)
    floor = record["floor"]
    console.print(f"floor {floor['value']:.3f}: empties {floor['tune']['real_emptied']:.1%} of real dev claims, "
                  f"answers {floor['tune']['offtopic_answered']:.1%} of {floor['offtopic_tune']} off-topic ones "
                  f"(held-out off-topic answered: {floor['held_out']['offtopic_answered']:.1%})")
    console.print(f"chosen: {json.dumps(record['settings'])} ({record['rule']}); {record['seconds']:.0f} s")
    save_json(json_path, record)

