"""The command line: help, JSON output, index reuse, and one-line errors with exit codes."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from perspectrum import data
from perspectrum.cli.app import app

from tests.conftest import CLAIMS, checksums_of

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args), env={"COLUMNS": "200"})


def test_help_lists_the_commands() -> None:
    result = invoke("--help")
    assert result.exit_code == 0
    for command in ("data", "index", "search", "evaluate"):
        assert command in result.output
    assert invoke("index", "build", "--help").exit_code == 0


def test_help_shows_where_each_folder_defaults_to() -> None:
    """Rich reads "[...]" as markup and would drop it from the help: defaults are written in
    parentheses, so a person sees where the data, indexes, models and device come from."""
    shown = " ".join(invoke("discover", "--help").output.split())
    for default in ("(default: $PERSPECTRUM_DATA)", "(default: $PERSPECTRUM_INDEXES or ./indexes)",
                    "(default: $PERSPECTRUM_MODELS or ./models)", "(default: $PERSPECTRUM_DEVICE,",
                    "(default: $PERSPECTRUM_MILVUS_URI"):
        assert default in shown
    assert "(default: the CogComp/perspectrum repository)" in " ".join(invoke("data", "download", "--help").output.split())


def test_data_check_json(data_dir: Path) -> None:
    result = invoke("data", "check", "--data-dir", str(data_dir), "--no-verify", "--json")
    assert result.exit_code == 0
    counts = json.loads(result.stdout)
    assert counts["claims"] == len(CLAIMS) and counts["test_claims"] == 2


def test_data_check_table_with_verified_sums(data_dir: Path, monkeypatch) -> None:
    monkeypatch.setattr(data, "CHECKSUMS", checksums_of(data_dir))
    result = invoke("data", "check", "--data-dir", str(data_dir))
    assert result.exit_code == 0 and "checksums OK" in result.output


def one_line_error(result, exit_code: int = 1) -> str:
    assert result.exit_code == exit_code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    return lines[0]


def test_bad_data_gives_one_line_errors(data_dir: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("PERSPECTRUM_DATA", raising=False)
    assert "PERSPECTRUM_DATA" in one_line_error(invoke("data", "check"))
    assert "does not exist" in one_line_error(invoke("data", "check", "--data-dir", str(tmp_path / "x")))
    assert "checksum mismatch" in one_line_error(invoke("data", "check", "--data-dir", str(data_dir)))
    (data_dir / data.SPLIT_FILE).write_text("{oops")
    line = one_line_error(invoke("data", "check", "--data-dir", str(data_dir), "--no-verify"))
    assert data.SPLIT_FILE in line


def test_download_without_network(tmp_path: Path) -> None:
    line = one_line_error(invoke("data", "download", "--to", str(tmp_path / "d"), "--url", "http://127.0.0.1:9/"))
    assert "cannot download" in line


def test_index_build_then_reuse(data_dir: Path, tmp_path: Path) -> None:
    args = ("index", "build", "--data-dir", str(data_dir), "--no-verify", "--index-dir", str(tmp_path / "idx"),
            "--kind", "bm25")
    first = invoke(*args)
    assert first.exit_code == 0, first.output
    assert first.output.count("built") == 3  # perspectives, evidence, evidence sentences
    second = invoke(*args)
    assert second.exit_code == 0 and second.output.count("reused") == 3
    forced = invoke(*args, "--pool", "evidence", "--force")
    assert forced.output.count("built") == 1


def test_search_json_and_errors(data_dir: Path, tmp_path: Path) -> None:
    common = ("--data-dir", str(data_dir), "--no-verify", "--index-dir", str(tmp_path / "idx"))
    result = invoke("search", "nuclear waste", "--method", "bm25", "-k", "2", "--json", *common)
    assert result.exit_code == 0, result.output
    hits = json.loads(result.stdout)
    assert len(hits) == 2 and hits[0]["id"] in (8, 9) and "waste" in hits[0]["text"]
    sentence = invoke("search", "radioactive for millennia", "--pool", "sentences", "--method", "bm25", "-k", "1",
                      "--json", *common)
    hit = json.loads(sentence.stdout)[0]
    assert hit["id"] == "6:0" and hit["text"] == "Spent nuclear fuel remains radioactive for millennia."
    assert "empty" in one_line_error(invoke("search", "   ", *common))
    assert "one pool" in one_line_error(invoke("search", "cars", "--pool", "all", *common))


def test_usage_errors_exit_2(data_dir: Path) -> None:
    assert invoke("evaluate", "--split", "holdout").exit_code == 2
    assert invoke("search", "cars", "-k", "0").exit_code == 2
    assert invoke("index", "build", "--kind", "splade").exit_code == 2
    assert invoke("train", "sentences").exit_code == 2  # a pool, not a task

