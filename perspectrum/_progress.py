"""What perspectrum prints for people: progress bars and status lines on stderr (so JSON on
stdout stays clean), and any text from a pool, a claim, a path or a model made safe to
print first."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.text import Text

_console = Console(stderr=True)

#: Characters a terminal acts on rather than shows: C0 controls (tab and newline are kept
#: where layout needs them), DEL, and C1 controls. ESC (U+001B) and CSI (U+009B) start
#: sequences that can retitle the window, clear the screen or rewrite what was printed;
#: lone surrogates (a byte that was not UTF-8, in a file name or a JSON escape) cannot
#: be encoded for output at all, so they are shown escaped too; and the explicit
#: bidirectional overrides and isolates (U+202A–U+202E, U+2066–U+2069), which make a
#: terminal show the text after them in another order than it is.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_UNPRINTABLE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def printable(text: str, one_line: bool = False) -> str:
    """``text`` with every character a terminal would act on written as its Python escape
    (ESC as ``\\x1b``, CSI as ``\\x9b``), so text from a pool, a claim or a model card is
    seen, never obeyed. ``one_line`` escapes tabs and newlines too (error lines)."""
    pattern = _UNPRINTABLE_LINE if one_line else _UNPRINTABLE
    return pattern.sub(lambda found: ascii(found.group())[1:-1], text)


def literal(text: object, style: str = "") -> Text:
    """``text`` (any value, shown as ``str``) for rich: printable and never parsed as markup."""
    return Text(printable(str(text)), style=style)


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
        TextColumn("left"),
        TimeRemainingColumn(),
    )
    description = escape(printable(description, one_line=True))  # the bar reads its description as markup
    with Progress(*columns, console=_console, transient=False) as bar:
        task = bar.add_task(description, total=total)

        def advance(n: int, status: str | None = None) -> None:
            bar.update(task, advance=n, description=f"{description} {status}" if status else description)

        yield advance


def say(message: str) -> None:
    """One status line on stderr (e.g. 'building the missing BM25 index'), shown literally."""
    _console.print(literal(message), highlight=False, soft_wrap=True)
