"""``perspectrum index build``: build missing or stale indexes, reuse sound ones."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer
from rich.table import Table

from perspectrum._progress import literal
from perspectrum.cli.common import (BackendChoice, BackendOpt, DataDir, IndexDir, MilvusUri, NoVerify, OwnEvidence,
                                    OwnPerspectives, PoolChoice, console, dataset_pool, index_app, open_store,
                                    own_pools, say)


class KindChoice(str, Enum):
    bm25 = "bm25"
    dense = "dense"
    all = "all"


@index_app.command("build")
def index_build(
    data_dir: DataDir = None,
    index_dir: IndexDir = None,
    pool: Annotated[PoolChoice, typer.Option(help="Which pool to index.")] = PoolChoice.all,
    kind: Annotated[KindChoice, typer.Option(help="Which kind of index.")] = KindChoice.all,
    force: Annotated[bool, typer.Option("--force", help="Rebuild even when the stored index is sound.")] = False,
    no_verify: NoVerify = False,
    perspectives: OwnPerspectives = None,
    evidence: OwnEvidence = None,
    backend: BackendOpt = BackendChoice.embedded,
    milvus_uri: MilvusUri = None,
) -> None:
    """Build missing or stale indexes; reuse sound ones (a second run takes seconds).

    With --perspectives and --evidence, index your own pools instead (under
    <index-dir>/own/, where `perspectrum discover` with the same files finds them).
    """
    from perspectrum.data import POOL_NAMES, load_dataset
    from perspectrum.index.sentence_vectors import build_sentence_index
    from perspectrum.index.store import KINDS
    from perspectrum.pipeline.pipeline import own_store

    own = own_pools(perspectives, evidence)
    store = open_store(index_dir, BackendChoice(backend).value, milvus_uri)
    if own is None:
        dataset = load_dataset(data_dir, verify=not no_verify)
        pools = {name: (lambda name=name: dataset_pool(dataset, store, name)) for name in POOL_NAMES}
    else:
        store = own_store(store, *own, (perspectives, evidence))
        pools = {"perspectives": lambda: own[0], "evidence": lambda: own[1],
                 "sentences": lambda: store.sentences(own[1])}
    table = Table(title=literal(f"indexes in {store.root} ({store.backend} backend)", "table.title"))
    for column in ("pool", "kind", "documents", "status", "seconds"):
        table.add_column(column)
    for pool_name in POOL_NAMES if pool == PoolChoice.all else (PoolChoice(pool).value,):
        docs = pools[pool_name]()
        for kind_name in KINDS if kind == KindChoice.all else (KindChoice(kind).value,):
            problem = None if force else store.check(docs, kind_name)
            if not force and problem is None:
                table.add_row(pool_name, kind_name, f"{len(docs):,}", "reused", "-")
                continue
            if problem:
                say(f"{problem}: building it")
            if pool_name == "sentences" and kind_name == "dense":
                # from the sentence vectors answers keep (encoding only those not kept yet), and kept
                _, seconds = build_sentence_index(store, pools["evidence"](), show_progress=True)
            else:
                _, seconds = store.build(docs, kind_name, show_progress=True)
            table.add_row(pool_name, kind_name, f"{len(docs):,}", "built", f"{seconds:.1f}")
    console.print(table)
