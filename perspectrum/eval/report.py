"""Show evaluation results: a rich table beside the paper's row, and recall@k plots."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.table import Table

from perspectrum._io import atomic_write
from perspectrum._progress import literal
from perspectrum.errors import missing_extra

_TASKS = (("t1", "T1 relevance"), ("t2", "T2 stance"), ("t3", "T3 equivalence"), ("t4", "T4 evidence"))
_PRF = (("precision", "P"), ("recall", "R"), ("f1", "F1"))


def ir_table(result: dict[str, Any]) -> Table:
    """One row per task and measure (P, R, F1), one column for the paper's IR row and each retriever.

    Narrow on purpose: it stays readable in an 80-column terminal and in CI logs.
    """
    methods = list(result["methods"])
    engines = result.get("engines", {})
    on = f", BM25 by {engines['bm25']}, dense by {engines['dense']}" if result.get("backend", "embedded") != "embedded" else ""
    table = Table(title=f"IR baselines on {result['split']}, %  (cut-offs tuned on {result['tuned_on']}{on})")
    table.add_column("task")
    table.add_column("", style="dim")
    table.add_column("paper IR", justify="right", style="dim")
    for name in methods:
        table.add_column(name, justify="right")
    for key, label in _TASKS:
        for field, short in _PRF:
            row = [result["paper"][key][field], *(result["methods"][m][key][field] for m in methods)]
            table.add_row(label if field == "precision" else "", short, *(f"{v:.1f}" for v in row),
                          end_section=field == "f1")
    table.add_row("T5 overall", "", f"{result['paper']['t5']:.1f}",
                  *(f"{result['methods'][m]['t5']:.1f}" for m in methods))
    return table


def ir_tuning(result: dict[str, Any]) -> list[str]:
    """What dev chose for each retriever, one line each, to print under the table."""
    lines = []
    for name, scores in result["methods"].items():
        t4 = scores["t4"]
        cut = f"top-{t4['k']}" if t4.get("ratio") is None else f"score ≥ {t4['ratio']}×top, ≤ {t4['k']}"
        lines.append(f"{name}: T1 top-{scores['t1']['k']} · T3 top-{scores['t3']['m']} neighbours · "
                     f"T4 {t4.get('query', 'cluster')} query, {cut} (dev F1 {t4['dev_f1']:.1f})")
    return lines


def _pyplot() -> Any:
    """matplotlib's pyplot, drawing to files (Agg); the eval extra brings it (only ``--plot`` needs it)."""
    try:
        import matplotlib
    except ModuleNotFoundError as exc:
        raise missing_extra("--plot", "eval", exc) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_recall_curves(result: dict[str, Any], path: str | Path) -> Path:
    """Two panels: gold-cluster recall of T1 candidates, gold-evidence recall of T4 candidates.

    The curves are drawn on the split named in ``recall_curves["split"]`` (the tuning
    split, dev); results written before that key existed had them on the evaluation split.
    """
    plt = _pyplot()

    curves = result["recall_curves"]
    split = curves.get("split", result["split"])
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    panels = (
        ("t1", f"T1 candidates on {split}: gold clusters covered", "perspectives retrieved (k), claim as query"),
        ("t4", f"T4 candidates on {split}: gold evidence recalled",
         f"paragraphs retrieved (k), {curves.get('t4_query', 'cluster')} query"),
    )
    for ax, (task, title, xlabel) in zip(axes, panels):
        for name, values in curves[task].items():
            if name != "k":
                ax.plot(curves[task]["k"], values, marker="o", markersize=3, label=name)
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(f"recall % ({split})")
        ax.set_ylim(0, 100)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=120, format="png"))
    plt.close(fig)
    return Path(path)


def trained_table(result: dict[str, Any]) -> Table:
    """Ours beside the paper's IR+BERT and human rows, P/R/F1 per task, then T5."""
    paper = result["paper"]
    table = Table(title=f"trained system on {result['split']}, %  (thresholds tuned on {result['tuned_on']})")
    for column, style in (("task", None), ("", "dim"), ("paper IR+BERT", "dim"), ("ours", "bold"),
                          ("paper human", "dim")):
        table.add_column(column, justify="left" if column in ("task", "") else "right", style=style)
    for key, label in _TASKS:
        fields = _PRF + ((("accuracy", "acc"), ("f1_macro", "macro-F1")) if key == "t2" else ())
        for field, short in fields:
            cells = [paper["ir_bert"][key].get(field), result["tasks"][key].get(field), paper["human"][key].get(field)]
            table.add_row(label if field == "precision" else "", short,
                          *("-" if v is None else f"{v:.1f}" for v in cells), end_section=field == fields[-1][0])
    table.add_row("T5 overall", "", f"{paper['ir_bert']['t5']:.1f}", f"{result['t5']:.1f}", f"{paper['human']['t5']:.1f}")
    return table


def pipeline_table(result: dict[str, Any]) -> Table:
    """End-to-end scores beside the same models on gold inputs and the paper's IR+BERT row."""
    table = Table(title=f"pipeline end to end on {result['split']}, %  ({result['models']} models, "
                        f"cut-offs tuned on {result['tuned_on']})")
    for column, justify in (("task", "left"), ("", "left"), ("paper IR+BERT", "right"),
                            ("gold inputs", "right"), ("end to end", "right")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    rows = [("t1", "T1 relevance", "t1"), ("t2", "T2 stance (found pairs)", "t2"),
            ("t2_all", "T2 stance (all pairs)", "t2"), ("t3", "T3 equivalence", "t3"),
            ("t4", "T4 evidence (found clusters)", "t4"), ("t4_all", "T4 evidence (all clusters)", "t4")]
    for key, label, paper_key in rows:
        oracle = result["oracle"].get(paper_key) or {}
        for field, short in _PRF:
            shown = "" if key in ("t2_all", "t4_all") else oracle.get(field)
            table.add_row(label if field == "precision" else "", short, f"{result['paper']['ir_bert'][paper_key][field]:.1f}",
                          f"{shown:.1f}" if isinstance(shown, (int, float)) else "-",
                          f"{result['tasks'][key][field]:.1f}", end_section=field == "f1")
    table.add_row("T5 strict (all pairs, all clusters)", "", f"{result['paper']['ir_bert']['t5']:.1f}*", "-",
                  f"{result['t5_all']:.1f}")
    table.add_row("T5 found (found pairs, found clusters)", "", "", "", f"{result['t5']:.1f}")
    table.caption = ("* the paper prints 17.5; its own T1 × T2 × T4 multiply to 20.0. Found scores count only "
                     "the gold pairs and clusters the pipeline returned (coverage below).")
    return table


def pipeline_summary(result: dict[str, Any]) -> list[str]:
    """Coverage and stance purity under the end-to-end table, one line each."""
    coverage, purity = result["coverage"], result["purity"]
    return [f"coverage: {coverage['pairs']:.1f} % of gold pairs returned, {coverage['clusters']:.1f} % of gold "
            "clusters with evidence matched one to one",
            f"stance purity: {purity['mixed_clusters']:.1f} % of {purity['of_clusters']} returned clusters with 2+ "
            f"gold perspectives mix gold stances; {purity['wrong_stance']:.1f} % of {purity['of_perspectives']} "
            "returned gold perspectives are under the wrong stance",
            f"claims answered with both sides: {result['both_sides']:.1f} %; answered with nothing: "
            f"{result['emptied']:.1f} %; held-out off-topic claims answered: "
            f"{len(result['offtopic']['answered'])} of {result['offtopic']['claims']}",
            "T4 on gold clusters with the pipeline's evidence cut: F1 "
            f"{result['t4_gold_input']['gold_siblings']['f1']:.1f} with every gold sibling cluster, "
            f"{result['t4_gold_input']['predicted_siblings']['f1']:.1f} with the returned clusters as siblings "
            "(the paper's system had no siblings)"]


def plot_pr_curves(result: dict[str, Any], path: str | Path) -> Path:
    """Precision against recall as each task's threshold sweeps (the paper's Figure 6 view).

    The dev-chosen operating point and the paper's IR+BERT point are marked.
    """
    plt = _pyplot()

    fig, axes = plt.subplots(1, 4, figsize=(17, 4.2))
    for ax, (key, label) in zip(axes, _TASKS):
        points = result["pr_curves"][key]
        ax.plot([p["recall"] for p in points], [p["precision"] for p in points], marker="o", markersize=2,
                label="ours, threshold swept")
        ours, bert = result["tasks"][key], result["paper"]["ir_bert"][key]
        ax.scatter([ours["recall"]], [ours["precision"]], color="black", zorder=3,
                   label=f"ours at dev threshold (F1 {ours['f1']:.1f})")
        ax.scatter([bert["recall"]], [bert["precision"]], marker="x", color="red", zorder=3,
                   label=f"paper IR+BERT (F1 {bert['f1']:.1f})")
        ax.set_title(label)
        ax.set_xlabel(f"recall % ({result['split']})")
        ax.set_ylabel("precision %")
        ax.set_xlim(0, 100)
        ax.set_ylim(0, 100)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=120, format="png"))
    plt.close(fig)
    return Path(path)


#: The harness table's rows: result key, label, measures shown.
_HARNESS_ROWS = (("retrieve", "Retrieval (candidates)", (("recall", "R (clusters)"),)),
                 ("t1", "T1 relevance", _PRF), ("t2", "T2 stance (found pairs)", _PRF),
                 ("t2_all", "T2 stance (all pairs)", _PRF), ("t3", "T3 equivalence", _PRF),
                 ("t4", "T4 evidence (found clusters)", _PRF), ("t4_all", "T4 evidence (all clusters)", _PRF))


def _cell(value: Any) -> str:
    return "-" if value is None else f"{value:.1f}"


def harness_table(result: dict[str, Any]) -> Table:
    """A system through the harness: one row per task and measure, one column per input
    (the system's own; with ``--oracle``, gold input beside it), T5 strict and found last.

    A task the system does not answer has no row; a run that did not score it shows "-".
    Tasks scored outside the chain (mine, match) get a row per numeric metric.
    """
    oracle = result["oracle"]
    title = f"{result['system']} on {result['split']} through the harness, %"
    if oracle:
        title += f"  (gold input to {', '.join(oracle)})"
    table = Table(title=literal(title, "table.title"))
    table.add_column("task")
    table.add_column("", style="dim")
    sides = ["own"] + (["gold"] if oracle else [])
    for side in sides:
        table.add_column(f"{side} input", justify="right")
    rows = {key: (label, fields) for key, label, fields in _HARNESS_ROWS}
    for key, scores in result["tasks"].items():
        label, fields = rows.get(key) or (key, tuple((m, m) for m, v in (scores["own"] or {}).items()
                                                      if isinstance(v, (int, float))))
        for n, (field, short) in enumerate(fields):
            table.add_row(literal(label) if n == 0 else "", short,
                          *(_cell((scores[side] or {}).get(field)) for side in sides),
                          end_section=n == len(fields) - 1)
    for key, label in (("t5_all", "T5 strict (all pairs, all clusters)"),
                       ("t5", "T5 found (found pairs, found clusters)")):
        if any(result[key][side] is not None for side in sides):
            table.add_row(label, "", *(_cell(result[key][side]) for side in sides))
    return table


def harness_summary(result: dict[str, Any]) -> list[str]:
    """Under the harness table: what each stage read, how much gold reached it, what the
    system chose in ``prepare``, what was not scored, and the time, one line each."""
    lines = []
    for side in ("own", "gold"):
        read, coverage = result["inputs"][side], result["coverage"][side]
        if read is None:
            continue
        shown = ", ".join(f"{stage} ← {source}" + (f" ({coverage[stage]:.1f} % of gold)" if stage in coverage else "")
                          for stage, source in read.items())
        lines.append(f"{side} input: {shown}")
    if result["settings"] is not None:
        lines.append(f"settings: {json.dumps(result['settings'])}")
    for task, why in result["unscored"].items():
        lines.append(f"{task}: not scored ({why})")
    seconds = result["stage_seconds"]
    runs = [f"{side} {sum(seconds[side].values()):.1f} s" for side in ("own", "gold") if seconds[side] is not None]
    lines.append(f"seconds: prepare {seconds['prepare']:.1f}, {', '.join(runs)}")
    return lines


def plot_reliability(panels: Mapping[str, Sequence[Mapping[str, float]]], path: str | Path) -> Path:
    """A reliability diagram: for each named table of :func:`perspectrum.eval.metrics.calibration_bins`
    (the shown confidence against how often the side shown was right), accuracy by mean
    confidence per bin, with each bin's count; the diagonal is perfect calibration."""
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(5.2, 5.0), dpi=120)
    axis.plot([0.5, 1.0], [0.5, 1.0], color="#888888", linestyle="--", linewidth=1, label="calibrated")
    for (name, bins), marker in zip(panels.items(), "os^D"):
        xs = [b["confidence"] for b in bins]
        ys = [b["accuracy"] for b in bins]
        axis.plot(xs, ys, marker=marker, label=name)
        for x, y, b in zip(xs, ys, bins):
            axis.annotate(str(b["count"]), (x, y), textcoords="offset points", xytext=(4, -10), fontsize=7)
    axis.set_xlim(0.45, 1.0)
    axis.set_ylim(0.0, 1.02)
    axis.set_xlabel("shown confidence (mean per bin)")
    axis.set_ylabel("share on the side shown (gold)")
    axis.legend(loc="lower right", fontsize=8)
    axis.grid(alpha=0.3)
    figure.tight_layout()
    out = Path(path)

    def write(tmp: Path) -> None:
        figure.savefig(tmp, format="png")

    atomic_write(out, write)
    plt.close(figure)
    return out
