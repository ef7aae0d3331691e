"""`perspectrum map`: a pile of documents read in four formats (bad files skipped with a
reason), units grouped across documents into counted, stanced, quoted perspectives, and the
command's table, JSON and page.

The grouping rules are checked with stand-in models that read words (as in
``test_mining``), so what must join and what must not is known; the command runs over the
``--quick`` models of the ``trained_dir`` fixture, where only the shape of the answer and
its offsets are known.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from perspectrum.cli.app import app
from perspectrum.errors import PerspectrumError
from perspectrum.cli.map_page import map_page
from perspectrum.pipeline.map import MapSettings, build_map, key_point, map_pile
from perspectrum.text.duplicates import copies_of, near_duplicates
from perspectrum.pipeline.stages import ClusterStage
from perspectrum.pipeline.stages import Stance
from perspectrum.text.mining import MinedUnit
from perspectrum.text.reading import Skipped, read_documents, readable
from tests.conftest import pdf_of

runner = CliRunner()

ZOOS = "Zoos protect endangered species from extinction. Many visitors enjoy a day out."
ZOOS_TOO = "Breeding programmes matter. Zoos protect endangered species through breeding."
CAGES = "Animals suffer in captivity; their enclosures are far too small."


def tiny_pdf(text: str) -> bytes:
    """A one-page PDF that shows ``text`` in Helvetica (cross-reference offsets computed)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
               b"/Resources << /Font << /F1 5 0 R >> >> >>",
               b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    return pdf_of(objects)


@pytest.fixture
def pile(tmp_path: Path) -> Path:
    """A folder of mixed documents, three of them unreadable, one hidden."""
    folder = tmp_path / "pile"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text(ZOOS)
    (folder / "b.md").write_text(f"# Notes\n\n{ZOOS_TOO}\n")
    (folder / "sub" / "c.html").write_text(
        f"<html><head><style>p{{color:red}}</style><script>var x = 1;</script></head><body><nav>Home</nav>"
        f"<p>{CAGES.replace('captivity', '<b>captivity</b>')}</p></body></html>")
    (folder / "d.pdf").write_bytes(tiny_pdf("Zoos protect endangered species from extinction."))
    (folder / "e.bin").write_bytes(bytes(range(256)))
    (folder / "f.txt").write_text("")
    (folder / "g.pdf").write_bytes(b"%PDF-1.4 this is not a PDF at all")
    (folder / ".hidden.txt").write_text(ZOOS)
    (folder / "answers.jsonl").write_text(json.dumps({"id": "r1", "text": CAGES}) + "\nnot json\n"
                                          + json.dumps({"id": "r2", "text": ""}) + "\n")
    return folder


def test_a_pile_is_read_in_every_format_and_the_unreadable_skipped_with_a_reason(pile: Path) -> None:
    documents, skipped = readable(read_documents([pile]))

    def name(source: str) -> str:
        return source.removeprefix(f"{pile}/")

    texts = {d.id: d.text for d in documents}  # a file named by its path in the folder, a record by its id
    assert texts["a.txt"] == ZOOS and ZOOS_TOO in texts["b.md"]
    assert texts["sub/c.html"] == CAGES  # markup, scripts, styles and navigation gone; inline bold joined
    assert texts["d.pdf"] == "Zoos protect endangered species from extinction."
    assert texts["r1"] == CAGES
    assert ".hidden.txt" not in texts and len(documents) == 5
    why = {name(s.source): s.why for s in skipped}  # what is skipped is named by its path, to be found
    assert "not a kind of file" in why["e.bin"] and "empty" in why["f.txt"] and "PDF" in why["g.pdf"]
    assert why["answers.jsonl:2"] == "not a JSON object" and "empty" in why["answers.jsonl:3"]
    assert all("\n" not in s.why for s in skipped)
    with pytest.raises(PerspectrumError, match="nothing readable to map"):
        readable(read_documents([pile / "e.bin", pile / "f.txt"]))
    assert list(read_documents([pile / "nope"])) == [Skipped(str(pile / "nope"), "no such file or folder")]


class WordModels:
    """Stand-in models: P(support) 0.9 for a unit saying "protect", 0.1 otherwise;
    equivalent when two units share half their words."""

    VOCAB = ("zoos", "protect", "endangered", "species", "animals", "suffer", "captivity", "cages")

    def encode(self, texts):
        rows = np.array([[float(w in t.lower()) for w in self.VOCAB] + [1e-3] for t in texts])
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    def equivalence(self, triples):
        def share(a: str, b: str) -> float:
            x, y = set(a.lower().split()), set(b.lower().split())
            return len(x & y) / max(1, min(len(x), len(y)))
        return np.array([share(a, b) for _, a, b in triples])


def _unit(text: str, doc: str, start: int = 0) -> tuple[str, MinedUnit]:
    p = 0.9 if "protect" in text else 0.1
    return doc, MinedUnit(start, start + len(text), text, 0.9, "support" if p >= 0.5 else "undermine", p, 0)


STANCE = Stance(threshold=0.5, margin=0.2, scale=1.0, unclear=0.0)


def test_units_from_several_documents_make_one_counted_perspective_and_singles_are_also_mentioned() -> None:
    models = WordModels()
    units = [_unit("Zoos protect endangered species", "a"), _unit("Zoos protect endangered species well", "b"),
             _unit("Zoos protect species", "c"), _unit("Animals suffer in cages", "c", 40),
             _unit("Zoos protect endangered species", "a", 60)]  # the same document again: one document
    shown, also = build_map("Zoos should exist", units, models.encode, 4, models.equivalence, STANCE,
                            MapSettings(), 0.5, 0.6)
    assert len(shown) == 1 and len(also) == 1
    top = shown[0]
    assert (top.documents, top.units, top.share, top.side) == (3, 4, 0.75, "support")
    assert top.key_point == "Zoos protect endangered species" and top.quotes[0].text == top.key_point
    assert [q.document for q in top.quotes[1:]] == ["a", "b", "c"]  # then by document and offset
    assert also[0].side == "undermine" and also[0].documents == 1 and also[0].confidence == 0.9
    # one document read: everything it makes is a perspective, nothing is "also mentioned"
    shown, also = build_map("Zoos should exist", units[:1], models.encode, 1, models.equivalence, STANCE,
                            MapSettings(), 0.5, 0.6)
    assert len(shown) == 1 and not also
    assert build_map("Zoos should exist", [], models.encode, 3, models.equivalence, STANCE, MapSettings(),
                     0.5, 0.6) == ([], [])


def test_confident_opposites_are_never_one_perspective() -> None:
    models = WordModels()
    units = [_unit("Zoos protect endangered species", "a"), _unit("Zoos endangered species", "b")]
    shown, also = build_map("Zoos should exist", units, models.encode, 2, models.equivalence, STANCE,
                            MapSettings(min_documents=1), 0.5, 0.3)
    assert sorted(p.side for p in shown) == ["support", "undermine"] and not also
    unsure = replace(STANCE, margin=0.45)  # both unsure now: nothing keeps them apart
    shown, _ = build_map("Zoos should exist", units, models.encode, 2, models.equivalence, unsure,
                         MapSettings(min_documents=1), 0.5, 0.3)
    assert len(shown) == 1 and shown[0].documents == 2


def test_the_key_point_is_central_readable_and_takes_a_side() -> None:
    texts = ["Should zoos exist at all?", "Zoos", "Zoos protect endangered species from dying out", "Zoos save species"]
    matrix = np.full((4, 4), 0.5)
    matrix[0, 1:] = matrix[1:, 0] = 0.9  # the framing question is the most central
    matrix[3, 1:3] = matrix[1:3, 3] = 0.7
    assert key_point([0, 1, 2, 3], texts, matrix) == 2  # not the question, not the one-word unit
    assert key_point([1, 3], texts, matrix) == 1  # equally short and central: the earliest
    assert key_point([0], texts, matrix) == 0


def test_the_second_pass_joins_groups_whose_key_points_match_and_adopts_thin_groups() -> None:
    models = WordModels()
    units = [_unit("Zoos protect endangered species from dying out", "a"),
             _unit("Zoos protect endangered species from dying out", "b"),
             _unit("Zoos protect rare species", "c"), _unit("Zoos protect rare species", "d"),
             _unit("Zoos protect the animals they keep", "e")]
    # cut high: three groups (the wording of each pair, and one alone)
    kept = build_map("Zoos should exist", units, models.encode, 5, models.equivalence, STANCE, MapSettings(join=None),
                     0.5, 0.99)
    assert sorted(p.documents for p in kept[0]) == [2, 2] and len(kept[1]) == 1
    joined, also = build_map("Zoos should exist", units, models.encode, 5, models.equivalence, STANCE,
                             MapSettings(join=0.6), 0.5, 0.99)
    assert [p.documents for p in joined] == [4] and len(also) == 1  # the two groups are one point
    assert set(joined[0].made_by) == {"a", "b", "c", "d"}
    adopted, also = build_map("Zoos should exist", units, models.encode, 5, models.equivalence, STANCE,
                              MapSettings(join=0.6, adopt=0.45), 0.5, 0.99)
    assert [p.documents for p in adopted] == [5] and not also  # the single document joins it
    # a thin group that matches nothing stays apart, and opposite sides never join
    other = [*units, _unit("Animals suffer in small cages far from home", "f")]
    shown, also = build_map("Zoos should exist", other, models.encode, 6, models.equivalence, STANCE,
                            MapSettings(join=0.0, adopt=0.0), 0.5, 0.99)
    assert [p.side for p in also] == ["undermine"] and all(p.side == "support" for p in shown)


def test_near_copies_are_collapsed_reported_and_counted_once() -> None:
    from tests.batch.map_fakes import WordEncoder, WordScorers

    letter = ("Dear council, zoos protect endangered species from extinction and they deserve our support. "
              "Please keep the zoo open for our children. Yours, ")
    texts = {"1": letter + "Ann Smith", "2": letter + "Bob Jones", "3": "Zoos protect endangered species well.",
             "4": "Animals suffer in small cages."}
    found = map_pile(texts, "Zoos should exist", WordScorers(), WordEncoder(),
                     Stance(threshold=0.5, margin=0.2, scale=1.0, unclear=0.0), ClusterStage(weight=0.5, threshold=0.5))
    assert found.duplicates == {"1": ["2"]} and found.documents == 4
    assert all("2" not in p.made_by for p in [*found.perspectives, *found.also_mentioned])
    assert found.to_dict()["duplicates"] == {"1": ["2"]}


def test_a_pile_of_several_batches_is_mined_each_document_once_under_its_own_id() -> None:
    from perspectrum.pipeline.map import MINE_BATCH
    from tests.batch.map_fakes import WordEncoder, WordScorers

    texts = {f"d{n}": f"Zoos protect {n} endangered species from extinction." for n in range(2 * MINE_BATCH + 3)}
    seen: list[tuple[str, str]] = []
    found = map_pile(texts, "Zoos should exist", WordScorers(), WordEncoder(),
                     Stance(threshold=0.5, margin=0.2, scale=1.0, unclear=0.0), ClusterStage(weight=0.5, threshold=0.5),
                     on_mined=lambda doc_id, units: seen.append((doc_id, units[0].text)))
    assert [doc_id for doc_id, _ in seen] == list(texts) and all(texts[d] == text for d, text in seen)
    assert found.units == len(texts)


def _args(trained_dir) -> list[str]:
    data, indexes, models = trained_dir
    return ["--data-dir", str(data), "--no-verify", "--index-dir", str(indexes), "--models-dir", str(models)]


def test_map_command_json_table_and_page(pile: Path, trained_dir, tmp_path: Path) -> None:
    page = tmp_path / "out" / "map.html"
    result = runner.invoke(app, ["map", str(pile), "--claim", "Zoos should exist", "--json", "--html", str(page),
                                 *_args(trained_dir)])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["documents"] == 5 and len(out["skipped"]) == 5 and out["claim"] == "Zoos should exist"
    assert sum("skipped " in line for line in result.stderr.splitlines()) == 5
    texts = {d.id: d.text for d in readable(read_documents([pile]))[0]}
    shown = out["perspectives"] + out["also_mentioned"]
    assert sum(p["units"] for p in shown) == out["units"]
    for found in shown:
        assert found["side"] in ("support", "undermine", "unclear") and 0.5 <= found["confidence"] <= 1
        assert found["key_point"] == found["quotes"][0]["text"] and found["units"] == len(found["quotes"])
        assert found["documents"] == len({q["document"] for q in found["quotes"]})
        for quote in found["quotes"]:
            assert texts[quote["document"]][quote["start"]:quote["end"]] == quote["text"]
    assert out["perspectives"] and all(p["documents"] >= 2 for p in out["perspectives"])
    assert out["also_mentioned"] and all(p["documents"] == 1 for p in out["also_mentioned"])
    html = page.read_text()
    assert html.startswith("<!doctype html>") and "<script" not in html and "Skipped" in html
    table = runner.invoke(app, ["map", str(pile / "a.txt"), str(pile / "b.md"), "--claim", "Zoos should exist",
                                *_args(trained_dir)], env={"COLUMNS": "160"})
    assert table.exit_code == 0, table.output
    assert "2 documents read (0 skipped)" in table.stdout


def test_map_page_escapes_what_documents_hold() -> None:
    from perspectrum.pipeline.map import MappedPerspective, PerspectiveMap, Quote

    evil = "<script>alert(1)</script> zoos <b>matter</b>"
    found = MappedPerspective(evil, "support", 0.8, 2, 2, 1.0, (Quote("<i>doc</i>", 0, 5, evil, 0.8),))
    html = map_page(PerspectiveMap("<b>claim</b>", 2, 2, [found], [], [{"source": "<x>", "why": "<y>"}]))
    assert "<script>" not in html and "<b>" not in html and "&lt;script&gt;" in html and "&lt;i&gt;doc" in html


def test_map_command_refuses_bad_input_in_one_line(pile: Path, trained_dir) -> None:
    cases = [([str(pile / "e.bin"), str(pile / "f.txt"), "--claim", "Zoos"], 1, "nothing readable to map"),
             ([str(pile)], 2, "--claim"), ([str(pile), "--claim", "  "], 2, "empty"),
             ([str(pile / "nope"), "--claim", "Zoos"], 1, "nothing readable")]
    for args, code, why in cases:
        result = runner.invoke(app, ["map", *args, *_args(trained_dir)])
        assert result.exit_code == code, (args, result.output)
        lines = [line for line in result.stderr.strip().splitlines() if line.startswith("error: ")]
        assert len(lines) == 1 and why in lines[0], (args, result.stderr)


def test_map_units_file_resumes_an_interrupted_run_and_refuses_another_pile(pile: Path, trained_dir, tmp_path: Path,
                                                                             monkeypatch) -> None:
    import perspectrum.pipeline.map as map_module

    units = tmp_path / "runs" / "units.jsonl"
    args = ["map", str(pile), "--claim", "Zoos should exist", "--json", "--units", str(units), *_args(trained_dir)]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    lines = units.read_text(encoding="utf-8").splitlines(keepends=True)
    header, rows = json.loads(lines[0]), [json.loads(line) for line in lines[1:]]
    assert header["map_units"] == 2 and header["claim"] == "Zoos should exist" and header["models"]
    texts = {d.id: d.text for d in readable(read_documents([pile]))[0]}
    copies = copies_of(near_duplicates(texts))
    assert copies == {"sub/c.html"}  # the same sentence as answers.jsonl's r1: counted once, never mined
    texts = {doc: text for doc, text in texts.items() if doc not in copies}
    assert sorted(r["id"] for r in rows) == sorted(texts)  # each readable document once
    # interrupted after two documents, in the middle of writing the third
    units.write_text("".join(lines[:3]) + lines[3][:len(lines[3]) // 2], encoding="utf-8")
    mined: list[str] = []
    real = map_module.mine_many

    def counted(batch, *rest, **kw):
        mined.extend(batch)
        return real(batch, *rest, **kw)

    monkeypatch.setattr(map_module, "mine_many", counted)
    again = runner.invoke(app, args)
    assert again.exit_code == 0, again.output
    assert "cut off a partial last line" in again.stderr
    assert sorted(mined) == sorted(texts[r["id"]] for r in rows[2:])  # the two kept were not mined again
    strip = lambda out: {k: v for k, v in json.loads(out).items() if k != "seconds"}  # noqa: E731
    assert strip(again.stdout) == strip(first.stdout)
    written = units.read_text(encoding="utf-8").splitlines()[1:]
    assert sorted(json.loads(line)["id"] for line in written) == sorted(texts)
    mined.clear()
    assert runner.invoke(app, args).exit_code == 0 and mined == []  # all there: nothing mined
    other = tmp_path / "other"
    other.mkdir()
    for name in ("a.txt", "b.md"):
        (other / name).write_text((pile / name).read_text(encoding="utf-8") + " Changed.", encoding="utf-8")
    cases = [(["map", str(pile), "--claim", "Zoos should close", "--units", str(units)], "another claim"),
             (["map", str(other), "--claim", "Zoos should exist", "--units", str(units)],
              "document 'a.txt' has changed since it was mined"),
             (["map", str(pile / "a.txt"), "--claim", "Zoos should exist", "--units", str(pile / "a.txt")],
              "not a map units file"),
             (["map", str(pile), "--claim", "Zoos should exist", "--workers", "2"], "--engine ray")]
    for case, why in cases:
        result = runner.invoke(app, [*case, *_args(trained_dir)])
        assert result.exit_code in (1, 2), (case, result.output)
        errors = [line for line in result.stderr.strip().splitlines() if line.startswith("error: ")]
        assert len(errors) == 1 and why in errors[0], (case, result.stderr)
    changed = tmp_path / "changed.jsonl"
    two = [str(pile / "a.txt"), str(pile / "b.md"), "--claim", "Zoos should exist", "--units", str(changed),
           *_args(trained_dir)]
    assert runner.invoke(app, ["map", *two]).exit_code == 0
    (pile / "a.txt").write_text((other / "a.txt").read_text(encoding="utf-8"), encoding="utf-8")
    result = runner.invoke(app, ["map", *two])
    assert result.exit_code == 1 and "has changed since it was mined" in result.stderr, result.output


def test_pipeline_map_checks_its_documents(trained_dir) -> None:
    from perspectrum import Pipeline

    data, indexes, models = trained_dir
    pipe = Pipeline.load(data, indexes, models, verify=False)
    with pytest.raises(PerspectrumError, match="several documents"):
        pipe.map("one text", "Zoos should exist")
    with pytest.raises(PerspectrumError, match="no documents"):
        pipe.map({}, "Zoos should exist")
    with pytest.raises(PerspectrumError, match="document 2 is empty"):
        pipe.map([ZOOS, " "], "Zoos should exist")
    answer = pipe.map([ZOOS, CAGES], "Zoos should exist")
    assert answer.documents == 2 and {q.document for p in answer.perspectives + answer.also_mentioned
                                      for q in p.quotes} <= {"1", "2"}


class ExactJudge:
    """A judge that calls two texts equivalent when they are the same text."""

    threshold = 0.5

    def scores(self, triples):
        return np.array([float(a == b) for _, a, b in triples])


def test_piles_and_their_scores_on_the_fixture(dataset) -> None:
    from perspectrum.eval.map_quality import figures, piles, score_pile
    from perspectrum.pipeline.map import MappedPerspective, Quote

    found = {p.claim.cid: p for p in piles(dataset, "dev")}
    pile = found[7]  # gold evidence 12 (a supporting cluster) and 13 (an undermining one), and two distractors
    assert set(pile.citing) == {"12", "13"} and len(pile.documents) == 4
    assert piles(dataset, "dev")[0].documents == found[7].documents  # the same seed draws the same distractors
    claim = pile.claim
    support = dataset.perspectives[claim.clusters[0].pids[0]].text
    distractor = next(d for d in pile.documents if d not in pile.citing)

    def made(text: str, side: str, docs: list[str]) -> MappedPerspective:
        return MappedPerspective(text, side, 0.8, len(docs), len(docs), 0.5,
                                 tuple(Quote(d, 0, 4, text, 0.8) for d in docs))

    counts = score_pile(dataset, pile, [made(support, "support", ["12"]), made("something else", "undermine",
                                                                            ["13", distractor])], ExactJudge())
    assert (counts["clusters"], counts["covered"], counts["perspectives"], counts["pure"]) == (2, 1, 2, 1)
    assert (counts["matched"], counts["right"]) == (1, 1) and counts["prevalence"] == [(1, 1)]
    out = figures([counts])
    assert out["coverage"] == 0.5 and out["purity"] == 0.5 and out["side_accuracy"] == 1.0
    wrong = score_pile(dataset, pile, [made(support, "undermine", ["12"])], ExactJudge())
    assert wrong["right"] == 0 and figures([wrong])["side_accuracy"] == 0.0
    # ArgKP pairs: 12 is the first cluster's evidence (a match), 13 the second's (undecided for the
    # first: the claim's own evidence, never judged against it), the distractor matches nothing
    assert sorted(counts["argkp"], key=lambda row: -row[1])[0] == ("7:SUPPORT", 1.0, True, True)
    assert sorted((row[2], row[3]) for row in counts["argkp"]) == [(False, False), (False, True), (True, True)]
    assert out["argkp_predicted"] == 0.75 and out["argkp_map_strict"] == 1.0


def test_argkp_map_reads_the_top_half_of_each_topic_and_stance() -> None:
    from perspectrum.eval.map_quality import argkp_map

    rows = [("a", 0.9, False, True), ("a", 0.8, True, True), ("a", 0.7, False, False), ("a", 0.6, True, True),
            ("b", 0.5, True, True)]  # b's top half is empty: left out, as int(1 × 0.5) = 0
    out = argkp_map(rows, paragraphs=10)
    # a's top two: the undecided pair first, then a match: strict AP = 1/2, relaxed AP = 1
    assert (out["argkp_map_strict"], out["argkp_map_relaxed"], out["argkp_map"]) == (0.5, 1.0, 0.75)
    assert out["argkp_groups"] == 1 and out["argkp_predicted"] == 0.5
    assert argkp_map([("a", 0.9, False, False), ("a", 0.1, True, True)])["argkp_map_strict"] == 0.0
