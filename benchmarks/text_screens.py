"""Draw the docs' `mine`, `match` and `map` screens: what the commands print, with their colours.

    python -m benchmarks.text_screens  # → docs/mine.svg, docs/match.svg, docs/map.svg (and the text, printed)

Runs the same display functions as `perspectrum mine`, `perspectrum match` and `perspectrum
map` on the example essay and the folder of six short op-eds in docs/examples/ (written for
these docs, not taken from PERSPECTRUM), recorded by rich and saved as SVG.
"""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from perspectrum._io import atomic_write
from perspectrum.cli.display import mapped, matched, mined
from perspectrum.pipeline.pipeline import Pipeline
from perspectrum.text.reading import read_documents, readable

ROOT = Path(__file__).resolve().parent.parent
ESSAY = ROOT / "docs" / "examples" / "zoos.txt"
ARGUMENTS = ROOT / "docs" / "examples" / "zoo-arguments.txt"
CLAIM = "Zoos should be abolished"
OP_EDS = ROOT / "docs" / "examples" / "op-eds"
MAP_CLAIM = "Animals should have lawful rights"


def main() -> None:
    pipe = Pipeline.load(verify=False)
    text = ESSAY.read_text(encoding="utf-8")
    arguments = ARGUMENTS.read_text(encoding="utf-8").splitlines()
    screens = {
        "mine.svg": (f'perspectrum mine docs/examples/zoos.txt --claim "{CLAIM}"', mined(text, pipe.mine(text, CLAIM))),
        "match.svg": (f'perspectrum match docs/examples/zoos.txt --claim "{CLAIM}" --arguments '
                      "docs/examples/zoo-arguments.txt", matched(pipe.match(text, CLAIM, arguments))),
    }
    documents, _ = readable(read_documents([OP_EDS]))
    found = pipe.map({d.id: d.text for d in documents}, MAP_CLAIM)
    screens["map.svg"] = (f'perspectrum map docs/examples/op-eds --claim "{MAP_CLAIM}"', mapped(found))
    for name, (command, shown) in screens.items():
        console = Console(record=True, width=110, force_terminal=True, file=io.StringIO())
        console.print(f"$ {command}", style="dim", markup=False)
        console.print(shown)
        svg = console.export_svg(title=command.split(" ")[1], clear=False)
        atomic_write(ROOT / "docs" / name, lambda tmp, svg=svg: tmp.write_text(svg, encoding="utf-8"))
        print(console.export_text())


if __name__ == "__main__":
    main()
