"""Raw text in: documents read and checked, argument units mined, arguments matched.

The pure parts (reading, sentence offsets, clause candidates, the selection and decision
rules) run with stand-in scorers whose answers are worked out by hand; the commands run
over the ``--quick`` models of the ``trained_dir`` fixture, where what the models answer
is not the point but that offsets, output and errors are right is.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from perspectrum import Pipeline
from perspectrum.cli.app import app
from perspectrum.data import Pool
from perspectrum.text.document import (
    MAX_DOCUMENT_CHARS,
    DocumentError,
    Span,
    check_document,
    paragraphs,
    read_document,
    split_sentences,
)
from perspectrum.errors import PerspectrumError
from perspectrum.pipeline.match import match_arguments
from perspectrum.pipeline.mine import mine, mine_many, read_candidates
from perspectrum.text.matching import MatchSettings, argument_scores, check_arguments, margins
from perspectrum.text.mining import MineSettings, candidates, non_overlapping

runner = CliRunner()

ESSAY = ("Zoos protect endangered species from extinction. The weather was pleasant that day.\n\n"
         "Animals suffer in captivity; their enclosures are far too small. Tickets cost ten dollars.")


# ----------------------------------------------------------------- documents
def test_check_document_refuses_what_is_not_text() -> None:
    for bad, why in (("", "empty"), (" \n\t ", "empty"), ("1234 5678", "no words"),
                     ("a\x01b\x02c\x03d\x04", "control characters"), ("x\udcffy", "not valid Unicode")):
        with pytest.raises(DocumentError, match=why):
            check_document(bad)
    with pytest.raises(DocumentError, match="limit is 10"):
        check_document("eleven char", limit=10)
    assert check_document("Form\ffeed and tab\tare text.") == "Form\ffeed and tab\tare text."


def test_read_document_names_the_file_in_one_line(tmp_path: Path) -> None:
    cases = {"empty.txt": b"", "binary.bin": b"\x89PNG\r\n\x1a\n\x00\x00", "latin.txt": "caf\xe9 ol\xe9".encode("latin-1")}
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
    for name, why in (("empty.txt", "empty"), ("binary.bin", "NUL bytes"), ("latin.txt", "not UTF-8"),
                      ("missing.txt", "no such file")):
        with pytest.raises(DocumentError, match=why) as caught:
            read_document(tmp_path / name)
        assert str(caught.value).startswith(str(tmp_path / name)) and "\n" not in str(caught.value)
    with pytest.raises(DocumentError, match="not a file"):
        read_document(tmp_path)
    (tmp_path / "big.txt").write_text("word " * (MAX_DOCUMENT_CHARS // 5 + 1))
    with pytest.raises(DocumentError, match="limit is 300,000"):
        read_document(tmp_path / "big.txt")
    (tmp_path / "bom.txt").write_bytes("\ufeffA sentence here.".encode())
    assert read_document(tmp_path / "bom.txt") == "A sentence here."


def test_sentences_and_paragraphs_point_back_into_the_text() -> None:
    text = "  First one. Dr. Smith said so.\n \nSecond para here.\nSame para."
    assert [p.text for p in paragraphs(text)] == ["First one. Dr. Smith said so.", "Second para here.\nSame para."]
    found = split_sentences(text)
    assert [s.text for s in found] == ["First one.", "Dr. Smith said so.", "Second para here.", "Same para."]
    assert all(text[s.start:s.end] == s.text for s in found)


# ----------------------------------------------------------------- candidates
def test_candidates_offer_each_sentence_and_its_clauses_with_offsets() -> None:
    text = ("Animals feel pain, and so they deserve protection; however, some argue that rights require duties. "
            "Yes.")
    found = split_sentences(text)
    offered = [(i, s.text) for i, s in candidates(found)]
    # sentence 0 itself; cut at ";" → two clauses, "however, " left off the second;
    # cut at ", and" → "Animals feel pain" (3 words, too short) and "they deserve protection;…"
    assert offered[0] == (0, found[0].text)
    assert (0, "Animals feel pain, and so they deserve protection") in offered
    assert (0, "some argue that rights require duties") in offered
    assert all(i == 0 for i, _ in offered)  # "Yes." is under MIN_UNIT_WORDS
    assert all(text[s.start:s.end] == s.text for _, s in candidates(found))


def test_non_overlapping_keeps_the_best_of_a_sentence_and_its_clause() -> None:
    spans = [Span(0, 50, "s"), Span(0, 20, "c1"), Span(25, 50, "c2"), Span(60, 80, "t")]
    # c1 (0.9) wins; the sentence (0.8) overlaps it; c2 (0.6) does not; t (0.3) is under 0.5
    assert non_overlapping(spans, [0.8, 0.9, 0.6, 0.3], 0.5) == [1, 2]
    assert non_overlapping(spans, [0.8, 0.9, 0.6, 0.3], 0.95) == []


class WordScorers:
    """Stand-in models that read words: relevant when a unit says "animal" or "zoo", supporting
    when it says "protect"; equivalent when the two texts share half their words."""

    def relevance(self, pairs):
        return np.array([0.9 if any(w in p.lower() for w in ("animal", "zoo")) else 0.1 for _, p in pairs])

    def stance(self, pairs):
        return np.array([0.8 if "protect" in p else 0.2 for _, p in pairs])

    def equivalence(self, triples):
        def share(a: str, b: str) -> float:
            x, y = set(a.lower().split()), set(b.lower().split())
            return len(x & y) / max(1, min(len(x), len(y)))
        return np.array([share(a, b) for _, a, b in triples])


class WordEncoder:
    """Unit bag-of-words vectors over a fixed vocabulary (cosine = shared words)."""

    VOCAB = ("zoos", "protect", "animals", "suffer", "captivity", "weather", "tickets", "species", "small")

    def encode(self, texts):
        rows = np.array([[float(w in t.lower()) for w in self.VOCAB] + [1e-3] for t in texts])
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_mine_keeps_relevant_units_with_their_stance_in_text_order() -> None:
    relevance_only = MineSettings(claim=0.0, centre=0.0, first=0.0, length=0.0, threshold=0.5)
    units = mine(ESSAY, "Zoos should exist", WordScorers(), WordEncoder(), 0.5, relevance_only)
    assert [u.text for u in units] == ["Zoos protect endangered species from extinction.",
                                       "Animals suffer in captivity; their enclosures are far too small."]
    assert [u.stance for u in units] == ["support", "undermine"]
    assert all(ESSAY[u.start:u.end] == u.text and u.score == 0.9 for u in units)
    assert [u.sentence for u in units] == [0, 2]


def test_candidate_scores_follow_the_settings_formula() -> None:
    found = read_candidates(ESSAY, "Zoos should exist", WordScorers(), WordEncoder())
    # sentence 0 opens paragraph 1, sentence 2 opens paragraph 2; 1 and 3 do not
    assert [found.first[i] for i, s in enumerate(found.sentence)] == [float(s in (0, 2)) for s in found.sentence]
    settings = MineSettings(claim=0.5, centre=2.0, first=0.25, length=0.3, threshold=0.0)
    i = 0  # "Zoos protect endangered species from extinction." (6 words: no length penalty)
    expected = found.relevance[i] + 0.5 * found.claim[i] + 2.0 * found.centre[i] + 0.25 * 1.0 - 0.0
    assert found.scores(settings)[i] == pytest.approx(expected)
    assert np.all((-1.0 <= found.centre) & (found.centre <= 1.0 + 1e-9))
    long = dataclasses.replace(found, words=found.words + 30)  # 30 words more: 0.3 × (words + 30 − 20) / 10 off
    assert found.scores(settings)[i] - long.scores(settings)[i] == pytest.approx(0.3 * (6 + 30 - 20) / 10)


class Counting(WordScorers):
    """WordScorers that keeps every pair the relevance model was asked to read."""

    def __init__(self) -> None:
        self.read: list[str] = []

    def relevance(self, pairs):
        self.read += [p for _, p in pairs]
        return super().relevance(pairs)


class CountingEncoder(WordEncoder):
    """WordEncoder that keeps every text it encoded."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def encode(self, texts):
        self.texts += list(texts)
        return super().encode(texts)


def test_mine_reads_only_candidates_that_could_pass_and_keeps_the_same_units() -> None:
    settings = MineSettings(claim=1.0, centre=0.0, first=0.0, length=0.0, threshold=1.2)
    every, encoder = Counting(), CountingEncoder()
    full = read_candidates(ESSAY, "Zoos should exist", every, encoder)
    assert len(encoder.texts) == len(set(encoder.texts))  # a sentence that is its own candidate: encoded once
    pruned, some = read_candidates(ESSAY, "Zoos should exist", Counting(), WordEncoder(), settings), Counting()
    reach = full.claim + 1.0 >= settings.threshold  # relevance ≤ 1: only these can reach the cut
    assert 0 < reach.sum() < len(full.spans)
    assert np.array_equal(pruned.relevance[reach], full.relevance[reach]) and not pruned.relevance[~reach].any()
    kept = mine(ESSAY, "Zoos should exist", some, WordEncoder(), 0.5, settings)
    assert len(some.read) == reach.sum()  # the relevance model read no candidate that could not pass
    chosen = non_overlapping(full.spans, full.scores(settings), settings.threshold)
    assert sorted(u.text for u in kept) == sorted(full.spans[i].text for i in chosen) and kept


def test_mining_several_texts_at_once_finds_what_each_finds_alone_with_one_call_per_model() -> None:
    texts = [ESSAY, "# Zoos\n\nZoos protect species. Animals suffer in small cages.", "The weather was fine.",
             ESSAY.replace("Zoos", "Zoos today")]
    settings = MineSettings(claim=0.0, centre=0.0, first=0.0, length=0.0, threshold=0.5)
    calls = []

    class OneCall(Counting):
        def relevance(self, pairs):
            calls.append("relevance")
            return super().relevance(pairs)

        def stance(self, pairs):
            calls.append("stance")
            return super().stance(pairs)

    encoder = CountingEncoder()
    together = mine_many(texts, "Zoos should exist", OneCall(), encoder, 0.5, settings)
    assert together == [mine(t, "Zoos should exist", WordScorers(), WordEncoder(), 0.5, settings) for t in texts]
    assert sorted(calls) == ["relevance", "stance"] and len(encoder.texts) == len(set(encoder.texts))
    assert together[2] == [] and all(u.text != "# Zoos" for u in together[1])  # a heading is never a unit
    assert mine_many([], "Zoos should exist", OneCall(), encoder, 0.5, settings) == []


def test_margins_over_rival_arguments_by_hand() -> None:
    cosine = np.array([[0.9, 0.2], [0.8, 0.7], [0.1, 0.3]])  # 3 arguments × 2 sentences
    best, top, margin = margins(cosine)
    # argument 0: best sentence 0 (0.9), best rival there 0.8 → +0.1
    # argument 1: best sentence 0 (0.8), best rival there 0.9 → −0.1
    # argument 2: best sentence 1 (0.3), best rival there 0.7 → −0.4
    assert list(best) == [0, 0, 1] and list(top) == [0.9, 0.8, 0.3]
    assert margin == pytest.approx([0.1, -0.1, -0.4])
    assert list(margins(np.array([[0.4, 0.6]]))[2]) == [0.0]  # no rival, no margin
    scores, _ = argument_scores(cosine, cosine, MatchSettings(sentence_margin=2.0, paragraph_margin=0.5))
    assert scores == pytest.approx([0.9 + 2.0 * 0.1 + 0.5 * 0.1, 0.8 - 2.0 * 0.1 - 0.5 * 0.1, 0.3 - 2.0 * 0.4 - 0.5 * 0.4])


def test_match_takes_each_arguments_best_sentence() -> None:
    arguments = ["Animals suffer in captivity", "Tickets are too expensive", "Zoos protect species"]
    found = match_arguments(ESSAY, arguments, WordEncoder(), MatchSettings(0.0, 0.0, 0.85))
    # with no margins an argument's score is its best sentence's cosine: {animals, suffer,
    # captivity} against {animals, suffer, captivity, small} is 3 / √(3 × 4) ≈ 0.866
    assert found[0].score == pytest.approx(3 / 12 ** 0.5, abs=1e-3)
    assert found[0].sentence is not None and found[0].sentence.text.startswith("Animals suffer in captivity")
    assert found[2].sentence is not None and found[2].sentence.text.startswith("Zoos protect")
    assert all(f.made == (f.score >= 0.85) for f in found) and found[0].made
    assert all(ESSAY[f.sentence.start:f.sentence.end] == f.sentence.text for f in found if f.sentence)
    assert not any(f.made for f in match_arguments(ESSAY, arguments, WordEncoder(), MatchSettings(0.0, 0.0, 1.5)))


def test_check_arguments() -> None:
    assert check_arguments(["  one  two ", "", "three"]) == ["one two", "three"]
    for bad, why in (([], "empty"), (["", "  "], "empty"), ("one text", "list"), (["x" * 1001], "limit"),
                     (["a"] * 201, "at most")):
        with pytest.raises(PerspectrumError, match=why):
            check_arguments(bad)


# ----------------------------------------------------------------- commands
def _args(trained_dir) -> list[str]:
    data, indexes, models = trained_dir
    return ["--data-dir", str(data), "--no-verify", "--index-dir", str(indexes), "--models-dir", str(models)]


def test_mine_command_json_highlight_and_add_to(trained_dir, tmp_path: Path) -> None:
    essay = tmp_path / "essay.txt"
    essay.write_text(ESSAY)
    result = runner.invoke(app, ["mine", str(essay), "--claim", "Zoos should exist", "--json", *_args(trained_dir)])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["characters"] == len(ESSAY) and out["units"]
    for unit in out["units"]:
        assert ESSAY[unit["start"]:unit["end"]] == unit["text"] and unit["stance"] in ("support", "undermine")
    spans = sorted((u["start"], u["end"]) for u in out["units"])
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))  # units never overlap
    pool = tmp_path / "mined.jsonl"
    for _ in range(2):  # a second run adds nothing new: the texts are already there
        result = runner.invoke(app, ["mine", str(essay), "--claim", "Zoos should exist", "--add-to", str(pool),
                                     *_args(trained_dir)], env={"COLUMNS": "120"})
        assert result.exit_code == 0, result.output
    assert len(Pool.from_jsonl(pool, "perspectives")) == len(out["units"])
    if out["units"]:
        assert "units in the text" in result.stdout and out["units"][0]["text"][:20] in result.stdout


def test_match_command_with_and_without_arguments(trained_dir, tmp_path: Path) -> None:
    essay, listed = tmp_path / "speech.txt", tmp_path / "args.txt"
    essay.write_text(ESSAY)
    listed.write_text("Animals suffer in captivity\n\nZoos protect species\n")
    result = runner.invoke(app, ["match", str(essay), "--claim", "Zoos should exist", "--arguments", str(listed),
                                 "--json", *_args(trained_dir)])
    assert result.exit_code == 0, result.output
    answers = json.loads(result.stdout)["arguments"]
    assert [a["argument"] for a in answers] == ["Animals suffer in captivity", "Zoos protect species"]
    for answer in answers:
        best = answer["sentence"]
        assert ESSAY[best["start"]:best["end"]] == best["text"] and isinstance(answer["made"], bool)
    no_claim = runner.invoke(app, ["match", str(essay), "--arguments", str(listed), "--json", *_args(trained_dir)])
    assert no_claim.exit_code == 0, no_claim.output
    assert json.loads(no_claim.stdout)["arguments"] == answers and json.loads(no_claim.stdout)["claim"] is None
    data, indexes, models = trained_dir
    pipe = Pipeline.load(data, indexes, models, verify=False)
    found = pipe.discover("Zoos should exist", evidence=False).perspectives
    if found:  # without --arguments, the claim's discovered perspectives are the arguments
        answers = [a.argument for a in pipe.match(ESSAY, "Zoos should exist")]
        assert answers == [f.text for f in found]


@pytest.mark.parametrize("command", ["mine", "match"])
def test_commands_refuse_bad_input_in_one_line(command: str, trained_dir, tmp_path: Path) -> None:
    empty, binary, text = tmp_path / "empty.txt", tmp_path / "blob.bin", tmp_path / "ok.txt"
    empty.write_text("")
    binary.write_bytes(bytes(range(256)))
    text.write_text(ESSAY)
    cases = [([str(empty), "--claim", "Zoos"], 1, "empty"), ([str(binary), "--claim", "Zoos"], 1, "binary"),
             ([str(text)], 2, "--claim"), ([str(text), "--claim", "  "], 2, "empty"),
             ([str(tmp_path / "nope.txt"), "--claim", "Zoos"], 1, "no such file")]
    if command == "match":
        (tmp_path / "none.txt").write_text("\n \n")
        cases.append(([str(text), "--claim", "Zoos", "--arguments", str(tmp_path / "none.txt")], 1, "empty"))
    for args, code, why in cases:
        result = runner.invoke(app, [command, *args, *_args(trained_dir)])
        assert result.exit_code == code, (args, result.output)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and why in lines[0], (args, result.stderr)
