"""Progress bars for long work, shown on stderr so JSON on stdout stays clean."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

_console = Console(stderr=True)


@contextmanager
def progress(description: str, total: int, enabled: bool = True) -> Iterator[Callable[..., None]]:
    """Yield an ``advance(n, status=None)`` callable that moves a rich progress bar by ``n``.

    ``status`` (e.g. the running training loss) is shown after the description.
    Library code calls ``advance`` unconditionally; with ``enabled=False`` (tests,
    embedding in a server) it does nothing, so callers need no second code path.
    """
    if not enabled:
        yield lambda n, status=None: None
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=_console, transient=False) as bar:
        task = bar.add_task(description, total=total)

        def advance(n: int, status: str | None = None) -> None:
            bar.update(task, advance=n, description=f"{description} {status}" if status else description)

        yield advance


def say(message: str) -> None:
    """One status line on stderr (e.g. 'building the missing BM25 index')."""
    _console.print(message, highlight=False, soft_wrap=True)
