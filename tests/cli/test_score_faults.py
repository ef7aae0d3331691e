"""`perspectrum score` on files people really have: lines that are not JSON or hold the wrong
fields, huge texts, line separators and NUL inside texts, blank lines, a byte-order mark, a
file that is not UTF-8 on one line, and hundreds of thousands of lines.

A file with bad lines is refused before anything is scored or written, one stderr line per
bad line naming its number; every good file is answered line for line (output line N answers
input line N, a blank line answered by a blank line), read and scored in bounded batches.
No model loads here: `PairScorer.load` is replaced by a light scorer that checks its items
as the real one does and records the batches it is given.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from perspectrum.cli import score as score_command
from perspectrum.cli.app import app
from perspectrum.data import MAX_POOL_LINE_CHARS
from perspectrum.models.pair_scorer import PairScorer, check_item

CLAIM = "Animals should have legal rights"
ROOT = Path(__file__).resolve().parents[2]


class LightScorer:
    """Answers like a `PairScorer` (its items checked the same way), from the texts' lengths;
    keeps every batch's size and, if asked, the items it scored."""

    keep = True

    def __init__(self, task: str) -> None:
        self.task, self.kind, self.settings = task, "light", {"threshold": 0.5}
        self.batches: list[int] = []
        self.batch_chars: list[int] = []
        self.items: list[tuple[str, ...]] | None = [] if self.keep else None

    def score(self, items):
        checked = [check_item(item, self.task, n) for n, item in enumerate(items)]
        self.batches.append(len(checked))
        self.batch_chars.append(sum(len(t) for item in checked for t in item))
        if self.items is not None:
            self.items.extend(checked)
        return np.asarray([expected_score(item) for item in checked], dtype=np.float32)


def expected_score(item: tuple[str, ...]) -> float:
    return (len(item[1]) % 100) / 100


@pytest.fixture
def light(monkeypatch):
    """Installs the light scorer; the scorer of the last load is ``made[-1]``."""
    made: list[LightScorer] = []

    def load(cls, task, models_dir=None):
        made.append(LightScorer(task))
        return made[-1]

    monkeypatch.setattr(PairScorer, "load", classmethod(load))
    return made


def run(task: str, path: Path):
    return CliRunner().invoke(app, ["score", task, str(path)])


def pair(perspective: str, **more) -> str:
    return json.dumps({"claim": CLAIM, "perspective": perspective, **more})


def error_lines(result) -> list[str]:
    return result.stderr.strip().split("\n")


def assert_refused(result, numbers: list[int]) -> None:
    """Exit 1, nothing on stdout, and one `error:` line per bad line, naming it, in order."""
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    lines = error_lines(result)
    assert "Traceback" not in result.stderr
    assert [line.startswith("error: ") for line in lines] == [True] * len(numbers)
    assert [int(line.split(", line ")[1].split(":")[0]) for line in lines] == numbers


# ------------------------------------------------------------------ bad lines
def test_lines_that_are_not_json_are_each_named_and_nothing_is_scored(light, tmp_path) -> None:
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join([pair("Animals feel pain"), '{"claim": "x", "perspective": ', pair("ok"),
                               "claim, perspective", '{"claim": 1e999999999999}x', pair("fine")]) + "\n")
    result = run("stance", path)
    assert_refused(result, [2, 4, 5])
    assert all("not valid JSON" in line and str(path) in line for line in error_lines(result))
    assert light == []  # refused before any model was loaded


def test_wrong_fields_for_the_task_are_each_named(light, tmp_path) -> None:
    path = tmp_path / "triples.jsonl"
    lines = [pair("Animals feel pain", other="They suffer"),
             pair("Animals feel pain"),                              # no "other" for equivalence
             json.dumps([CLAIM, "Animals feel pain", "They suffer"]),  # right texts, not an object
             pair("Animals feel pain", other=3),
             pair("   ", other="They suffer"),
             '"just a text"']
    path.write_text("\n".join(lines) + "\n")
    result = run("equivalence", path)
    assert_refused(result, [2, 3, 4, 5, 6])
    problems = error_lines(result)
    assert 'no "other"' in problems[0]
    assert "a JSON array, not an object" in problems[1]
    assert '"other" is not a text' in problems[2]
    assert '"perspective" is empty' in problems[3]
    assert "a JSON string, not an object" in problems[4]
    # the same pairs are right for stance, the extra field printed back as it came
    path.write_text(lines[0] + "\n")
    result = run("stance", path)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["other"] == "They suffer"


def test_many_bad_lines_are_named_up_to_a_limit_then_counted(light, tmp_path) -> None:
    path = tmp_path / "pairs.jsonl"
    shown = score_command.SHOWN_PROBLEMS
    path.write_text("not json\n" * (shown + 7))
    result = run("stance", path)
    assert result.exit_code == 1 and result.stdout == ""
    lines = error_lines(result)
    assert len(lines) == shown + 1
    assert lines[-1] == f"error: {path}: 7 more bad lines not shown (nothing was scored)"


def test_a_line_that_is_not_utf8_is_named_and_the_rest_still_checked(light, tmp_path) -> None:
    path = tmp_path / "pairs.jsonl"
    path.write_bytes(pair("ok").encode() + b"\n" + b'{"claim": "c", "perspective": "caf\xe9"}' + b"\n" + b"{bad\n")
    result = run("relevance", path)
    assert_refused(result, [2, 3])
    assert "not UTF-8 text" in error_lines(result)[0]


def test_a_lone_surrogate_or_a_raw_nul_is_named(light, tmp_path) -> None:
    path = tmp_path / "pairs.jsonl"
    path.write_text(pair("ok") + "\n" + '{"claim": "c", "perspective": "half \\ud800 a pair"}\n'
                    + '{"claim": "c", "perspective": "a raw \x00 NUL"}\n')
    result = run("stance", path)
    assert_refused(result, [2, 3])
    assert "lone surrogate" in error_lines(result)[0]
    assert "Invalid control character" in error_lines(result)[1]


# ------------------------------------------------------------------ texts that are scored
def test_texts_with_line_separators_and_escaped_nul_keep_their_lines(light, tmp_path) -> None:
    texts = ["one\u2028two", "next\u0085line", "par\u2029agraph", "nul\x00inside", "carriage\rreturn",
             "vertical\x0btab\x0cfeed", "plain"]
    path = tmp_path / "pairs.jsonl"
    # written raw (ensure_ascii=False): U+2028, U+0085 and "\r" are inside their lines
    path.write_text("".join(json.dumps({"claim": CLAIM, "perspective": t}, ensure_ascii=False) + "\n" for t in texts),
                    encoding="utf-8", newline="")
    result = run("stance", path)
    assert result.exit_code == 0, result.output
    lines = result.stdout.split("\n")
    assert lines[-1] == "" and len(lines) - 1 == len(texts)
    assert [json.loads(line)["perspective"] for line in lines[:-1]] == texts
    assert [json.loads(line)["score"] for line in lines[:-1]] == \
        [round(float(np.float32(expected_score((CLAIM, t)))), 6) for t in texts]
    assert light[-1].items == [(CLAIM, t) for t in texts]
    assert result.stdout.isascii()


def test_a_text_of_a_megabyte_is_scored_and_a_longer_line_named(light, tmp_path) -> None:
    big = "Animals feel pain. " * ((MAX_POOL_LINE_CHARS - 200) // 19)
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join([pair("short"), pair(big), pair("short again")]) + "\n")
    result = run("stance", path)
    assert result.exit_code == 0, result.output
    out = [json.loads(line) for line in result.stdout.split("\n")[:-1]]
    assert [o["perspective"] for o in out] == ["short", big, "short again"]
    assert light[-1].items[1] == (CLAIM, big)
    # a line past the limit (one of several megabytes of non-ASCII text too) is named, and the lines after it read
    path.write_text("\n".join([pair("short"), pair("x" * MAX_POOL_LINE_CHARS), pair("é" * (MAX_POOL_LINE_CHARS + 9)),
                               "{bad", pair("ok")]) + "\n", encoding="utf-8")
    result = run("stance", path)
    assert_refused(result, [2, 3, 4])
    assert f"longer than {MAX_POOL_LINE_CHARS:,} characters" in error_lines(result)[0]
    assert f"longer than {MAX_POOL_LINE_CHARS:,} characters" in error_lines(result)[1]


def test_huge_texts_are_scored_a_few_at_a_time(light, tmp_path) -> None:
    big = "word " * 180_000
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(pair(big + str(n)) + "\n" for n in range(12)))
    result = run("relevance", path)
    assert result.exit_code == 0, result.output
    assert len(result.stdout.split("\n")) == 13
    scorer = light[-1]
    assert sum(scorer.batches) == 12 and len(scorer.batches) > 1
    assert max(scorer.batch_chars) <= score_command.BATCH_CHARS + len(big) + 100


def test_blank_lines_are_answered_by_blank_lines(light, tmp_path) -> None:
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n" + pair("one") + "\n\n  \t\r\n" + pair("two") + "\n\n")
    result = run("stance", path)
    assert result.exit_code == 0, result.output
    lines = result.stdout.split("\n")
    assert len(lines) - 1 == len(path.read_text().split("\n")) - 1 == 6
    assert [json.loads(line)["perspective"] if line else None for line in lines[:-1]] == \
        [None, "one", None, None, "two", None]


def test_a_byte_order_mark_at_the_start_is_read_past_and_one_later_named(light, tmp_path) -> None:
    path = tmp_path / "pairs.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + pair("one").encode() + b"\n" + pair("two").encode() + b"\n")
    result = run("stance", path)
    assert result.exit_code == 0, result.output
    assert [json.loads(line)["perspective"] for line in result.stdout.split("\n")[:-1]] == ["one", "two"]
    path.write_bytes(pair("one").encode() + b"\n\xef\xbb\xbf" + pair("two").encode() + b"\n")
    assert_refused(run("stance", path), [2])


def test_a_last_line_without_its_newline_is_answered(light, tmp_path) -> None:
    path = tmp_path / "pairs.jsonl"
    path.write_text(pair("one") + "\n" + pair("two"))
    result = run("stance", path)
    assert result.exit_code == 0, result.output
    assert [json.loads(line)["perspective"] for line in result.stdout.split("\n")[:-1]] == ["one", "two"]


def test_a_folder_a_missing_file_and_a_bad_task_are_one_line(tmp_path) -> None:
    # the real loader: it refuses a task before it reads any file or model
    for args, words in ((["stance", str(tmp_path)], "is a folder"),
                        (["stance", str(tmp_path / "none.jsonl")], "no such pairs file"),
                        (["evidence", str(tmp_path / "none.jsonl")], "cannot score task 'evidence'")):
        result = CliRunner().invoke(app, ["score", *args])
        assert result.exit_code == 1 and result.stdout == ""
        assert len(error_lines(result)) == 1 and words in result.stderr


def interrupt_after(monkeypatch, batches: int) -> None:
    """Ctrl-C (KeyboardInterrupt) while LightScorer is asked for the batch after ``batches``."""
    real = LightScorer.score

    def interrupted(self, items):
        if len(self.batches) == batches:
            raise KeyboardInterrupt
        return real(self, items)

    monkeypatch.setattr(LightScorer, "score", interrupted)


def test_ctrl_c_and_a_file_changed_midway_say_how_far_the_output_goes(light, tmp_path, monkeypatch) -> None:
    path = tmp_path / "pairs.jsonl"
    batch = score_command.BATCH
    path.write_text("".join(pair(f"p{n}") + "\n" for n in range(3 * batch)))
    real = LightScorer.score
    interrupt_after(monkeypatch, 2)
    result = run("stance", path)
    assert result.exit_code == 130
    assert error_lines(result) == \
        [f"error: interrupted: the output answers the first {2 * batch:,} lines of {path} only"]
    assert len(result.stdout.split("\n")) - 1 == 2 * batch

    def changing(self, items):
        with open(path, "a", encoding="utf-8") as handle:
            handle.write("not json\n")
        return real(self, items)

    monkeypatch.setattr(LightScorer, "score", changing)
    result = run("stance", path)
    assert result.exit_code == 1
    assert error_lines(result) == [f"error: {path} changed while it was being scored (line {3 * batch + 1}: not valid "
                                   f"JSON: Expecting value at column 1): the output answers its first {3 * batch:,} "
                                   "lines only"]
    assert len(result.stdout.split("\n")) - 1 == 3 * batch


def test_out_is_written_whole_or_not_at_all(light, tmp_path, monkeypatch) -> None:
    """--out: the scores land in the file only when every line is scored; an interrupted run
    or a full disk leaves the file that was there as it was and no temporary file beside it."""
    path, out = tmp_path / "pairs.jsonl", tmp_path / "scores.jsonl"
    batch = score_command.BATCH
    path.write_text("".join(pair(f"p{n}") + "\n" for n in range(2 * batch + 3)))
    result = CliRunner().invoke(app, ["score", "stance", str(path), "--out", str(out)])
    assert result.exit_code == 0 and result.stdout == ""
    scored = out.read_text(encoding="utf-8").splitlines()
    assert len(scored) == 2 * batch + 3 and json.loads(scored[-1])["perspective"] == f"p{2 * batch + 2}"
    out.write_text("the previous scores\n")
    real = LightScorer.score
    interrupt_after(monkeypatch, 1)
    result = CliRunner().invoke(app, ["score", "stance", str(path), "--out", str(out)])
    assert result.exit_code == 130 and error_lines(result) == [f"error: interrupted: nothing was written to {out}"]
    assert out.read_text() == "the previous scores\n" and sorted(p.name for p in tmp_path.iterdir()) == [
        "pairs.jsonl", "scores.jsonl"]

    class Full:  # a file on a disk that is full
        def __init__(self, handle):
            self.handle = handle

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

        def write(self, text):
            raise OSError(28, "No space left on device")

        def flush(self):
            pass

    opened = Path.open
    monkeypatch.setattr(LightScorer, "score", real)
    monkeypatch.setattr(Path, "open", lambda self, mode="r", *a, **k: Full(opened(self, mode, *a, **k))
                        if "w" in mode else opened(self, mode, *a, **k))
    result = CliRunner().invoke(app, ["score", "stance", str(path), "--out", str(out)])
    monkeypatch.setattr(Path, "open", opened)
    assert result.exit_code == 1 and error_lines(result) == [
        "error: cannot write the scores: No space left on device (nothing was written)"]
    assert out.read_text() == "the previous scores\n" and len(list(tmp_path.iterdir())) == 2
    result = CliRunner().invoke(app, ["score", "stance", str(path), "--out", str(tmp_path)])
    assert result.exit_code == 1 and "is a folder" in result.stderr


# ------------------------------------------------------------------ many lines
@pytest.mark.slow
def test_two_hundred_thousand_lines_stream_in_bounded_batches_and_memory(light, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(LightScorer, "keep", False)
    count = 200_000
    path = tmp_path / "pairs.jsonl"
    with open(path, "w", encoding="utf-8") as handle:
        for n in range(count):
            handle.write(pair(f"perspective number {n}") + "\n")
            if n % 1000 == 999:
                handle.write("\n")
    out = tmp_path / "scores.jsonl"
    with open(out, "w", encoding="utf-8") as sink:
        monkeypatch.setattr(sys, "stdout", sink)
        tracemalloc.start()
        try:
            score_command.score("stance", path)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    scorer = light[-1]
    assert sum(scorer.batches) == count and max(scorer.batches) <= score_command.BATCH
    # every row held at once would be ~100 MB; a batch at a time is well under 10 MB
    assert peak < 10_000_000, peak
    with open(path, encoding="utf-8") as given, open(out, encoding="utf-8") as answered:
        lines = 0
        for line_in, line_out in zip(given, answered, strict=True):
            lines += 1
            if line_in.strip():
                assert json.loads(line_out)["perspective"] == json.loads(line_in)["perspective"]
            else:
                assert line_out == "\n"
    assert lines == count + count // 1000


@pytest.mark.slow
def test_the_real_models_read_odd_texts_and_a_megabyte_text_as_scored_one_by_one(shipped_set, tmp_path) -> None:
    from tests.conftest import prepared

    models = prepared(tmp_path / "prepared")[2]
    texts = ["Animals feel pain\u2028and deserve protection", "next\u0085line", "nul\x00inside", "\x00",
             "Zoos keep animals in cages. " * 35_000]
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join([pair(texts[0]), "", *(pair(t) for t in texts[1:])]) + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["score", "stance", str(path), "--models-dir", str(models)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.split("\n")
    assert len(lines) - 1 == len(texts) + 1 and lines[1] == ""
    out = [json.loads(line) for line in lines if line]
    assert [o["perspective"] for o in out] == texts
    alone = [PairScorer.load("stance", models).score([(CLAIM, t)])[0] for t in texts]
    assert np.allclose([o["score"] for o in out], alone, atol=1e-5)


# ------------------------------------------------------------------ the output stream
LIGHT_RUN = textwrap.dedent("""
    import sys
    import numpy as np
    from perspectrum.models.pair_scorer import PairScorer

    class Light:
        settings = {"threshold": 0.5}
        def score(self, items):
            return np.full(len(items), 0.25, dtype=np.float32)

    PairScorer.load = classmethod(lambda cls, task, models_dir=None: Light())
    from perspectrum.cli.app import main
    sys.argv = ["perspectrum", "score", "stance", sys.argv[1]]
    main()
""")


def light_process(path: Path, stdout) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-c", LIGHT_RUN, str(path)], stdout=stdout, stderr=subprocess.PIPE,
                          env=env, timeout=120, text=True)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_under_the_output_is_one_line(tmp_path) -> None:
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(pair(f"p{n}") + "\n" for n in range(2000)))
    with open("/dev/full", "w") as full:
        done = light_process(path, full)
    assert done.returncode == 1
    assert done.stderr.strip().split("\n") == \
        ["error: cannot write the scores: No space left on device (the output answers the first 0 lines at most)"]


def test_a_closed_output_pipe_is_one_line(tmp_path) -> None:
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(pair(f"p{n}") + "\n" for n in range(20_000)))
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"}
    process = subprocess.Popen([sys.executable, "-c", LIGHT_RUN, str(path)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=env, text=True)
    first = process.stdout.readline()  # like `| head -1`: read one line, then close
    process.stdout.close()
    stderr = process.stderr.read()
    assert process.wait(timeout=120) == 1
    assert json.loads(first)["score"] == 0.25
    lines = stderr.strip().split("\n")
    assert len(lines) == 1 and re.fullmatch(r"error: the output was closed: it answers the first [0-9,]+ lines at most",
                                            lines[0]), stderr
