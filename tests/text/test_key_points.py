"""Key point rules and headings (perspectrum.text.key_points)."""

from __future__ import annotations

from perspectrum.text.document import split_sentences
from perspectrum.text.key_points import RULES, is_heading, rules_broken


def test_a_short_self_contained_statement_breaks_no_rule() -> None:
    assert rules_broken("Legal rights for animals would drive small farms out of business") == []


def test_each_rule_is_named_when_broken() -> None:
    assert rules_broken("Zoos are bad") == ["words"]
    assert rules_broken(" ".join(["word"] * 26)) == ["words"]
    assert "question" in rules_broken("Should animals have the same legal rights as people?")
    assert {"heading", "question"} <= set(rules_broken("# Should animals have the same legal rights as people?"))
    assert "markdown" in rules_broken("- Animals feel pain and deserve the protection of the law")
    assert "markdown" in rules_broken("Animals feel pain and **deserve** the protection of the law")
    assert "markdown" in rules_broken("Animals feel pain, as [this study](http://x.org) shows to everyone")
    assert "framing" in rules_broken("The question is whether animals should have legal rights at all")
    assert "pronoun" in rules_broken("This would ruin every small farmer in the country within years")
    assert "pronoun" in rules_broken("They cannot bear the responsibilities that come with legal rights")
    assert set(rules_broken("It?")) <= set(RULES)


def test_headings_and_titles_on_their_own_line_are_found_and_sentences_are_not() -> None:
    text = ("# Should animals have legal rights?\n\nNotes from the public meeting on animal protection\n\n"
            "Animals suffer, and suffering matters.\nWe voted: yes\nRights come with duties. Courts would be flooded\n")
    found = {s.text: is_heading(text, s) for s in split_sentences(text)}
    assert found["# Should animals have legal rights?"] is True
    assert found["Notes from the public meeting on animal protection"] is True
    assert found["Animals suffer, and suffering matters."] is False
    assert found["Rights come with duties."] is False
    assert found["Courts would be flooded"] is False  # ends a paragraph, but shares its line with a sentence
    # an unpunctuated answer is no heading: alone in its document, or a line that states something
    for answer in ("Zoos keep animals in small cages far from home", "zoos are cruel\nthey keep animals in cages."):
        assert not any(is_heading(answer, s) for s in split_sentences(answer))
