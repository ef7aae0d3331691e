"""What :meth:`perspectrum.Pipeline.discover` returns: plain, frozen, JSON-ready data.

Kept apart from the stages that compute it so a consumer (the display, a server, a
benchmark) can read results without importing the pipeline's machinery.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass
from typing import Any

from perspectrum.text.polarity import takes_no_side

#: Version of :meth:`Discovery.to_dict`'s layout; bumped on any incompatible change
#: (2: ``stance`` may be ``"unclear"``, ``stance_confidence`` is calibrated on dev, and
#: ``support_calibrated`` is new).
SCHEMA_VERSION = 2
#: The sides a perspective is shown on, in the order they are shown.
STANCES = ("support", "undermine", "unclear")
#: What :meth:`Discovery.to_json` writes as ``\uXXXX`` beyond what ``json.dumps`` escapes
#: (C0 controls, quote, backslash): DEL and the C1 controls (U+009B starts an escape
#: sequence on many terminals), U+2028/U+2029 (line breaks to JavaScript and many
#: viewers) and lone surrogates (which cannot be encoded for output at all).
_UNSAFE_IN_JSON = re.compile("[\x7f-\x9f\u2028\u2029\ud800-\udfff]")


@dataclass(frozen=True)
class Phrasing:
    """One perspective sentence of the pool, its relevance to the claim and its own P(support).

    ``support_probability`` is ``None`` for a paraphrase that joined its cluster from
    the pool after clustering unread (expansion without ``agree``: it takes the
    cluster's stance).
    """

    id: int | str
    text: str
    relevance: float
    support_probability: float | None = None


@dataclass(frozen=True)
class EvidenceHit:
    """A paragraph backing a perspective, with its best 3-sentence window when verified.

    ``window_score`` is how plainly that window states the perspective rather than a
    sibling's (the scorers' ``windows``: the evidence ranker's window verifier, in [0, 1]). ``window_start``/``window_end`` are
    character offsets of the window in ``text``
    (``None`` when the paragraph was not verified or the window could not be placed).
    """

    id: int | str
    text: str
    probability: float
    window: str | None = None
    window_score: float | None = None
    window_start: int | None = None
    window_end: int | None = None


@dataclass(frozen=True)
class DiscoveredPerspective:
    """A cluster of equivalent perspectives: its representative, stance and evidence.

    Every member whose stance the model read with confidence is on the cluster's side
    (clusters never join confident opposites). ``support_probability`` is the models'
    P(support) for the cluster; ``support_calibrated`` the same made a probability on dev
    (:func:`calibrated`: of the dev perspectives shown at 80 %, about 80 % support the
    claim); ``stance_confidence`` is how likely the side it leans to is right (at least
    0.5). ``stance`` is ``"support"``, ``"undermine"`` or, when the calibrated
    probability is too close to 0.5 to say (the stance stage's ``unclear`` band),
    ``"unclear"``.
    """

    text: str
    id: int | str
    stance: str
    support_probability: float
    stance_confidence: float
    relevance: float
    phrasings: tuple[Phrasing, ...]
    evidence: tuple[EvidenceHit, ...]
    support_calibrated: float = 0.5

    @property
    def leans_support(self) -> bool:
        """The side the perspective leans to: its side, or for an unclear one, the side of 0.5
        its calibrated P(support) is on."""
        return self.stance == "support" or (self.stance == "unclear" and self.support_calibrated >= 0.5)


@dataclass(frozen=True)
class Discovery:
    """What :meth:`Pipeline.discover` returns for one claim; plain data, JSON-ready.

    ``timings`` are seconds per stage (for :meth:`Pipeline.discover_many`, the batch's
    time divided by its claims). ``notice`` says why nothing was returned (no
    perspective in the pool reached the relevance floor), else ``None``. ``trace``
    (with ``explain=True``) holds every candidate's scores and the settings used.
    """

    claim: str
    system: str
    perspectives: tuple[DiscoveredPerspective, ...]
    timings: dict[str, float]
    trace: dict[str, Any] | None = None
    notice: str | None = None

    @property
    def supporting(self) -> list[DiscoveredPerspective]:
        return [p for p in self.perspectives if p.stance == "support"]

    @property
    def undermining(self) -> list[DiscoveredPerspective]:
        return [p for p in self.perspectives if p.stance == "undermine"]

    @property
    def unclear(self) -> list[DiscoveredPerspective]:
        """Perspectives whose side the models cannot tell (shown apart, never on a side)."""
        return [p for p in self.perspectives if p.stance == "unclear"]

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON layout documented in the README (``schema`` = its version)."""
        out = {"schema": SCHEMA_VERSION, **asdict(self)}
        if out["trace"] is None:
            del out["trace"]
        return out

    def to_json(self, indent: int | None = 2) -> str:
        """:meth:`to_dict` as JSON that is safe to print (see :func:`safe_json`)."""
        return safe_json(self.to_dict(), indent)


def safe_json(data: Any, indent: int | None = 2) -> str:
    """``data`` as JSON that is safe to print: other scripts stay readable, while every
    character a terminal would act on is escaped (see :data:`_UNSAFE_IN_JSON`; outside
    strings JSON is plain ASCII, so only string contents change). With ``indent=None`` it
    is one line that no reader splits, U+2028 included, so it can be a JSONL record."""
    text = json.dumps(data, indent=indent, ensure_ascii=False)
    return _UNSAFE_IN_JSON.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def calibrated(p: float, threshold: float, scale: float = 1.0) -> float:
    """P(support) made a probability by temperature scaling around ``threshold``:
    σ(scale · (logit p − logit threshold)), 0.5 exactly at the threshold (so the side is
    the threshold's), steeper or flatter by ``scale`` (fitted on dev's gold pairs)."""
    return 1.0 / (1.0 + math.exp(-scale * (_logit(p) - _logit(threshold))))


def _logit(p: float) -> float:
    p = min(max(float(p), 1e-6), 1.0 - 1e-6)
    return math.log(p / (1.0 - p))


def side(q: float, unclear: float) -> str:
    """The side shown for calibrated P(support) ``q``: ``"unclear"`` within ``unclear`` of 0.5."""
    if abs(q - 0.5) < unclear:
        return "unclear"
    return "support" if q >= 0.5 else "undermine"


def headed(phrasings: tuple[Phrasing, ...], q: float, unclear: float) -> tuple[tuple[Phrasing, ...], str]:
    """A card's phrasings with one that takes a side first (one that only frames the debate,
    :func:`~perspectrum.text.polarity.takes_no_side`, never heads a card), and the side
    shown: :func:`side`, or ``"unclear"`` when no phrasing takes a side, whatever the
    stance model read into it."""
    ordered = tuple(sorted(phrasings, key=lambda f: takes_no_side(f.text)))
    return ordered, "unclear" if takes_no_side(ordered[0].text) else side(q, unclear)
