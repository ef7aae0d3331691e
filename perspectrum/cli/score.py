"""``perspectrum score``: one task's model on its own, over a JSONL file of pairs or triples."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from perspectrum.cli.common import DeviceOpt, ModelsDir, app
from perspectrum.errors import PerspectrumError

#: The fields each line holds, per task.
FIELDS = {"relevance": ("claim", "perspective"), "stance": ("claim", "perspective"),
          "equivalence": ("claim", "perspective", "other")}
BATCH = 256


@app.command("score")
def score(
    task: Annotated[str, typer.Argument(help="relevance, stance or equivalence.", show_default=False)],
    pairs: Annotated[Path, typer.Argument(help='JSONL: one {"claim", "perspective"} per line ({"claim", '
                                               '"perspective", "other"} for equivalence).', show_default=False)],
    models_dir: ModelsDir = None,
    device: DeviceOpt = None,
) -> None:
    """Score (claim, perspective) pairs with one task's model, opening no index.

    Your fine-tuned model answers, else the shipped one; equivalence reads triples. Each line is
    printed back as JSON with its "score" in [0, 1] (and, for stance, "stance": support or
    undermine at the dev-tuned threshold).
    """
    from perspectrum.data import jsonl_rows
    from perspectrum.models.pair_scorer import ARITY, PairScorer

    if task not in ARITY:  # before any file is read
        PairScorer.load(task, models_dir)
    fields = FIELDS[task]
    layout = "{" + ", ".join(f'"{f}"' for f in fields) + "}"
    rows: list[dict[str, Any]] = []
    items: list[tuple[str, ...]] = []
    for number, row in jsonl_rows(pairs, "pairs file", layout):
        if not isinstance(row, dict) or not all(isinstance(row.get(f), str) and row[f].strip() for f in fields):
            raise PerspectrumError(f"{pairs}, line {number}: each line must be a JSON object {layout} of non-empty "
                                   "texts")
        rows.append(row)
        items.append(tuple(row[f] for f in fields))
    scorer = PairScorer.load(task, models_dir)
    threshold = scorer.settings.get("threshold") if task == "stance" else None
    for start in range(0, len(items), BATCH):
        scores = scorer.score(items[start:start + BATCH])
        for row, value in zip(rows[start:start + BATCH], scores):
            out = {**row, "score": round(float(value), 6)}
            if threshold is not None:
                out["stance"] = "support" if value >= threshold else "undermine"
            typer.echo(json.dumps(out, ensure_ascii=True))
