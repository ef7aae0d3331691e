"""Crash-safe, concurrent-safe writes of files and folders.

- A file is written to a temporary name beside it and renamed over it: readers see the
  old complete file or the new one.
- A folder (an index, a model, the unpacked shipped models) is a symbolic link to a hidden version
  folder beside it, ``.<name>.v-<token>``. A new version is written in full, then the link
  is replaced by one rename, which is atomic on POSIX: a reader that follows the link,
  and a crash at any instant, find the old complete folder or the new one, never none.
  The superseded version is removed after the swap.
- Writers of one folder are serialised by a file lock (``filelock``) on ``.<name>.lock``;
  each writer first tidies what a crashed one left (unfinished versions, old temporary
  folders) and restores a folder moved aside by an interrupted swap from older versions.
- A JSONL file that a long run appends to (``discover-batch``'s results, ``map``'s units) gets
  each line whole and on disk before the next (:func:`appending`); a torn last line left by a
  crash is cut off when it is read again (:func:`complete_lines`), and one run at a time may
  write it (:func:`sole_writer`, the same lock a folder's writers take).
- Everything is created with the user's umask, as ``open`` and ``mkdir`` do.

Write failures (read-only folder, full disk, file-size limit) become one-line
:class:`~perspectrum.errors.PerspectrumError` messages, and the previous version stays;
so do those a library reports as its own exception naming the OS error (safetensors).
"""

from __future__ import annotations

import errno
import json
import os
import re
import secrets
import shutil
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from perspectrum._progress import say
from perspectrum.errors import PerspectrumError

#: Seconds a writer waits for another writer's lock before saying that it waits.
LOCK_NOTICE_SECONDS = 2.0
#: Called with a step's name between the steps of :func:`atomic_folder`; tests set it to
#: kill the process at a chosen step and check that nothing is lost.
fault_hook: Callable[[str], None] | None = None


def _step(name: str) -> None:
    if fault_hook is not None:
        fault_hook(name)


#: numpy's error for a short write (``ndarray.tofile``, which ``np.save`` uses on a real
#: file): "80943 requested and 4064 written", items not bytes, with no errno to say why.
_SHORT_WRITE = re.compile(r"\d+ requested and \d+ written")


def _file_size_limited() -> bool:
    """Whether this process has a file-size limit (``ulimit -f``), the other cause of a short write."""
    try:
        import resource
    except ImportError:  # not on POSIX
        return False
    return resource.getrlimit(resource.RLIMIT_FSIZE)[0] != resource.RLIM_INFINITY


def cannot_write(target: Path, exc: OSError) -> PerspectrumError:
    """The one-line error for a write that failed (read-only, full disk, too large).

    A full disk is said in words a person acts on, whoever noticed it: the OS
    (``ENOSPC``, ``EDQUOT``) or numpy, whose short write carries only counts and is a
    full disk unless a file-size limit explains it.
    """
    code = exc.errno
    if code is None and _SHORT_WRITE.fullmatch(str(exc)):
        code = errno.EFBIG if _file_size_limited() else errno.ENOSPC
    if code in (errno.ENOSPC, errno.EDQUOT):
        full = "no space left on device" if code == errno.ENOSPC else "disk quota exceeded"
        return PerspectrumError(f"cannot write {target}: {full}; free some space there and run the command again")
    reason = exc.strerror or (os.strerror(code) if code else "") or str(exc) or type(exc).__name__
    return PerspectrumError(f"cannot write {target}: {reason}")


#: How libraries written in Rust (safetensors, tokenizers) word an I/O error they raise as
#: their own exception type: "... (os error 28)".
_FOREIGN_OS_ERROR = re.compile(r"\(os error (\d+)\)")


def foreign_os_error(exc: BaseException) -> OSError | None:
    """The ``OSError`` inside an error a library raised as its own type (safetensors' full
    disk is a ``SafetensorError`` naming "os error 28"), or ``None`` when it names none."""
    if isinstance(exc, OSError):
        return exc
    if not isinstance(exc, Exception) or isinstance(exc, PerspectrumError):  # ours say what they mean
        return None
    found = _FOREIGN_OS_ERROR.search(str(exc))
    if found is None:
        return None
    code = int(found.group(1))
    return OSError(code, os.strerror(code))


def _token() -> str:
    return secrets.token_hex(6)


def atomic_write(path: str | Path, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then rename it over ``path``.

    The rename is atomic on one file system, so an interrupted run never leaves a
    truncated JSON or PNG where a good one was.
    """
    target = Path(path)
    tmp = target.parent / f".{target.name}.{_token()}{target.suffix}"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))  # 0o666 less the umask
        write(tmp)
        os.replace(tmp, target)
    except Exception as exc:
        failed = foreign_os_error(exc)
        if failed is None:
            raise
        raise cannot_write(target, failed) from None
    finally:
        tmp.unlink(missing_ok=True)
    return target


def write_json(path: str | Path, data: Any) -> Path:
    """Write ``data`` as indented JSON, atomically."""
    text = json.dumps(data, indent=2, sort_keys=False) + "\n"
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def _writers_lock(final: Path) -> Any:
    """The writers' lock of ``final``: one ``filelock`` object per path in a process, so
    taking it again in the same thread is re-entrant rather than a deadlock."""
    from filelock import FileLock

    return FileLock(final.parent / f".{final.name}.lock", is_singleton=True)


@contextmanager
def folder_lock(final: str | Path, busy: str | None = None) -> Iterator[None]:
    """Hold the writers' lock of ``final`` (re-entrant within a thread): wait for another
    writer, saying so; or, given ``busy``, fail at once with ``busy`` as the error."""
    from filelock import Timeout

    final = Path(final)
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        lock = _writers_lock(final)
        try:
            lock.acquire(timeout=LOCK_NOTICE_SECONDS if busy is None else 0)
        except Timeout:
            if busy is not None:
                raise PerspectrumError(busy) from None
            say(f"waiting for another process writing {final}")
            lock.acquire()
    except OSError as exc:
        raise cannot_write(final, exc) from None
    try:
        yield
    finally:
        lock.release()


def sole_writer(path: str | Path, option: str = "--out") -> AbstractContextManager[None]:
    """Hold the writers' lock of the file ``path`` (:func:`folder_lock`'s), or fail at once:
    two runs appending to one file would duplicate its lines. ``option`` names the
    command's option that chose the file, for the message."""
    return folder_lock(path, busy=f"another run is writing {Path(path)}; wait for it to end or choose another {option}")


@contextmanager
def appending(path: Path) -> Iterator[Callable[[str], None]]:
    """Yield ``write(line)``, which appends ``line`` and its newline to ``path`` and returns
    once they are on disk (flush, then ``fsync``; the folder too when the file is new).

    A write that fails (a full disk) is one :func:`cannot_write` error; closing the file
    after it, which fails again as it flushes what was left, does not hide that error
    behind an :class:`OSError`. What did reach the file is a torn last line at worst, which
    :func:`complete_lines` cuts off."""
    try:
        new = not path.exists()
        handle = open(path, "ab")
        if new:
            folder = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(folder)
            finally:
                os.close(folder)
    except OSError as exc:
        raise cannot_write(path, exc) from None

    def write(line: str) -> None:
        try:
            handle.write(line.encode("utf-8") + b"\n")
            handle.flush()
            os.fsync(handle.fileno())
        except OSError as exc:
            raise cannot_write(path, exc) from None

    try:
        yield write
    except BaseException:
        try:
            handle.close()
        except OSError:
            pass  # the error already on its way says why
        raise
    try:
        handle.close()
    except OSError as exc:
        raise cannot_write(path, exc) from None


def complete_lines(path: Path, kind: str) -> Iterator[tuple[int, Any]]:
    """Each complete line of the JSONL file ``path`` as (line number, its JSON, or ``None``
    where it is not JSON); once all are read, a last line without its newline (the torn tail of
    an interrupted run) is cut off, saying so. A folder or an unreadable file is a one-line
    error naming ``kind``. A consumer that raises on a line stops the reading: nothing is cut."""
    kept = 0  # bytes of complete lines
    try:
        with open(path, "rb") as handle:
            for line, raw in enumerate(handle, 1):
                if not raw.endswith(b"\n"):
                    break  # cut off below
                kept += len(raw)
                try:
                    row = json.loads(raw)
                except (ValueError, RecursionError):
                    row = None
                yield line, row
    except IsADirectoryError:
        raise PerspectrumError(f"{path} is a folder, not a {kind}") from None
    except OSError as exc:
        raise PerspectrumError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        if kept < path.stat().st_size:
            os.truncate(path, kept)
            say(f"{path}: cut off a partial last line that an interrupted run left")
    except OSError as exc:
        raise cannot_write(path, exc) from None


def current(final: str | Path) -> Path | None:
    """The real folder readers of ``final`` should read now, or ``None`` when there is none.

    Resolve once and read every file through the answer, so a swap in the middle cannot
    mix two versions. A folder left moved aside by an interrupted swap of an older
    version (``.<name>.old-*``) is still found.
    """
    final = Path(final)
    if final.is_dir():
        return final.resolve()
    if final.is_symlink():  # dangling: nothing to read
        return None
    moved = sorted(final.parent.glob(f".{final.name}.old-*")) if final.parent.is_dir() else []
    return moved[-1] if moved else None


def _tidy(final: Path) -> None:
    """Remove what crashed writers left beside ``final`` and restore a folder moved aside;
    call with the lock held."""
    if not final.exists() and not final.is_symlink():
        moved = sorted(final.parent.glob(f".{final.name}.old-*"))
        if moved:
            moved[-1].rename(final)
    live = final.resolve() if final.is_symlink() else None
    parent = final.parent.resolve()  # resolved as ``live`` is: a relative folder must not look like another one
    for pattern in (f".{final.name}.v-*", f".{final.name}.tmp-*", f".{final.name}.old-*", f".{final.name}.link-*"):
        for left in final.parent.glob(pattern):
            if parent / left.name == live:
                continue
            if left.is_dir() and not left.is_symlink():
                shutil.rmtree(left, ignore_errors=True)
            else:
                left.unlink(missing_ok=True)


def tidy(final: str | Path) -> None:
    """Clean up after crashed writers of ``final`` if no writer holds it now; a reader's
    courtesy, so it never waits and never fails (a read-only folder is left as it is)."""
    from filelock import Timeout

    final = Path(final)
    if not final.parent.is_dir():
        return
    try:
        lock = _writers_lock(final)
        lock.acquire(timeout=0)
    except (OSError, Timeout):
        return
    try:
        _tidy(final)
    except OSError:
        pass
    finally:
        lock.release()


def restore(final: str | Path) -> None:
    """Put back a folder that an interrupted swap left moved aside (``.<name>.old-*``) while
    nothing is at ``final``, so a reader that resolves ``final`` finds the old folder rather than
    none; and a writer that would create ``final`` afresh cannot bury it (the next swap
    would then delete it as a leftover). Costs one ``stat`` when ``final`` is there: it
    takes no lock and creates nothing unless there is something to restore."""
    final = Path(final)
    try:
        if final.exists() or final.is_symlink() or not final.parent.is_dir():
            return
        moved = next(final.parent.glob(f".{final.name}.old-*"), None)
    except OSError:  # an unreadable parent: the reader's own error will say so
        return
    if moved is not None:
        tidy(final)


def atomic_folder(final: str | Path, write: Callable[[Path], None]) -> Path:
    """Call ``write(folder)`` on a fresh version folder beside ``final``, then point
    ``final`` at it by one atomic rename; the superseded version is removed last.

    Readers (and a crash at any point) see the old complete folder or the new complete
    one. A real folder at ``final`` (written by an older version of perspectrum) is
    moved aside first; a crash in that step is repaired by the next writer or reader.
    """
    final = Path(final)
    with folder_lock(final):
        version = final.parent / f".{final.name}.v-{_token()}"
        link = final.parent / f".{final.name}.link-{_token()}"
        swapped = False
        try:
            _tidy(final)
            version.mkdir()
            _step("write")
            write(version)
            _step("written")
            os.symlink(version.name, link)
            if final.is_dir() and not final.is_symlink():
                final.rename(final.parent / f".{final.name}.old-{_token()}")
                _step("moved aside")
            os.replace(link, final)
            swapped = True
            _step("swapped")
            _tidy(final)  # the superseded version and anything moved aside
        except BaseException as exc:
            if not swapped:
                shutil.rmtree(version, ignore_errors=True)
                link.unlink(missing_ok=True)
            failed = foreign_os_error(exc)
            if failed is not None:
                raise cannot_write(final, failed) from None
            raise
    return final
