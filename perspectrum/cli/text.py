"""``perspectrum mine`` (the argument units of a text) and ``perspectrum match`` (which arguments it makes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from perspectrum._progress import printable
from perspectrum.cli.common import (DataDir, DeviceOpt, IndexDir, ModelsDir, NoVerify, app, checked_claim, console,
                                    echo_json, error_exit, load_pipeline)
from perspectrum.errors import PerspectrumError

DocumentFile = Annotated[Path, typer.Argument(
    help="A UTF-8 text file: an essay, a web page's text, a transcript (at most 300,000 characters).",
    show_default=False)]
ClaimOption = Annotated[Optional[str], typer.Option("--claim", help="The claim the text argues about.",
                                                    show_default=False)]


def _given_claim(claim: str | None) -> str:
    """The claim, checked; a missing or bad one exits 2 as in `discover`."""
    if claim is None:
        raise error_exit(PerspectrumError('give the claim the text argues about: --claim "…"'), 2)
    return checked_claim(claim)


def _append_units(pool: Path, source: Path, units: list[Any]) -> int:
    """Add ``units`` to the JSONL pool at ``pool`` (made if missing) as {"id", "text"}
    records, skipping texts it already holds; the file is rewritten whole and renamed into
    place, so an interrupted run leaves it as it was. Returns how many were added."""
    from perspectrum._io import atomic_write
    from perspectrum.data import Pool

    existing = Pool.from_jsonl(pool, "perspectives") if pool.exists() else None
    held = set(existing.texts) if existing else set()
    ids = {str(i) for i in existing.ids} if existing else set()
    rows = [u for u in units if u.text not in held]
    before = pool.read_bytes() if existing else b""
    if before and not before.endswith(b"\n"):
        before += b"\n"
    lines = []
    for unit in rows:
        doc_id = f"{source.name}:{unit.start}-{unit.end}"
        n = 1
        while doc_id in ids:
            n += 1
            doc_id = f"{source.name}:{unit.start}-{unit.end}#{n}"
        ids.add(doc_id)
        lines.append(json.dumps({"id": doc_id, "text": unit.text, "stance": unit.stance}, ensure_ascii=False))
    atomic_write(pool, lambda tmp: tmp.write_bytes(before + "".join(f"{line}\n" for line in lines).encode()))
    return len(lines)


@app.command("mine")
def mine(
    file: DocumentFile,
    claim: ClaimOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the units as JSON (offsets into the file's text).")] = False,
    add_to: Annotated[Optional[Path], typer.Option(
        "--add-to", help="Append the units to this perspectives pool (JSONL) for `discover --perspectives`.")] = None,
    data_dir: DataDir = None,
    index_dir: IndexDir = None,
    models_dir: ModelsDir = None,
    device: DeviceOpt = None,
    no_verify: NoVerify = False,
) -> None:
    """Find the argument units of a text for a claim: spans (some shorter than a sentence)
    with their stance, highlighted in the text."""
    from perspectrum.text.document import read_document

    claim = _given_claim(claim)
    text = read_document(file)
    pipe = load_pipeline(data_dir, index_dir, models_dir, not no_verify, prepare_first=True)
    units = pipe.mine(text, claim)
    if as_json:
        echo_json({"claim": claim, "file": str(file), "characters": len(text), "units": [u.to_dict() for u in units]})
    else:
        from perspectrum.cli.display import mined

        console.print(mined(text, units))
    if add_to is not None:
        added = _append_units(add_to, file, units)
        typer.echo(f"added {added} of {len(units)} units to {printable(str(add_to))}", err=True)


@app.command("match")
def match(
    file: DocumentFile,
    claim: Annotated[Optional[str], typer.Option("--claim", help="The claim the text argues about (not needed "
                                                 "with --arguments).", show_default=False)] = None,
    arguments: Annotated[Optional[Path], typer.Option(
        "--arguments", help="The arguments to look for, one per line (default: the claim's perspectives, "
                            "as `discover` finds them).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the answers as JSON.")] = False,
    data_dir: DataDir = None,
    index_dir: IndexDir = None,
    models_dir: ModelsDir = None,
    device: DeviceOpt = None,
    no_verify: NoVerify = False,
) -> None:
    """Tell which arguments a speech, essay or transcript makes, each with the sentence that makes it."""
    from perspectrum.text.document import read_document
    from perspectrum.text.matching import check_arguments

    # the arguments are --arguments' lines, else the claim's perspectives (so the claim may be left out
    # only with --arguments)
    claim = None if claim is None and arguments is not None else _given_claim(claim)
    text = read_document(file)
    listed = None
    if arguments is not None:
        lines = read_document(arguments, what="argument list").splitlines()
        try:
            listed = check_arguments(lines)
        except PerspectrumError as exc:
            raise PerspectrumError(f"{arguments}: {exc}") from None
    pipe = load_pipeline(data_dir, index_dir, models_dir, not no_verify, prepare_first=True)
    results = pipe.match(text, claim, listed)
    if as_json:
        echo_json({"claim": claim, "file": str(file), "arguments": [r.to_dict() for r in results]})
        return
    from perspectrum.cli.display import matched

    console.print(matched(results))
    made = sum(r.made for r in results)
    console.print(f"the text makes {made} of {len(results)} arguments")
