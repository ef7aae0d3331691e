"""``perspectrum search``: one pool, BM25, dense or hybrid retrieval."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any

import typer
from rich.table import Table

from perspectrum._progress import literal
from perspectrum.cli.common import (BackendChoice, BackendOpt, DataDir, IndexDir, MilvusUri, NoVerify, PoolChoice,
                                    app, console, dataset_pool, echo_json, open_store)
from perspectrum.errors import PerspectrumError


class Method(str, Enum):
    bm25 = "bm25"
    dense = "dense"
    hybrid = "hybrid"


@app.command("search")
def search(
    query: Annotated[str, typer.Argument(help="What to search for.")],
    pool: Annotated[PoolChoice, typer.Option(help="perspectives, evidence, or sentences (of evidence).")] = PoolChoice.perspectives,
    method: Annotated[Method, typer.Option(help="Retriever.")] = Method.hybrid,
    k: Annotated[int, typer.Option("-k", min=1, max=1000, help="How many hits.")] = 10,
    data_dir: DataDir = None,
    index_dir: IndexDir = None,
    no_verify: NoVerify = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print hits as JSON.")] = False,
    backend: BackendOpt = BackendChoice.embedded,
    milvus_uri: MilvusUri = None,
) -> None:
    """Search one pool with BM25, dense or hybrid retrieval (indexes built if missing)."""
    from perspectrum.data import load_dataset
    from perspectrum.index.search import HybridSearcher, check_query

    query = check_query(query)
    if pool == PoolChoice.all:
        raise PerspectrumError("search one pool at a time: --pool perspectives, evidence or sentences")
    pool, method = PoolChoice(pool).value, Method(method).value
    dataset = load_dataset(data_dir, verify=not no_verify)
    store = open_store(index_dir, BackendChoice(backend).value, milvus_uri)
    docs = dataset_pool(dataset, store, pool)
    if method == Method.hybrid.value:
        searcher: Any = HybridSearcher(store.open(docs, "bm25", show_progress=True),
                                       store.open(docs, "dense", show_progress=True))
    else:
        searcher = store.open(docs, method, show_progress=True)
    hits = searcher.search(query, k)
    text = dict(zip(docs.ids, docs.texts))
    if as_json:
        echo_json([{"id": h.doc_id, "score": h.score, "text": text[h.doc_id]} for h in hits])
        return
    table = Table(title=literal(f"{method} · {pool} · “{query}”", "table.title"))
    for column in ("#", "id", "score", "text"):
        table.add_column(column, overflow="fold")
    for rank, hit in enumerate(hits, 1):
        table.add_row(str(rank), literal(hit.doc_id), f"{hit.score:.3f}", literal(text[hit.doc_id]))
    console.print(table)
