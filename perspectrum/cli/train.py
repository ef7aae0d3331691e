"""``perspectrum train`` (the models) and ``perspectrum tune`` (the pipeline's settings on dev)."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from perspectrum._progress import literal
from perspectrum.cli._util import (DataDir, IndexDir, JsonOut, ModelsDir, NoVerify, _metric, _models_dir, _pipeline,
                                   _store, _write_json, app, console, DeviceOpt)


class TaskChoice(str, Enum):
    relevance = "relevance"
    stance = "stance"
    equivalence = "equivalence"
    evidence = "evidence"
    all = "all"


@app.command("train")
def train_cli(
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
    train(task.value, seed=seed, quick=quick, tune_only=tune_only, json_path=json_path, data_dir=data_dir,
          index_dir=index_dir, models_dir=models_dir, verify=not no_verify)


def train(task: str, seed: int = 13, quick: bool = False, tune_only: bool = False,
          json_path: Path | None = None, data_dir: Path | None = None, index_dir: Path | None = None,
          models_dir: Path | None = None, verify: bool = True) -> None:
    """Train ``task`` (``"all"``: the four in turn, then the pipeline's settings tuned on
    dev) into the models folder and print a table of what was trained."""
    from perspectrum.data import data_checksum, load_dataset
    from perspectrum.models.scorers import MODELS as TASKS
    from perspectrum.train.tasks import retune_task, train_task

    dataset = load_dataset(data_dir, verify=verify)
    checksum = data_checksum(data_dir)
    target = _models_dir(models_dir)
    table = Table(title=literal(f"trained models in {target}" + (" (quick)" if quick else ""), "table.title"))
    for column in ("task", "examples", "train s", "dev metric", "thresholds (dev)"):
        table.add_column(column, overflow="fold")
    summary = {}
    for name in TASKS if task == TaskChoice.all.value else (task,):
        if tune_only:
            meta = retune_task(name, dataset, _store(index_dir), target, show_progress=True)
        else:
            meta = train_task(name, dataset, _store(index_dir), target, seed=seed, is_quick=quick,
                              show_progress=True, data_checksum=checksum)
        summary[name] = meta
        table.add_row(name, f"{meta['examples']['examples']:,}", f"{meta['train_seconds']:.0f}", _metric(meta["dev"]),
                      json.dumps(meta["thresholds"]))
    console.print(table)
    if task == TaskChoice.all.value:
        from perspectrum.train.tune_pipeline import tune_pipeline

        record = tune_pipeline(dataset, _pipeline(data_dir, index_dir, target, verify), show_progress=True)
        summary["pipeline"] = record
        console.print(f"pipeline settings chosen on dev: {json.dumps(record['settings'])}")
    _write_json(json_path, summary)


@app.command("tune")
def tune_cli(
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
    tune(json_path=json_path, data_dir=data_dir, index_dir=index_dir, models_dir=models_dir, verify=not no_verify)


def tune(json_path: Path | None = None, data_dir: Path | None = None, index_dir: Path | None = None,
         models_dir: Path | None = None, verify: bool = True) -> None:
    """Tune the pipeline's settings on dev, store them beside the models, and print every setting tried."""
    from perspectrum.data import load_dataset
    from perspectrum.train.tune_pipeline import tune_pipeline

    dataset = load_dataset(data_dir, verify=verify)
    record = tune_pipeline(dataset, _pipeline(data_dir, index_dir, models_dir, verify), show_progress=True)
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
    _write_json(json_path, record)

