"""Draw the README's `mine` and `match` screens: what the commands print, with their colours.

    python -m benchmarks.text_screens  # → docs/mine.svg, docs/match.svg (and the text, printed)

Runs the same display functions as `perspectrum mine` and `perspectrum match` on the
example essay in docs/examples/ (written for this README, not taken from PERSPECTRUM),
recorded by rich and saved as SVG.
"""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from perspectrum._io import atomic_write
from perspectrum.cli.display import matched, mined
from perspectrum.pipeline.pipeline import Pipeline

ROOT = Path(__file__).resolve().parent.parent
ESSAY = ROOT / "docs" / "examples" / "zoos.txt"
ARGUMENTS = ROOT / "docs" / "examples" / "zoo-arguments.txt"
CLAIM = "Zoos should be abolished"


def main() -> None:
    pipe = Pipeline.load(verify=False)
    text = ESSAY.read_text(encoding="utf-8")
    arguments = ARGUMENTS.read_text(encoding="utf-8").splitlines()
    screens = {
        "mine.svg": (f'perspectrum mine docs/examples/zoos.txt --claim "{CLAIM}"', mined(text, pipe.mine(text, CLAIM))),
        "match.svg": (f'perspectrum match docs/examples/zoos.txt --claim "{CLAIM}" --arguments '
                      "docs/examples/zoo-arguments.txt", matched(pipe.match(text, CLAIM, arguments))),
    }
    for name, (command, shown) in screens.items():
        console = Console(record=True, width=110, force_terminal=True, file=io.StringIO())
        console.print(f"$ {command}", style="dim", markup=False)
        console.print(shown)
        svg = console.export_svg(title=command.split(" ")[1], clear=False)
        atomic_write(ROOT / "docs" / name, lambda tmp, svg=svg: tmp.write_text(svg, encoding="utf-8"))
        print(console.export_text())


if __name__ == "__main__":
    main()
