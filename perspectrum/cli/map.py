"""``perspectrum map``: the perspectives a pile of documents takes on a claim, counted, stanced and quoted."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from perspectrum._progress import printable
from perspectrum.cli.common import (DataDir, DeviceOpt, Engine, IndexDir, ModelsDir, NoVerify, RayAddress, app,
                                    checked_claim, console, echo_json, error_exit, load_pipeline)
from perspectrum.errors import PerspectrumError


@app.command("map")
def map_pile(
    documents: Annotated[list[Path], typer.Argument(
        help="Files, folders (read whole) or JSONL files of {\"id\", \"text\"} records: plain text, Markdown, "
             "HTML or PDF. Documents are named as given: a file in a folder by its path there, a record by its id.",
        show_default=False)],
    claim: Annotated[Optional[str], typer.Option("--claim", help="The claim the documents argue about.",
                                                 show_default=False)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the map as JSON.")] = False,
    html: Annotated[Optional[Path], typer.Option("--html", help="Also write the map as a self-contained page.",
                                                 show_default=False)] = None,
    min_documents: Annotated[int, typer.Option(
        "--min-documents", min=1, help="Perspectives fewer documents make are listed as 'also mentioned'.")] = 2,
    units: Annotated[Optional[Path], typer.Option(
        "--units", help="Keep every document's mined units in this JSONL file as they are found; run the same "
                        "command again to resume (documents already there are not mined again).",
        show_default=False)] = None,
    engine: Annotated[Engine, typer.Option(help="local: this process; ray: a pool of actors mines the documents.")]
    = Engine.local,
    workers: Annotated[Optional[int], typer.Option("--workers", min=1, help="Ray actors mining, one CPU each "
                                                                            "(1 if left out).")] = None,
    address: RayAddress = None,
    data_dir: DataDir = None,
    index_dir: IndexDir = None,
    models_dir: ModelsDir = None,
    device: DeviceOpt = None,
    no_verify: NoVerify = False,
) -> Any:
    """Map a pile of documents: the perspectives they take on a claim, each named by a key
    point, with how many documents make it, its side, and every quote."""
    if claim is None:
        raise error_exit(PerspectrumError('give the claim the documents argue about: --claim "…"'), 2)
    if engine == Engine.local and (workers is not None or address is not None):
        raise error_exit(PerspectrumError("--workers and --address are for --engine ray"), 2)
    claim = checked_claim(claim)
    from functools import partial

    from perspectrum._io import atomic_write
    from perspectrum.cli.map_page import counted, map_page
    from perspectrum.pipeline.map import MapSettings
    from perspectrum.text.reading import read_documents, readable

    found, skipped = readable(read_documents(documents))
    for item in skipped:  # one line each on stderr
        typer.echo(f"skipped {printable(item.source, one_line=True)}: {printable(item.why, one_line=True)}", err=True)
    encodings = {d.id: d.encoding for d in found if d.encoding != "UTF-8"}
    for doc_id, encoding in encodings.items():  # one line each, as the skipped are said
        typer.echo(f"read {printable(doc_id, one_line=True)} as {encoding}", err=True)
    from perspectrum.batch.map_run import map_documents as run

    given = {name: None if path is None else path.expanduser().resolve() for name, path in
             (("data_dir", data_dir), ("index_dir", index_dir), ("models_dir", models_dir))}
    # a factory the ray engine can send to its actors (folders made absolute for them); built once here first
    factory = partial(load_pipeline, verify=not no_verify, prepare_first=True, **given)
    # --units, --engine, --workers, --address: see perspectrum.batch.map_run.map_documents; bars go to
    # stderr, so --json's stdout stays JSON
    result = run(factory if engine == Engine.ray else factory(), {d.id: d.text for d in found}, claim,
                 MapSettings(min_documents=min_documents), skipped, units=units, engine=Engine(engine).value,
                 workers=workers or 1, address=address, show_progress=True)
    result.encodings = encodings
    if html is not None:
        page = map_page(result)
        atomic_write(html, lambda tmp: tmp.write_text(page, encoding="utf-8"))
    if as_json:
        echo_json(result.to_dict())
        return result
    from perspectrum.cli.display import mapped

    console.print(mapped(result))
    others = f", {len(encodings)} not in UTF-8" if encodings else ""
    copies = sum(len(v) for v in result.duplicates.values())
    others += f", {copies:,} near-{'copy' if copies == 1 else 'copies'} of another counted once" if copies else ""
    console.print(f"{counted(result.documents, 'document')} read ({len(skipped)} skipped{others}), "
                  f"{counted(result.units, 'argument unit')}, {counted(len(result.perspectives), 'perspective')} "
                  f"and {len(result.also_mentioned)} also mentioned in {result.seconds:.1f} s", markup=False)
    if html is not None:
        console.print(f"page written to {printable(str(html))}", markup=False)
    return result
