"""The HTTP API's shapes: its requests and responses as pydantic models, so ``/openapi.json``
and ``/docs`` are generated from the code, and the one-line problem every refusal answers with.

``/discover`` answers with exactly the JSON of ``discover --json``
(:meth:`~perspectrum.pipeline.results.Discovery.to_dict`; :class:`DiscoveryOut` documents it),
and claims are refused by the CLI's rules (:func:`~perspectrum.pipeline.pipeline.check_claim`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from perspectrum.errors import missing_extra

try:  # the serve extra; without it `perspectrum serve` says so in one line (MissingExtra)
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse, Response
    from pydantic import BaseModel, ConfigDict, Field, model_validator
except ModuleNotFoundError as exc:
    raise missing_extra("perspectrum serve", "serve", exc) from None

from perspectrum.index.search import MAX_QUERY_CHARS
from perspectrum.pipeline.pipeline import MAX_CLAIM_CHARS, ClaimError, check_claim
from perspectrum.pipeline.results import Discovery

#: Claims in one ``POST /discover`` (a batch runs as one ``discover_many`` call).
MAX_BATCH = 32
#: Perspectives a request may ask for (``top``); what ``discover`` returns is far fewer.
MAX_TOP = 100


class DiscoverRequest(BaseModel):
    """One claim (``claim``) or a batch (``claims``), with the CLI's options."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={
        "examples": [{"claim": "Animals should have lawful rights", "top": 5}]})

    # the length bounds are documented, not enforced here: check_claim refuses with the CLI's words
    claim: str | None = Field(None, description=f"One claim (at most {MAX_CLAIM_CHARS:,} characters, with words).",
                              json_schema_extra={"minLength": 1, "maxLength": MAX_CLAIM_CHARS})
    claims: list[str] | None = Field(None, min_length=1, max_length=MAX_BATCH,
                                     description=f"Several claims, answered in order (at most {MAX_BATCH}).")
    top: int | None = Field(None, ge=1, le=MAX_TOP, description="At most this many perspectives per claim.")
    evidence: bool = Field(True, description="Rank and highlight evidence (false is faster).")
    explain: bool = Field(False, description="Add every candidate's scores and the settings used (`trace`).")

    @model_validator(mode="after")
    def _one_of(self) -> DiscoverRequest:
        if (self.claim is None) == (self.claims is None):
            raise ValueError("give either `claim` or `claims`, not both or neither")
        return self

    def checked_claims(self) -> list[str]:
        """The claims as ``discover`` searches for them, or a :class:`ClaimError` that starts
        with the one refused (``claim``, or ``claims[i]``)."""
        claims = [self.claim] if self.claims is None else self.claims
        texts = []
        for number, claim in enumerate(claims):
            try:
                texts.append(check_claim(claim))
            except ClaimError as exc:
                where = "claim" if self.claims is None else f"claims[{number}]"
                raise ClaimError(f"{where}: {exc}") from None
        return texts


class PhrasingOut(BaseModel):
    id: int | str
    text: str
    relevance: float
    support_probability: float | None = Field(description="null: a pool paraphrase added unread")


class EvidenceOut(BaseModel):
    id: int | str
    text: str
    probability: float
    window: str | None = Field(description="the 3-sentence window that states the perspective")
    window_score: float | None
    window_start: int | None = Field(description="character offset of the window in `text`")
    window_end: int | None


class PerspectiveOut(BaseModel):
    text: str
    id: int | str
    stance: Literal["support", "undermine", "unclear"] = Field(
        description="unclear: the calibrated P(support) is too close to 0.5 to show a side")
    support_probability: float = Field(description="the models' P(support) for the cluster")
    stance_confidence: float = Field(description="calibrated on dev: how likely the side it leans to is right (≥ 0.5)")
    relevance: float
    phrasings: list[PhrasingOut]
    evidence: list[EvidenceOut]
    support_calibrated: float = Field(description="P(support) calibrated on dev; ≥ 0.5 leans to support")


class DiscoveryOut(BaseModel):
    """What ``discover --json`` prints (schema 2, in docs/discover.md)."""

    model_config = ConfigDict(populate_by_name=True)

    schema_version: int = Field(alias="schema")
    claim: str
    system: str
    perspectives: list[PerspectiveOut]
    timings: dict[str, float]
    notice: str | None
    trace: dict[str, Any] | None = Field(None, description="only with `explain`")


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(description=f"What to search for (at most {MAX_QUERY_CHARS:,} characters).",
                       json_schema_extra={"minLength": 1, "maxLength": MAX_QUERY_CHARS})
    pool: Literal["perspectives", "evidence", "sentences"] = "perspectives"
    method: Literal["bm25", "dense", "hybrid"] = "hybrid"
    k: int = Field(10, ge=1, le=1000)


class HitOut(BaseModel):
    id: int | str
    score: float
    text: str


class Health(BaseModel):
    status: Literal["loading", "ready", "failed"]
    system: str | None = Field(description="which models answer: trained, light, light + trained stance")
    version: str
    workers: int
    queue: int
    error: str | None = None


class Problem(BaseModel):
    detail: str = Field(description="what is wrong, in one line")


class Token(BaseModel):
    model_config = ConfigDict(extra="forbid")

    token: str = Field(max_length=1000)


def discoveries(found: Sequence[Discovery], batch: bool) -> Response:
    """The answer to ``/discover``: one result's ``discover --json`` text, or a list of a batch's."""
    text = "[" + ",".join(r.to_json(indent=None) for r in found) + "]" if batch else found[0].to_json(indent=None)
    return Response(text, media_type="application/json")


def problem(status: int, detail: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """A refusal: ``status`` with a :class:`Problem` body."""
    return JSONResponse({"detail": detail}, status_code=status, headers=headers)


def one_line(exc: RequestValidationError) -> str:
    """A validation failure as one line: where, and what pydantic says is wrong."""
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error.get("loc", ()) if p != "body")
        message = str(error.get("msg", "")).removeprefix("Value error, ")
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts) or "the request is not valid"
