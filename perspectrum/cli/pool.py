"""``perspectrum pool add|remove``: change your own pool file, its indexes updated in place."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.table import Table

from perspectrum import folders
from perspectrum._progress import literal
from perspectrum.cli.common import IndexDir, MilvusUri, console, echo_json, pool_app, say

PoolFile = Annotated[Path, typer.Argument(help="Your pool file: JSONL with \"id\" and \"text\", as given to "
                                                 "--perspectives or --evidence.")]
ChangesJson = Annotated[bool, typer.Option("--json", help="Print what was done as JSON.")]


def _pool_changes(verb: str, count: int, pool_file: Path, changes: list[Any], as_json: bool) -> None:
    if as_json:
        echo_json({verb: count, "pool": str(pool_file), "indexes": [c.to_dict() for c in changes]})
        return
    say(f"{verb} {count:,} record(s) {'to' if verb == 'added' else 'from'} {pool_file}")
    if not changes:
        say("no index of this file was found; its indexes are built when it is first used")
        return
    table = Table(title="indexes")
    for column in ("folder", "pool", "kind", "engine", "how", "seconds"):
        table.add_column(column, overflow="fold")
    for change in changes:
        table.add_row(literal(change.folder), change.pool, change.kind, change.engine, change.how,
                      f"{change.seconds:.2f}")
    console.print(table)


@pool_app.command("add")
def pool_add(
    pool_file: PoolFile,
    source: Annotated[Path, typer.Option("--from", help="The records to add: JSONL with \"id\" and \"text\".")],
    index_dir: IndexDir = None,
    milvus_uri: MilvusUri = None,
    as_json: ChangesJson = False,
) -> None:
    """Add records to a pool file and update every index of it (all backends') in place.

    faiss and Milvus encode only the new texts, Lucene adds documents to its segments,
    bm25s indexes the pool again; each index is swapped in whole, the file rewritten last.
    """
    from perspectrum.index.pools import add

    count, changes = add(pool_file, source, folders.index_dir(index_dir), milvus_uri, show_progress=not as_json)
    _pool_changes("added", count, pool_file, changes, as_json)


@pool_app.command("remove")
def pool_remove(
    pool_file: PoolFile,
    ids: Annotated[Optional[list[str]], typer.Option("--ids", help="Ids to remove, comma-separated (repeatable).")]
    = None,
    source: Annotated[Optional[Path], typer.Option("--from", help="A file of ids to remove, one per line.")] = None,
    index_dir: IndexDir = None,
    milvus_uri: MilvusUri = None,
    as_json: ChangesJson = False,
) -> None:
    """Remove records from a pool file and update every index of it (all backends') in place."""
    from perspectrum.index.pools import read_ids, remove

    count, changes = remove(pool_file, read_ids(ids, source), folders.index_dir(index_dir), milvus_uri,
                            show_progress=not as_json)
    _pool_changes("removed", count, pool_file, changes, as_json)
