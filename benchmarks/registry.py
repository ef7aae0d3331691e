"""Where each figure the README and the docs quote comes from: ``eval/results/registry.json``.

    python -m benchmarks.registry          # the registry as a Markdown table

Each entry pairs one quoted figure with the stored result behind it: ``id``, the ``doc`` it is
quoted in (a path from the repository's root), the ``task`` and ``figure`` it measures, the
text as ``quoted``, the ``context`` around it in the doc (whitespace runs compared as one
space), the stored ``file`` under ``eval/results/``, the ``path`` of keys and list indices to
the value in that file, and how the value is written: ``digits`` after the point, rounded half
up as the docs round (or, with ``printed``, as Python's float formatting wrote it in a command's
printed table), optionally multiplied by ``scale`` first (milliseconds to seconds) and with
``thousands`` separators. The command behind a figure is the one its file holds.

The table printed here is the one under "Where each figure comes from" in
``docs/evaluation.md``; ``tests/test_docs.py`` checks that the two are the same, that every
figure written from its stored value is the quoted text, and that the quoted text is in its doc.
"""

from __future__ import annotations

import json
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "eval" / "results"
REGISTRY = RESULTS / "registry.json"


def load(path: Path = REGISTRY) -> list[dict[str, Any]]:
    return json.loads(path.read_text(encoding="utf-8"))


def stored(entry: dict[str, Any], results: Path = RESULTS) -> Any:
    """The value at ``entry["path"]`` in its stored file."""
    value = json.loads((results / entry["file"]).read_text(encoding="utf-8"))
    for key in entry["path"]:
        value = value[key]
    return value


def written(value: float, digits: int, scale: float | None = None, thousands: bool = False,
            printed: bool = False) -> str:
    """``value`` as the docs write it: scaled, rounded half up to ``digits``, with separators;
    ``printed``: as Python's float formatting writes it (what a command's table printed)."""
    if printed:
        return f"{value * (scale or 1):{',' if thousands else ''}.{digits}f}"
    number = Decimal(repr(value))
    if scale is not None:
        number *= Decimal(repr(scale))
    number = number.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    return f"{number:,}" if thousands else f"{number}"


def formatted(entry: dict[str, Any], results: Path = RESULTS) -> str:
    return written(stored(entry, results), entry["digits"], entry.get("scale"), entry.get("thousands", False),
                   entry.get("printed", False))


def command(file: str, results: Path = RESULTS) -> str:
    return json.loads((results / file).read_text(encoding="utf-8"))["command"]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    return f"`` {_cell(text)} ``" if "`" in text else f"`{_cell(text)}`"


def render(entries: list[dict[str, Any]] | None = None, results: Path = RESULTS) -> str:
    """The registry as one Markdown table, grouped by stored file in order of first use; each
    file's command is given on its first row."""
    entries = load() if entries is None else entries
    order: list[str] = []
    for entry in entries:
        if entry["file"] not in order:
            order.append(entry["file"])
    lines = ["| task | figure | quoted in | value | stored in `eval/results/` | command |",
             "|---|---|---|---:|---|---|"]
    for file in order:
        first = True
        for entry in (e for e in entries if e["file"] == file):
            where = f"`{file}`" if first else ""
            how = _code(command(file, results)) if first else ""
            doc = Path(entry["doc"]).name
            lines.append(f"| {_cell(entry['task'])} | {_cell(entry['figure'])} | {doc} | {formatted(entry, results)} "
                         f"| {where} | {how} |")
            first = False
    return "\n".join(lines) + "\n"


def main() -> None:
    print(render(), end="")


if __name__ == "__main__":
    main()
