"""Models a team trains once and shares: list, export and install the contents of ``models/``.

``perspectrum train all`` takes over an hour on a laptop; a bundle lets one machine train and
every other one install. A bundle is a gzipped tar of the model folders (the four fine-tuned
tasks with the evidence ranker) and ``pipeline.json``, plus a
``manifest.json`` at its top with the SHA-256 and size of every file, the models (entries) it
holds, the package version that wrote it and the checksum of the data the models were trained on.

Installing trusts nothing it was given: the source (a path, ``file://`` or ``http(s)://``) is
copied to a temporary file first (a download has an overall deadline, not only one per read,
and one slower than a floor for too long is abandoned, as curl's ``--speed-limit`` does);
the manifest must name models, list the files they need and declare sizes within
:data:`MAX_UNPACKED_BYTES`; each member's name and size are checked before it is written (so
a decompression bomb stops at its header), every file's sum is checked against the manifest,
and files the manifest does not name are refused. Only then is the new ``models/`` swapped in
whole (:func:`perspectrum._io.atomic_folder`), so a refused, failed or interrupted install
leaves the old models working; a crash between the swap's renames is repaired by the next
reader (:func:`perspectrum.folders.models_dir`) or install, which also removes what a killed
install left (its download, unfinished versions).

The bundle's models replace their namesakes; installed models the bundle does not hold are
kept unless ``replace`` is given (a bundle of one model must not silently delete the others).
What ``models/`` holds besides the bundle's entries (the unpacked MPNet base, the unpacked
shipped models) is carried over by hard links.
"""

from __future__ import annotations

import gzip
import http.client
import io
import json
import os
import shutil
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any

from perspectrum._version import __version__
from perspectrum import folders
from perspectrum._io import atomic_folder, atomic_write, folder_lock, tidy
from perspectrum._progress import progress
from perspectrum.encoders.cross_encoder import META_FILE
from perspectrum.errors import PerspectrumError
from perspectrum.integrity import sha256_file
from perspectrum.models.scorers import PIPELINE_FILE, models_present
from perspectrum.models.scorers import MODELS

MANIFEST = "manifest.json"
#: Bumped when a bundle's layout changes; an installer refuses formats it does not know.
FORMAT = 1
#: What a bundle carries, in the order listed: everything else in ``models/`` stays local.
ENTRIES = (*MODELS, PIPELINE_FILE)
_BLOCK = 1 << 20
#: The most bytes a bundle may unpack to, whatever its manifest declares: ten times a bundle of
#: every model (about 0.4 GB), so a hostile or mistaken bundle cannot fill the disk.
MAX_UNPACKED_BYTES = 4 << 30
#: The most bytes a manifest may hold (one listing thousands of files is well under 1 MB).
MAX_MANIFEST_BYTES = 16 << 20
#: Seconds a download from a URL may take in all: a server that trickles bytes would otherwise
#: keep an install waiting for ever, as each read's own timeout (:data:`READ_TIMEOUT_SECONDS`)
#: restarts with every byte. An hour fetches the default bundle at about 100 kB/s.
DOWNLOAD_DEADLINE_SECONDS = 3600.0
#: Seconds one read (or the connection) may wait for the server.
READ_TIMEOUT_SECONDS = 60.0
#: A download slower than this many bytes a second over :data:`LOW_SPEED_SECONDS` is abandoned
#: (curl's ``--speed-limit``); 0 turns the check off. A server trickling a byte every few seconds
#: is given up on within minutes, not at the overall deadline.
LOW_SPEED_LIMIT = 1024.0
#: Seconds over which the speed is measured against :data:`LOW_SPEED_LIMIT` (curl's ``--speed-time``).
LOW_SPEED_SECONDS = 120.0
#: Seconds after which an abandoned download folder of an older perspectrum (``.bundle-*`` beside
#: the models folder, outside any lock) counts as left over: its file no longer grows.
OLD_LEFTOVER_SECONDS = 3600.0


def _needed(entry: str) -> str:
    """The file without which a bundle entry is no model: its meta, or the settings file itself."""
    if entry in MODELS:
        return f"{entry}/{META_FILE}"
    return entry


def _what(entry: str) -> str:
    """How messages name an entry: ``its stance model``, ``its pipeline settings``."""
    return {PIPELINE_FILE: "its pipeline settings"}.get(entry, f"its {entry} model")


def _files(root: Path, entry: str) -> Iterator[Path]:
    """The regular files of one bundle entry, in a stable order (temporary files left out)."""
    path = root / entry
    if path.is_file():
        yield path
    elif path.is_dir():
        yield from sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))


def _size(root: Path, entry: str) -> int:
    return sum(p.stat().st_size for p in _files(root, entry))


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


@dataclass(frozen=True)
class Entry:
    """One model (or the pipeline's settings), as ``perspectrum models list`` shows it: the
    user's own in ``models/`` or a shipped one, and whether it is the one that answers."""

    name: str
    kind: str
    size_bytes: int
    base_model: str | None = None
    data_checksum: str | None = None
    dev: dict[str, Any] | None = None
    test: dict[str, Any] | None = None
    source: str = "yours"
    answers: bool = True

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _entries(root: Path, source: str, answering: Path) -> list[Entry]:
    entries = []
    for task in MODELS:
        meta = _read_json(root / task / META_FILE)
        if meta is not None:
            kind = "ranker + window verifier" if meta.get("kind") == "ranker" else "cross-encoder"
            entries.append(Entry(task, kind, _size(root, task), meta.get("base_model") or meta.get("encoder"),
                                 meta.get("data_checksum"), meta.get("dev"), meta.get("test"), source,
                                 answering == root))
    return entries


def inventory(models_dir: str | Path) -> dict[str, Any]:
    """What ``models_dir`` holds, the models that ship with perspectrum, and which answer.

    Returns:
        ``{"models_dir", "system", "entries": [Entry.to_dict(), ...]}``; ``system`` is
        ``trained`` (the user's four models answer), ``shipped``, or ``shipped + your stance``
        (and so on) where some of the user's models answer in place of shipped ones, with
        `` (unpacked by perspectrum setup)`` while the shipped models are still packed.
    """
    from perspectrum.models.shipped import answering, current, source, system, unpacked

    root = folders.models_dir(models_dir)  # puts back models an interrupted install moved aside
    homes = answering(root)
    entries = [e for e in _entries(root, "yours", root) if e.name in MODELS]
    if (root / PIPELINE_FILE).is_file():
        entries.append(Entry(PIPELINE_FILE, "pipeline settings", _size(root, PIPELINE_FILE),
                             answers=models_present(root)))
    name = system(root)
    if not models_present(root):
        ready = current(root) is None
        shipped = unpacked(root) if ready else source()
        entries += [Entry(e.name, e.kind, e.size_bytes, e.base_model, e.data_checksum, e.dev, e.test, "shipped",
                          homes[e.name] == unpacked(root)) for e in _entries(shipped, "shipped", shipped)]
        name += "" if ready else " (unpacked by perspectrum setup)"
    return {"models_dir": str(root), "system": name, "entries": [e.to_dict() for e in entries]}


def _model_checksums(root: Path) -> dict[str, str]:
    """Each fine-tuned model's recorded data checksum."""
    found = {}
    for task in MODELS:
        meta = _read_json(root / task / META_FILE)
        if meta is not None:
            found[task] = str(meta.get("data_checksum"))
    return found


def export_models(models_dir: str | Path, out: str | Path, data_checksum: str,
                  show_progress: bool = False) -> dict[str, Any]:
    """Write every bundle entry of ``models_dir`` and a manifest into the tar.gz ``out``.

    Args:
        models_dir: the folder ``perspectrum train`` wrote.
        out: the archive to write (written aside, then renamed into place).
        data_checksum: the checksum of the data here; every model must have been trained on it.

    Returns:
        The manifest written.
    """
    root = folders.models_dir(models_dir)
    present = [entry for entry in ENTRIES if (root / entry).exists()]
    if not any(entry in present for entry in MODELS):
        raise PerspectrumError(f"nothing to export: {root} holds no trained models (the shipped ones "
                               "come with perspectrum)")
    for task, checksum in _model_checksums(root).items():
        if checksum != data_checksum:
            raise PerspectrumError(f"{root / task} was trained on other data (checksum {checksum[:12]}…) than "
                                   f"the data here ({data_checksum[:12]}…): retrain it or point at its data")
    files = [path for entry in present for path in _files(root, entry)]
    with progress("checksums", len(files), enabled=show_progress) as advance:
        sums, sizes = {}, {}
        for path in files:
            name = path.relative_to(root).as_posix()
            sums[name] = sha256_file(path)
            sizes[name] = path.stat().st_size
            advance(1)
    manifest = {"format": FORMAT, "perspectrum_version": __version__, "data_checksum": data_checksum,
                "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "system": inventory(root)["system"], "entries": present, "files": sums, "sizes": sizes}
    body = (json.dumps(manifest, indent=2) + "\n").encode()

    def write(tmp: Path) -> None:
        with tarfile.open(tmp, "w:gz") as archive:
            info = tarfile.TarInfo(MANIFEST)
            info.size = len(body)
            info.mtime = int(datetime.now(timezone.utc).timestamp())
            archive.addfile(info, io.BytesIO(body))
            with progress("packing", len(files), enabled=show_progress) as advance:
                for path in files:
                    archive.add(path, arcname=path.relative_to(root).as_posix(), recursive=False)
                    advance(1)

    atomic_write(out, write)
    return manifest


def fetch(source: str, into: Path, show_progress: bool = False, speed_limit: float | None = None,
          speed_time: float | None = None) -> Path:
    """Copy ``source`` (a path, ``file://`` or ``http(s)://`` URL) to a file in ``into``.

    A download that ends before its announced length is an error, not a short file; one
    still running after :data:`DOWNLOAD_DEADLINE_SECONDS` is stopped, and so is one that
    brings fewer than ``speed_limit`` bytes a second (default :data:`LOW_SPEED_LIMIT`; 0: no
    floor) over any ``speed_time`` seconds (default :data:`LOW_SPEED_SECONDS`). Reads return
    what has arrived and wait at most the shorter of :data:`READ_TIMEOUT_SECONDS` and
    ``speed_time``, so both are checked that often even when nothing arrives.
    """
    speed_limit = LOW_SPEED_LIMIT if speed_limit is None else speed_limit
    speed_time = LOW_SPEED_SECONDS if speed_time is None else speed_time
    if speed_limit < 0 or speed_time <= 0:
        raise PerspectrumError(f"the speed limit must be 0 or more bytes a second ({speed_limit}) over more than "
                               f"0 seconds ({speed_time})")
    target = into / "bundle.tar.gz"
    if "://" not in source:
        path = Path(source).expanduser()
        if not path.is_file():
            raise PerspectrumError(f"no bundle at {path}")
        shutil.copyfile(path, target)
        return target
    scheme = source.split("://", 1)[0].lower()
    if scheme not in ("http", "https", "file"):
        raise PerspectrumError(f"cannot install from {scheme}:// (give a path, file://, http:// or https://)")
    deadline = DOWNLOAD_DEADLINE_SECONDS
    started = time.monotonic()
    window = [started, 0]  # when the current measure of speed began, and the bytes since

    def slow(now: float) -> bool:
        """Whether the bytes of the window that ends ``now`` came slower than the floor; starts
        the next window when this one is over."""
        elapsed = now - window[0]
        if not speed_limit or elapsed < speed_time:
            return False
        if window[1] < speed_limit * elapsed:
            return True
        window[:] = [now, 0]
        return False

    def crawling() -> PerspectrumError:
        return PerspectrumError(f"gave up on the download of {source}: it brought fewer than {speed_limit:,g} "
                                f"bytes a second over {speed_time:g} s (--speed-limit, --speed-time): the server "
                                "is stalled or too slow; try again later or download the bundle another way and "
                                "install it from its path")

    def late() -> PerspectrumError:
        return PerspectrumError(f"gave up on the download of {source} after {deadline:,.0f} s (the deadline, "
                                "perspectrum.models.bundle.DOWNLOAD_DEADLINE_SECONDS): the server is stalled or too "
                                "slow; download the bundle another way and install it from its path")

    try:
        timeout = min(READ_TIMEOUT_SECONDS, deadline, speed_time if speed_limit else deadline)
        with urllib.request.urlopen(source, timeout=timeout) as response, \
                target.open("wb") as out:
            expected = response.headers.get("Content-Length")
            total = int(expected) if expected and expected.isdigit() else 0
            written = 0
            read = getattr(response, "read1", response.read)  # what has arrived, not a full block
            with progress("downloading", total or 1, enabled=show_progress and total > 0) as advance:
                for block in iter(lambda: read(_BLOCK), b""):
                    out.write(block)
                    written += len(block)
                    window[1] += len(block)
                    advance(len(block))
                    now = time.monotonic()
                    if now - started > deadline:
                        raise late()
                    if slow(now):
                        raise crawling()
    except http.client.HTTPException as exc:  # IncompleteRead and kin: the connection broke off
        raise PerspectrumError(f"download of {source} broke off ({type(exc).__name__})") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        if time.monotonic() - started >= deadline:  # the last read timed out past the deadline
            raise late() from None
        if slow(time.monotonic()):  # nothing, or too little, came within a window
            raise crawling() from None
        reason = getattr(exc, "reason", None) or exc
        raise PerspectrumError(f"cannot download {source}: {reason}".splitlines()[0]) from None
    if total and written != total:
        raise PerspectrumError(f"download of {source} is truncated: {written:,} of {total:,} bytes")
    return target


def _compatible(version: str) -> bool:
    """Same major and minor version: 0.x releases may change what a model folder holds."""
    return version.split(".")[:2] == __version__.split(".")[:2]


def _safe_name(name: str) -> PurePosixPath:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or not path.parts or path.parts[0] not in (*ENTRIES, MANIFEST):
        raise PerspectrumError(f"the bundle holds a file outside the models' folders: {name!r}")
    return path


def _unpack(archive_path: Path, into: Path, data_checksum: str, source: str) -> dict[str, Any]:
    """Extract a bundle into ``into``: the manifest first (checked in full), then each member as
    it streams past, its name and size checked before a byte of it is written, its sum after.

    The archive is read as a stream, once: a member larger than its manifest declares (a
    decompression bomb) is refused at its header, before it is decompressed. The gzip layer is
    read through :class:`gzip.GzipFile`, which checks its CRC at the end, so a damaged download
    says so even where the damage lands in the manifest.
    """
    try:
        with archive_path.open("rb") as raw, gzip.GzipFile(fileobj=raw, mode="rb") as unzipped, \
                tarfile.open(fileobj=unzipped, mode="r|") as archive:
            members = iter(archive)
            first = next(members, None)
            if first is None or first.name != MANIFEST or not first.isfile():
                raise PerspectrumError(f"the bundle has no {MANIFEST} at its start: not a perspectrum models bundle")
            if first.size > MAX_MANIFEST_BYTES:
                raise PerspectrumError(f"{source} is not a perspectrum bundle (its manifest is {first.size:,} bytes)")
            try:
                manifest = json.loads(archive.extractfile(first).read().decode("utf-8"))  # type: ignore[union-attr]
            except (ValueError, RecursionError):  # UnicodeDecodeError, JSONDecodeError, nesting too deep
                _drain(unzipped)  # a damaged archive is "damaged", not "not a bundle"
                raise PerspectrumError(f"{source} is not a perspectrum bundle (its manifest is not UTF-8 JSON)") from None
            sizes = _check_manifest(manifest, data_checksum)
            done: set[str] = set()
            for member in members:
                name = _safe_name(member.name).as_posix()
                if member.isdir():
                    continue
                if not member.isfile():
                    raise PerspectrumError(f"the bundle holds a link or device, not a file: {member.name!r}")
                if name not in sizes:
                    raise PerspectrumError(f"the bundle holds files its manifest does not list: {name}")
                if name in done:
                    raise PerspectrumError(f"the bundle holds {name} twice")
                if member.size != sizes[name]:
                    raise PerspectrumError(f"{name} in the bundle is {member.size:,} bytes, not the {sizes[name]:,} "
                                           "its manifest declares: refused before unpacking it")
                target = into.joinpath(*PurePosixPath(name).parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                with archive.extractfile(member) as source_file, target.open("wb") as out:  # type: ignore[union-attr]
                    shutil.copyfileobj(source_file, out, _BLOCK)  # reads at most the declared size
                if sha256_file(target) != manifest["files"][name]:
                    raise PerspectrumError(f"{name} in the bundle does not match its SHA-256 in the manifest")
                done.add(name)
            _drain(unzipped)  # to the end, where gzip checks its CRC
    except (tarfile.TarError, EOFError, OSError, ValueError, zlib.error) as exc:
        raise PerspectrumError(f"the bundle is damaged or truncated ({type(exc).__name__}: {exc})"
                               .splitlines()[0]) from None
    if set(sizes) - done:
        raise PerspectrumError(f"the bundle lacks files its manifest lists: {sorted(set(sizes) - done)[0]}")
    _check_sealed(into, manifest)
    return manifest


def _drain(unzipped: gzip.GzipFile) -> None:
    """Decompress the rest of ``unzipped`` without keeping it (at most :data:`MAX_UNPACKED_BYTES`),
    so gzip's end-of-stream checks run: a damaged or truncated archive raises here."""
    left = MAX_UNPACKED_BYTES
    while left > 0 and (block := unzipped.read(min(_BLOCK, left))):
        left -= len(block)


def _check_manifest(manifest: Any, data_checksum: str) -> dict[str, int]:
    """Refuse a manifest this perspectrum cannot install, in one line; return its declared sizes.

    Beyond the version and the data, it must name the models it holds, list (with sizes) the
    file each one cannot do without, and declare no more than :data:`MAX_UNPACKED_BYTES`.
    """
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        raise PerspectrumError(f"the bundle's {MANIFEST} is malformed")
    if manifest.get("format") != FORMAT:
        raise PerspectrumError(f"the bundle's format {manifest.get('format')!r} is not {FORMAT}: "
                               "install a perspectrum that reads it")
    version = str(manifest.get("perspectrum_version", "?"))
    if not _compatible(version):
        raise PerspectrumError(f"the bundle was made by perspectrum {version}, which this perspectrum "
                               f"({__version__}) cannot use: export it again with this version")
    if manifest.get("data_checksum") != data_checksum:
        raise PerspectrumError(f"the bundle's models were trained on other data (checksum "
                               f"{str(manifest.get('data_checksum'))[:12]}…) than the data here ({data_checksum[:12]}…)")
    entries, files, sizes = manifest.get("entries"), manifest["files"], manifest.get("sizes")
    if not isinstance(entries, list) or not entries:
        raise PerspectrumError(f"the bundle's {MANIFEST} names no models: there is nothing to install")
    unknown = [e for e in entries if e not in ENTRIES]
    if unknown or len(set(entries)) != len(entries):
        raise PerspectrumError(f"the bundle's {MANIFEST} names {(unknown or entries)[0]!r} "
                               f"{'which is not a models folder perspectrum knows' if unknown else 'twice'}")
    if sizes is None:
        raise PerspectrumError(f"the bundle's {MANIFEST} declares no file sizes (made by an earlier perspectrum): "
                               "export it again with this version")
    if not isinstance(sizes, dict) or set(sizes) != set(files) or not all(
            type(size) is int and size >= 0 for size in sizes.values()):
        raise PerspectrumError(f"the bundle's {MANIFEST} is malformed (its sizes do not match its files)")
    for name in files:
        if _safe_name(name).parts[0] not in entries:
            raise PerspectrumError(f"the bundle's {MANIFEST} lists {name}, outside the models it names")
    for entry in entries:
        if _needed(entry) not in files:
            raise PerspectrumError(f"the bundle lacks {_needed(entry)}, which {_what(entry)} needs: "
                                   "it is incomplete; export it again")
    total = sum(sizes.values())
    if total > MAX_UNPACKED_BYTES:
        raise PerspectrumError(f"the bundle would unpack to {total:,} bytes, more than the {MAX_UNPACKED_BYTES:,} "
                               "allowed (perspectrum.models.bundle.MAX_UNPACKED_BYTES): refused")
    return sizes


def _check_sealed(into: Path, manifest: dict[str, Any]) -> None:
    """Every file a model's meta records a sum for came in the bundle (a bundle that left one
    out would install a model that fails on first use), and every model was trained on the data
    the manifest declares (a manifest cannot vouch for a model trained on other data)."""
    for entry in manifest["entries"]:
        if entry == PIPELINE_FILE:
            continue
        meta = _read_json(into / _needed(entry))
        if meta is None:
            raise PerspectrumError(f"the bundle's {_needed(entry)} is not a JSON object: it is damaged; "
                                   "export it again")
        if meta.get("data_checksum") != manifest["data_checksum"]:
            raise PerspectrumError(f"the bundle's {entry} model was trained on other data (checksum "
                                   f"{str(meta.get('data_checksum'))[:12]}…) than its manifest declares "
                                   f"({str(manifest['data_checksum'])[:12]}…): refused; export it again")
        recorded = meta.get("files") if meta is not None else None
        for name in recorded if isinstance(recorded, dict) else ():
            if f"{entry}/{name}" not in manifest["files"]:
                raise PerspectrumError(f"the bundle lacks {entry}/{name}, which {_what(entry)} needs: "
                                       "it is incomplete; export it again")


def _carry_over(old: Path, new: Path, keep: Iterable[str] = ()) -> None:
    """Hard-link (or copy) into ``new`` what ``old`` holds outside the bundle's entries, and the
    entries named in ``keep`` (installed models the bundle does not replace)."""
    if not old.is_dir():
        return
    for item in old.iterdir():
        if (item.name in ENTRIES and item.name not in keep) or item.name.startswith("."):
            continue
        if item.is_dir():
            shutil.copytree(item, new / item.name, copy_function=_link_or_copy)
        else:
            _link_or_copy(str(item), str(new / item.name))


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _tidy_leftovers(root: Path) -> None:
    """Remove what killed installs of ``root`` left (downloads in ``.<name>.bundle-*``, unfinished
    or superseded versions) and put back a folder moved aside; call with ``root``'s lock held,
    so none of it is in use. Older perspectrums downloaded into ``.bundle-*`` beside ``root``
    without a lock: such a folder is removed once it holds nothing but a download that has not
    grown for :data:`OLD_LEFTOVER_SECONDS` (no live download stays still that long)."""
    tidy(root)  # re-entrant: this thread holds the lock
    for left in root.parent.glob(f".{root.name}.bundle-*"):
        shutil.rmtree(left, ignore_errors=True)
    for left in root.parent.glob(".bundle-*"):
        if _old_leftover(left):
            shutil.rmtree(left, ignore_errors=True)


def _old_leftover(folder: Path) -> bool:
    """Whether ``folder`` is an older perspectrum's abandoned download folder."""
    try:
        if folder.is_symlink() or not folder.is_dir():
            return False
        items = list(folder.iterdir())
        if any(item.name != "bundle.tar.gz" or item.is_symlink() or not item.is_file() for item in items):
            return False
        newest = max(path.stat().st_mtime for path in (folder, *items))
    except OSError:
        return False
    return time.time() - newest > OLD_LEFTOVER_SECONDS


def _check_kept(root: Path, kept: Iterable[str], data_checksum: str) -> None:
    """Refuse to keep installed models beside the bundle's that were trained on other data:
    together they would answer as a system no one trained or measured."""
    for entry in kept:
        if entry not in MODELS:
            continue
        meta = _read_json(root / entry / META_FILE)
        checksum = meta.get("data_checksum") if meta is not None else None
        if checksum != data_checksum:
            said = f"on other data (checksum {str(checksum)[:12]}…)" if checksum else "on data it does not record"
            raise PerspectrumError(f"the installed {entry} model, which the bundle does not replace, was trained "
                                   f"{said}, not the bundle's ({data_checksum[:12]}…): refused; install with "
                                   "--replace to remove it, or a bundle that holds it")


def install_models(source: str, models_dir: str | Path, data_checksum: str, show_progress: bool = False,
                   replace: bool = False, speed_limit: float | None = None,
                   speed_time: float | None = None) -> dict[str, Any]:
    """Install the bundle at ``source`` into ``models_dir``, all or nothing.

    Holds the models folder's writers' lock throughout (download included), so two installs
    take turns and leftovers of earlier, killed ones can be removed safely first.

    Args:
        source: a path, or a ``file://``, ``http://`` or ``https://`` URL.
        models_dir: the folder to update (created if missing).
        data_checksum: the checksum of the data here; a bundle trained on other data is refused.
        replace: remove installed models the bundle does not hold; by default they are kept
            (the bundle's models replace only their namesakes), and must have been trained on
            the same data.
        speed_limit, speed_time: abandon a download slower than ``speed_limit`` bytes a second
            over ``speed_time`` seconds (see :func:`fetch`).

    Returns:
        The bundle's manifest, plus ``kept`` (installed entries not in the bundle, kept) and
        ``removed`` (the same, removed because ``replace`` was given), in :data:`ENTRIES` order.
    """
    root = Path(models_dir)
    result: dict[str, Any] = {}
    with folder_lock(root):
        _tidy_leftovers(root)
        with tempfile.TemporaryDirectory(prefix=f".{root.name}.bundle-", dir=root.parent) as scratch:
            archive = fetch(source, Path(scratch), show_progress, speed_limit, speed_time)

            def write(tmp: Path) -> None:
                manifest = _unpack(archive, tmp, data_checksum, source)
                others = [e for e in ENTRIES if e not in manifest["entries"] and (root / e).exists()]
                if not replace:
                    _check_kept(root, others, data_checksum)
                _carry_over(root, tmp, keep=() if replace else others)
                result.update(manifest, kept=[] if replace else others, removed=others if replace else [])

            atomic_folder(root, write)
    return result
