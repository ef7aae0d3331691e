"""The units file of a ``map`` run: every document's mined units, kept so a rerun resumes.

**Layout**: JSONL. Its first line names the run, ``{"map_units": 2, "claim", "models"}``
(the claim as checked, and which models mined: :func:`models_of`). Each further line is one
document's units, ``{"id", "sha256", "units", "sum"}``: its id (as
:func:`perspectrum.text.reading.read_documents` names it), the SHA-256 of its text, its
:class:`~perspectrum.text.mining.MinedUnit` records, and the SHA-256 of those records
(:func:`units_line`; lines written before the sum was kept have none, and are read as they are). Lines are appended
whole and put on disk (``fsync``) one by one (:func:`perspectrum._io.appending`),
and one run at a time may write a file (:func:`~perspectrum._io.sole_writer`).

**Resuming** (:func:`read_units`): a last line without its newline (an interrupted write) is
cut off; a file that is not a units file is never cut or appended to; a file of another claim
or other models, a document no longer among those given, a text that changed since it was
mined, or an id twice is a one-line error, so units of one pile are never mixed into another's
map. A line damaged in the middle of the file (not JSON, not a document's units, offsets that do
not point into its document, units that do not match their sum) is a one-line error naming it, and
the file is left as it is: nothing cut, nothing appended. A file emptied is said and mined afresh.
Files of layout 1, written when documents were named by their file's path (``pile/a.txt``,
``/data/answers.jsonl:7``), are read as well: resumed when each of their ids still names a
document given (the text's SHA-256 still checked), else a one-line error that says so.
However often a run is stopped and restarted, each document is mined once and its units are read
back exactly.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from perspectrum._io import complete_lines
from perspectrum.errors import PerspectrumError
from perspectrum.pipeline.pipeline import Pipeline
from perspectrum.text.mining import MinedUnit

#: The units file's layout version, in its first line: 2 since documents are named as the user
#: named them; 1 named them by their file's path, and is still read (:func:`read_units`).
LAYOUT = 2
#: Layouts read.
READ_LAYOUTS = (1, 2)


def digest(text: str) -> str:
    """The SHA-256 of ``text`` (UTF-8, surrogate escapes kept), as hex."""
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def units_sum(records: Any) -> str:
    """The SHA-256 of a line's unit records (as JSON, keys sorted), which a damaged byte changes."""
    return digest(json.dumps(records, ensure_ascii=False, sort_keys=True))


def units_line(doc_id: str, text: str, units: Sequence[MinedUnit]) -> str:
    """The units file's line for one document (without its newline)."""
    records = [u.to_dict() for u in units]
    return json.dumps({"id": doc_id, "sha256": digest(text), "units": records, "sum": units_sum(records)},
                      ensure_ascii=False)


def models_of(pipe: Pipeline) -> str:
    """Which models mine for ``pipe``: its system and a fingerprint of the encoder and of the
    relevance and stance models' recorded file sums (what a unit's offsets, score and stance
    depend on), so units mined by other models are not mixed in."""
    from perspectrum.models.store import read_meta

    parts: dict[str, Any] = {"encoder": pipe.store.encoder.identity}
    for task in ("relevance", "stance"):
        try:
            parts[task] = read_meta(pipe.models_dir, task).get("files") if pipe.system == "trained" else None
        except PerspectrumError:
            parts[task] = None
    return f"{pipe.system} {hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]}"


def header(claim: str, models: str) -> str:
    """The units file's first line (without its newline)."""
    return json.dumps({"map_units": LAYOUT, "claim": claim, "models": models}, ensure_ascii=False)


#: How every units file starts (its header's first key): a file that does not is never cut or appended to.
_HEAD = b'{"map_units": '


def _check_opening(path: Path) -> None:
    """Refuse a file that does not start as a units file does (or is empty): it is not
    ours, so it is never cut or appended to."""
    try:
        with open(path, "rb") as handle:
            opening = handle.read(len(_HEAD))
    except IsADirectoryError:
        raise PerspectrumError(f"{path} is a folder, not a units file") from None
    except OSError as exc:
        raise PerspectrumError(f"cannot read {path}: {exc.strerror or exc}") from None
    if opening and not _HEAD.startswith(opening) and not opening.startswith(_HEAD):
        raise PerspectrumError(f"{path} is not a map units file; give --units a new file or one an earlier map "
                               "run wrote")


def read_units(path: str | Path, claim: str, models: str, texts: Mapping[str, str]) -> dict[str, list[MinedUnit]]:
    """The units already in units file ``path`` (none when it does not exist), by document
    id, after cutting off a torn last line; see *Resuming* in the module docstring."""
    path = Path(path).expanduser()
    if not path.exists():
        return {}
    found: dict[str, list[MinedUnit]] = {}
    _check_opening(path)
    not_ours = f"{path} is not a map units file; give --units a new file or one an earlier map run wrote"
    layout = LAYOUT
    for line, row in complete_lines(path, "units file"):
        where = f"{path}, line {line}"
        if line == 1:
            if not isinstance(row, dict) or row.get("map_units") not in READ_LAYOUTS:
                raise PerspectrumError(not_ours)
            layout = row["map_units"]
            if row.get("claim") != claim:
                raise PerspectrumError(f"{path} holds the units of another claim ({row.get('claim')!r}); "
                                       "give --units a new file")
            if row.get("models") != models:
                raise PerspectrumError(f"{path} was mined by other models ({row.get('models')}, not "
                                       f"{models}); give --units a new file")
            continue
        damaged = (f"{where} is damaged: {{}}; remove that line to mine its document again, or give --units a "
                   "new file")
        try:
            doc_id, units, sha = row["id"], [MinedUnit(**u) for u in row["units"]], row["sha256"]
        except (KeyError, TypeError):
            raise PerspectrumError(damaged.format("not a document's units")) from None
        if "sum" in row and row["sum"] != units_sum(row["units"]):
            raise PerspectrumError(damaged.format("its units do not match their sum"))
        if doc_id not in texts and layout == 1:
            raise PerspectrumError(f"{where}: document {doc_id!r} is not among those given: this file was written "
                                   "when documents were named by their file's path (now a file in a folder by its "
                                   "path there, a JSONL record by its id); give --units a new file")
        if doc_id not in texts:
            raise PerspectrumError(f"{where}: document {doc_id!r} is not among those given; are these the "
                                   "units of another pile?")
        if sha != digest(texts[doc_id]):
            raise PerspectrumError(f"{where}: document {doc_id!r} has changed since it was mined; give "
                                   "--units a new file")
        if doc_id in found:
            raise PerspectrumError(f"{where}: document {doc_id!r} is there twice")
        if any(texts[doc_id][u.start:u.end] != u.text for u in units):
            raise PerspectrumError(damaged.format(f"a unit's offsets do not point into document {doc_id!r}"))
        found[doc_id] = units
    return found
