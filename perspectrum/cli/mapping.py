"""``perspectrum map``: the perspectives a pile of documents takes on a claim, counted, stanced and quoted."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from perspectrum._progress import printable
from perspectrum.cli._util import (DataDir, DeviceOpt, IndexDir, ModelsDir, NoVerify, _claim, _echo_json, _error,
                                   _pipeline, app, console)
from perspectrum.errors import PerspectrumError


@app.command("map")
def map_cli(
    documents: Annotated[list[Path], typer.Argument(
        help="Files, folders (read whole) or JSONL files of {\"id\", \"text\"} records: plain text, Markdown, "
             "HTML or PDF.", show_default=False)],
    claim: Annotated[Optional[str], typer.Option("--claim", help="The claim the documents argue about.",
                                                 show_default=False)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the map as JSON.")] = False,
    html: Annotated[Optional[Path], typer.Option("--html", help="Also write the map as a self-contained page.",
                                                 show_default=False)] = None,
    min_documents: Annotated[int, typer.Option(
        "--min-documents", min=1, help="Perspectives fewer documents make are listed as 'also mentioned'.")] = 2,
    data_dir: DataDir = None,
    index_dir: IndexDir = None,
    models_dir: ModelsDir = None,
    device: DeviceOpt = None,
    no_verify: NoVerify = False,
) -> None:
    """Map a pile of documents: the perspectives they take on a claim, each named by a key
    point, with how many documents make it, its side, and every quote."""
    if claim is None:
        raise _error(PerspectrumError('give the claim the documents argue about: --claim "…"'), 2)
    run_map(documents, _claim(claim), as_json=as_json, html=html, min_documents=min_documents, data_dir=data_dir,
            index_dir=index_dir, models_dir=models_dir, verify=not no_verify)


def run_map(paths: list[Path], claim: str, as_json: bool = False, html: Path | None = None, min_documents: int = 2,
            data_dir: Path | None = None, index_dir: Path | None = None, models_dir: Path | None = None,
            verify: bool = True) -> Any:
    """Read ``paths``, map them for ``claim``, and print the map (tables, or JSON); each
    thing skipped is one line on stderr, and ``html`` gets the page."""
    from perspectrum._io import atomic_write
    from perspectrum.pipeline.map_page import counted, map_page
    from perspectrum.pipeline.mapping import MapSettings
    from perspectrum.text.reading import read_documents, readable

    found, skipped = readable(read_documents(paths))
    for item in skipped:
        typer.echo(f"skipped {printable(item.source, one_line=True)}: {printable(item.why, one_line=True)}", err=True)
    pipe = _pipeline(data_dir, index_dir, models_dir, verify, prepare_first=True)
    pipe.show_progress = True  # bars go to stderr, so --json's stdout stays JSON
    result = pipe.map({d.id: d.text for d in found}, claim, MapSettings(min_documents=min_documents), skipped)
    if html is not None:
        page = map_page(result)
        atomic_write(html, lambda tmp: tmp.write_text(page, encoding="utf-8"))
    if as_json:
        _echo_json(result.to_dict())
        return result
    from perspectrum.cli.display import mapped

    console.print(mapped(result))
    console.print(f"{counted(result.documents, 'document')} read ({len(skipped)} skipped), "
                  f"{counted(result.units, 'argument unit')}, {counted(len(result.perspectives), 'perspective')} "
                  f"and {len(result.also_mentioned)} also mentioned in {result.seconds:.1f} s", markup=False)
    if html is not None:
        console.print(f"page written to {printable(str(html))}", markup=False)
    return result
