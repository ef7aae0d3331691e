"""``perspectrum score``: one task's model on its own, over a JSONL file of pairs or triples.

The file is read twice, a line at a time, so a file of any length is held a batch at a
time: first every line is checked (each bad one named on stderr, and then nothing is scored
or written), then the lines are scored in batches and each batch written as soon as it is
scored. Output line N answers input line N: a blank line is answered by a blank line, so
nothing is dropped and the two files stay aligned.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Optional, TextIO

import typer

from perspectrum.cli.common import DeviceOpt, ModelsDir, app, error_exit
from perspectrum.data import MAX_POOL_LINE_CHARS, json_problem
from perspectrum.errors import PerspectrumError

#: The fields each line holds, per task.
FIELDS = {"relevance": ("claim", "perspective"), "stance": ("claim", "perspective"),
          "equivalence": ("claim", "perspective", "other")}
#: The most lines scored (and written) at once.
BATCH = 256
#: A batch is scored early once its texts hold this many characters, so a file of
#: megabyte texts is held a few lines at a time.
BATCH_CHARS = 4_000_000
#: The most bad lines named one by one; the rest are counted in one more line.
SHOWN_PROBLEMS = 20
KIND = "pairs file"
_BOM = b"\xef\xbb\xbf"
#: Bytes read of one line at most: enough for MAX_POOL_LINE_CHARS characters of any UTF-8.
_LINE_BYTES = 4 * MAX_POOL_LINE_CHARS + 4


@app.command("score")
def score(
    task: Annotated[str, typer.Argument(help="relevance, stance or equivalence.", show_default=False)],
    pairs: Annotated[Path, typer.Argument(help='JSONL: one {"claim", "perspective"} per line ({"claim", '
                                               '"perspective", "other"} for equivalence).', show_default=False)],
    models_dir: ModelsDir = None,
    device: DeviceOpt = None,
    out: Annotated[Optional[Path], typer.Option(
        "--out", help="Write the scores to this file instead of stdout: whole or not at all (written beside "
                      "it under a temporary name, renamed when every line is scored).")] = None,
) -> None:
    """Score (claim, perspective) pairs with one task's model, opening no index.

    Your fine-tuned model answers, else the shipped one; equivalence reads triples. Each line is
    printed back as JSON with its "score" in [0, 1] (and, for stance, "stance": support or
    undermine at the dev-tuned threshold); a blank line is answered by a blank line. A file with
    bad lines is refused, each named, before anything is scored.
    """
    from perspectrum.models.pair_scorer import ARITY, PairScorer

    if task not in ARITY:  # before any file is read
        PairScorer.load(task, models_dir)
    fields = FIELDS[task]
    if refused(pairs, fields):
        raise typer.Exit(1)
    scorer = PairScorer.load(task, models_dir)
    threshold = scorer.settings.get("threshold") if task == "stance" else None
    rows: list[dict[str, Any] | None] = []  # None: a blank line
    chars = written = 0
    stream: TextIO = sys.stdout

    def so_far(lines: str = "lines") -> str:
        """How much of the output stands when a run stops early."""
        return f"nothing was written to {out}" if out is not None else f"the output answers the first {written:,} {lines}"

    def flush() -> None:
        nonlocal written
        items = [tuple(row[f] for f in fields) for row in rows if row is not None]
        scores = iter(scorer.score(items) if items else ())
        lines = []
        for row in rows:
            if row is None:
                lines.append("")
                continue
            value = next(scores)
            out = {**row, "score": round(float(value), 6)}
            if threshold is not None:
                out["stance"] = "support" if value >= threshold else "undermine"
            lines.append(json.dumps(out, ensure_ascii=True))
        write("".join(line + "\n" for line in lines), written, stream)
        written += len(rows)
        rows.clear()

    def run() -> None:
        nonlocal chars
        for number, row, problem in parsed_lines(pairs, fields):
            if problem is not None:  # it passed the check a moment ago
                raise PerspectrumError(f"{pairs} changed while it was being scored (line {number}: {problem}): "
                                       + (f"the output answers its first {written:,} lines only" if out is None
                                          else so_far()))
            rows.append(row)
            chars += sum(len(row[f]) for f in fields) if row is not None else 0
            if len(rows) >= BATCH or chars >= BATCH_CHARS:
                flush()
                chars = 0
        if rows:
            flush()

    def into(tmp: Path) -> None:
        nonlocal stream
        with tmp.open("w", encoding="utf-8") as stream:
            run()

    try:
        if out is None:
            run()
        else:
            from perspectrum._io import atomic_write

            if out.is_dir():
                raise PerspectrumError(f"--out {out} is a folder: name a file")
            atomic_write(out, into)
    except KeyboardInterrupt:
        raise error_exit(PerspectrumError(f"interrupted: {so_far(f'lines of {pairs}')} only"
                                          if out is None else f"interrupted: {so_far()}"), 130) from None


def refused(pairs: Path, fields: tuple[str, ...]) -> bool:
    """Check every line of ``pairs``; name each bad one on stderr (up to :data:`SHOWN_PROBLEMS`,
    then how many more) and say whether there was any."""
    bad = 0
    for number, _, problem in parsed_lines(pairs, fields):
        if problem is not None:
            bad += 1
            if bad <= SHOWN_PROBLEMS:  # printed now, the exit raised once every line is read
                error_exit(PerspectrumError(f"{pairs}, line {number}: {problem}"), 1)
    if bad > SHOWN_PROBLEMS:
        more = bad - SHOWN_PROBLEMS
        error_exit(PerspectrumError(f"{pairs}: {more:,} more bad lines not shown (nothing was scored)"), 1)
    return bad > 0


def parsed_lines(path: Path, fields: tuple[str, ...]) -> Iterator[tuple[int, dict[str, Any] | None, str | None]]:
    """Each line of ``path`` with its number, as ``(number, row, None)`` (``row`` None for a
    blank line) or ``(number, None, problem)``."""
    for number, text, problem in raw_lines(path):
        if problem is not None:
            yield number, None, problem
        elif not text.strip():
            yield number, None, None
        else:
            row, problem = parse_row(text, fields)
            yield number, row, problem


def raw_lines(path: Path) -> Iterator[tuple[int, str, str | None]]:
    """Each line of ``path`` with its number, decoded, or a problem with it (not UTF-8,
    longer than :data:`MAX_POOL_LINE_CHARS`); a file that cannot be opened or read is a
    one-line :class:`PerspectrumError`.

    As :func:`perspectrum.data.jsonl_rows` reads them: lines end at "\\n" only (U+2028,
    U+0085 or a lone "\\r" is part of its line, as JSON Lines has it) and a byte-order mark
    at the start is read past; a line too long is never held whole."""
    if path.is_dir():
        raise PerspectrumError(f"{path} is a folder, not a {KIND} (JSONL: one JSON object per line)")
    if not path.is_file():
        raise PerspectrumError(f"no such {KIND}: {path}")
    try:
        with open(path, "rb") as handle:
            number = 0
            while raw := handle.readline(_LINE_BYTES):
                number += 1
                if number == 1 and raw.startswith(_BOM):
                    raw = raw[len(_BOM):]
                if len(raw) >= _LINE_BYTES - len(_BOM) and not raw.endswith(b"\n"):
                    while raw and not raw.endswith(b"\n"):  # the rest of this line, a piece at a time
                        raw = handle.readline(_LINE_BYTES)
                    yield number, "", f"longer than {MAX_POOL_LINE_CHARS:,} characters (one record per line)"
                    continue
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    yield number, "", f"not UTF-8 text (byte {raw[exc.start]:#04x} at byte {exc.start + 1} of the line)"
                    continue
                if len(text.rstrip("\r\n")) > MAX_POOL_LINE_CHARS:
                    yield number, "", f"longer than {MAX_POOL_LINE_CHARS:,} characters (one record per line)"
                    continue
                yield number, text, None
    except OSError as exc:
        raise PerspectrumError(f"cannot read {KIND} {path}: {exc.strerror or exc}") from None


def parse_row(text: str, fields: tuple[str, ...]) -> tuple[dict[str, Any] | None, str | None]:
    """The JSON object one line holds with each of ``fields`` a non-empty text, or what is wrong."""
    layout = "{" + ", ".join(f'"{f}"' for f in fields) + "}"
    try:
        row = json.loads(text.rstrip("\r\n"))
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON: {json_problem(exc)}"
    except RecursionError:
        return None, "JSON nested too deeply to read"
    except ValueError:  # Python reads no integer of over 4,300 digits
        return None, "a number too long to read (over 4,300 digits)"
    if not isinstance(row, dict):
        return None, f"a JSON {json_type(row)}, not an object {layout}"
    for field in fields:
        value = row.get(field)
        if field not in row:
            return None, f'no "{field}" (each line is an object {layout})'
        if not isinstance(value, str):
            return None, f'"{field}" is not a text but a JSON {json_type(value)}'
        if not value.strip():
            return None, f'"{field}" is empty'
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return None, f'"{field}" holds a lone surrogate ({ascii(value[exc.start])[1:-1]}), not Unicode text'
    return row, None


def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type."""
    if value is None:
        return "null"
    return {bool: "true/false", int: "number", float: "number", str: "string", list: "array",
            dict: "object"}.get(type(value), type(value).__name__)


def write(text: str, written: int, stream: TextIO | None = None) -> None:
    """Write one batch's lines at once (to stdout, or ``stream``) and flush them; a closed pipe
    or a full disk is one line on stderr saying how many lines the output answers (``written``
    before this batch; with ``--out`` nothing is left: the file is renamed only when whole)."""
    stream = stream or sys.stdout
    try:
        stream.write(text)
        stream.flush()
    except BrokenPipeError:
        _quiet_stdout()
        raise PerspectrumError(f"the output was closed: it answers the first {written:,} lines at most") from None
    except OSError as exc:
        if stream is not sys.stdout:  # --out: the temporary file is removed, nothing is left
            raise PerspectrumError(f"cannot write the scores: {exc.strerror or exc} (nothing was written)") from None
        _quiet_stdout()
        raise PerspectrumError(f"cannot write the scores: {exc.strerror or exc} (the output answers the first "
                               f"{written:,} lines at most)") from None


def _quiet_stdout() -> None:
    """Point stdout at the null device, so what is left in its buffer is not written (and
    fails again, with a traceback) as Python exits."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):  # not a real file (a test's capture)
        pass
