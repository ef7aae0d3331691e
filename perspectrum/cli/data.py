"""``perspectrum data check|download``: the PERSPECTRUM v1.0 files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table
from rich.text import Text

from perspectrum._progress import literal
from perspectrum.cli.common import DataDir, NoVerify, console, data_app, echo_json, say


@data_app.command("check")
def data_check(
    data_dir: DataDir = None,
    no_verify: NoVerify = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the counts as JSON.")] = False,
) -> None:
    """Verify the checksums and report claims, splits, clusters and pool sizes."""
    from perspectrum.data import load_dataset

    counts = load_dataset(data_dir, verify=not no_verify).counts()
    if as_json:
        echo_json(counts)
        return
    table = Table(title="PERSPECTRUM v1.0" + (" (checksums not verified)" if no_verify else " (checksums OK)"))
    table.add_column("what")
    table.add_column("count", justify="right")
    for key, value in counts.items():
        table.add_row(key.replace("_", " "), f"{value:,}")
    console.print(table)


@data_app.command("download")
def data_download(
    to: Annotated[Path, typer.Option("--to", help="Folder to write the five files into.")],
    url: Annotated[Optional[str], typer.Option(help="Base URL (default: the CogComp/perspectrum repository).")] = None,
) -> None:
    """Fetch the five release files from GitHub and verify their checksums."""
    from perspectrum.data import DOWNLOAD_URL, download

    for path in download(to, url or DOWNLOAD_URL):
        console.print(Text("✓ ", style="green") + literal(path))
    say(f"export PERSPECTRUM_DATA={to.resolve()}")  # how to point $PERSPECTRUM_DATA at them
