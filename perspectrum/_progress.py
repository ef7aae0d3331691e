"""Progress bars for long work, shown on stderr so JSON on stdout stays clean."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

_console = Console(stderr=True)


@contextmanager
def progress(description: str, total: int, enabled: bool = True) -> Iterator[Callable[[int], None]]:
    """Yield an ``advance(n)`` callable that moves a rich progress bar by ``n`` steps.

    Library code calls ``advance`` unconditionally; with ``enabled=False`` (tests,
    embedding in a server) it does nothing, so callers need no second code path.
    """
    if not enabled:
        yield lambda n: None
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=_console, transient=False) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n: bar.advance(task, n)


def say(message: str) -> None:
    """One status line on stderr (e.g. 'building the missing BM25 index')."""
    _console.print(message, highlight=False)
