"""Show evaluation results: a rich table beside the paper's row, and recall@k plots."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table

from perspectrum._io import atomic_write

_TASKS = (("t1", "T1 relevance"), ("t2", "T2 stance"), ("t3", "T3 equivalence"), ("t4", "T4 evidence"))


def _prf(cell: dict[str, float]) -> str:
    return f"{cell['precision']:.1f} / {cell['recall']:.1f} / {cell['f1']:.1f}"


def ir_table(result: dict[str, Any]) -> Table:
    """P / R / F1 per task for the paper's IR row and each of our retrievers."""
    methods = list(result["methods"])
    table = Table(title=f"IR baselines on {result['split']} (thresholds tuned on {result['tuned_on']}), P / R / F1 %")
    table.add_column("task")
    table.add_column("paper IR", style="dim")
    for name in methods:
        table.add_column(name)
    for key, label in _TASKS:
        table.add_row(label, _prf(result["paper"][key]), *(_prf(result["methods"][m][key]) for m in methods))
    table.add_row("T5 overall", f"{result['paper']['t5']:.1f}",
                  *(f"{result['methods'][m]['t5']:.1f}" for m in methods))
    tuned = [
        f"k={result['methods'][m]['t1']['k']}, m={result['methods'][m]['t3']['m']}, "
        f"evidence ≥{result['methods'][m]['t4']['ratio']}×top (≤{result['methods'][m]['t4']['k']})"
        for m in methods
    ]
    table.add_row("tuned on dev", "", *tuned, style="italic")
    return table


def plot_recall_curves(result: dict[str, Any], path: str | Path) -> Path:
    """Two panels: gold-cluster recall of T1 candidates, gold-evidence recall of T4 candidates."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = result["recall_curves"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    panels = (
        ("t1", "T1 candidates: gold clusters covered", "perspectives retrieved (k)"),
        ("t4", "T4 candidates: gold evidence recalled", "paragraphs retrieved (k)"),
    )
    for ax, (task, title, xlabel) in zip(axes, panels):
        for name, values in curves[task].items():
            if name != "k":
                ax.plot(curves[task]["k"], values, marker="o", markersize=3, label=name)
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(f"recall % ({result['split']})")
        ax.set_ylim(0, 100)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=120, format="png"))
    plt.close(fig)
    return Path(path)
