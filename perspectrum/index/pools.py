"""Add documents to an own pool file, or remove them, and update its indexes in place.

An own pool's indexes live in a folder per pair of pool files (``<indexes>/own/<key>/``,
see :func:`perspectrum.pipeline.pipeline.own_store`), which records the two files' paths in
``pools.json``. Changing a pool file here finds every such folder that indexes it and
brings each of its indexes (every backend's, and for an evidence pool its sentences'
too) to the new content through :meth:`perspectrum.index.store.IndexStore.update`: engines
that can update do (faiss and Milvus encode only the new texts; Lucene deletes and adds
documents), bm25s indexes the pool again.

Writers of one pool file are serialised: ``add`` and ``remove`` hold the file's writers'
lock (:func:`perspectrum._io.folder_lock`, ``.<name>.lock`` beside it) from reading the
file to renaming its new version in, so a second writer waits, then reads what the first
wrote; two at once can neither lose a record nor both add one id.

Order, for crash safety: the indexes are updated first, each swapped in whole; the pool
file is rewritten last, by one rename. A crash before that rename leaves the old file,
which the updated indexes no longer match, so the next use sees them as stale and builds
them again (never a wrong answer); running the same command again finds them up to date.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perspectrum._io import atomic_write, current, folder_lock
from perspectrum.data import Pool
from perspectrum.errors import PerspectrumError
from perspectrum.index.store import BACKENDS, KINDS, IndexStore

#: The file in an own pools' index folder naming the two pool files it indexes.
POOLS_FILE = "pools.json"


@dataclass(frozen=True)
class IndexChange:
    """What happened to one index: where, which engine, how ("updated", "built",
    "unchanged") and in how many seconds."""

    folder: str
    pool: str
    kind: str
    engine: str
    how: str
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {"folder": self.folder, "pool": self.pool, "kind": self.kind, "engine": self.engine,
                "how": self.how, "seconds": round(self.seconds, 3)}


def record_files(root: Path, perspectives: Path, evidence: Path) -> None:
    """Note in ``root`` which pool files its indexes are of (best effort: a read-only
    folder only means ``pool add|remove`` cannot find it)."""
    payload = {"perspectives": str(perspectives.resolve()), "evidence": str(evidence.resolve())}
    path = root / POOLS_FILE
    try:
        if path.is_file() and json.loads(path.read_text(encoding="utf-8")) == payload:
            return
        root.mkdir(parents=True, exist_ok=True)
        atomic_write(path, lambda tmp: tmp.write_text(json.dumps(payload, indent=2), encoding="utf-8"))
    except (OSError, ValueError, PerspectrumError):
        pass


def indexed_as(index_dir: Path, pool_file: Path) -> Iterator[tuple[Path, str]]:
    """Each own index folder under ``index_dir`` that indexes ``pool_file``, with the name
    the file has there (``perspectives`` or ``evidence``)."""
    target = str(pool_file.resolve())
    for recorded in sorted((index_dir / "own").glob(f"*/{POOLS_FILE}")):
        try:
            files = json.loads(recorded.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        for name in ("perspectives", "evidence"):
            if isinstance(files, dict) and files.get(name) == target:
                yield recorded.parent, name


def _update_indexes(index_dir: Path, pool_file: Path, old: Pool, new: Pool, milvus_uri: str | None,
                    show_progress: bool) -> list[IndexChange]:
    changes = []
    for root, name in indexed_as(index_dir, pool_file):
        before, after = Pool(name, old.ids, old.texts), Pool(name, new.ids, new.texts)
        pairs = [(before, after)]
        if name == "evidence" and (root / "sentences").is_dir():  # the paragraphs' sentences change with them
            embedded = IndexStore(root)
            pairs.append((embedded.sentences(before), embedded.sentences(after)))
        seen: set[Path] = set()
        for backend in BACKENDS:
            store = IndexStore(root, backend=backend, milvus_uri=milvus_uri)
            for old_pool, new_pool in pairs:
                for kind in KINDS:
                    folder = store.folder(new_pool, kind)
                    if folder in seen or current(folder) is None:
                        continue  # an index never built here is built when first needed
                    seen.add(folder)
                    _, seconds, how = store.update(old_pool, new_pool, kind, show_progress)
                    changes.append(IndexChange(str(root), new_pool.name, kind, store.engine(kind), how, seconds))
    return changes


#: Characters str.splitlines() (and many editors and tools) end a line at that JSON allows
#: raw inside a string (the other such characters, \r, \x0b, \x0c and \x1c-\x1e, are control
#: characters, which json.dumps always escapes). A pool file holds them escaped, so one
#: record is one line whichever reader splits it.
_LINE_BREAKS = {ord("\x85"): "\\u0085", ord("\u2028"): "\\u2028", ord("\u2029"): "\\u2029"}


def _one_line(line: str) -> str:
    """A JSON line with the line separators it holds escaped. Outside strings they are not
    JSON whitespace, so in a line that parses they are inside strings, where the escape
    means the same character."""
    return line.translate(_LINE_BREAKS)


def _lines(path: Path) -> list[str]:
    """The lines of a pool file as JSON Lines defines them: split at "\n" only (a "\r"
    before it dropped), never at the separators str.splitlines() also breaks at."""
    return [line.removesuffix("\r") for line in path.read_text(encoding="utf-8-sig").split("\n")]


def _write_pool(path: Path, pool: Pool, extra: dict[Any, dict[str, Any]]) -> None:
    """Rewrite the pool file: its own lines kept as they were for the ids that stay
    (other fields included; line separators escaped), then the new records; one rename,
    so it is never half written."""
    keep = {str(i) for i in pool.ids}
    lines = [_one_line(line) for line in _lines(path) if line.strip() and str(json.loads(line)["id"]) in keep]
    lines += [_one_line(json.dumps(record, ensure_ascii=False)) for record in extra.values()]
    atomic_write(path, lambda tmp: tmp.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8"))


def _writing(pool_file: Path) -> AbstractContextManager[None]:
    """The writers' lock of ``pool_file``, to hold from reading it to renaming its new
    version in (another writer's notice says it waits). A missing file is refused first,
    so no lock file is made where there is no pool."""
    if not pool_file.is_file():
        Pool.from_jsonl(pool_file, "pool")  # its one-line error: no such file, or a folder
    return folder_lock(pool_file.resolve())


def add(pool_file: Path, additions: Path, index_dir: Path, milvus_uri: str | None = None,
        show_progress: bool = False) -> tuple[int, list[IndexChange]]:
    """Add the records of ``additions`` (JSONL with "id" and "text") to ``pool_file``;
    returns how many were added and what each index went through."""
    pool_file = Path(pool_file).expanduser()
    new_records = Pool.from_jsonl(additions, "pool")
    with _writing(pool_file):
        old = Pool.from_jsonl(pool_file, "pool")  # read under the lock: what the last writer left
        string_ids = any(isinstance(i, str) for i in (*old.ids, *new_records.ids))
        known = {str(i) if string_ids else i for i in old.ids}
        fresh_ids = [str(i) if string_ids else i for i in new_records.ids]
        clash = [i for i in fresh_ids if i in known]
        if clash:
            raise PerspectrumError(f"{additions}: id {clash[0]!r} is already in {pool_file} ({len(clash)} such id(s)); "
                                   "remove the old record first to replace it")
        ids = tuple(str(i) if string_ids else i for i in old.ids) + tuple(fresh_ids)
        new = Pool("pool", ids, old.texts + new_records.texts)
        changes = _update_indexes(index_dir, pool_file, old, new, milvus_uri, show_progress)
        _write_pool(pool_file, old, {i: {"id": i, "text": t} for i, t in zip(fresh_ids, new_records.texts)})
    return len(fresh_ids), changes


def read_ids(given: Sequence[str] | None, from_file: Path | None) -> list[str]:
    """The ids to remove: comma-separated ``--ids`` values and/or one per line of a file
    (a JSON string or number, or the bare id)."""
    ids = [part.strip() for value in given or () for part in value.split(",") if part.strip()]
    if from_file is not None:
        try:
            lines = from_file.read_text(encoding="utf-8").split("\n")  # a JSON string id may hold U+2028
        except (OSError, UnicodeDecodeError) as exc:
            raise PerspectrumError(f"cannot read ids from {from_file}: {getattr(exc, 'strerror', None) or exc}") \
                from None
        for line in (line.strip() for line in lines):
            if line:
                try:
                    value = json.loads(line)
                except ValueError:
                    value = line
                ids.append(str(value))
    if not ids:
        raise PerspectrumError("name the ids to remove: --ids 1,2,3 or --from FILE (one id per line)")
    return ids


def remove(pool_file: Path, ids: Sequence[str], index_dir: Path, milvus_uri: str | None = None,
           show_progress: bool = False) -> tuple[int, list[IndexChange]]:
    """Remove the records with ``ids`` (compared as text) from ``pool_file``; returns how
    many were removed and what each index went through."""
    pool_file = Path(pool_file).expanduser()
    with _writing(pool_file):
        old = Pool.from_jsonl(pool_file, "pool")  # read under the lock: what the last writer left
        gone = set(ids)
        missing = sorted(gone - {str(i) for i in old.ids})
        if missing:
            raise PerspectrumError(f"{pool_file} has no record with id {missing[0]!r} ({len(missing)} such id(s))")
        rows = [(i, t) for i, t in zip(old.ids, old.texts) if str(i) not in gone]
        if not rows:
            raise PerspectrumError(f"removing every record would leave {pool_file} empty; a pool needs at least one")
        new = Pool("pool", tuple(i for i, _ in rows), tuple(t for _, t in rows))
        changes = _update_indexes(index_dir, pool_file, old, new, milvus_uri, show_progress)
        _write_pool(pool_file, new, {})
    return len(old) - len(new), changes
