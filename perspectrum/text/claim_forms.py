"""The form a claim is stated in, and the same claim in other forms.

Debate text states one proposal many ways: "Zoos should be banned", "Ban zoos", "Should zoos
be banned?", "This house would ban zoos", "Zoos are bad for animals". A stance reader should
give a perspective the same side whichever form the claim takes. :func:`form_of` names a
claim's own form; :func:`rephrase` states it as a question and as a debate motion, both
proposing the same thing, so every gold label carries over unchanged (the opposite proposal,
labels flipped, is :func:`perspectrum.text.polarity.negate`'s). Rules, not a model: a claim
no rule fits keeps a plain wrapper ("Is it true that …?", "This house believes that …").
"""

from __future__ import annotations

import re

from perspectrum.text.polarity import IMPERATIVE

#: The forms :func:`form_of` tells apart, in the order it tries them.
FORMS = ("question", "imperative", "we", "modal", "evaluative", "statement")
#: The rewrites :func:`rephrase` makes.
REPHRASINGS = ("question", "motion")

#: Words a claim can start with as a command, beyond those :func:`~perspectrum.text.polarity.negate` reads.
COMMANDS = IMPERATIVE | {"provide", "store", "have", "put", "create", "grant", "extend", "enforce", "impose",
                         "implement", "invest", "subsidise", "subsidize", "protect", "prevent", "encourage",
                         "teach", "require", "charge", "pass", "open", "close", "offer"}

_MODAL = re.compile(r"\b(should|must|ought to|has to|have to|needs to|need to|will|can|could|would|may)\b",
                    re.IGNORECASE)
_WE = re.compile(r"^(we|society|governments?|the government|the state)\s+(should|must|ought to|have to|need to)\s+",
                 re.IGNORECASE)
_COPULA = re.compile(r"\b(is|are)\b", re.IGNORECASE)
#: "X is good / bad / better / worse / harmful / … (for Y)": a judgement rather than a proposal.
_EVALUATIVE = re.compile(
    r"\b(is|are)\s+(?:(?:not|more|less|very|too|so|such)\s+)?(?:an?\s+)?"
    r"(good|bad|better|worse|best|worst|harmful|beneficial|necessary|dangerous|wrong|right|fine|justified|"
    r"unjustified|effective|ineffective|useful|useless|important|crucial|detrimental|advantageous|"
    r"threat|myth|waste|positive|negative|ethical|unethical|acceptable|unacceptable)\b", re.IGNORECASE)
#: "has to X" → "does S have to X?"
_DO = {"has to": ("Does", "have to"), "have to": ("Do", "have to"), "needs to": ("Does", "need to"),
       "need to": ("Do", "need to"), "ought to": ("Ought", "to")}


def _plain(claim: str) -> str:
    return " ".join(claim.split()).rstrip(" .!")


def _decap(text: str) -> str:
    """Lower the first letter where the first word is not an acronym ("NATO", "UK") or "I"."""
    first = text.split(" ", 1)[0]
    if first == "I" or (len(first) > 1 and first[:2].isupper()):
        return text
    return text[:1].lower() + text[1:]


def form_of(claim: str) -> str:
    """One of :data:`FORMS`: how ``claim`` is stated."""
    text = _plain(claim)
    if text.endswith("?") or (_MODAL.match(text) is not None):
        return "question"
    words = text.split()
    if not words:
        return "statement"
    if words[0].lower() in COMMANDS:
        return "imperative"
    if _WE.match(text):
        return "we"
    if _MODAL.search(text):
        return "modal"
    if _EVALUATIVE.search(text):
        return "evaluative"
    return "statement"


def _question(text: str, form: str) -> str:
    if form == "question":
        return text if text.endswith("?") else text + "?"
    if form == "imperative":
        return f"Should we {_decap(text)}?"
    modal = _MODAL.search(text)
    if modal:
        subject, rest = text[:modal.start()].strip(), text[modal.end():].strip()
        word = modal.group(1).lower()
        if word in _DO:
            auxiliary, verb = _DO[word]
            return f"{auxiliary} {_decap(subject)} {verb} {rest}?"
        return f"{word.capitalize()} {_decap(subject)} {rest}?"
    copula = _COPULA.search(text)
    if copula and copula.start() > 0:
        subject, rest = text[:copula.start()].strip(), text[copula.end():].strip()
        return f"{copula.group(1).capitalize()} {_decap(subject)} {rest}?"
    return f"Is it true that {_decap(text)}?"


def _motion(text: str, form: str) -> str:
    if form == "imperative":
        return f"This house would {_decap(text)}"
    we = _WE.match(text)
    if we:
        return f"This house would {text[we.end():]}"
    if form == "question":
        return f"This house believes the answer to \"{text.rstrip('?')}?\" is yes"
    return f"This house believes that {_decap(text)}"


def rephrase(claim: str) -> dict[str, str]:
    """``claim`` as a question and as a debate motion (:data:`REPHRASINGS`), each proposing
    what ``claim`` proposes: "Zoos should be banned" → "Should zoos be banned?", "This house
    believes that zoos should be banned"; "Ban junk food" → "Should we ban junk food?",
    "This house would ban junk food". Empty for an empty claim."""
    text = _plain(claim)
    if not text:
        return {}
    form = form_of(text)
    return {"question": _question(text, form), "motion": _motion(text, form)}
