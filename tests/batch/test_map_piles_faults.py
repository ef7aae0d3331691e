"""`perspectrum map --units FILE` under faults: killed (SIGKILL) at any moment of mining or
grouping, many times over, it resumes to the uninterrupted run's answer; a second run on the
same units file is refused in one line; a units file damaged in the middle, emptied, or on a
full disk is one line, and nothing already mined is lost.

Runs go through the real command, reading, units file and grouping, with stand-in models
(:mod:`tests.batch.map_fakes`), so a whole map takes a fraction of a second.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import perspectrum._io as io_module
import perspectrum.cli.map as cli_map
from perspectrum.cli.app import app
from tests.batch.map_fakes import KILL, TEXTS, UNITS, FakePipeline, write_pile

ROOT = Path(__file__).resolve().parents[2]
CLAIM = "Zoos should exist"


def _answer(stdout: str) -> dict:
    return {k: v for k, v in json.loads(stdout).items() if k != "seconds"}


def _cli(pile: Path, units: Path, kill: str = "") -> subprocess.CompletedProcess:
    """`perspectrum map PILE --units UNITS --json` in a fresh process (stand-in models), killed at ``kill``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), KILL: kill, UNITS: str(units)}
    return subprocess.run([sys.executable, "-m", "tests.batch.map_fakes", str(pile), "--claim", CLAIM, "--json",
                           "--units", str(units)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def _ids(units: Path) -> list[str]:
    """The ids of the complete lines (a torn last line left out)."""
    data = units.read_bytes()
    lines = data[:data.rindex(b"\n") + 1].decode("utf-8").splitlines() if b"\n" in data else []
    assert json.loads(lines[0])["map_units"] == 2
    return [json.loads(line)["id"] for line in lines[1:]]


@pytest.fixture
def pile(tmp_path: Path) -> Path:
    return write_pile(tmp_path / "pile")


@pytest.fixture
def fake(monkeypatch) -> None:
    monkeypatch.setattr(cli_map, "load_pipeline", lambda *a, **k: FakePipeline())


def _run(pile: Path, units: Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["map", str(pile), "--claim", CLAIM, "--json", "--units", str(units)])
    if result.exception is not None and not isinstance(result.exception, SystemExit):  # a traceback
        raise AssertionError(f"{type(result.exception).__name__}: {result.exception}\n{result.stderr}")
    return result.exit_code, result.stdout, result.stderr


def _errors(stderr: str) -> list[str]:
    assert "Traceback" not in stderr, stderr
    return [line for line in stderr.splitlines() if line.startswith("error: ")]


@pytest.mark.slow
def test_killed_at_any_moment_many_times_over_a_rerun_gives_the_uninterrupted_answer(pile: Path,
                                                                                     tmp_path: Path) -> None:
    whole = _cli(pile, tmp_path / "whole.jsonl")
    assert whole.returncode == 0, whole.stderr
    expected = _answer(whole.stdout)
    assert expected["documents"] == len(TEXTS) and expected["perspectives"]
    units = tmp_path / "units.jsonl"
    # one units file, killed again and again at a later moment each time: before the first line is
    # written, after it, mid-line, after a document is mined but before its line, while grouping
    kept = []
    for kill in ("mined:1", "written:1", "torn:1", "mined:2", "written:2", "torn:2", "grouping", "grouping"):
        run = _cli(pile, units, kill)
        assert run.returncode == -signal.SIGKILL, (kill, run.stderr)
        assert run.stdout == ""
        ids = _ids(units) if units.exists() and b"\n" in units.read_bytes() else []
        assert len(ids) == len(set(ids)) and ids[:len(kept)] == kept, kill  # what was kept stays kept
        kept = ids
    assert len(kept) == len(TEXTS)  # by the grouping kills, every document was mined and kept
    final = _cli(pile, units)
    assert final.returncode == 0, final.stderr
    assert _answer(final.stdout) == expected
    assert sorted(_ids(units)) == sorted(f"doc{n}.txt" for n in range(1, len(TEXTS) + 1))  # named in the folder
    assert units.read_text(encoding="utf-8").splitlines()[1:] == \
        (tmp_path / "whole.jsonl").read_text(encoding="utf-8").splitlines()[1:]


def test_a_torn_line_is_cut_and_its_document_mined_again(pile: Path, tmp_path: Path) -> None:
    units = tmp_path / "units.jsonl"
    run = _cli(pile, units, "torn:3")
    assert run.returncode == -signal.SIGKILL
    assert not units.read_bytes().endswith(b"\n") and len(_ids(units)) == 2
    again = _cli(pile, units)
    assert again.returncode == 0 and "cut off a partial last line" in again.stderr, again.stderr
    assert len(_ids(units)) == len(TEXTS)


def test_a_second_run_on_the_same_units_file_is_refused_in_one_line(pile: Path, tmp_path: Path, fake) -> None:
    units = tmp_path / "units.jsonl"
    assert _run(pile, units)[0] == 0
    before = units.read_bytes()
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys; from perspectrum._io import sole_writer\n"
        f"with sole_writer({str(units)!r}):\n    print('held', flush=True); sys.stdin.read()")],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        code, stdout, stderr = _run(pile, units)
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    assert code == 1 and stdout == ""
    assert _errors(stderr) == [f"error: another run is writing {units}; wait for it to end or choose another "
                               "--units"]
    assert units.read_bytes() == before


@pytest.mark.parametrize("damage", ["garbage", "flipped score", "flipped offset", "cut in two", "half a line"])
def test_a_units_file_damaged_in_the_middle_is_one_line_and_left_as_it_was(damage: str, pile: Path,
                                                                          tmp_path: Path, fake) -> None:
    units = tmp_path / "units.jsonl"
    assert _run(pile, units)[0] == 0
    lines = units.read_text(encoding="utf-8").splitlines(keepends=True)
    row = json.loads(lines[3])
    assert row["units"], "the fixture's third document has units"
    if damage == "garbage":
        lines[3] = "\x00\x17 not json at all\n"
    elif damage == "flipped score":  # still JSON, still a document's units: only a sum tells
        score = row["units"][0]["score"]
        row["units"][0]["score"] = round(score - 0.1, 6) if score > 0.5 else round(score + 0.1, 6)
        lines[3] = json.dumps(row, ensure_ascii=False) + "\n"
    elif damage == "flipped offset":
        row["units"][0]["start"] += 1
        lines[3] = json.dumps(row, ensure_ascii=False) + "\n"
    elif damage == "cut in two":
        lines[3] = lines[3][:20] + "\n" + lines[3][20:]
    else:
        lines[3] = lines[3][:len(lines[3]) // 2] + "\n"
    units.write_text("".join(lines), encoding="utf-8")
    damaged = units.read_bytes()
    code, stdout, stderr = _run(pile, units)
    errors = _errors(stderr)
    assert code == 1 and stdout == "" and len(errors) == 1, (damage, stderr)
    assert f"{units}, line 4" in errors[0], errors
    assert units.read_bytes() == damaged  # nothing cut, nothing appended


def test_a_units_file_truncated_to_nothing_is_said_and_mined_again(pile: Path, tmp_path: Path, fake) -> None:
    units = tmp_path / "units.jsonl"
    code, first, _ = _run(pile, units)
    assert code == 0
    units.write_bytes(b"")
    code, again, stderr = _run(pile, units)
    assert code == 0, stderr
    assert _answer(again) == _answer(first)
    assert f"{units} is empty; mining every document again" in stderr
    assert len(_ids(units)) == len(TEXTS)


def test_a_pile_named_another_way_resumes_from_its_units_file(pile: Path, tmp_path: Path, fake,
                                                               monkeypatch) -> None:
    """Documents are named in the folder given, so the same pile given by another path (from
    another folder, or absolute) finds its units: nothing is mined again."""
    import perspectrum.pipeline.map as map_module

    units = tmp_path / "units.jsonl"
    monkeypatch.chdir(tmp_path)
    code, first, _ = _run(Path("pile"), units)
    assert code == 0 and sorted(_ids(units)) == sorted(f"doc{n}.txt" for n in range(1, len(TEXTS) + 1))
    quoted = {q["document"] for p in json.loads(first)["perspectives"] for q in p["quotes"]}
    assert quoted and quoted <= set(_ids(units))  # quotes name documents as the units file does
    monkeypatch.setattr(map_module, "mine_many", lambda *a, **k: pytest.fail("a document was mined again"))
    monkeypatch.chdir(pile)
    code, again, stderr = _run(pile.resolve(), units)
    assert code == 0, stderr
    assert _answer(again) == _answer(first)


def test_a_units_file_of_path_named_documents_resumes_or_says_why_in_one_line(pile: Path, tmp_path: Path, fake,
                                                                               monkeypatch) -> None:
    """A layout-1 units file (documents named by their file's path, before they were named as
    given) resumes when its ids still name the documents given, and is one line saying so when
    they do not, never mined into the wrong documents."""
    import perspectrum.pipeline.map as map_module

    units = tmp_path / "units.jsonl"
    files = [str(pile / f"doc{n}.txt") for n in range(1, len(TEXTS) + 1)]
    code, first, _ = _run(pile, units)
    assert code == 0
    lines = units.read_text(encoding="utf-8").splitlines()
    old = [json.dumps({**json.loads(lines[0]), "map_units": 1})]
    old += [json.dumps({**row, "id": str(pile / row["id"])}) for row in map(json.loads, lines[1:])]
    units.write_text("\n".join(old) + "\n", encoding="utf-8")
    before = units.read_bytes()
    code, stdout, stderr = _run(pile, units)  # the folder: its documents are now named doc1.txt, …
    errors = _errors(stderr)
    assert code == 1 and stdout == "" and len(errors) == 1, stderr
    assert f"document {files[0]!r} is not among those given: this file was written when documents were named by " \
           "their file's path" in errors[0] and errors[0].endswith("give --units a new file")
    assert units.read_bytes() == before
    monkeypatch.setattr(map_module, "mine_many", lambda *a, **k: pytest.fail("a document was mined again"))
    result = CliRunner().invoke(app, ["map", *files, "--claim", CLAIM, "--json", "--units", str(units)])
    assert result.exit_code == 0, result.output  # each file named by its path, as the old file names it
    assert _answer(result.stdout)["perspectives"] == [
        {**p, "quotes": [{**q, "document": str(pile / q["document"])} for q in p["quotes"]],
         "made_by": [str(pile / d) for d in p["made_by"]]} for p in _answer(first)["perspectives"]]


class FullDisk:
    """A file opened for appending on a disk that fills after ``room`` bytes: a write past it
    puts what fits and raises ENOSPC, as does every flush and close that follows."""

    def __init__(self, handle, room: list[int]) -> None:
        self.handle, self.room = handle, room

    def write(self, data: bytes) -> int:
        fits = data[:max(0, self.room[0])]
        self.handle.write(fits)
        self.handle.flush()
        self.room[0] -= len(data)
        if len(fits) < len(data):
            raise OSError(errno.ENOSPC, "No space left on device")
        return len(data)

    def flush(self) -> None:
        if self.room[0] < 0:
            raise OSError(errno.ENOSPC, "No space left on device")

    def fileno(self) -> int:
        return self.handle.fileno()

    def close(self) -> None:
        self.handle.close()
        if self.room[0] < 0:
            raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("room", [0, 60, 500])
def test_a_full_disk_is_one_line_and_a_rerun_with_room_resumes(room: int, pile: Path, tmp_path: Path, fake,
                                                               monkeypatch) -> None:
    code, expected, _ = _run(pile, tmp_path / "whole.jsonl")
    assert code == 0
    units = tmp_path / "units.jsonl"
    left = [room]
    real_open = open

    def full(path, mode="r", *args, **kwargs):
        handle = real_open(path, mode, *args, **kwargs)
        return FullDisk(handle, left) if "a" in mode and Path(path) == units else handle

    monkeypatch.setattr(io_module, "open", full, raising=False)
    code, stdout, stderr = _run(pile, units)
    assert code == 1 and stdout == "", stderr
    assert _errors(stderr) == [f"error: cannot write {units}: no space left on device; free some space there and "
                               "run the command again"]
    written = units.read_bytes()
    assert len(written) == room  # every byte that fitted is still there
    monkeypatch.undo()
    monkeypatch.setattr(cli_map, "load_pipeline", lambda *a, **k: FakePipeline())
    code, again, stderr = _run(pile, units)
    assert code == 0, stderr
    assert _answer(again) == _answer(expected)
    if room:  # the complete lines kept were not mined again: the file grew from them
        assert units.read_bytes().startswith(written[:written.rindex(b"\n") + 1] if b"\n" in written else b"")
    assert sorted(_ids(units)) == sorted(_ids(tmp_path / "whole.jsonl"))
