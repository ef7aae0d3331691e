"""A claim's polarity: does it propose to restrict something, and what is its opposite?

:func:`negate` turns a claim into the claim that proposes the opposite: "Performing tests
on animals must be banned" → "… must be allowed" where the word after the modal has a
listed opposite, "Homework should have a limit" → "Homework should not have a limit"
otherwise. Every perspective that supports the claim undermines its negation, so training pairs and a dev check can be made from
gold labels without new annotation. Rules, not a model: each one is a small, reviewable
rewrite, and a claim none of them fits gives ``None`` rather than a guess.
"""

from __future__ import annotations

import re

#: Words of a claim that proposes to restrict, remove or stop something.
RESTRICTIVE = re.compile(
    r"\b(ban|bans|banned|banning|abolish\w*|limit\w*|restrict\w*|end|ended|ending|stop\w*|prohibit\w*|"
    r"outlaw\w*|illegal|forbid\w*|scrap\w*|remov\w*|curb\w*|reduc\w*|lower\w*|cut|elimina\w*|"
    r"censor\w*|criminali[sz]\w*|no|not|never|nothing)\b", re.IGNORECASE)

#: Opposite proposals, both ways; the first word of a claim's modal phrase that has one is swapped.
OPPOSITES: dict[str, str] = {}
for _a, _b in (("banned", "allowed"), ("ban", "allow"), ("compulsory", "voluntary"), ("mandatory", "optional"),
               ("abolished", "kept"), ("abolish", "keep"), ("legalised", "kept illegal"),
               ("legalized", "kept illegal"), ("lowered", "raised"), ("increased", "reduced"),
               ("good", "bad"), ("better", "worse"), ("harmful", "beneficial"), ("free", "paid for"),
               ("prohibited", "permitted"), ("forbidden", "permitted"), ("illegal", "legal"),
               ("scrapped", "kept"), ("restricted", "unrestricted"), ("encouraged", "discouraged")):
    OPPOSITES.setdefault(_a, _b)
    OPPOSITES.setdefault(_b, _a)

_MODAL = re.compile(r"\b(should|must|ought to|ought|has to|have to|needs to|need to|will|can|could|would)( not)?\b",
                    re.IGNORECASE)
_NEXT_WORD = re.compile(r"\s+(?:be\s+)?(\w+)", re.IGNORECASE)
#: "has to X" → "does not have to X": "not" after these reads badly.
_NEED = {"has to": "does not have to", "have to": "do not have to", "needs to": "does not need to",
         "need to": "do not need to"}
_COPULA = re.compile(r"\b(is|are|was|were|does|do)( not|n't)?\b", re.IGNORECASE)
_MORE_THAN = re.compile(r"\bmore (harm|good) than (harm|good)\b", re.IGNORECASE)
_WE = re.compile(r"^(we|i|you|governments?|the government|the state|society|people)\s+"
                 r"(believe in|support|oppose|need|want|favou?r)\b", re.IGNORECASE)
IMPERATIVE = {"abolish", "allow", "ban", "pay", "make", "introduce", "legalise", "legalize", "scrap", "end", "give",
               "stop", "limit", "keep", "raise", "lower", "require", "replace", "tax", "cap", "use", "adopt",
               "permit", "prohibit", "restrict", "build", "fund", "cut", "increase", "reduce", "support", "bring",
               "let", "remove", "privatise", "privatize", "nationalise", "nationalize", "outlaw", "reintroduce"}


def is_restrictive(claim: str) -> bool:
    """Whether the claim proposes to ban, abolish, limit or end something, or is stated negatively."""
    return bool(RESTRICTIVE.search(claim))


def _swap(word: str) -> str | None:
    opposite = OPPOSITES.get(word.lower())
    if opposite is None:
        return None
    return opposite.capitalize() if word[:1].isupper() else opposite


def _after_modal(text: str, end: int) -> str | None:
    """The claim with the first word after a modal or copula (skipping "be") swapped for its opposite."""
    match = _NEXT_WORD.match(text, end)
    if not match or text[match.end(1):].lstrip().lower().startswith("to "):  # "allowed to", "free to"
        return None
    swapped = _swap(match.group(1))
    if swapped is None:
        return None
    return text[:match.start(1)] + swapped + text[match.end(1):]


def negate(claim: str) -> str | None:
    """The claim that proposes the opposite, or ``None`` where no rule applies.

    In order: "more harm than good" ↔ "more good than harm"; a question ("Should X be
    allowed …") gets its first word with a listed opposite swapped; a modal ("should",
    "must", …) gets its next word's listed opposite, or "not" (removed where present);
    "We support X" → "We do not support X"; an imperative ("Abolish X") → "We should not
    abolish X"; a copula or "does" likewise gets its next word's opposite or "not".
    """
    text = " ".join(claim.split())
    if not text:
        return None
    more = _MORE_THAN.search(text)
    if more and more.group(1).lower() != more.group(2).lower():
        first, second = more.group(1), more.group(2)
        return text[:more.start()] + f"more {second} than {first}" + text[more.end():]
    modal = _MODAL.search(text)
    if modal and modal.start() == 0:  # a question: "Should X be allowed …"
        for word in re.finditer(r"\w+", text):
            swapped = _swap(word.group())
            if swapped is not None:
                return text[:word.start()] + swapped + text[word.end():]
        return None
    if modal:
        word = modal.group(1)
        if modal.group(2):  # "should not" → "should", "ought not" → "ought to"
            return text[:modal.start(1)] + ("ought to" if word.lower() == "ought" else word) + text[modal.end():]
        opposite = _after_modal(text, modal.end())
        if opposite is not None:
            return opposite
        if word.lower() in _NEED:
            return text[:modal.start(1)] + _NEED[word.lower()] + text[modal.end(1):]
        return text[:modal.end(1)] + " not" + text[modal.end(1):]
    we = _WE.match(text)
    if we:
        return text[:we.end(1)] + " do not " + text[we.start(2):]
    first = text.split()[0]
    if first.lower() in IMPERATIVE:
        return "We should not " + first.lower() + text[len(first):]
    copula = _COPULA.search(text)
    if copula:
        if copula.group(2):  # "is not" → "is"; "doesn't" → "does"
            return text[:copula.end(1)] + text[copula.end():]
        opposite = _after_modal(text, copula.end())
        if opposite is not None:
            return opposite
        return text[:copula.end(1)] + " not" + text[copula.end(1):]
    return None


#: A sentence that frames a debate instead of taking a side in it: "The question is whether
#: social media is good or bad for us.", "The debate over open and closed primaries,
#: explained.", "There's an ongoing debate about …", "… has been hotly debated".
_FRAMING = re.compile(
    r"^\s*(?:(?:the|a) (?:big |real |key )?(?:question|issue|debate|dilemma)(?: is| of| over| about| on)?"
    r"(?: (?:whether|what|how|if)\b|\b(?= over| about| on| continues))"
    r"|there(?:'s| is| are)(?: an?)?(?: ongoing| long| heated| fierce)? (?:debate|controversy|disagreement)"
    r" (?:about|over|on|as to)\b)"
    r"|\b(?:has|have) (?:long )?been (?:hotly |fiercely |widely )?(?:debated|discussed|contested)\b"
    r"|\bpros and cons\b", re.IGNORECASE)
#: Words that give a reason or a turn, after which a framing sentence does take a side.
_ARGUES = re.compile(r"\b(but|because|since|so|however|yet|though|although|as many|which is why|therefore|conclude\w*)\b|, as\b",
                     re.IGNORECASE)


def takes_no_side(text: str) -> bool:
    """Whether ``text`` only frames the debate (asks the question, names the debate) and
    gives no reason or turn that would take a side in it. Such a statement is shown as
    "side unclear", never as a supporting or undermining perspective."""
    return bool(_FRAMING.search(text)) and not _ARGUES.search(text)
