"""The files of ``discover-batch``: the claims it reads, and the results it appends to and resumes.

**Claims**: one JSON object per line, ``{"claim": "...", "id": ...}``. ``id`` (a non-empty
string or an integer) defaults to the line's number; blank lines are skipped and other
keys ignored. The whole file is checked before any work starts, as
:meth:`~perspectrum.pipeline.pipeline.Pipeline.discover_many` checks its claims: a line that is not
such an object, a claim ``discover`` would refuse, or an id used twice is a one-line
error naming the line, and nothing is computed.

**Results**: one line per claim, ``{"id", "claim", "result"}``, in the order claims finish.
``claim`` is the text as given; ``result`` is what ``perspectrum discover --json`` prints
for it (:meth:`~perspectrum.pipeline.results.Discovery.to_dict`, written on one line by
:func:`~perspectrum.pipeline.results.safe_json`).

**Resuming**: each line is appended whole and flushed to disk (``fsync``) before the next,
so a crash, a Ctrl-C or a dead worker loses at most the line being written, and leaves
it without its newline. A run first reads the results file it is given: a last line
without a newline is cut off (the file is truncated to its last complete line); every
complete line must be a result for this claims file (a known id, the same claim); the
claims found there are skipped. However often a run is interrupted and restarted, every
claim ends with exactly one line. A lock file beside the results (``.<name>.lock``) keeps
two runs from appending to one file at once (:func:`perspectrum._io.sole_writer`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

from perspectrum._checks import is_id
from perspectrum._io import complete_lines
from perspectrum.data import jsonl_rows
from perspectrum.errors import PerspectrumError
from perspectrum.pipeline.pipeline import ClaimError, check_claim
from perspectrum.pipeline.results import Discovery, safe_json
from perspectrum.text.sentences import encodable

ClaimId = Union[int, str]
_LAYOUT = '{"claim", "id"}'


@dataclass(frozen=True)
class BatchClaim:
    """One claim of a batch: its id and its text as given."""

    id: ClaimId
    claim: str


def _checked(rows: Iterable[tuple[str, int, Any, Any]]) -> list[BatchClaim]:
    """``(where, line, id, claim)`` rows as claims, or a one-line error starting with ``where``."""
    out: list[BatchClaim] = []
    first: dict[ClaimId, int] = {}
    for where, line, claim_id, claim in rows:
        if not is_id(claim_id):
            raise PerspectrumError(f"{where}: id must be a non-empty string or an integer, not {claim_id!r}")
        if not encodable(str(claim_id)):
            raise PerspectrumError(f"{where}: the id holds a lone surrogate escape (such as \\udcff), "
                                   "which is not a character")
        try:
            check_claim(claim)
        except ClaimError as exc:
            raise ClaimError(f"{where}: {exc}") from None
        if claim_id in first:
            raise PerspectrumError(f"{where}: duplicate id {claim_id!r} (first on line {first[claim_id]})")
        first[claim_id] = line
        out.append(BatchClaim(claim_id, claim))
    return out


def read_claims(path: str | Path) -> list[BatchClaim]:
    """The claims of a claims file (layout in the module docstring), every line checked.

    Each problem is a one-line :class:`PerspectrumError` naming the file and line (for a
    claim ``discover`` refuses, a :class:`~perspectrum.pipeline.pipeline.ClaimError`), as are a
    missing, empty or unreadable file (:func:`perspectrum.data.jsonl_rows`).
    """
    path = Path(path).expanduser()

    def rows() -> Iterator[tuple[str, int, Any, Any]]:
        for line, row in jsonl_rows(path, "claims file", _LAYOUT):
            where = f"{path}, line {line}"
            if not isinstance(row, dict) or "claim" not in row:
                raise PerspectrumError(f'{where}: expected an object with "claim" (and an optional "id")')
            yield where, line, row.get("id", line), row["claim"]

    claims = _checked(rows())
    if not claims:
        raise PerspectrumError(f"{path} holds no claims (JSONL: one {_LAYOUT} per line)")
    return claims


def claims_of(claims: str | os.PathLike[str] | Mapping[ClaimId, str]) -> list[BatchClaim]:
    """The claims :func:`~perspectrum.batch.discover_run.discover_batch` was given: a claims file, or
    ``{id: claim}``."""
    if isinstance(claims, (str, os.PathLike)):
        return read_claims(claims)
    if not isinstance(claims, Mapping):
        raise PerspectrumError(f"claims must be a claims file or a mapping of id to claim, "
                               f"not {type(claims).__name__}")
    out = _checked((f"claim {claim_id!r}", 0, claim_id, claim) for claim_id, claim in claims.items())
    if not out:
        raise PerspectrumError("no claims to discover")
    return out


def read_results(out: str | Path, claims: Sequence[BatchClaim]) -> set[ClaimId]:
    """The ids of the claims already in results file ``out`` (none when it does not exist),
    after cutting off a torn last line; see *Resuming* in the module docstring.

    A complete line that is not a result of ``claims`` (not JSON, an unknown id, another
    claim under a known id, an id twice) is a one-line error: appending to another
    command's output, or to the results of another claims file, would mix the two.
    """
    out = Path(out).expanduser()
    if not out.exists():
        return set()
    text = {c.id: c.claim for c in claims}
    first: dict[ClaimId, int] = {}
    for line, row in complete_lines(out, "results file"):
        where = f"{out}, line {line}"
        if not isinstance(row, dict) or not {"id", "claim", "result"} <= row.keys():
            raise PerspectrumError(f"{where} is not a discover-batch result; is {out.name} the results "
                                   "file of another command?")
        claim_id = row["id"]
        if not is_id(claim_id) or claim_id not in text:
            raise PerspectrumError(f"{where}: id {claim_id!r} is not among the claims; are these the "
                                   "results of another claims file?")
        if row["claim"] != text[claim_id]:
            raise PerspectrumError(f"{where}: id {claim_id!r} was another claim; are these the results "
                                   "of another claims file?")
        if claim_id in first:
            raise PerspectrumError(f"{where}: id {claim_id!r} is also on line {first[claim_id]}")
        first[claim_id] = line
    return set(first)


def result_line(claim: BatchClaim, result: Discovery) -> str:
    """The results file's line for ``claim`` (without its newline)."""
    return safe_json({"id": claim.id, "claim": claim.claim, "result": result.to_dict()}, indent=None)
