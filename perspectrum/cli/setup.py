"""``perspectrum setup``: prepare this machine to answer claims (indexes, the shipped models)."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from perspectrum._progress import literal
from perspectrum.cli.common import (BackendChoice, BackendOpt, DataDir, DeviceOpt, IndexDir, MilvusUri, ModelsDir,
                                    NoVerify, app, console, echo_json, open_store, say)


@app.command("setup")
def setup(
    as_json: Annotated[bool, typer.Option("--json", help="Print what was done as JSON.")] = False,
    full: Annotated[bool, typer.Option(
        "--full", help="Also encode every evidence sentence now (minutes, once), so that no later answer "
                       "encodes the sentences it reads, and build their dense index for /search.")] = False,
    data_dir: DataDir = None,
    index_dir: IndexDir = None,
    models_dir: ModelsDir = None,
    device: DeviceOpt = None,
    no_verify: NoVerify = False,
    backend: BackendOpt = BackendChoice.embedded,
    milvus_uri: MilvusUri = None,
) -> dict[str, Any]:
    """Prepare this machine to answer claims: build the indexes, unpack the shipped models.

    Builds the indexes `discover` reads and, unless your own four trained models are in the
    models folder, unpacks the models that ship with perspectrum onto their base encoders,
    checking each. Minutes once (most of it encoding the evidence paragraphs); a second run
    keeps what is sound and takes seconds. `discover` and `serve` run it first when the
    machine is not prepared. The evidence sentences' vectors are encoded as answers read
    them (a second or so for each new claim) unless --full encodes them all now.
    """
    from perspectrum.train.prepare import prepare

    backend = BackendChoice(backend).value
    done = prepare(data_dir, open_store(index_dir).root, models_dir, verify=not no_verify, backend=backend,
                   milvus_uri=milvus_uri, show_progress=True, full=full)
    if as_json:
        echo_json(done)
        return done
    table = Table(title=literal(f"indexes in {done['index_dir']} ({backend} backend)", "table.title"))
    for column in ("pool", "kind", "documents", "status", "seconds"):
        table.add_column(column)
    for row in done["indexes"]:
        table.add_row(row["pool"], row["kind"], f"{row['documents']:,}", row["status"],
                      f"{row['seconds']:.1f}" if row["status"] == "built" else "-")
    console.print(table)
    if "sentence_vectors" in done:
        say(f"evidence sentences encoded: {done['sentence_vectors']['encoded']:,} "
            f"in {done['sentence_vectors']['seconds']:.0f} s")
    say(f"models in {done['models_dir']}: {done['models']} ({done['why']})")
    say(f"ready in {done['seconds']:.0f} s: `perspectrum discover \"<claim>\"` answers now")
    return done
