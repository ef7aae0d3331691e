"""What a key point must read like, and the lines of a document that never make one.

A map names each perspective by one of its units (:mod:`perspectrum.pipeline.map`). A person
reads that name as the point the documents make, so it should be a short, self-contained
sentence that states a claim: :func:`rules_broken` lists the rules a text breaks, and the map
prefers units that break none. :func:`is_heading` finds the lines that are a document's
furniture (a Markdown heading, a title or a meeting's name on a line of its own): mining
offers them as no unit at all.
"""

from __future__ import annotations

import re

from perspectrum.text.document import Span
from perspectrum.text.polarity import takes_no_side

#: Words a key point has: fewer rarely state a whole perspective, more carry more than one.
KEY_POINT_WORDS = (6, 25)
#: The rules, in the order :func:`rules_broken` checks them.
RULES = ("words", "question", "heading", "markdown", "framing", "pronoun")

_MARKDOWN_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_MARKDOWN = re.compile(r"^\s*(?:[-*+]\s|>\s?|\d+[.)]\s)|\*\*|__|`|\[[^\]]*\]\([^)]*\)|(?:^|\s)[*_]\w[^*_]*\w[*_](?=\W|$)")
#: Words that point back to something the key point does not say.
_DANGLING = re.compile(r"^\s*[\"“']?(?:it|this|that|these|those|they|them|he|she|his|her|its|their|such)\b(?!\s+(?:is|are)\s+(?:why|how|what))",
                       re.IGNORECASE)
_ENDS_A_SENTENCE = re.compile(r"[.!?…][\"”’')\]]*\s*$")
#: Words a statement has and a title rarely does: "Notes from the public meeting" states nothing,
#: "zoos are cruel" (a crowd answer's line, unpunctuated) does.
_STATES = re.compile(r"\b(?:is|are|was|were|be|been|am|should|must|can|cannot|could|would|will|shall|may|might|do|does|"
                     r"did|have|has|had|not|no|never)\b|n't\b", re.IGNORECASE)


def is_heading(text: str, sentence: Span) -> bool:
    """Whether ``sentence`` (a span of ``text``) is a heading: a Markdown heading, or a title: a
    line of its own with more text after it, that does not end a sentence and has no verb a
    statement has ("Notes from the public meeting on animal protection"). A one-line document,
    or an unpunctuated line that states something ("zoos are cruel"), is never a heading."""
    if _MARKDOWN_HEADING.match(sentence.text):
        return True
    before, after = text[:sentence.start], text[sentence.end:]
    own_line = (not before.strip(" \t") or before.rstrip(" \t").endswith("\n")) and (
        after.lstrip(" \t").startswith(("\n", "\r")) and bool(after.strip()))
    return (own_line and not _ENDS_A_SENTENCE.search(sentence.text) and not sentence.text.rstrip().endswith(":")
            and not _STATES.search(sentence.text))


def rules_broken(text: str) -> list[str]:
    """The :data:`RULES` ``text`` breaks as a key point: ``words`` (outside
    :data:`KEY_POINT_WORDS`), ``question``, ``heading`` (a Markdown heading), ``markdown`` (list,
    quote, emphasis or link markup), ``framing`` (only frames the debate:
    :func:`perspectrum.text.polarity.takes_no_side`), ``pronoun`` (opens with a pronoun that
    points outside it: "This would ruin farmers")."""
    words = len(text.split())
    broken = []
    if not KEY_POINT_WORDS[0] <= words <= KEY_POINT_WORDS[1]:
        broken.append("words")
    if text.rstrip(" \"”’')").endswith("?"):
        broken.append("question")
    if _MARKDOWN_HEADING.match(text):
        broken.append("heading")
    if _MARKDOWN.search(text):
        broken.append("markdown")
    if takes_no_side(text):
        broken.append("framing")
    if _DANGLING.match(text):
        broken.append("pronoun")
    return broken
