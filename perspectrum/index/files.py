"""The folder an index is: the files every engine writes beside its own.

An index is a folder you can inspect (as in pyserini): the engine's files, ``docids.jsonl``
(one JSON id per line, in row order, so any string round-trips, line separators included)
and ``meta.json`` (pool, settings, the key it was built for and a SHA-256 of every file).
Every engine (:mod:`perspectrum.index.bm25`, :mod:`~perspectrum.index.dense`,
:mod:`~perspectrum.index.lucene`, :mod:`~perspectrum.index.milvus`) reads and writes the ids
through here; :class:`perspectrum.index.store.IndexStore` writes the meta.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from perspectrum import integrity
from perspectrum._checks import is_id
from perspectrum.index.search import DocId

META = "meta.json"


DOCIDS = "docids.jsonl"


#: Bumped when what an index folder holds changes; part of the key, so older indexes are
#: rebuilt (2: ids as JSON lines).
FORMAT = 2


#: Files each engine's index must list in its meta (besides the ids); a Lucene index's
#: segment file names vary, and opening it checks them.
REQUIRED = {"bm25s": ("params.index.json", "vocab.index.json", "data.csc.index.npy"), "faiss": ("index.faiss",),
            "lucene": ("slots.json",), "milvus": ("milvus.json",)}


def write_docids(folder: Path, doc_ids: Sequence[DocId]) -> None:
    # json.dumps escapes every non-ASCII character and control, so one id is one line
    (folder / DOCIDS).write_text("".join(json.dumps(i) + "\n" for i in doc_ids), encoding="ascii")


def read_docids(folder: Path, count: int) -> list[DocId]:
    """The ids in row order; a file that does not hold ``count`` of them is damaged."""
    lines = (folder / DOCIDS).read_text(encoding="ascii").rstrip("\n")
    try:  # one JSON array: a single parse, not one per line
        ids = json.loads(f"[{lines.replace(chr(10), ',')}]")
    except ValueError:
        raise integrity.Damaged(f"{folder / DOCIDS} is not one JSON id per line") from None
    if len(ids) != count or not all(is_id(i) for i in ids):
        raise integrity.Damaged(f"{folder / DOCIDS} does not hold the index's {count:,} ids")
    return ids
