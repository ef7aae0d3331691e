"""Near-copies of a pile (perspectrum.text.duplicates)."""

from __future__ import annotations

from perspectrum.text.duplicates import copies_of, near_duplicates

LETTER = ("Dear council, I write to ask that you protect the animals of our town. Animals feel pain and suffer in "
          "small cages, and the law should recognise this. Please act before the next season. Yours, ")


def test_a_template_filled_in_by_many_is_one_group_kept_under_its_first_document() -> None:
    texts = {"b": "Zoos are cruel and should close.", "a1": LETTER + "Ann Smith, 1 High Street",
             "a2": LETTER + "Bob Jones, 22 Low Road", "c": "Zoos protect species that would die out otherwise.",
             "a3": "  " + LETTER.upper() + "Cat Lee", "d": "zoos are cruel and should close"}
    found = near_duplicates(texts)
    assert found == {"b": ["d"], "a1": ["a2", "a3"]}  # case and spacing do not hide a copy
    assert copies_of(found) == {"d", "a2", "a3"}


def test_documents_that_share_a_sentence_are_not_copies() -> None:
    shared = "Animals feel pain and suffer in small cages. "
    texts = {"x": shared + "Zoos should close because no animal chose to live there and many never thrive.",
             "y": shared + "Yet good zoos breed species that would otherwise die out in the wild for ever."}
    assert near_duplicates(texts) == {} and near_duplicates({"only": LETTER}) == {}
