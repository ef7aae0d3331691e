"""Never silently wrong: bad input is one line, not a traceback; outside text is shown
literally; long input is bounded.

Claims that are not Unicode, API arguments of the wrong type, hand-edited settings,
pool files that are not pools, rich markup and terminal escape sequences in pool texts,
and paragraphs too long to split in one pass. Nothing here loads a model or the real
dataset: discover's output is rendered from hand-made results.
"""

from __future__ import annotations

import io
import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from perspectrum import data
from perspectrum.text import sentences as text
from perspectrum.cli.app import app
from perspectrum.data import Pool
from perspectrum.cli.display import NO_EVIDENCE, debate, explain, printable
from perspectrum.errors import PerspectrumError
from perspectrum.index.store import IndexStore
from perspectrum.pipeline.pipeline import ClaimError, Pipeline, PipelineConfig, check_claim
from perspectrum.pipeline.results import DiscoveredPerspective, Discovery, EvidenceHit, Phrasing
from perspectrum.models.scorers import PIPELINE_FILE, TrainedScorers, merge_pipeline_file
from perspectrum.pipeline.settings import check_settings

from .conftest import write_dataset

runner = CliRunner()
#: Retitles the terminal window (OSC 0, ended by BEL), then clears the screen (CSI 2J).
PWN = "\x1b]0;pwned\x07\x1b[2J"
#: The same, as :func:`printable` shows it.
PWN_SHOWN = "\\x1b]0;pwned\\x07\\x1b[2J"
#: Rich markup that would raise (``[/]``), restyle or turn into a link if parsed.
MARKUP = "[/] [bold]bold[/bold] [link=https://example.com]link[/link]"
NOT_UNICODE = "Animals \udcff rights"  # what Python makes of the byte 0xff in argv


def invoke(*args: str):
    return runner.invoke(app, list(args), env={"COLUMNS": "200"})


def one_line_error(result, exit_code: int) -> str:
    assert result.exit_code == exit_code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


# ------------------------------------------------------------------ claims and arguments
def test_a_claim_that_is_not_unicode_is_refused() -> None:
    with pytest.raises(ClaimError, match="not valid Unicode"):
        check_claim(NOT_UNICODE)


def test_cli_claim_that_is_not_unicode_exits_2_before_loading_anything(tmp_path: Path) -> None:
    line = one_line_error(invoke("discover", NOT_UNICODE, "--data-dir", str(tmp_path / "none")), 2)
    assert "not valid Unicode" in line


def test_cli_query_that_is_not_unicode_is_one_line(tmp_path: Path) -> None:
    line = one_line_error(invoke("search", NOT_UNICODE, "--data-dir", str(tmp_path / "none")), 1)
    assert "not valid Unicode" in line


@pytest.fixture
def unloadable(tmp_path: Path, monkeypatch) -> Pipeline:
    """A pipeline that fails the test if it starts loading indexes or models."""
    pool = Pool("perspectives", (1,), ("Zoos protect endangered species",))
    pipe = Pipeline(pool, Pool("evidence", (1,), ("Zoos breed animals.",)), IndexStore(tmp_path / "idx"),
                    tmp_path / "models")
    monkeypatch.setattr(pipe, "_get", lambda: pytest.fail("loaded before checking its arguments"))
    return pipe


@pytest.mark.parametrize("bad", [2.5, True, 0, -1, "3"])
def test_top_and_batch_size_must_be_whole_numbers(unloadable: Pipeline, bad) -> None:
    with pytest.raises(PerspectrumError, match=f"top must be a whole number, at least 1, not {bad!r}"):
        unloadable.discover("Zoos should be banned", top=bad)
    with pytest.raises(PerspectrumError, match="top must be a whole number"):
        unloadable.discover_many(["Zoos should be banned"], top=bad)
    with pytest.raises(PerspectrumError, match=f"batch_size must be a whole number, at least 1, not {bad!r}"):
        unloadable.discover_many(["Zoos should be banned"], batch_size=bad)


def test_discover_many_checks_every_claim_before_loading(unloadable: Pipeline) -> None:
    with pytest.raises(ClaimError, match="not valid Unicode"):
        unloadable.discover_many(["Zoos should be banned", NOT_UNICODE])
    with pytest.raises(ClaimError, match="list of claims, not NoneType"):
        unloadable.discover_many(None)  # type: ignore[arg-type]


# ------------------------------------------------------------------ what reaches the terminal
def _discovery(claim: str = f"Zoos {MARKUP} should be banned") -> Discovery:
    """A result whose every outside text carries markup, escape sequences and worse."""
    window = f"Cages are small {PWN} and cruel."
    paragraph = f"Zoos [red]breed[/red] animals. {window} Some \x9b2J species \u2028survive only there."
    start = paragraph.index(window)
    hit = EvidenceHit(f"doc{PWN}", paragraph, 0.9, window, 0.8, start, start + len(window))
    support = DiscoveredPerspective(
        f"Zoos save species {MARKUP}", "p[/]1", "support", 0.8, 0.9, 0.9,
        (Phrasing("p[/]1", f"Zoos save species {MARKUP}", 0.9, 0.8), Phrasing(f"p{PWN}", f"also {PWN} [i]so[/i]", 0.7)),
        (hit,))
    undermine = DiscoveredPerspective(f"Cages are cruel {PWN}", f"p{PWN}2", "undermine", 0.1, 0.9, 0.8,
                                      (Phrasing(f"p{PWN}2", f"Cages are cruel {PWN}", 0.8, 0.1),), ())
    trace = {"settings": {}, "candidates": [{"id": f"c[/]{PWN}", "model": 0.5, "cosine": 0.5, "score": 0.5,
                                             "kept": True}]}
    return Discovery(claim, "shipped", (support, undermine), {"retrieve": 0.01, "total": 0.01}, trace)


def _rendered(*renderables) -> str:
    out = io.StringIO()
    console = Console(file=out, width=240, color_system=None, force_terminal=False)
    for renderable in renderables:
        console.print(renderable)
    return out.getvalue()


def test_printable_escapes_what_a_terminal_would_act_on() -> None:
    assert printable(f"a{PWN}b") == f"a{PWN_SHOWN}b"
    assert printable("C1 \x9b, DEL \x7f, CR \r, not UTF-8 \udcff") == "C1 \\x9b, DEL \\x7f, CR \\r, not UTF-8 \\udcff"
    kept = "tab\tand\nnewline stay; é, 中, “quotes” too"
    assert printable(kept) == kept
    assert printable("one\nline\t", one_line=True) == "one\\nline\\t"
    # bidi overrides would show what follows them reversed: "evil\u202etxt.exe" reads as "evilexe.txt"
    assert printable("evil\u202etxt.exe \u2066x\u2069") == "evil\\u202etxt.exe \\u2066x\\u2069"
    assert printable("שלום עולם, مرحبا") == "שלום עולם, مرحبا"  # right-to-left text itself is shown as it is


def test_discover_display_shows_markup_and_escapes_literally() -> None:
    result = _discovery()
    shown = _rendered(debate(result, full=True, internals=True), *explain(result))
    assert "\x1b" not in shown and "\x07" not in shown and "\x9b" not in shown
    assert PWN_SHOWN in shown and "\\x9b2J" in shown
    assert MARKUP in shown  # the claim in the title and the perspective, brackets and all
    assert "[red]breed[/red]" in shown and "[i]so[/i]" in shown
    assert "p[/]1" in shown and f"c[/]{PWN_SHOWN}" in shown  # ids, in the panels and in --explain


def test_a_card_shows_its_side_in_words_and_the_window_not_internals_unless_asked() -> None:
    result = _discovery()
    shown = _rendered(debate(result))
    assert "supports the claim: 90% sure" in shown and "undermines the claim: 90% sure" in shown
    assert "p[/]1" not in shown and "p=0.90" not in shown and "window=0.80" not in shown  # no ids, no scores
    assert "Cages are small" in shown and "\\x9b2J" not in shown and "breed" not in shown  # the window alone
    full = _rendered(debate(result, full=True))
    assert "Cages are small" in full and "\\x9b2J" in full and "breed" in full
    unclear = replace(result.perspectives[1], stance="unclear", support_calibrated=0.45, stance_confidence=0.55)
    both = _rendered(debate(replace(result, perspectives=(result.perspectives[0], unclear))))
    assert "side unclear (1)" in both and "side unclear (leans undermine, 55%)" in both
    assert "undermining (0)" in both
    # a card without evidence says so, once the evidence stage has looked for it
    assert NO_EVIDENCE not in _rendered(debate(result))  # no evidence stage in these timings
    looked = replace(result, timings={**result.timings, "evidence": 0.01})
    assert _rendered(debate(looked)).count(NO_EVIDENCE) == 1  # the undermining card has none


def test_discover_json_escapes_what_a_terminal_would_act_on() -> None:
    result = _discovery(claim="Zoos should be banned \udcff")
    out = result.to_json()
    assert all(ch not in out for ch in "\x1b\x07\x9b\u2028\udcff")
    assert "\\u001b]0;pwned\\u0007\\u001b[2J" in out and "\\u009b2J" in out and "\\u2028" in out
    assert json.loads(out) == json.loads(json.dumps(result.to_dict()))  # still the same data
    assert out.encode("utf-8")


@pytest.fixture
def fake_pipeline(monkeypatch) -> None:
    """`perspectrum discover` answers with :func:`_discovery`, no data or models needed."""

    class Fake:
        def discover(self, claim: str, **options) -> Discovery:
            return _discovery(claim)

        def warm_up(self) -> None:
            pass

    monkeypatch.setattr(Pipeline, "load", classmethod(lambda cls, *args, **kwargs: Fake()))


def test_cli_discover_prints_markup_and_escapes_literally(fake_pipeline, tmp_path: Path) -> None:
    claim = f"Zoos {MARKUP} should be banned"
    args = ("discover", claim, "--index-dir", str(tmp_path / "idx"))
    shown = invoke(*args, "--explain")
    assert shown.exit_code == 0, shown.output
    assert "\x1b" not in shown.stdout and PWN_SHOWN in shown.stdout and MARKUP in shown.stdout
    as_json = invoke(*args, "--json")
    assert as_json.exit_code == 0 and "\x1b" not in as_json.stdout and "\x9b" not in as_json.stdout
    assert json.loads(as_json.stdout)["claim"] == claim


def test_cli_discover_huge_top_is_fine(fake_pipeline, tmp_path: Path) -> None:
    result = invoke("discover", "Zoos should be banned", "--top", str(10**30), "--index-dir", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert invoke("discover", "Zoos should be banned", "--top", "0").exit_code == 2


def test_error_lines_show_escapes_and_stay_one_line(tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text('{"id": 1, "text": "a sentence"}\n', encoding="utf-8")
    missing = tmp_path / f"title{PWN}\nsecond [/] line.jsonl"
    result = invoke("index", "build", "--perspectives", str(missing), "--evidence", str(good),
                    "--index-dir", str(tmp_path / "idx"))
    line = one_line_error(result, 1)
    assert "\x1b" not in result.stderr and PWN_SHOWN in line and "\\nsecond [/] line" in line


def test_cli_models_list_shows_model_card_text_literally(tmp_path: Path) -> None:
    folder = tmp_path / "models" / "stance"
    folder.mkdir(parents=True)
    card = {"task": "stance", "base_model": f"org/[bold]base{PWN}", "thresholds": {"threshold": 0.5}}
    (folder / "perspectrum.json").write_text(json.dumps(card), encoding="utf-8")
    shown = invoke("models", "list", "--models-dir", str(tmp_path / "models"))
    assert shown.exit_code == 0, shown.output
    assert "\x1b" not in shown.stdout and f"[bold]base{PWN_SHOWN}" in shown.stdout


def test_cli_search_output_is_safe_to_print(tmp_path: Path) -> None:
    folder = write_dataset(tmp_path / "data")
    pool = json.loads((folder / data.PERSPECTIVES_FILE).read_text(encoding="utf-8"))
    pool[-1]["text"] = f"Tea is better than coffee {PWN} [/] \x9b\u2028"
    (folder / data.PERSPECTIVES_FILE).write_text(json.dumps(pool), encoding="utf-8")
    common = ("--method", "bm25", "-k", "1", "--data-dir", str(folder), "--no-verify",
              "--index-dir", str(tmp_path / "idx"))
    as_json = invoke("search", "tea coffee", "--json", *common)
    assert as_json.exit_code == 0, as_json.output
    assert as_json.stdout.isascii() and "\\u001b]0;pwned\\u0007" in as_json.stdout
    assert json.loads(as_json.stdout)[0]["text"] == pool[-1]["text"]
    table = invoke("search", "tea coffee [/]", *common)
    assert table.exit_code == 0, table.output
    assert "\x1b" not in table.stdout and "\x9b" not in table.stdout and PWN_SHOWN in table.stdout
    assert "tea coffee [/]" in table.stdout


# ------------------------------------------------------------------ sentence splitting
def test_a_long_paragraph_splits_in_bounded_time_and_loses_nothing(monkeypatch, capsys) -> None:
    """One pysbd pass over 200 KB of such alike sentences grows with the square of the length
    (see python -m benchmarks.bench_split, which times it); pysbd reads it a bounded piece at a time."""
    import pysbd

    read: list[int] = []
    segment = pysbd.Segmenter.segment

    def counted(self, piece: str):
        read.append(len(piece))
        return segment(self, piece)

    monkeypatch.setattr(pysbd.Segmenter, "segment", counted)
    monkeypatch.setattr(text, "_told_cut", False)
    said = [f"Study {i} found that the policy cut emissions by {i % 90 + 5} percent over a decade, according "
            f"to researchers who reviewed data from {i % 40 + 2} countries and their regions." for i in range(1400)]
    paragraph = " ".join(said)
    assert len(paragraph) > 200_000
    found = text.sentences(paragraph)
    assert len(read) > 1 and max(read) <= text.MAX_SPLIT_CHARS and sum(read) == len(paragraph)
    assert list(found) == said  # every cut fell between sentences
    err = capsys.readouterr().err
    assert f"a paragraph of {len(paragraph):,} characters" in err and f"({text.MAX_SPLIT_CHARS:,})" in err


def test_pysbd_never_reads_more_than_the_cap_and_the_notice_is_said_once(monkeypatch, capsys) -> None:
    read: list[int] = []

    class Spy:
        def segment(self, piece: str) -> list[str]:
            read.append(len(piece))
            return [piece]

    monkeypatch.setattr(text, "_segmenter", Spy)
    monkeypatch.setattr(text, "_told_cut", False)
    first = "A sentence that goes on. " * 20_000  # 500,000 characters
    assert " ".join(text.sentences(first)) == first.strip()  # cut after a sentence's space: nothing lost
    assert max(read) <= text.MAX_SPLIT_CHARS and min(read[:-1]) > text.MAX_SPLIT_CHARS // 2
    text.sentences("Another one. " * 2000)
    assert capsys.readouterr().err.count("longer than the sentence splitter reads at once") == 1


def test_a_paragraph_under_the_cap_splits_as_pysbd_does() -> None:
    import pysbd

    sample = ("Dr. Smith paid $3.50 at 5 p.m. on Jan. 3. \"Is it fair?\" she asked. The U.S. agreed (mostly). "
              "See e.g. section 2.1 of the report! ")
    paragraph = (sample * (text.MAX_SPLIT_CHARS // len(sample)))[:text.MAX_SPLIT_CHARS]
    direct = pysbd.Segmenter(language="en", clean=False).segment(paragraph)
    assert text.sentences(paragraph) == tuple(s.strip() for s in direct if s.strip())


def test_pieces_cut_at_breaks_never_mid_word_and_join_back() -> None:
    size = text.MAX_SPLIT_CHARS
    words = "word " * (size // 5 - 20) + "ends here.\n\nNext paragraph starts " + "more words " * 500
    pieces = text._pieces(words)
    assert "".join(pieces) == words and all(len(p) <= size for p in pieces)
    assert pieces[0].endswith("ends here.\n\n")  # the paragraph break, not the last space
    assert all(p.endswith((" ", "\n")) for p in pieces[:-1])
    solid = "x" * (2 * size + 7)  # no space to cut at: cut at the cap
    assert [len(p) for p in text._pieces(solid)] == [size, size, 7]


# ------------------------------------------------------------------ pool files
def _pool_file(path: Path, content: str | bytes) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def test_pool_lines_are_bounded(tmp_path: Path, monkeypatch) -> None:
    long = '{"id": 2, "text": "' + "x" * data.MAX_POOL_LINE_CHARS + '"}\n'
    path = _pool_file(tmp_path / "long.jsonl", '{"id": 1, "text": "fine"}\n' + long)
    with pytest.raises(PerspectrumError, match=r"long.jsonl, line 2: longer than 1,000,000 characters"):
        Pool.from_jsonl(path, "evidence")
    line = '{"id": 1, "text": "abcdefghi"}\n'
    monkeypatch.setattr(data, "MAX_POOL_LINE_CHARS", len(line))  # the newline counts
    assert Pool.from_jsonl(_pool_file(tmp_path / "edge.jsonl", line), "evidence").texts == ("abcdefghi",)
    over = _pool_file(tmp_path / "over.jsonl", line.replace("i", "ij"))
    with pytest.raises(PerspectrumError, match=f"line 1: longer than {len(line)} characters"):
        Pool.from_jsonl(over, "evidence")


@pytest.mark.parametrize("content, message", [
    (b'{"id": 1, "text": "caf\xe9"}\n', "is not UTF-8 text"),
    ('{"id": 1, "text": "bad \\udcff"}\n', "line 1: the id or text holds a lone surrogate"),
    ('{"id": "\\ud800", "text": "fine"}\n', "line 1: the id or text holds a lone surrogate"),
    ('{"id": 1' + "0" * 5000 + ', "text": "a"}\n', "line 1: a number too long to read"),
    ("[" * 100_000 + "\n", "line 1: JSON nested too deeply"),
])
def test_bad_pool_contents_are_one_line_errors(tmp_path: Path, content, message) -> None:
    with pytest.raises(PerspectrumError, match=message):
        Pool.from_jsonl(_pool_file(tmp_path / "pool.jsonl", content), "evidence")


def test_pool_files_with_a_bom_are_read_and_folders_are_refused(tmp_path: Path) -> None:
    path = _pool_file(tmp_path / "bom.jsonl", '\ufeff{"id": "a", "text": "first"}\n{"id": "b", "text": "second"}\n')
    assert Pool.from_jsonl(path, "perspectives").ids == ("a", "b")
    with pytest.raises(PerspectrumError, match="is a folder, not a pool file"):
        Pool.from_jsonl(tmp_path, "perspectives")
    line = one_line_error(invoke("index", "build", "--perspectives", str(tmp_path), "--evidence", str(path),
                                 "--index-dir", str(tmp_path / "idx")), 1)
    assert "is a folder" in line


# ------------------------------------------------------------------ hand-edited settings
GOOD = {"relevance": {"weight": 0.2, "relative": True, "threshold": 0.78, "k": 50, "min_keep": 1, "floor": 0.4},
        "stance": {"threshold": 0.66, "margin": 0.2}, "expand": {"neighbours": 10, "agree": False}}


@pytest.mark.parametrize("stage, key, value, wanted", [
    ("stance", "threshold", "high", "a finite number"),
    ("stance", "threshold", None, "a finite number"),
    ("stance", "threshold", math.nan, "a finite number"),
    ("stance", "margin", math.inf, "a finite number"),
    ("stance", "threshold", True, "a finite number"),
    ("relevance", "weight", [0.2], "a finite number"),
    ("relevance", "k", 2.5, "a whole number"),
    ("relevance", "min_keep", -1, "a whole number"),
    ("expand", "neighbours", "10", "a whole number"),
    ("relevance", "relative", 1, "true or false"),
    ("expand", "agree", "yes", "true or false"),
])
def test_check_settings_names_the_file_and_key(stage, key, value, wanted) -> None:
    check_settings(GOOD, "somewhere.json")
    bad = {**GOOD, stage: {**GOOD[stage], key: value}}
    with pytest.raises(PerspectrumError, match=rf"^somewhere\.json: setting {stage}\.{key} must be {wanted}, not "):
        check_settings(bad, "somewhere.json")
    with pytest.raises(PerspectrumError, match="the stance settings must be a JSON object"):
        check_settings({"stance": 0.5}, "somewhere.json")  # type: ignore[dict-item]


@pytest.mark.parametrize("stored", ['{"stance": {"margin": "high"}}', '{"relevance": {"floor": NaN}}',
                                    '{"stance": {"scale": "steep"}}', '{"stance": {"unclear": Infinity}}',
                                    '{"cluster": {"threshold": null}}', '{"expand": {"neighbours": 2.5}}'])
def test_a_hand_edited_pipeline_file_is_one_line(tmp_path: Path, stored: str) -> None:
    evidence, store = Pool("evidence", (1,), ("a paragraph",)), IndexStore(tmp_path / "idx")
    models = _models(tmp_path / "models")
    (models / PIPELINE_FILE).write_text(f'{{"settings": {stored}}}', encoding="utf-8")
    scorers = TrainedScorers(models, store, evidence)  # read as stored; checked by the stages that read it
    with pytest.raises(PerspectrumError, match=rf"{PIPELINE_FILE}: setting \w+\.\w+ must be") as caught:
        PipelineConfig().settings(scorers)
    assert str(models) in str(caught.value) and "\n" not in str(caught.value)
    (models / PIPELINE_FILE).write_text('{"settings": {"stance": {"threshold": 0.5}}}', encoding="utf-8")
    with pytest.raises(PerspectrumError, match=r"is damaged \(unexpected setting stance\.threshold\): run `perspectrum "
                                               r"tune` again"):  # a model's own cut-off is not the pipeline's
        PipelineConfig().settings(TrainedScorers(models, store, evidence))
    (models / PIPELINE_FILE).write_text('{"settings": {"stance": 0.5}}', encoding="utf-8")
    with pytest.raises(PerspectrumError, match="the stance settings must be a JSON object"):
        merge_pipeline_file({}, models)


def _models(folder: Path, **changes: dict) -> Path:
    """Four models' ``perspectrum.json`` (no weights: settings are read before any model is)."""
    metas = {
        "relevance": {"thresholds": {"weight": 0.2, "relative": True, "threshold": 0.78, "k": 50, "min_keep": 1}},
        "stance": {"thresholds": {"threshold": 0.66, "centre": False}},
        "equivalence": {"thresholds": {"weight": 0.5, "threshold": 0.66, "method": "average"}},
        "evidence": {"ranker_thresholds": {"weight": 0.0, "relative": True, "threshold": 0.5, "k": 10,
                                           "min_keep": 1, "aggregate": "max"}},
    }
    for task, meta in metas.items():
        (folder / task).mkdir(parents=True)
        (folder / task / "perspectrum.json").write_text(json.dumps({"task": task, **meta, **changes.get(task, {})}),
                                                        encoding="utf-8")
    return folder


def test_hand_edited_model_thresholds_are_one_line(tmp_path: Path) -> None:
    evidence = Pool("evidence", (1,), ("a paragraph",))
    store = IndexStore(tmp_path / "idx")
    scorers = TrainedScorers(_models(tmp_path / "fine"), store, evidence)
    assert PipelineConfig().settings(scorers)["stance"]["threshold"] == 0.66  # the grid's "centre" left out
    assert "centre" not in PipelineConfig().settings(scorers)["stance"]

    def settings(folder: Path) -> None:
        PipelineConfig().settings(TrainedScorers(folder, store, evidence))

    edited = _models(tmp_path / "edited", stance={"thresholds": {"threshold": "high"}})
    with pytest.raises(PerspectrumError, match=r"stance/perspectrum\.json: setting stance\.threshold must be a finite"):
        settings(edited)
    ranker = _models(tmp_path / "ranker", evidence={"ranker_thresholds": {"relative": True, "threshold": math.nan,
                                                                         "k": 10, "min_keep": 1}})
    with pytest.raises(PerspectrumError, match=r"evidence/perspectrum\.json: setting evidence\.threshold"):
        settings(ranker)
    gone = _models(tmp_path / "gone", equivalence={"thresholds": {"weight": 0.5}})
    with pytest.raises(PerspectrumError, match=r"equivalence/perspectrum\.json is damaged \(no setting 'threshold'\)"):
        settings(gone)
    broken = _models(tmp_path / "broken", stance={"thresholds": [0.5]})
    with pytest.raises(PerspectrumError, match=r"stance/perspectrum\.json is damaged \(its thresholds are not a JSON"):
        TrainedScorers(broken, store, evidence)
