"""SHA-256 sums of every artefact: recorded by the code that writes it, checked before use.

Indexes, model folders (the shipped models' too), the evidence ranker and the traced copies
of the models each carry a map of file name → SHA-256 (in their ``meta.json``,
``perspectrum.json``, the shipped set's ``manifest.json`` or a ``.json`` beside the copy), written by the code
that made the files. A file read at run time is hashed and compared first, so a flipped
bit or a swapped file is an error, a rebuild or a fallback, never a silent wrong answer.

Why it stays cheap: hashlib's SHA-256 is fast and releases the GIL, so the large files
(the traced copies, hundreds of MB) are hashed on a second thread while the first reads
them into torch (:class:`Pending`); and each file is hashed at most once per process
unless it changes (:func:`sha256_file`).

What the sums protect against is damage and mix-ups (a disk error, a half-copied
folder, a file from another model), not someone who can write to the folders: whoever
can replace a file can replace its recorded sum too. The README says which folders
perspectrum trusts.
"""

from __future__ import annotations

import hashlib
import mmap
import re
import threading
import time
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

from perspectrum._io import write_json
from perspectrum._progress import say
from perspectrum.errors import PerspectrumError

#: The model card, rewritten whenever metrics are added, so never part of a folder's sums.
CARD = "README.md"

#: Bytes read per step while hashing.
CHUNK = 1 << 22
#: Files changed more recently than this (ns) are not remembered as hashed.
RECENT_NS = 2_000_000_000
_HEX = re.compile(r"[0-9a-f]{64}")
#: Digests already computed in this process, by path and the file's identity on disk.
_known: dict[tuple[str, int, int, int, int], str] = {}


class Damaged(PerspectrumError):
    """A file whose content is not what the code that wrote it recorded."""


def _identity(path: Path) -> tuple[str, int, int, int, int]:
    stat = path.stat()
    return str(path.resolve()), stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns


def sha256_file(path: str | Path) -> str:
    """The file's SHA-256 (hex), computed once per process while the file is unchanged
    (same inode, size, modification and change times).

    A file changed within the last :data:`RECENT_NS` is hashed every time, as git treats
    "racily clean" files: file times tick coarsely, so two writes close together can
    leave the same times behind.
    """
    key = _identity(Path(path))
    if key in _known:
        return _known[key]
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    return _remember(key, digest.hexdigest())


def _remember(key: tuple[str, int, int, int, int], digest: str) -> str:
    if time.time_ns() - max(key[3], key[4]) > RECENT_NS:
        _known[key] = digest
    return digest


class Pending:
    """A file being hashed on another thread; :meth:`result` waits for its SHA-256 (hex).

    The caller's thread opens and maps the file, and the worker's only step is one
    hashlib call over the mapping, during which hashlib holds no GIL: torch's loaders
    hold the GIL from start to end, and a worker that needed it between chunks would
    wait for them instead of running beside them. Writers replace files by renaming,
    never in place, so the mapped file cannot shrink under the worker.
    """

    def __init__(self, path: str | Path) -> None:
        self._key = _identity(Path(path))
        self._digest = _known.get(self._key)
        self._thread: threading.Thread | None = None
        if self._digest is not None:
            return
        if not self._key[2]:  # an empty file cannot be mapped
            self._digest = hashlib.sha256(b"").hexdigest()
            return
        with open(path, "rb") as handle:
            mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        started = threading.Event()

        def work() -> None:
            started.set()
            self._digest = hashlib.sha256(mapped).hexdigest()
            mapped.close()

        self._thread = threading.Thread(target=work, name="perspectrum-sha256", daemon=True)
        self._thread.start()
        started.wait()

    def result(self) -> str:
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._digest is None:
            raise OSError(f"hashing {self._key[0]} failed")
        return _remember(self._key, self._digest)


def record(folder: str | Path, skip: Collection[str] = ()) -> dict[str, str]:
    """Name → SHA-256 of every file in ``folder`` (not in its subfolders, which record their
    own), except the names in ``skip`` (the file the map is stored in, a card rewritten later)."""
    return {p.name: sha256_file(p) for p in sorted(Path(folder).iterdir()) if p.is_file() and p.name not in skip}


def recorded(files: object, where: str | Path, required: Iterable[str] = ()) -> dict[str, str]:
    """The stored map ``files``, checked for shape and for the names it must list; a
    damaged or emptied map is a :class:`Damaged` error naming ``where``."""
    if not isinstance(files, dict) or not files or not all(
            isinstance(k, str) and isinstance(v, str) and _HEX.fullmatch(v) for k, v in files.items()):
        raise Damaged(f"{where} has no valid list of file checksums: the folder was damaged or edited; "
                      "build or install it again")
    missing = [name for name in required if name not in files]
    if missing:
        raise Damaged(f"{where} lists no checksum for {', '.join(missing)}: build or install it again")
    return files


def check(folder: str | Path, files: Mapping[str, str], names: Iterable[str] | None = None) -> None:
    """Compare ``names`` (default: every recorded file) under ``folder`` with their sums."""
    folder = Path(folder)
    for name in files if names is None else names:
        path = folder / name
        expected = files.get(name)
        if expected is None or not path.is_file() or sha256_file(path) != expected:
            raise Damaged(f"{path} is missing or changed since it was written (SHA-256 differs): "
                          "build or install it again")


def same_files(folder: str | Path, files: Mapping[str, str], skip: Collection[str]) -> bool:
    """Whether ``folder`` holds exactly the recorded files (besides ``skip``): no more, no fewer."""
    return {p.name for p in Path(folder).iterdir() if p.is_file()} - set(skip) == set(files)


def sealed(folder: str | Path, meta: dict[str, Any], meta_file: str, required: Iterable[str] = ()) -> dict[str, str]:
    """The recorded sums of a model folder's files (``meta["files"]``, checked for shape).

    A folder written before perspectrum recorded sums has none: they are recorded now
    (trusting the files as they are, once) and stored in its ``meta_file``, saying so; a
    folder that cannot be written is read with sums recorded for this process only.
    """
    folder = Path(folder)
    if "files" in meta:
        return recorded(meta["files"], folder / meta_file, required)
    files = record(folder, skip=(meta_file, CARD))
    say(f"{folder} has no recorded checksums (made by an older perspectrum): recording them now")
    try:
        write_json(folder / meta_file, {**meta, "files": files})
    except PerspectrumError as exc:
        say(f"{exc}; the checksums are kept for this run only")
    meta["files"] = files
    return files
